"""The GPU traceback must equal the CPU reference bit for bit: ends, paths and errors.

Marked ``gpu``: skipped where CuPy or a CUDA device is missing. Run on an H100 with
``SWGPU_REQUIRE_GPU=1 pytest -m gpu``. The real hits come from ``SWGPU_SHARED`` (default
``../shared``) through the ``shared`` fixture of ``conftest.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

from swgpu_core.align import traceback as cpu
from swgpu_core.align.traceback import PairTask, PairTrace, TracebackError
from swgpu_core.alphabet import PROTEIN
from swgpu_core.scoring import Scoring

pytestmark = pytest.mark.gpu

STANDARD = "ACDEFGHIKLMNPQRSTVWY"
AMBIGUOUS = STANDARD + "BZXUOJ*"


@pytest.fixture(scope="module")
def gpu():
    from swgpu_core.gpu import traceback as gpu

    return gpu


@pytest.fixture(scope="module")
def scoring() -> Scoring:
    return Scoring.protein()


def _random(rng: np.random.Generator, n: int, letters: str = STANDARD) -> np.ndarray:
    return PROTEIN.encode("".join(rng.choice(list(letters), n)))


def _mutant(rng: np.random.Generator, seq: np.ndarray, rate: float = 0.3) -> np.ndarray:
    """A relative of ``seq``: substitutions and short indels, so alignments are long and gapped."""
    out = []
    for c in seq.tolist():
        u = rng.random()
        if u < rate * 0.1:
            continue  # deletion
        out.append(int(rng.integers(0, 20)) if u < rate else c)
        if rng.random() < rate * 0.1:
            out.extend(rng.integers(0, 20, int(rng.integers(1, 6))).tolist())
    return np.asarray(out or [0], np.uint8)


def _tasks(pairs: list[tuple[np.ndarray, np.ndarray]], scoring: Scoring) -> list[PairTask]:
    """Pairs with their scores (as the search would report), those scoring above 0."""
    mat = np.require(scoring.matrix, np.int32, ["C", "W"])
    out = []
    for q, s in pairs:
        best = cpu.forward_end(np.ascontiguousarray(q), np.ascontiguousarray(s), mat, scoring.gap_open, scoring.gap_extend)[0]
        if best > 0:
            out.append(PairTask(q, s, int(best)))
    return out


def _same(got: list[PairTrace | None], want: list[PairTrace | None]) -> None:
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        if w is None or g is None:
            assert g is None and w is None, f"pair {k}: gpu {g} cpu {w}"
            continue
        ends_g = (g.score, g.qstart, g.qend, g.sstart, g.send)
        ends_w = (w.score, w.qstart, w.qend, w.sstart, w.send)
        assert ends_g == ends_w, f"pair {k}: gpu ends {ends_g}, cpu {ends_w}"
        assert g.ops.dtype == np.uint8 and np.array_equal(g.ops, w.ops), f"pair {k}: paths differ ({g.ops.size} vs {w.ops.size} ops)"


def test_random_pairs(gpu, scoring):
    """Lengths from 1 to 1,100 (one to three passes of every R), ambiguity codes, relatives."""
    rng = np.random.default_rng(7)
    pairs = []
    for k in range(600):
        m, n = (int(x) for x in rng.integers(1, 1100 if k % 5 == 0 else 300, 2))
        letters = AMBIGUOUS if k % 3 == 0 else STANDARD
        q = _random(rng, m, letters)
        s = _mutant(rng, q) if k % 2 else _random(rng, n, letters)
        pairs.append((q, s))
    pairs += [(_random(rng, 1), _random(rng, 1)) for _ in range(20)]
    pairs += [
        (PROTEIN.encode("W"), PROTEIN.encode("W")),
        (PROTEIN.encode("W"), _random(rng, 700)),
        (_random(rng, 700), PROTEIN.encode("C")),
    ]
    tasks = _tasks(pairs, scoring)
    assert len(tasks) > 500
    _same(gpu.traceback_pairs(tasks, scoring), cpu.traceback_pairs(tasks, scoring))
    qs, ss = [p[0] for p in pairs], [p[1] for p in pairs]
    want = cpu.align_pairs(qs, ss, scoring)
    assert any(w is None for w in want), "no pair without a positive alignment"
    _same(gpu.align_pairs(qs, ss, scoring), want)


def test_ties(gpu, scoring):
    """Repeats: many cells reach the best score, so only the tie rules pick the answer."""
    words = ["AAAA", "AAAAAAA", "WWWW", "WCWCWCWC", "CWCWC", "AWAWAWA", "WAAW", "KKKKKKKKKKKKKKKKKK", "GAGAGAGAGA", "GGAAGGAAGG"]
    codes = [PROTEIN.encode(w) for w in words] + [
        PROTEIN.encode("ACDW" * 40),
        PROTEIN.encode("ACDW" * 97 + "AC"),
        PROTEIN.encode("W" * 600),
    ]
    pairs = [(a, b) for a in codes for b in codes]
    tasks = _tasks(pairs, scoring)
    _same(gpu.traceback_pairs(tasks, scoring), cpu.traceback_pairs(tasks, scoring))
    gapped = Scoring.protein("BLOSUM62", 2, 1)  # cheap gaps: ties between gapped paths
    _same(
        gpu.align_pairs([p[0] for p in pairs], [p[1] for p in pairs], gapped),
        cpu.align_pairs([p[0] for p in pairs], [p[1] for p in pairs], gapped),
    )


def test_long_pairs(gpu, scoring):
    """Over 10,000 residues: many passes per pair, boundary buffers, large rectangles."""
    rng = np.random.default_rng(3)
    q = _random(rng, 12_000)
    pairs = [(q, _mutant(rng, q, 0.2)), (q[:10_500], _random(rng, 300)), (_random(rng, 200), q[1000:11_500]), (q[::-1].copy(), q)]
    tasks = _tasks(pairs, scoring)
    got = gpu.traceback_pairs(tasks, scoring)
    _same(got, cpu.traceback_pairs(tasks, scoring))
    assert got[0].qend - got[0].qstart > 10_000


def test_budget_fallback(gpu, scoring):
    """Rectangles over a tiny per-pair budget are traced by the CPU's pass 3; tiny launches."""
    rng = np.random.default_rng(5)
    pairs = []
    for _ in range(60):
        q = _random(rng, int(rng.integers(50, 900)))
        pairs.append((q, _mutant(rng, q) if rng.random() < 0.7 else _random(rng, int(rng.integers(50, 900)))))
    tasks = _tasks(pairs, scoring)
    want = cpu.traceback_pairs(tasks, scoring)
    packed = gpu.pack_sequences([t.query for t in tasks], [t.subject for t in tasks])
    res = gpu.align_packed(*packed, scoring, np.array([t.score for t in tasks], np.int32), pair_budget=20_000, launch_bytes=100_000)
    assert 0 < res.on_cpu < len(tasks)
    _same([res.trace(k) for k in range(len(tasks))], want)


