"""The CUDA backend's host code and kernels without a GPU: in a subprocess whose ``cupy`` is
``tests/cuda_emu/fake_cupy`` (numpy arrays, streams that do nothing; the kernels run through
the g++ emulation of their source).

The fast mode: ``swgpu_core.search(..., backend="cuda", mode="fast")`` runs the CUDA seeder,
the device split of a chunk (two workers) and the stages' pipeline (``CudaBackend.scan_seeded``)
exactly as on a device, and must equal the CPU fast search; ``CudaBackend.scan_subset`` must
equal the CPU ``scan_subset`` (whose long pairs, the
rule's threshold lowered, go to the intra-task kernel's lists). The exact search: the
pipelined queries of ``DeviceWorker.scan_steps`` (ring slots, both kernels on either side of
the length threshold, the 32-bit rescoring, the candidate selection) over the database kept
on the device and streamed in batches under a small memory budget, equal to the CPU search,
the database reaching the device only through the bounded ring of pinned staging buffers.
What the emulation cannot show is a race between streams: the GPU tests on a device do.
Skipped where g++ is missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
SCRIPT = """
import sys
import numpy as np
from pathlib import Path
import cupy
import swgpu_core as sw
from swgpu_core import subset_tasks
from swgpu_core.backends.cpu import CpuBackend
from swgpu_core.engine import get_engine
from swgpu_core.fasta import EncodedSequence
from swgpu_core.gpu.search import CudaBackend, DeviceWorker
from swgpu_core.scoring import Scoring
from seed_reference import seed_data, seed_database

assert hasattr(cupy, "CALLS"), "the fake cupy was not the one imported"
# the exact search's warm-up when a scanner is made (the planner's calibration, the selection
# kernels) has no emulation here and no part in the fast mode
DeviceWorker.prepare = lambda self: None
queries, subjects = seed_data(5, n_queries=5, n_subjects=100)
db, _order = seed_database(Path(sys.argv[1]), subjects, chunk_residues=6000)
assert len(db.chunks) > 1
records = [EncodedSequence(f"q{k}", "", c) for k, c in enumerate(queries)]
cpu = sw.search(db, records, backend="cpu", mode="fast", top=10)
# the GPU's fast search overlaps the stages (CudaBackend.scan_seeded): never one after the other
one_after_another = CudaBackend.scan_subset
CudaBackend.scan_subset = lambda *args, **kwargs: (_ for _ in ()).throw(AssertionError("scan_seeded fell back to scan_subset"))
for devices in (None, [0, 0]):
    gpu = sw.search(db, records, backend="cuda", mode="fast", top=10, devices=devices)
    assert gpu.backend == "cuda" and gpu.seed.counts["candidates"] == cpu.seed.counts["candidates"] > 0
    for c, g in zip(cpu.hits, gpu.hits):
        assert np.array_equal(c.subjects, g.subjects) and np.array_equal(c.scores, g.scores), (devices, c.query.id)
CudaBackend.scan_subset = one_after_another
chunk = db.chunks[-1]
rng = np.random.default_rng(2)
# every pair of a multi-pass query long here (the intra-task kernel's lists, a launch per block
# width: two queries wider than 512 residues, blocks of 4 and 8 warps, beside the seed data's),
# beside the one-pass queries' inter-task lists
subset_records = records + [EncodedSequence(f"long{n}", "", rng.integers(0, 20, n).astype(np.uint8)) for n in (700, 1100)]
subsets = [np.unique(rng.integers(chunk.first, chunk.stop, int(rng.integers(0, 30)))) for _ in records]
subsets[1] = np.zeros(0, np.int64)
subsets += [np.unique(rng.integers(chunk.first, chunk.stop, 4)) for _ in range(2)]
subset_tasks.LONG_PAIR_STEPS = 1
got = get_engine("cuda").scanner(Scoring.protein()).scan_subset(db, chunk, subset_records, subsets, 3)
want = CpuBackend(Scoring.protein()).scan_subset(db, chunk, subset_records, subsets, 3)
for (gi, gs), (wi, ws) in zip(got, want):
    assert np.array_equal(gi, wi) and np.array_equal(gs, ws)
widths = {subset_tasks.intra_task_warps(len(q)) for q, s in zip(subset_records, subsets) if s.size and subset_tasks.pair_kernels(np.array([len(q)]), np.zeros(1, np.int64), np.array([1 << 30]))[0][0]}
assert {4, 8} <= widths and cupy.CALLS["seed_candidates"] > 0 and cupy.CALLS["sw_inter_tasks"] > 0 and cupy.CALLS["sw_intra_tasks"] == len(widths)
# the packed kernels' overflow list: with a score limit of 32,767 - 60, every pair scoring 60 or
# more is listed, its packed score taken as lost (as a saturated one would be), and rescored by
# the 32-bit kernels; the scores stay the CPU's
class LowMark(Scoring):
    @property
    def max_score(self):
        return 32767 - 60
