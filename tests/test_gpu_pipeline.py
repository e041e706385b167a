"""The pipelined CUDA scan (queries in flight, candidates selected on the GPU and copied back
asynchronously, batches streamed under a small memory budget) returns exactly the CPU's
candidates, ties included; the kernels load by their recorded lowered names.

Marked ``gpu``; needs only the bundled data (``resources/``).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from swgpu_core.backends.cpu import CpuBackend, candidates
from swgpu_core.fasta import EncodedSequence, read_sequences
from swgpu_core.scoring import Scoring

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def scoring() -> Scoring:
    return Scoring.protein()


@pytest.fixture(scope="module")
def queries(bundled_db, resources):
    found = read_sequences(resources / "queries.fasta", bundled_db.alphabet)
    # more queries than slots in flight, a repeated one (same profile, same plan), a short one
    return found + found[:2] + [EncodedSequence(found[0].id + "_head", "", found[0].codes[:40])]


@pytest.fixture(scope="module")
def cpu_scores(bundled_db, queries, scoring) -> list[np.ndarray]:
    """Every subject's CPU score per query, in database order."""
    cpu = CpuBackend(scoring)
    return [np.concatenate([cpu.scores(bundled_db, c, q) for c in bundled_db.chunks]) for q in queries]


def _same(got: list[tuple[np.ndarray, np.ndarray]], want: list[tuple[np.ndarray, np.ndarray]], what: str) -> None:
    assert len(got) == len(want)
    for k, ((gi, gs), (wi, ws)) in enumerate(zip(got, want)):
        assert np.array_equal(gi, wi) and np.array_equal(gs, ws), f"{what}, query {k}: {gi.size} candidates against {wi.size}"


@pytest.mark.parametrize("top", [1, 10, 300])
def test_candidates_equal_the_cpu(bundled_db, queries, cpu_scores, scoring, top):
    """Whole chunks resident: per chunk and query the same candidates in the same order (low
    scores at top 300 give many ties at the cut)."""
    from swgpu_core.gpu.search import CudaBackend

    cuda = CudaBackend(scoring)
    for chunk in bundled_db.chunks:
        got = cuda.scan_chunk(bundled_db, chunk, queries, top)
        want = [candidates(s[chunk.first : chunk.stop], chunk.first, top) for s in cpu_scores]
        _same(got, want, f"chunk {chunk.index}, top {top}")