def test_default_pair_budget_is_half_a_launch(gpu, scoring):
    """Without ``pair_budget`` a rectangle goes to the CPU only where it exceeds half of
    ``launch_bytes``: the same pairs as an explicit budget of that size, none with a large
    launch (the 256 MiB default of old sent every alignment over ~23,000 x 23,000 to the CPU)."""
    rng = np.random.default_rng(6)
    pairs = []
    for _ in range(40):
        q = _random(rng, int(rng.integers(50, 900)))
        pairs.append((q, _mutant(rng, q)))
    tasks = _tasks(pairs, scoring)
    want = cpu.traceback_pairs(tasks, scoring)
    packed = gpu.pack_sequences([t.query for t in tasks], [t.subject for t in tasks])
    expected = np.array([t.score for t in tasks], np.int32)
    small = gpu.align_packed(*packed, scoring, expected, launch_bytes=100_000)
    explicit = gpu.align_packed(*packed, scoring, expected, pair_budget=50_000, launch_bytes=100_000)
    assert 0 < small.on_cpu == explicit.on_cpu < len(tasks)
    assert gpu.align_packed(*packed, scoring, expected, launch_bytes=1 << 30).on_cpu == 0
    _same([small.trace(k) for k in range(len(tasks))], want)


def test_team_launches_read_in_turns(gpu, scoring, monkeypatch):
    """Team launches whose nibbles together exceed a launch's budget are read (and let go of)
    before the next is queued; the paths are the CPU's."""
    rng = np.random.default_rng(7)
    pairs = [(q, _mutant(rng, q)) for q in (_random(rng, int(rng.integers(100, 300))) for _ in range(24))]
    tasks = _tasks(pairs, scoring)
    packed = gpu.pack_sequences([t.query for t in tasks], [t.subject for t in tasks])
    reads = []
    finish = gpu._finish
    monkeypatch.setattr(gpu, "_finish", lambda k, pending, out: (reads.append(len(pending)), finish(k, pending, out)))
    res = gpu.align_packed(*packed, scoring, np.array([t.score for t in tasks], np.int32), launch_bytes=200_000, team_warps=4)
    _same([res.trace(k) for k in range(len(tasks))], cpu.traceback_pairs(tasks, scoring))
    assert res.on_cpu == 0
    assert len(reads) >= 2  # a turn read before the next launch was queued, and the last


