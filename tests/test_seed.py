"""``--mode fast``: the seeding rule (the numba seeder against a brute-force reference), the
exact scoring of the candidates (fast hits = exact hits restricted to the candidates), its
recall on bundled data, and the API, CLI and report around it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from seed_reference import reference_candidates, seed_data, seed_database, write_fasta

import swgpu_core as sw
from swgpu_core import seed as seed_module
from swgpu_core.alphabet import PROTEIN
from swgpu_core.backends.cpu import CpuBackend
from swgpu_core.backends.cpu_seed import CpuSeeder
from swgpu_core.database import Database
from swgpu_core.engine import CpuEngine
from swgpu_core.errors import InputError
from swgpu_core.fasta import EncodedSequence
from swgpu_core.formats.text import json_line
from swgpu_core.hitlist import load_hits
from swgpu_core.scoring import Scoring
from swgpu_core.search import select_top
from swgpu_core.seed import DEFAULT_SHAPES, SeedParams, keys_of, seed_index

BLOSUM62 = Scoring.protein()


def records(codes: list[np.ndarray], prefix: str = "q") -> list[EncodedSequence]:
    return [EncodedSequence(f"{prefix}{k}", "", c) for k, c in enumerate(codes)]


def seeded(db: Database, queries: list[np.ndarray], params: SeedParams, scoring: Scoring = BLOSUM62) -> list[list[int]]:
    """Per query, the CPU seeder's candidates over every chunk, as indices of the source FASTA."""
    seeder = CpuEngine().seeder(scoring, records(queries), params, threads=2)
    found: list[list[int]] = [[] for _ in queries]
    for chunk in db.chunks:
        for k, subjects in enumerate(seeder.candidates(db, chunk)):
            assert subjects.dtype == np.int64 and np.all(np.diff(subjects) > 0)
            assert subjects.size == 0 or (chunk.first <= subjects[0] and subjects[-1] < chunk.stop)
            found[k].extend(np.asarray(db.order)[subjects].tolist())
    return [sorted(f) for f in found]


# --- the seed index ---------------------------------------------------------------------------


def test_keys_skip_positions_whose_residues_are_in_no_group() -> None:
    p = SeedParams(alphabet="A R N D", shapes=("101",))
    codes = PROTEIN.encode("ARNXDCA")
    # keys: A.N -> 0*4+2, R.X -> none, N.D -> 2*4+3, X.C none, D.A -> 3*4+0
    assert keys_of(p.reduction()[codes], p, 0).tolist() == [2, -1, 11, -1, 12]
    assert keys_of(p.reduction()[PROTEIN.encode("AR")], p, 0).size == 0