protein = Scoring.protein()
low = LowMark(**{f: getattr(protein, f) for f in protein.__dataclass_fields__})
launch = DeviceWorker._launch_tasks
def saturating(self, dev, shape, wide, tasks, profiles, stream):
    staging, overflow, count, host_scores, event = launch(self, dev, shape, wide, tasks, profiles, stream)
    if not wide:
        event.synchronize()
        host_scores[overflow[1 : 1 + int(count[0])].get()] = -7
    return staging, overflow, count, host_scores, event
DeviceWorker._launch_tasks = saturating
before = dict(cupy.CALLS)
got = get_engine("cuda").scanner(low).scan_subset(db, chunk, subset_records, subsets, 3)
DeviceWorker._launch_tasks = launch
for (gi, gs), (wi, ws) in zip(got, want):
    assert np.array_equal(gi, wi) and np.array_equal(gs, ws)
assert max(ws.max(initial=0) for _, ws in want) >= 60
assert cupy.CALLS["sw_inter_tasks"] + cupy.CALLS["sw_intra_tasks"] > before["sw_inter_tasks"] + before["sw_intra_tasks"] + len(widths) + 1
# the seeder's bits to pairs: only the words with a bit set unpacked; bits past the run's subjects
# (the last word's high ones) are none of its pairs
from swgpu_core.gpu import seed as gpu_seed
flags = rng.integers(0, 1 << 32, (7, 5), dtype=np.uint64).astype(np.uint32)
flags[rng.random(flags.shape) < 0.4] = 0
flags[2, 4] |= np.uint32(1 << 31)
got_q, got_s = gpu_seed._candidate_pairs(cupy.asarray(flags), 5, 150)
want_q, want_s = np.nonzero(np.unpackbits(flags.view(np.uint8), bitorder="little").reshape(7, 160)[:, :150])
assert np.array_equal(got_q, want_q) and np.array_equal(got_s, want_s) and got_s.max() < 150
assert [a.size for a in gpu_seed._candidate_pairs(cupy.zeros((3, 2), np.uint32), 2, 64)] == [0, 0]
# the command line's warm-up of a fast search runs through (tables of no queries, no bits collected)
from swgpu_core.gpu.search import warm_up_device
from swgpu_core.seed import SeedParams
calls = cupy.CALLS["seed_candidates"]
warm_up_device(0, SeedParams())
assert cupy.CALLS["seed_candidates"] == calls
print("ok", cupy.CALLS)
"""

EXACT = """
import sys
import threading
from dataclasses import fields, replace
from pathlib import Path
import numpy as np
import cupy
from swgpu_core.backends.cpu import CpuBackend
from swgpu_core.database import build_database
from swgpu_core.engine import CudaEngine, EngineChoice
from swgpu_core.fasta import read_sequences
from swgpu_core.gpu import search as gpu_search
from swgpu_core.gpu.search import BYTES_PER_RESIDUE, PIPELINE_DEPTH, CudaBackend, DeviceWorker
from swgpu_core.plan import H100_DEFAULT
from swgpu_core.scoring import Scoring
from swgpu_core.search import search

assert hasattr(cupy, "CALLS"), "the fake cupy was not the one imported"
DeviceWorker.prepare = lambda self: None  # the selection routines' first-use loading: nothing to load here
DeviceWorker.model = property(lambda self: replace(H100_DEFAULT, geometry=self.geometry))  # no calibration run


class LowMark(Scoring):
    # the packed kernels list every subject scoring 60 or more for the 32-bit rescoring
    @property
    def max_score(self) -> int:
        return 32767 - 60


