"""GPU scores must equal the CPU backend's, exactly, on real data and on the edge cases.

Marked ``gpu``: skipped where CuPy or a CUDA device is missing. Run on an H100 with
``SWGPU_REQUIRE_GPU=1 pytest -m gpu``. The data comes from ``SWGPU_SHARED`` (default
``../shared``) through the ``shared`` fixture of ``conftest.py``.
"""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from swgpu_core.backends.cpu import CpuBackend
from swgpu_core.database import Database, build_database
from swgpu_core.fasta import EncodedSequence, read_sequences
from swgpu_core.scoring import Scoring

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def scoring() -> Scoring:
    return Scoring.protein()


@pytest.fixture(scope="module")
def cuda(scoring):
    from swgpu_core.gpu.search import CudaBackend

    return CudaBackend(scoring)


@pytest.fixture(scope="module")
def cpu(scoring):
    return CpuBackend(scoring)


def _compare(db: Database, queries: list[EncodedSequence], cuda, cpu) -> None:
    worker = cuda.workers[0]
    for chunk in db.chunks:
        dev = worker.upload(db, chunk)
        for q in queries:
            got = worker.scores(dev, q).get()
            want = cpu.scores(db, chunk, q)
            bad = np.flatnonzero(got != want)
            assert bad.size == 0, (
                f"{q.id} (len {len(q)}): {bad.size} of {got.size} scores differ, e.g. subject "
                f"{db.seq_id(chunk.first + bad[0])} len {db.lengths[chunk.first + bad[0]]}: "
                f"gpu {got[bad[0]]} cpu {want[bad[0]]}"
            )


@pytest.fixture(scope="module")
def uniprot20k(tmp_path_factory, shared) -> Database:
    return build_database(shared("uniprot20k.fasta.gz"), tmp_path_factory.mktemp("db") / "u20k", show_progress=False)


def test_classic_queries_uniprot20k(uniprot20k, cuda, cpu, shared):
    queries = read_sequences(shared("cudasw_queries.fasta"))
    assert len(queries) == 20
    _compare(uniprot20k, queries, cuda, cpu)


def test_uniprot_queries_uniprot20k(uniprot20k, cuda, cpu, shared):
    queries = read_sequences(shared("uniprot_queries500.fasta.gz"))[:50]
    _compare(uniprot20k, queries, cuda, cpu)


def test_edge_cases(tmp_path, cuda, cpu, shared):
    """Length-1 subjects, ambiguity codes and lower case, subjects straddling the
    threshold and far beyond it, a >10,000-residue query scoring above 32,767 against
    itself (16-bit overflow, rescored in 32 bits), several chunks."""
    rng = np.random.default_rng(11)
    letters = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWY", dtype=np.uint8)
    names, seqs = [], []
    with gzip.open(shared("uniprot20k.fasta.gz"), "rt") as fh:
        real = [line.strip() for line in fh if not line.startswith(">")][:4000]
    for i, s in enumerate(real[:600]):
        names.append(f"real{i}")
        seqs.append(s)
    for i, c in enumerate("ACWBZXUOJ*acwx"):
        names.append(f"one{i}")
        seqs.append(c)
    for i in range(40):
        n = int(rng.integers(2500, 4200))
        s = rng.choice(letters, n).tobytes().decode()
        names.append(f"thr{i}")
        seqs.append(s)
    amb = "".join(rng.choice(list("ACDEFGHIKLMNPQRSTVWYBZXUOJ*acdwyx"), 700))
    names.append("ambiguous")
    seqs.append(amb)
    long_seq = "".join(real[:200])[:40000]
    names += ["long40k", "long40k_copy"]
    seqs += [long_seq, long_seq[:20000]]
    fasta = tmp_path / "edge.fasta"
    fasta.write_text("".join(f">{n}\n{s}\n" for n, s in zip(names, seqs)))
    db = build_database(fasta, tmp_path / "edge", chunk_residues=100_000, show_progress=False)
    assert len(db.chunks) > 1
    qfasta = tmp_path / "q.fasta"
    big = long_seq[:12000]
    qfasta.write_text(f">big\n{big}\n>amb\n{amb[:300].lower()}\n>one\nW\n>mid\n{real[5]}\n")
    queries = read_sequences(qfasta)
    _compare(db, queries, cuda, cpu)
    from swgpu_core.search import search

    scoring = cpu.scoring
    a = search(db, queries, scoring, cuda, top=25, show_progress=False)  # chunks merged into one batch
    b = search(db, queries, scoring, cpu, top=25, show_progress=False)
    for x, y in zip(a.hits, b.hits):
        assert np.array_equal(x.subjects, y.subjects) and np.array_equal(x.scores, y.scores)
    worker = cuda.workers[0]
    chunk = db.chunks[-1]
    best = int(worker.scores(worker.upload(db, chunk), queries[0]).get().max())
    assert best > 32767, "the overflow path was not exercised"


@pytest.mark.parametrize("threshold", [1, 400, 100_000])
def test_forced_thresholds(uniprot20k, scoring, cpu, threshold, shared):
    """All subjects in the intra-task kernel, a split in the bulk, all in the inter-task kernel."""
    from swgpu_core.gpu.search import CudaBackend

    backend = CudaBackend(scoring, threshold=threshold)
    queries = [q for q in read_sequences(shared("cudasw_queries.fasta")) if len(q) in (144, 1000, 5478)]
    _compare(uniprot20k, queries, backend, cpu)