@pytest.mark.parametrize("threads", [1, 4])
def test_seed_index_lists_every_position_by_key(threads: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """By brute force, one shape after the other and (threads 4, the size limit lifted) on threads."""
    monkeypatch.setattr(seed_module, "PARALLEL_INDEX_RESIDUES", 0)
    rng = np.random.default_rng(4)
    queries = [rng.integers(0, 25, size=n).astype(np.uint8) for n in (2, 7, 40, 120)]
    p = SeedParams()
    index = seed_index(queries, p, threads)
    assert index.codes.size == sum(q.size for q in queries) and index.query_of()[-1] == len(queries) - 1
    offsets = index.key_offsets(p.n_keys)
    letters = "ARNDCQEGHILKMFPSTWYV"
    group = {c: g for g, members in enumerate(p.groups) for c in members}
    for k, shape in enumerate(p.shapes):
        want: dict[int, list[int]] = {}
        for q, a in zip(queries, index.starts):
            for i in range(q.size - len(shape) + 1):
                compared = [q[i + t] for t, c in enumerate(shape) if c == "1"]
                if all(c < 20 for c in compared):
                    key = 0
                    for c in compared:
                        key = key * p.n_groups + group[letters[c]]
                    want.setdefault(key, []).append(int(a) + i)
        got = {}
        for key in np.flatnonzero(offsets[k, 1:] > offsets[k, :-1]):
            got[int(key)] = index.positions[offsets[k, key] : offsets[k, key + 1]].tolist()
        assert got == want


def test_seed_params_are_checked() -> None:
    assert SeedParams().weight == 6 and len(DEFAULT_SHAPES) == 14 and SeedParams().n_keys == 13**6
    for bad in (
        dict(shapes=("111", "11011")),  # two weights
        dict(shapes=("0111",)),  # must start with 1
        dict(shapes=("1" * 17,)),  # longer than the kernel stages
        dict(alphabet="AA C"),  # a letter twice
        dict(alphabet="AB C"),  # B is no standard amino acid
        dict(xdrop=-1),
        dict(trigger_step=-1),
        dict(alphabet=" ".join("ARNDCQEGHILKMFPSTWYV"), shapes=("1111111",)),  # 20**7 keys
    ):
        with pytest.raises(ValueError):
            SeedParams(**bad)


# --- the candidate rule ---------------------------------------------------------------------


def toy_scoring() -> Scoring:
    """+4 for identical standard residues, -2 otherwise: a span's score counts its identities."""
    m = np.full((PROTEIN.size, PROTEIN.size), -2, np.int32)
    np.fill_diagonal(m, 4)
    return Scoring("toy", 11, 1, PROTEIN, m)


def toy(
    span: int,
    xdrop: int,
    trigger: int,
    shapes: tuple[str, ...] = ("111",),
    alphabet: str = "KR EDQN C G H M F Y ILV W P ST A",
    step: int = 3,
) -> SeedParams:
    return SeedParams(span=span, xdrop=xdrop, trigger=trigger, trigger_step=step, shapes=shapes, alphabet=alphabet)


@pytest.mark.parametrize(
    ("subject", "params", "expected"),
    [
        # hits ACD (0,0) and HIK (6,6), span 12 each; each extension crosses the dip WWW (-6) to gain 6
        ("ACDWWWHIK", toy(12, 6, 18), True),
        ("ACDWWWHIK", toy(13, 6, 18), False),  # both spans below the span minimum
        ("ACDWWWHIK", toy(12, 5, 18), False),  # the X-drop stops both extensions in the dip
        ("ACDWWWHIK", toy(12, 6, 19), False),  # HSP 18 below the trigger
        ("VRI", toy(-100, 16, -6), True),  # IKL ~ VRI in the reduced alphabet (ILV, KR, ILV): span -6
        ("VRI", toy(-100, 16, -5), False),
        ("AWD", toy(6, 16, 6, shapes=("101",)), True),  # the spaced shape skips W: A.D ~ A.D, span 4 - 2 + 4
        ("AWD", toy(-100, 16, -100), False),  # no contiguous 3 of AWD match ACDEFGHIKL's groups
        ("ACXEF", toy(-100, 16, -100), False),  # every 3 of the subject holds the X
        ("ACXDEF", toy(12, 16, 12), True),  # DEF after it
        ("ACE", toy(-100, 16, -100, alphabet="A C D"), False),  # E is in no group of this alphabet
        ("ACD", toy(-100, 16, -100, alphabet="A C D"), True),
        # from 1,024 residues on the trigger grows by trigger_step per doubling: ACD..HIK (HSP 18) then 1,100 W
        ("ACDWWWHIK" + "W" * 1100, toy(12, 6, 18, step=0), True),
        ("ACDWWWHIK" + "W" * 1100, toy(12, 6, 17, step=1), True),
        ("ACDWWWHIK" + "W" * 1100, toy(12, 6, 18, step=1), False),
        ("ACDWWWHIK" + "W" * 2100, toy(12, 6, 16, step=1), True),  # 2,109 residues: two doublings
        ("ACDWWWHIK" + "W" * 2100, toy(12, 6, 17, step=1), False),
    ],
)
def test_rule_on_hand_made_cases(tmp_path: Path, subject: str, params: SeedParams, expected: bool) -> None:
    """The rule's pieces (span minimum, X-drop, trigger, reduced alphabet, spaced shape, codes in no
    group), each decisive in one case: the reference and the numba seeder both follow it."""
    scoring = toy_scoring()
    query = PROTEIN.encode("ACDEFGHIKL")
    subjects = [PROTEIN.encode(subject), PROTEIN.encode("MNPQ")]
    assert reference_candidates([query], subjects, scoring.matrix, params)[0].tolist() == ([0] if expected else [])
    db, _ = seed_database(tmp_path, subjects)
    assert seeded(db, [query], params, scoring) == [[0] if expected else []]


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize(
    "params",
    [
        SeedParams(),
        SeedParams(span=10, trigger=40),
        SeedParams(span=-100, xdrop=5, trigger=30),
        SeedParams(span=0, xdrop=0, trigger=25, alphabet="KREDQN C G H M F Y ILV W P STA", shapes=("11011", "1111", "110101")),
        SeedParams(span=25, xdrop=30, trigger=60),
    ],
    ids=["default", "span10", "no-span", "a11-w4", "long-xdrop"],
)
def test_numba_candidates_equal_the_brute_force_reference(tmp_path: Path, seed: int, params: SeedParams) -> None:
    """Random and homologous sequences, codes >= 20, short subjects, tandem repeats, several
    chunks: the candidate sets are identical, and not trivial (neither none nor all)."""
    queries, subjects = seed_data(seed)
    want = reference_candidates(queries, subjects, BLOSUM62.matrix, params)
    db, _ = seed_database(tmp_path, subjects)
    assert len(db.chunks) > 2
    assert seeded(db, queries, params) == [w.tolist() for w in want]
    sizes = [w.size for w in want]
    assert 0 < sum(sizes) < len(queries) * len(subjects) // 2


def test_counts_and_threads_do_not_change_the_set(bundled_db: Database, resources: Path) -> None:
    queries = sw.read_queries(resources / "queries.fasta")
    out = []
    for threads in (1, 2):
        seeder = CpuSeeder(BLOSUM62, queries, SeedParams(), threads=threads)
        out.append([np.concatenate(c) for c in zip(*(seeder.candidates(bundled_db, ch) for ch in bundled_db.chunks))])
        assert seeder.counts["hits"] > seeder.counts["extensions"] > seeder.counts["candidates"] > 0
    assert all(np.array_equal(a, b) for a, b in zip(*out))


@pytest.mark.parametrize(("mode", "chunks"), [("exact", None), ("fast", None), ("fast", [0, 2])])
def test_a_search_checks_its_chunks_ahead_in_the_order_it_scans_them(bundled_db, resources, monkeypatch, mode, chunks) -> None:
    """A fast search's pipeline takes the chunks from the longest subjects down (seeded_order), so
    the database's background check goes that way too, and its first uploads find them checked."""
    asked: list = []
    monkeypatch.setattr(type(bundled_db), "verify_ahead", lambda self, order: asked.append(list(order)))
    queries = sw.read_queries(resources / "queries.fasta")[:2]
    sw.search(bundled_db, queries, backend="cpu", top=5, threads=1, mode=mode, chunks=chunks)
    wanted = chunks if chunks is not None else list(range(len(bundled_db.chunks)))
    assert asked == [wanted[::-1] if mode == "fast" else wanted] and len(bundled_db.chunks) == 4


# --- the exact stage --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def both(bundled_db: Database, resources: Path):
    """Exact and fast searches of the bundled queries, top 30."""
    queries = sw.read_queries(resources / "queries.fasta")
    exact = sw.search(bundled_db, queries, backend="cpu", top=30, threads=2)
    fast = sw.search(bundled_db, queries, backend="cpu", top=30, threads=2, mode="fast")
    return queries, exact, fast


def test_fast_hits_are_the_exact_top_hits_among_the_candidates(bundled_db: Database, both) -> None:
    """Scores from a full exact scan, restricted to the seeder's candidates, give the fast
    mode's hits: same subjects, order, scores and E-values (the whole database's)."""
    queries, exact, fast = both
    assert fast.mode == "fast" and exact.mode == "exact" and fast.score_stats is None
    seeder = CpuSeeder(BLOSUM62, queries, SeedParams(), threads=2)
    per_chunk = [seeder.candidates(bundled_db, ch) for ch in bundled_db.chunks]
    backend = CpuBackend(BLOSUM62, threads=2)
    full = [np.concatenate([backend.scores(bundled_db, ch, q) for ch in bundled_db.chunks]) for q in queries]
    for k, qh in enumerate(fast.hits):
        cand = np.concatenate([c[k] for c in per_chunk])
        subjects, scores = select_top(bundled_db, cand, full[k][cand], 30)
        assert np.array_equal(qh.subjects, subjects) and np.array_equal(qh.scores, scores)
        lengths = bundled_db.lengths[qh.subjects]
        e_fast = fast.statistics.evalue(k, len(qh.query), qh.scores, lengths)
        e_exact = exact.statistics.evalue(k, len(qh.query), qh.scores, lengths)
        assert np.array_equal(e_fast, e_exact)
    assert fast.seed.counts["candidates"] == sum(int(c.size) for chunk in per_chunk for c in chunk)
    assert fast.statistics.kind == exact.statistics.kind == "blast"


def test_fast_alignments_equal_exact_alignments(bundled_db: Database, both) -> None:
    """Each query's best fast hits and the exact run's hits, aligned: the pairs both report
    have the same alignment record, E-value and bit score included (only the rank may differ)."""
    _, exact, fast = both

    def aligned(result, n: int) -> dict:
        best = [sw.QueryHits(qh.query, qh.subjects[:n], qh.scores[:n]) for qh in result.hits]
        alns = sw.align(bundled_db, best, BLOSUM62, backend="cpu", statistics=result.statistics).alignments
        return {(a.query_id, a.subject_index): {**json.loads(json_line(a)), "rank": None} for q in alns for a in q}

    a, b = aligned(fast, 6), aligned(exact, 30)
    shared = set(a) & set(b)
    assert len(shared) >= 15
    assert all(a[k] == b[k] and a[k]["evalue"] is not None for k in shared)


@pytest.mark.parametrize(
    ("params", "at_least"),
    [(SeedParams(), (0.90, 0.86)), (SeedParams(span=0, trigger=41, trigger_step=0), (0.99, 0.97))],
    ids=["default", "loose"],
)
def test_recall_on_bundled_sequences(bundled_db: Database, params: SeedParams, at_least: tuple[float, float]) -> None:
    """40 bundled sequences as queries (their own entry left out): the share of the exact
    mode's hits with E <= 1e-5 and E <= 1e-3 the fast mode finds, as measured (docs/seeded.md:
    lower than on large databases, where significant hits score higher; a trigger of 41, BLASTP's,
    with no span minimum and no length step find nearly all, at ten times the candidates)."""
    picks = np.arange(0, bundled_db.n_sequences, bundled_db.n_sequences // 40)[:40]
    queries = [EncodedSequence(f"s{int(i)}", "", np.array(bundled_db.codes(int(i)))) for i in picks]
    exact = sw.search(bundled_db, queries, backend="cpu", top=200, threads=2)
    fast = sw.search(bundled_db, queries, backend="cpu", top=200, threads=2, mode="fast", seed_params=params)
    for cutoff, bound in zip((1e-5, 1e-3), at_least):
        want = got = 0
        for k, (e, f) in enumerate(zip(exact.hits, fast.hits)):
            ev = exact.statistics.evalue(k, len(e.query), e.scores, bundled_db.lengths[e.subjects])
            sig = {int(s) for s, x in zip(e.subjects, ev) if x <= cutoff and s != picks[k]}
            want += len(sig)
            got += len(sig & set(f.subjects.tolist()))
        assert want >= 200, want  # enough homologues for the share to mean something
        assert got / want >= bound, (cutoff, got, want)


# --- API, CLI, hit lists, report --------------------------------------------------------------


def test_api_refuses_unknown_modes_and_fast_mode_cannot_fit(bundled_db: Database, resources: Path) -> None:
    with pytest.raises(InputError, match="unknown --mode 'quick'"):
        sw.search(bundled_db, resources / "queries.fasta", backend="cpu", mode="quick")
    result = sw.search(bundled_db, resources / "queries.fasta", backend="cpu", mode="fast", stats_mode="fit", top=5)
    assert result.statistics.kind == "none" and "fast-mode search" in result.statistics.description


def test_cli_fast_mode_table_hit_list_merge_and_report(bundled_db: Database, swgpu, resources: Path, tmp_path: Path) -> None:
    common = ("--db", bundled_db.path, "--query", resources / "queries.fasta", "--backend", "cpu", "--top", "10")
    fmt = ("--outfmt", "7 qseqid sseqid score evalue")
    rc, out, err = swgpu("search", *common, "--mode", "fast", *fmt)
    assert rc == 0, err
    assert "(swgpu search --mode fast: exact Smith-Waterman)" in out
    assert "fast mode:" in err and "candidates" in err
    rc, exact_out, _ = swgpu("search", *common, *fmt)
    exact_rows = {tuple(r.split("\t")[:2]): r for r in exact_out.splitlines() if not r.startswith("#")}
    fast_rows = [r for r in out.splitlines() if not r.startswith("#")]
    shared = [r for r in fast_rows if tuple(r.split("\t")[:2]) in exact_rows]
    assert len(shared) >= len(fast_rows) // 2 and all(exact_rows[tuple(r.split("\t")[:2])] == r for r in shared)

    rc, _, err = swgpu("search", *common, "--mode", "fast", "--stats", "fit", "--outfmt", "6 qseqid evalue")
    assert rc == 2 and "fast-mode search" in err and len(err.strip().splitlines()) == 1
    with pytest.raises(SystemExit, match="2"):  # argparse's choices
        swgpu("search", *common, "--mode", "quick")

    lists = []
    for mode, chunks in (("fast", "0-1"), ("fast", "2-3"), ("exact", "2-3")):
        lists.append(tmp_path / f"{mode}{chunks}.npz")
        assert swgpu("search", *common, "--mode", mode, "--chunks", chunks, "--save-hits", lists[-1], "--quiet")[0] == 0
    saved = load_hits(lists[0])
    assert saved.mode == "fast" and saved.meta["seed"]["params"] == {
        "span": 24, "xdrop": 16, "trigger": 52, "trigger_step": 3, "alphabet": SeedParams().alphabet, "shapes": list(DEFAULT_SHAPES),
    }  # fmt: skip
    assert load_hits(lists[2]).mode == "exact"
    rc, merged, err = swgpu("merge", lists[0], lists[1], "--db", bundled_db.path, *fmt)
    assert rc == 0, err
    assert "swgpu merge of a fast-mode search" in merged
    assert [r for r in merged.splitlines() if not r.startswith("#")] == fast_rows
    rc, _, err = swgpu("merge", lists[0], lists[2], "--db", bundled_db.path)
    assert rc == 2 and "merge lists of one search mode" in err
    rc, _, err = swgpu(
        "align", "--db", bundled_db.path, "--hits", lists[0], lists[1], "--align", "2", "--out", tmp_path / "a.jsonl", "--quiet"
    )
    assert rc == 0, err
    rc, _, err = swgpu(
        "report", "--db", bundled_db.path, "--hits", lists[0], lists[1], "--alignments", tmp_path / "a.jsonl", "--out", tmp_path / "r.html",
        "--quiet",
    )  # fmt: skip
    assert rc == 0, err
    html = (tmp_path / "r.html").read_text()
    assert (
        "search mode" in html
        and "fast: 14 spaced shapes of weight 6 in a 13-letter alphabet, span 24, xdrop 16, trigger 52 (+3 per doubling" in html
    )
    assert "that seeding selected (spaced seeds" in html

    damaged = dict(np.load(lists[0]))
    meta = json.loads(str(damaged["meta"]))
    damaged["meta"] = np.array(json.dumps({**meta, "mode": "turbo"}))
    np.savez(tmp_path / "bad.npz", **damaged)
    rc, _, err = swgpu("merge", tmp_path / "bad.npz", "--db", bundled_db.path, "--partial")
    assert rc == 2 and "meta key 'mode' is 'turbo'" in err


def test_fasta_of_seed_data_reads_back(tmp_path: Path) -> None:
    """The reference's data survive the FASTA round trip the GPU test also takes."""
    queries, subjects = seed_data(5)
    back = sw.read_queries(write_fasta(tmp_path / "q.fasta", queries, "q"))
    assert all(np.array_equal(a.codes, b) for a, b in zip(back, queries))
    db, order = seed_database(tmp_path, subjects)
    assert all(np.array_equal(db.codes(i), subjects[order[i]]) for i in range(db.n_sequences))


def test_seed_segments_cover_every_position_once():
    """The seed kernel's units: each subject's positions in runs of at most the segment, in order."""
    from swgpu_core.seed import seed_segments

    lengths = [1, 40, 41, 80, 200, 7]
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    got = seed_segments(offsets, 40)
    assert got.dtype == np.int32 and got.tolist() == [[0, 0], [1, 0], [2, 0], [2, 40], [3, 0], [3, 40],
                                                       [4, 0], [4, 40], [4, 80], [4, 120], [4, 160], [5, 0]]  # fmt: skip
    assert seed_segments(offsets).tolist() == [[k, 0] for k in range(len(lengths))]