def test_strips_equal_the_whole_region(gpu, scoring):
    """Every rectangle in strips (``strip_nibbles=0``: checkpoints, then each team pass's nibbles
    again and the walk through them, kernels/traceback.cu "strips"), on one warp, on teams and
    as planned: the CPU's paths. Among them a path that crosses strips inside a long query gap,
    where a walk that forgot its matrix at a strip's top would turn (tests/test_tb_kernel.py
    checks that on the reference's nibbles), and pairs of thousands of rows (many strips)."""
    rng = np.random.default_rng(8)
    pairs = []
    for n in (40, 300, 900, 2500, 6000):
        q = _random(rng, n)
        pairs += [(q, _mutant(rng, q)), (q, _mutant(rng, q, 0.1))]
    gap = np.random.default_rng(0)  # the query gap of tests/test_tb_kernel.py
    a, b = gap.integers(0, 20, 700).astype(np.uint8), gap.integers(0, 20, 700).astype(np.uint8)
    s = np.concatenate([a, b])
    x = np.where(gap.random(1500) < 0.5, s[699], gap.integers(0, 20, 1500)).astype(np.uint8)
    pairs.append((np.concatenate([a, x, b]), s))
    tasks = _tasks(pairs, scoring)
    want = cpu.traceback_pairs(tasks, scoring)
    packed = gpu.pack_sequences([t.query for t in tasks], [t.subject for t in tasks])
    expected = np.array([t.score for t in tasks], np.int32)
    for team in (None, 1, 2, 8):
        res = gpu.align_packed(*packed, scoring, expected, team_warps=team, strip_nibbles=0)
        assert res.in_strips == len(tasks) and res.on_cpu == 0, team
        _same([res.trace(k) for k in range(len(tasks))], want)
    whole = gpu.align_packed(*packed, scoring, expected)
    assert whole.in_strips == 0  # below STRIP_NIBBLES: the whole region at once
    _same([whole.trace(k) for k in range(len(tasks))], want)


def test_errors_match_cpu(gpu, scoring):
    """A wrong search score, and a pair without a positive alignment, fail as on the CPU."""
    q, s = PROTEIN.encode("MKWVTFISLL"), PROTEIN.encode("MKWVTFISLL")
    good = _tasks([(q, s)], scoring)[0]
    for bad in (
        PairTask(q, s, good.score + 1),
        PairTask(PROTEIN.encode("W"), PROTEIN.encode("P"), 0),
        PairTask(PROTEIN.encode("W"), PROTEIN.encode("P"), 3),
    ):
        with pytest.raises(TracebackError) as want:
            cpu.traceback_pairs([good, bad], scoring)
        with pytest.raises(TracebackError) as got:
            gpu.traceback_pairs([good, bad], scoring)
        assert str(got.value) == str(want.value)


def test_the_traceback_runs_on_the_gpu_it_is_given(gpu, scoring, monkeypatch):
    """``device``: the pairs are traced on that GPU (GPU 1 where there are two, as after a
    search on GPU 1 alone), not on the current one; the paths of the CPU reference."""
    import cupy as cp

    rng = np.random.default_rng(17)
    pairs = [(q, _mutant(rng, q)) for q in (_random(rng, int(rng.integers(20, 400))) for _ in range(300))]
    tasks = _tasks(pairs, scoring)
    device = 1 if cp.cuda.runtime.getDeviceCount() > 1 else 0
    calls: list[int] = []
    packed = gpu.align_packed

    def spy(*args, **kwargs):
        calls.append(cp.cuda.Device().id)
        return packed(*args, **kwargs)

    monkeypatch.setattr(gpu, "align_packed", spy)
    with cp.cuda.Device(0):
        _same(gpu.traceback_pairs(tasks, scoring, device), cpu.traceback_pairs(tasks, scoring))
        assert calls == [device] and cp.cuda.Device().id == 0


def test_uniprot_hits(gpu, scoring, tmp_path, shared):
    """The top hits of real queries against uniprot20k, as ``swgpu search --align`` traces them."""
    from swgpu_core.align import align_query_hits
    from swgpu_core.backends.cpu import CpuBackend
    from swgpu_core.database import build_database
    from swgpu_core.fasta import read_sequences
    from swgpu_core.search import search

    db = build_database(shared("uniprot20k.fasta.gz"), tmp_path / "u20k", show_progress=False)
    queries = read_sequences(shared("uniprot_queries500.fasta.gz"))[:8] + read_sequences(shared("cudasw_queries.fasta"))[:4]
    result = search(db, queries, scoring, CpuBackend(scoring), top=50, show_progress=False)
    from swgpu_core.engine import get_engine

    assert get_engine("cuda").kind == "cuda"
    a = align_query_hits(db, result.hits, scoring, backend="cuda")
    b = align_query_hits(db, result.hits, scoring, backend="cpu")
    assert a.count == b.count > 500
    for x, y in zip(a.alignments, b.alignments):
        for u, v in zip(x, y):
            assert (u.qstart, u.qend, u.sstart, u.send, u.cigar, u.score) == (v.qstart, v.qend, v.sstart, v.send, v.cigar, v.score)
