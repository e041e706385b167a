"""The CUDA backend's fast mode, host code and kernels, without a GPU: in a subprocess whose
``cupy`` is ``tests/cuda_emu/fake_cupy`` (numpy arrays; the seed and task-list kernels run
through the g++ emulation of their source), ``swgpu_core.search(..., backend="cuda",
mode="fast")`` runs the CUDA seeder, the device split of a chunk (two workers) and
``CudaBackend.scan_subset`` exactly as on a device, and must equal the CPU fast search and
the CPU ``scan_subset``. Skipped where g++ is missing.
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
from swgpu_core.backends.cpu import CpuBackend
from swgpu_core.engine import get_engine
from swgpu_core.fasta import EncodedSequence
from swgpu_core.scoring import Scoring
from seed_reference import seed_data, seed_database

assert hasattr(cupy, "CALLS"), "the fake cupy was not the one imported"
queries, subjects = seed_data(5, n_queries=5, n_subjects=100)
db, _order = seed_database(Path(sys.argv[1]), subjects, chunk_residues=6000)
assert len(db.chunks) > 1
records = [EncodedSequence(f"q{k}", "", c) for k, c in enumerate(queries)]
cpu = sw.search(db, records, backend="cpu", mode="fast", top=10)
for devices in (None, [0, 0]):
    gpu = sw.search(db, records, backend="cuda", mode="fast", top=10, devices=devices)
    assert gpu.backend == "cuda" and gpu.seed.counts["candidates"] == cpu.seed.counts["candidates"] > 0
    for c, g in zip(cpu.hits, gpu.hits):
        assert np.array_equal(c.subjects, g.subjects) and np.array_equal(c.scores, g.scores), (devices, c.query.id)
chunk = db.chunks[-1]
rng = np.random.default_rng(2)
subsets = [np.unique(rng.integers(chunk.first, chunk.stop, int(rng.integers(0, 30)))) for _ in records]
subsets[1] = np.zeros(0, np.int64)
got = get_engine("cuda").scanner(Scoring.protein()).scan_subset(db, chunk, records, subsets, 3)
want = CpuBackend(Scoring.protein()).scan_subset(db, chunk, records, subsets, 3)
for (gi, gs), (wi, ws) in zip(got, want):
    assert np.array_equal(gi, wi) and np.array_equal(gs, ws)
assert cupy.CALLS["seed_candidates"] > 0 and cupy.CALLS["sw_inter_tasks"] > 0
print("ok", cupy.CALLS)
"""


def test_cuda_fast_mode_on_emulated_kernels(tmp_path):
    if shutil.which("g++") is None:
        pytest.skip("g++ not installed")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS / "cuda_emu" / "fake_cupy"), str(TESTS), str(TESTS.parent), env.get("PYTHONPATH", "")])
    env["SWGPU_CACHE"] = str(tmp_path / "cache")
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], env=env, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert done.stdout.startswith("ok")