work = Path(sys.argv[1])
rng = np.random.default_rng(11)
letters = np.array(list("ACDEFGHIKLMNPQRSTVWY"))
queries = ["".join(rng.choice(letters, n)) for n in (70, 150, 333, 40, 260, 120, 90, 210, 55)]  # more than PIPELINE_DEPTH
assert len(queries) > PIPELINE_DEPTH
seqs = ["".join(rng.choice(letters, int(n))) for n in (*range(1, 4), *rng.integers(4, 300, 50), *rng.integers(300, 700, 6))]
seqs += [q[: int(rng.integers(20, 300))] for q in queries]
(work / "db.fa").write_text("".join(f">s{i}\\n{s}\\n" for i, s in enumerate(seqs)))
(work / "q.fa").write_text("".join(f">q{i}\\n{s}\\n" for i, s in enumerate(queries)))
db = build_database(work / "db.fa", work / "db", chunk_residues=4000, show_progress=False)
records = read_sequences(work / "q.fa", db.alphabet)
protein = Scoring.protein()
scoring = LowMark(**{f.name: getattr(protein, f.name) for f in fields(protein)})
everyone = db.n_sequences  # every subject's score returned, so any wrong one shows
want = {top: search(db, records, protein, CpuBackend(protein), top=top, show_progress=False, score_stats=False) for top in (12, everyone)}
rescore, rescored = DeviceWorker._rescore, []
DeviceWorker._rescore = lambda self, dev, f: (rescore(self, dev, f), rescored.append(f.rescored))[0]
# host memory stays bounded: the database goes to the device only through each worker's ring of
# STAGING_BUFFERS pinned buffers, in pieces of at most STAGING_BYTES (made small here, so that a
# batch takes many pieces), whatever the batches' size
gpu_search.STAGING_BYTES = 4099
staging, h2d = [], []  # the ring's buffers (address, size); the sizes of the copies out of them
alloc_pinned, memcpy = cupy.cuda.alloc_pinned_memory, cupy.cuda.runtime.memcpyAsync


def counted_alloc(n):
    buf = alloc_pinned(n)
    if n == gpu_search.STAGING_BYTES:
        staging.append((buf.ptr, n))
    return buf


def counted_copy(dst, src, size, kind, stream):
    if kind == cupy.cuda.runtime.memcpyHostToDevice and any(a <= src < a + n for a, n in staging):
        h2d.append(size)
    return memcpy(dst, src, size, kind, stream)


cupy.cuda.alloc_pinned_memory, cupy.cuda.runtime.memcpyAsync = counted_alloc, counted_copy
d2d = []  # the sizes of the copies from one worker's GPU memory to another's


def counted_d2d(dst, src, size, kind, stream):
    if kind == cupy.cuda.runtime.memcpyDeviceToDevice:
        d2d.append(size)
    return counted_copy(dst, src, size, kind, stream)


cupy.cuda.runtime.memcpyAsync = counted_d2d
# streamed: batches scanned in one pipeline that runs on from batch to batch, with the upload of
# the next batch evicting the one before; one query (too few to reach the upload's step:
# selections taken early) and two workers sharing the batches; resident, two workers share the
# queries of the one batch, each holding the whole of it (uploaded from threads of their own)
streamed = BYTES_PER_RESIDUE * db.n_residues // 4
cases = [(None, 280, 12, None), (None, 280, everyone, None), (None, 10_000, everyone, None), (streamed, 280, everyone, None),
         (streamed, 280, everyone, [0, 0]), (None, 280, everyone, [0, 0])]
for budget, threshold, top, devices in cases:
    backend = CudaBackend(scoring, devices, threshold=threshold, memory_budget=budget)
    batches = backend.batches(db, db.chunks)
    assert (len(batches) > 1) == (budget is not None or devices is not None)  # resident on two workers: a share each
    if budget is not None:
        assert len(batches) >= 4
        chunk = db.chunks[-1]  # one chunk, synchronously (the benchmark's and the engine's path)
        for (gi, gs), (wi, ws) in zip(backend.scan_chunk(db, chunk, records, 7), CpuBackend(scoring).scan_chunk(db, chunk, records, 7)):
            assert np.array_equal(gi, wi) and np.array_equal(gs, ws)
    for some in (records, records[:1]) if budget and devices is None else (records,):
        got = search(db, some, scoring, backend, top=top, show_progress=False, score_stats=False)  # histograms: test_stats_gpu.py
        for g, w in zip(got.hits, want[top].hits):
            assert np.array_equal(g.subjects, w.subjects) and np.array_equal(g.scores, w.scores), (budget, threshold, top, g.query.id)
    assert all(w.resident_bytes <= w.budget for w in backend.workers)
    # sharing the queries, the second worker copies the first one's database GPU to GPU (here: the same GPU)
    shared = devices is not None and budget is None
    assert len(staging) == gpu_search.STAGING_BUFFERS * (1 if shared else len(backend.workers)), staging
    assert max(h2d) <= gpu_search.STAGING_BYTES < db.n_residues and sum(h2d) >= db.n_residues, (len(h2d), sum(h2d))
    assert (sum(d2d) >= db.n_residues) == shared, (shared, sum(d2d))
    staging.clear()
    h2d.clear()
    d2d.clear()
    assert sum(rescored) > 0, "no subject was rescored in 32 bits"
    rescored.clear()
