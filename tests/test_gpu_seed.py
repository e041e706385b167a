"""``--mode fast`` on the GPU equals it on the CPU: the candidate sets (the seed kernel against
the numba seeder and the brute-force reference), the scores of the candidates (the task-list
scan against pyopal), and whole fast searches (hits, scores, E-values), on bundled data and on
uniprot20k with the shared query sets (queries of up to 5,478 residues among them).
``devices=[0, 0]`` runs two workers on one GPU, so the cutting of a chunk between devices is
tested on a single-GPU machine.

Marked ``gpu``; on the device run with ``SWGPU_REQUIRE_GPU=1`` (the uniprot20k tests need the
shared data, ``SWGPU_SHARED``).
"""

from __future__ import annotations

import numpy as np
import pytest
from seed_reference import reference_candidates, seed_data, seed_database

import swgpu_core as sw
from swgpu_core.backends.cpu import CpuBackend
from swgpu_core.database import build_database
from swgpu_core.engine import CpuEngine, get_engine
from swgpu_core.fasta import EncodedSequence, read_sequences
from swgpu_core.scoring import Scoring
from swgpu_core.seed import SeedParams

pytestmark = pytest.mark.gpu

BLOSUM62 = Scoring.protein()


def records(codes: list[np.ndarray]) -> list[EncodedSequence]:
    return [EncodedSequence(f"q{k}", "", c) for k, c in enumerate(codes)]


def per_chunk(seeder, db) -> list[list[np.ndarray]]:
    out = []
    for chunk in db.chunks:
        found = seeder.candidates(db, chunk)
        for s in found:
            assert s.dtype == np.int64 and np.all(np.diff(s) > 0)
            assert s.size == 0 or (chunk.first <= s[0] and s[-1] < chunk.stop)
        out.append(found)
    return out


@pytest.fixture(scope="module")
def cuda():
    engine = get_engine("cuda")
    assert engine.kind == "cuda"
    return engine


@pytest.mark.parametrize(
    "params",
    [
        SeedParams(),
        SeedParams(span=-100, trigger=40),
        SeedParams(span=5, xdrop=4, trigger=30, alphabet="KREDQN C G H M F Y ILV W P STA", shapes=("1101", "111", "10011")),
    ],
    ids=["default", "all-extended", "other"],
)
def test_candidates_equal_the_reference(tmp_path, cuda, params):
    from swgpu_core.gpu.seed import CudaSeeder

    queries, subjects = seed_data(4)
    db, order = seed_database(tmp_path, subjects)
    want = reference_candidates(queries, subjects, BLOSUM62.matrix, params)
    seeder = CudaSeeder(BLOSUM62, records(queries), params)
    found = per_chunk(seeder, db)  # once: the seeder's counts add up over its calls
    got = [sorted(order[np.concatenate([c[k] for c in found])].tolist()) for k in range(len(queries))]
    assert got == [w.tolist() for w in want]
    assert seeder.counts["candidates"] == sum(w.size for w in want) and seeder.counts["hits"] > 0


@pytest.fixture(scope="module")
def u20k(shared, tmp_path_factory):
    db = build_database(
        shared("uniprot20k.fasta.gz"), tmp_path_factory.mktemp("db") / "u20k", chunk_residues=3_000_000, show_progress=False
    )
    queries = read_sequences(shared("uniprot_queries500.fasta.gz"))[:60] + read_sequences(shared("cudasw_queries.fasta"))
    assert max(len(q) for q in queries) > 4000
    return db, queries


@pytest.mark.parametrize("devices", [None, [0, 0]], ids=["one-device", "two-workers"])
def test_candidates_equal_the_cpu_on_uniprot20k(u20k, cuda, devices):
    """Every chunk, every query; ``[0, 0]``: two workers on one GPU, each seeding its share of a chunk."""
    db, queries = u20k
    cpu = CpuEngine().seeder(BLOSUM62, queries, SeedParams())
    gpu = cuda.seeder(BLOSUM62, queries, SeedParams(), devices=devices)
    for chunk in db.chunks:
        want, got = cpu.candidates(db, chunk), gpu.candidates(db, chunk)
        for q, w, g in zip(queries, want, got):
            assert np.array_equal(w, g), f"{q.id}: chunk {chunk.index}: cpu {w.size} candidates, gpu {g.size}, {np.setxor1d(w, g)[:5]}"
    assert gpu.counts["candidates"] == cpu.counts["candidates"] > 0