def test_search_api_top_hits_match_cpu(uniprot20k, cuda, cpu, scoring, shared):
    from swgpu_core.search import search

    queries = read_sequences(shared("cudasw_queries.fasta"))[:5]
    a = search(uniprot20k, queries, scoring, cuda, top=50, show_progress=False)
    b = search(uniprot20k, queries, scoring, cpu, top=50, show_progress=False)
    for x, y in zip(a.hits, b.hits):
        assert np.array_equal(x.subjects, y.subjects) and np.array_equal(x.scores, y.scores)


def test_memory_budget_streams(uniprot20k, scoring, cpu, shared):
    """A budget of a twentieth of the database: batches stream through, scores unchanged."""
    from swgpu_core.gpu.search import BYTES_PER_RESIDUE, CudaBackend
    from swgpu_core.search import search

    budget = BYTES_PER_RESIDUE * uniprot20k.n_residues // 20
    backend = CudaBackend(scoring, memory_budget=budget)
    assert len(backend.batches(uniprot20k, uniprot20k.chunks)) >= 20
    queries = read_sequences(shared("uniprot_queries500.fasta.gz"))[:5]
    a = search(uniprot20k, queries, scoring, backend, top=30, show_progress=False)
    b = search(uniprot20k, queries, scoring, cpu, top=30, show_progress=False)
    for x, y in zip(a.hits, b.hits):
        assert np.array_equal(x.subjects, y.subjects) and np.array_equal(x.scores, y.scores)
    worker = backend.workers[0]
    assert worker.resident_bytes <= budget


def test_two_devices_share_batches(uniprot20k, scoring, cpu, shared):
    """``--devices 0,1``: batches dealt to two workers that scan in parallel threads, hits
    merged; on a one-GPU machine both workers run on device 0 (the same code path)."""
    import cupy as cp

    from swgpu_core.gpu.search import BYTES_PER_RESIDUE, CudaBackend
    from swgpu_core.search import search

    devices = [0, 1] if cp.cuda.runtime.getDeviceCount() > 1 else [0, 0]
    backend = CudaBackend(scoring, devices, memory_budget=BYTES_PER_RESIDUE * uniprot20k.n_residues // 6)
    batches = backend.batches(uniprot20k, uniprot20k.chunks)
    assert len(batches) >= 6
    queries = read_sequences(shared("uniprot_queries500.fasta.gz"))[5:10]
    a = search(uniprot20k, queries, scoring, backend, top=30, show_progress=False)
    b = search(uniprot20k, queries, scoring, cpu, top=30, show_progress=False)
    for x, y in zip(a.hits, b.hits):
        assert np.array_equal(x.subjects, y.subjects) and np.array_equal(x.scores, y.scores)
    assert all(w.resident for w in backend.workers), "a worker got no batch"


def test_two_devices_share_queries(uniprot20k, scoring, cpu, shared):
    """``--devices 0,1`` with the database fitting each GPU: every GPU holds all of it and they
    share the queries (``CudaBackend.scan``); hits equal the CPU's. On a one-GPU machine both
    workers run on device 0 (the same code path)."""
    import cupy as cp

    from swgpu_core.gpu.search import CudaBackend
    from swgpu_core.search import search

    devices = [0, 1] if cp.cuda.runtime.getDeviceCount() > 1 else [0, 0]
    backend = CudaBackend(scoring, devices)
    queries = read_sequences(shared("uniprot_queries500.fasta.gz"))[10:30]
    a = search(uniprot20k, queries, scoring, backend, top=30, show_progress=False)
    b = search(uniprot20k, queries, scoring, cpu, top=30, show_progress=False)
    for x, y in zip(a.hits, b.hits):
        assert np.array_equal(x.subjects, y.subjects) and np.array_equal(x.scores, y.scores)


def test_overlapping_scans_with_changing_splits(uniprot20k, scoring, cpu, shared, monkeypatch):
    """Queries pipelined with their long subjects on several streams, while each query splits
    the subjects elsewhere: all in the intra-task kernel, all in the inter-task kernel, split
    in the bulk, in turn, and every scan multi-pass, so that consecutive scans write the same
    boundary rows from different streams and must wait for each other (``_claim``); a
    repeated query reuses a profile copied on another stream. Every score of every query
    comes back (top above the database size) and equals the CPU's."""
    from swgpu_core.gpu.search import CudaBackend, DeviceWorker
    from swgpu_core.plan import evaluate

    classic = {len(q): q for q in read_sequences(shared("cudasw_queries.fasta"))}
    queries = [classic[n] for n in (5478, 3005, 4548, 2504, 5147, 3564)] + [classic[5478], classic[144]]
    split = {5478: 1, 3005: 100_000, 4548: 2000, 2504: 1, 5147: 100_000, 3564: 400, 144: 1}
    monkeypatch.setattr(DeviceWorker, "plan", lambda self, dev, n, streamed=False: evaluate(dev.lengths, n, split[n], self.model))
    backend = CudaBackend(scoring)
    results = backend.scan(uniprot20k, uniprot20k.chunks, queries, 10**9)
    assert len(results) == 1, "the database is one resident batch"
    for q, (idx, val) in zip(queries, results[0]):
        want = np.concatenate([cpu.scores(uniprot20k, c, q) for c in uniprot20k.chunks])
        assert np.array_equal(idx, np.arange(uniprot20k.n_sequences)), q.id
        bad = np.flatnonzero(val != want)
        assert bad.size == 0, f"{q.id} (len {len(q)}, split {split[len(q)]}): {bad.size} scores differ"