# a GPU joins a search shared by several as soon as it is ready: here the second worker's set-up
# waits until the first one has launched a scan (for 20 s, in vain, were the search to wait for both)
launched, waited, prepared = threading.Event(), [], []
launch = DeviceWorker._launch


def launching(self, *args, **kwargs):
    launched.set()
    return launch(self, *args, **kwargs)


def preparing(self):
    prepared.append(self)
    if len(prepared) == 2:
        waited.append(launched.wait(20))


DeviceWorker._launch, DeviceWorker.prepare = launching, preparing
backend = CudaEngine(EngineChoice("cuda", None, 1)).scanner(scoring, devices=[0, 0], threshold=280)  # as a search makes it
got = search(db, records, scoring, backend, top=everyone, show_progress=False, score_stats=False)
assert waited == [True], "the search waited for every GPU before it started on the first"
assert len(backend.workers) == 2
for g, w in zip(got.hits, want[everyone].hits):
    assert np.array_equal(g.subjects, w.subjects) and np.array_equal(g.scores, w.scores), g.query.id
assert cupy.CALLS["sw_inter"] > 0 and cupy.CALLS["sw_intra"] > 0
print("ok", cupy.CALLS)
"""


UNUSED = """
from swgpu_core.gpu.search import CudaBackend, DeviceWorker
from swgpu_core.scoring import Scoring

DeviceWorker.__init__ = lambda self, device_id, *args: setattr(self, "device_id", device_id)
DeviceWorker.prepare = DeviceWorker.staging_ring = lambda self: None
backend = CudaBackend(Scoring.protein(), [0, 0])  # never scans: the second GPU's set-up never begins
print("ok", 1 + len(backend._later))
"""


RING = """
import cupy
from swgpu_core.gpu import search as gpu_search
from swgpu_core.gpu.search import CudaBackend, DeviceWorker, warm_up_device
from swgpu_core.plan import H100_DEFAULT
from swgpu_core.scoring import Scoring

loaded, pinned = [], []
DeviceWorker.model = property(lambda self: H100_DEFAULT)  # no calibration here
DeviceWorker._load_routines = lambda self: loaded.append(self.device_id)
alloc = cupy.cuda.alloc_pinned_memory


def counted(n):
    buf = alloc(n)
    if n == gpu_search.STAGING_BYTES:
        pinned.append(buf)
    return buf


cupy.cuda.alloc_pinned_memory = counted
ring = gpu_search.STAGING_BUFFERS
warm_up_device(0)
assert loaded == [0] and len(pinned) == ring, (loaded, len(pinned))
backend = CudaBackend(Scoring.protein())  # as the command's search makes it, after the warm-up
assert loaded == [0], "the search's worker loaded the selection routines again"
assert len(pinned) == ring and all(a is b for a, b in zip(backend.workers[0]._staging, pinned)), "the warm-up's ring was not the one used"
again = CudaBackend(Scoring.protein())  # the warm-up's ring is taken: a ring of its own
assert len(pinned) == 2 * ring and not any(a is b for a, b in zip(again.workers[0]._staging, backend.workers[0]._staging))
warm_up_device(0)  # a worker has its ring: none pinned for nobody
assert len(pinned) == 2 * ring and loaded == [0]
print("ok")
"""


def test_the_warm_up_hands_its_ring_and_routines_to_the_search(tmp_path):
    """The warm-up's pinned upload ring goes to the search's first worker, taken at its set-up
    (before the scan's clock), and the selection routines are loaded once per GPU: where the
    search's thread came first, both pinned a ring and loaded the routines at once."""
    assert _run(RING, tmp_path).strip() == "ok"


def test_an_unused_multi_gpu_backend_lets_the_process_end(tmp_path):
    """The second GPU's set-up waits (for the first GPU's scan) in a daemon thread: a backend
    that never scans, say after an error, must not keep the process from ending."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS / "cuda_emu" / "fake_cupy"), str(TESTS.parent), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", UNUSED], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.split() == ["ok", "2"], done.stdout + done.stderr


def _run(script: str, tmp_path: Path) -> str:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS / "cuda_emu" / "fake_cupy"), str(TESTS), str(TESTS.parent), env.get("PYTHONPATH", "")])
    env["SWGPU_CACHE"] = str(tmp_path / "cache")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], env=env, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    return done.stdout


def test_cuda_exact_search_on_emulated_kernels(tmp_path):
    if shutil.which("g++") is None:
        pytest.skip("g++ not installed")
    assert _run(EXACT, tmp_path).startswith("ok")


def test_cuda_fast_mode_on_emulated_kernels(tmp_path):
    if shutil.which("g++") is None:
        pytest.skip("g++ not installed")
    assert _run(SCRIPT, tmp_path).startswith("ok")