@pytest.mark.parametrize("long_pair_steps", [None, 1], ids=["default-long-pairs", "every-multipass-pair-long"])
@pytest.mark.parametrize("devices", [None, [0, 0]], ids=["one-device", "two-workers"])
def test_subset_scores_equal_the_cpu(u20k, cuda, devices, long_pair_steps, monkeypatch):
    """Random candidate sets (short and long subjects, empty ones), ties at the top-th score kept;
    the long pairs in the intra-task kernel's lists (with the rule's threshold at 1, every pair
    of a query wider than one inter-task pass)."""
    from swgpu_core import subset_tasks

    if long_pair_steps is not None:
        monkeypatch.setattr(subset_tasks, "LONG_PAIR_STEPS", long_pair_steps)
    db, queries = u20k
    chunk = db.chunks[-1]  # the longest subjects
    rng = np.random.default_rng(5)
    subsets = [np.unique(rng.integers(chunk.first, chunk.stop, int(rng.integers(0, 60)))) for _ in queries]
    subsets[0] = np.arange(chunk.first, chunk.stop)  # a whole chunk
    scanner = cuda.scanner(BLOSUM62, devices=devices)
    gpu = scanner.scan_subset(db, chunk, queries, subsets, 5)
    cpu = CpuBackend(BLOSUM62).scan_subset(db, chunk, queries, subsets, 5)
    for q, (gi, gs), (ci, cs) in zip(queries, gpu, cpu):
        assert np.array_equal(gi, ci) and np.array_equal(gs, cs), q.id
    assert sum(w.long_pairs for w in scanner.workers) > (200 if long_pair_steps == 1 else 20)  # 285 and 29 here


@pytest.mark.parametrize("devices", [None, [0, 0]], ids=["one-device", "two-workers"])
def test_fast_search_equals_the_cpu(u20k, devices):
    """The whole fast search, through the API (the stages overlapped over uniprot20k's four
    chunks, each worker's runs in one pipeline): the same hits and scores (so the same E-values)."""
    db, queries = u20k
    assert len(db.chunks) > 2
    cpu = sw.search(db, queries[:40], backend="cpu", mode="fast", top=20, show_progress=False)
    gpu = sw.search(db, queries[:40], backend="cuda", mode="fast", top=20, show_progress=False, devices=devices)
    assert gpu.seed is not None and gpu.seed.counts["candidates"] == cpu.seed.counts["candidates"]
    for c, g in zip(cpu.hits, gpu.hits):
        assert np.array_equal(c.subjects, g.subjects) and np.array_equal(c.scores, g.scores), c.query.id
    assert sum(len(h) for h in gpu.hits) > 0


@pytest.mark.parametrize("missing", ["past the last", "negative"])
def test_the_scanner_and_the_seeder_refuse_a_device_that_is_not_there(cuda, missing):
    """Both take their GPUs through ``checked_devices``: the same one-line error, naming the first missing device."""
    from swgpu_core.errors import BackendUnavailable
    from swgpu_core.gpu.device import device_count
    from swgpu_core.gpu.search import CudaBackend
    from swgpu_core.gpu.seed import CudaSeeder

    n = device_count()
    bad = n if missing == "past the last" else -1
    queries = records([np.arange(20, dtype=np.uint8)])
    for make in (lambda: CudaBackend(BLOSUM62, [0, bad]), lambda: CudaSeeder(BLOSUM62, queries, SeedParams(), [bad, 0])):
        with pytest.raises(BackendUnavailable, match=rf"^no CUDA device {bad} \(this machine has {n}\)$"):
            make()