def test_kth_largest_on_the_device(scoring):
    """The selection's radix select (kernels/select.cu) against numpy on arrays of a database's
    size: small scores (their high digits all equal), scores past 16 bits, all of int32, ties;
    k from 1 to n, many blocks, the worker's scratch reused from one call to the next."""
    import cupy as cp

    from swgpu_core.gpu.search import DeviceWorker

    worker = DeviceWorker(0, scoring, None, None, None)
    rng = np.random.default_rng(11)
    arrays = [
        rng.gamma(8.0, 5.0, 408_000).astype(np.int32),
        np.concatenate([rng.integers(0, 60, 1_000_000), rng.integers(32_768, 3_000_000, 50)]).astype(np.int32),
        rng.integers(-(2**31), 2**31 - 1, 30_000, dtype=np.int64).astype(np.int32),
        np.full(5_000, 7, np.int32),
    ]
    for scores in arrays:
        ordered = np.sort(scores)
        with cp.cuda.Device(0), worker.compute:  # the scores copied on the stream that selects from them
            device = cp.asarray(scores)
            for k in (1, 2, 10, 50, 51, 500, scores.size // 2, scores.size - 1):
                got = int(worker._kth_largest(device, k).get(stream=worker.compute)[0])
                assert got == int(ordered[-k]), (scores.size, k)


def test_streamed_batches_equal_the_cpu(bundled_db, queries, cpu_scores, scoring):
    """A budget of a sixteenth of the database: many batches, each uploaded while the previous
    one is scanned, every batch's candidates equal to the CPU's on the same subjects."""
    from swgpu_core.gpu.search import BYTES_PER_RESIDUE, CudaBackend

    budget = BYTES_PER_RESIDUE * bundled_db.n_residues // 16
    backend = CudaBackend(scoring, memory_budget=budget)
    batches = backend.batches(bundled_db, bundled_db.chunks)
    assert len(batches) >= 16
    results = backend.scan(bundled_db, bundled_db.chunks, queries, 25)
    for batch, got in zip(batches, results):
        subjects = batch.sequences()
        want = [candidates(s[subjects], 0, 25) for s in cpu_scores]
        want = [(subjects[i], v) for i, v in want]
        _same(got, want, f"batch {batch.key}")
    worker = backend.workers[0]
    assert worker.resident_bytes <= budget
    assert worker.kernel_seconds > 0 and worker.cells == sum(len(q) for q in queries) * bundled_db.n_residues


def test_batches_go_up_through_the_ring_the_driver_pinned(bundled_db, queries, cpu_scores, scoring, monkeypatch):
    """The upload ring that the driver pins beside the first context (``open_contexts(ring=True)``,
    ``cuMemHostAlloc``) is the one the first worker stages its batches through, and they arrive
    intact: streamed batches' candidates equal the CPU's."""
    import ctypes

    from swgpu_core import cuda_driver
    from swgpu_core.gpu import search as gpu_search
    from swgpu_core.per_device import PerDevice

    monkeypatch.setattr(cuda_driver, "_PINNED", {})
    monkeypatch.setattr(gpu_search, "_RINGS", PerDevice())
    cuda_driver.open_contexts([0], ring=True)
    gpu_search._RINGS.offer(0, lambda: gpu_search._pinned_ring(0))  # as the warm-up offers it
    backend = gpu_search.CudaBackend(scoring, memory_budget=gpu_search.BYTES_PER_RESIDUE * bundled_db.n_residues // 8)
    ring = backend.workers[0]._staging
    assert len(ring) == gpu_search.STAGING_BUFFERS and all(isinstance(b, ctypes.Array) for b in ring)
    assert all(ctypes.sizeof(b) == gpu_search.STAGING_BYTES for b in ring)
    batches = backend.batches(bundled_db, bundled_db.chunks)
    results = backend.scan(bundled_db, bundled_db.chunks, queries, 25)
    for batch, got in zip(batches, results):
        subjects = batch.sequences()
        want = [(subjects[i], v) for i, v in (candidates(s[subjects], 0, 25) for s in cpu_scores)]
        _same(got, want, f"batch {batch.key}")


def test_kernels_load_by_recorded_names(tmp_path, monkeypatch):
    """The first load records the lowered names; the next loads by them; a wrong record falls
    back to compiling (and is rewritten). The scan kernels' own name list, so that CuPy's
    cached binary (keyed by source and options only) keeps every instance."""
    from swgpu_core import kernel_abi
    from swgpu_core.gpu import kernels

    monkeypatch.setenv("SWGPU_CACHE", str(tmp_path))
    first = kernels.ScanKernels()  # an empty cache: compiles and records
    names = list(first._functions)
    source, options = kernels.kernel_source(), ("-std=c++17", *kernel_abi.compile_options())
    record = kernels._names_path(source, options, names)
    lowered = json.loads(record.read_text())
    assert sorted(lowered) == sorted(names) and all(v.startswith("_Z") for v in lowered.values())
    again = kernels.load_functions(source, options, names)
    assert {n: again[n].name for n in names} == lowered
    assert all(again[n].num_regs > 0 for n in names)
    record.write_text(json.dumps({n: "_Zno_such_kernel" for n in names}))
    fallback = kernels.load_functions(source, options, names)
    assert all(fallback[n].num_regs > 0 for n in names)
    assert json.loads(record.read_text()) == lowered


def test_a_search_imports_no_cupyx(bundled_db, resources):
    """A GPU search with score histograms (the fitted statistics' counting) never imports
    cupyx: CuPy's prefix sum and its array operators do on first use, and with it
    SciPy's sparse matrices, a part of every search's start-up that the search path avoids
    (swgpu_core.gpu.search._compact_kernel)."""
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import sys\n"
        "from swgpu_core import api\n"
        f"db = api.open_database({str(bundled_db.path)!r})\n"
        f"r = api.search(db, {str(resources / 'queries.fasta')!r}, backend='cuda', top=20, stats_mode='fit')\n"
        "assert sum(len(h) for h in r.hits) > 0\n"
        "print('cupyx' in sys.modules and 'cupyx.linalg' in sys.modules)\n"
    )
    root = Path(__file__).resolve().parent.parent
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "False"
