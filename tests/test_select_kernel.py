"""The candidate selection's radix select (``kernels/select.cu``) without a GPU: the host code
of :meth:`swgpu_core.gpu.search.DeviceWorker._kth_largest` in a subprocess whose ``cupy`` is the
emulated one (``tests/cuda_emu/fake_cupy``: the kernels' source compiled with g++ against
``cuda_emu.h``, lanes interleaved in a random order between warp operations), against numpy's
k-th largest: ties, negative scores, one distinct value, the extremes of int32, scores past
16 bits, k from 1 to n, several blocks. Skipped where g++ is missing; the GPU tests run the
same on a device (tests/test_gpu_pipeline.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from emulator import require_gxx

TESTS = Path(__file__).resolve().parent
SCRIPT = """
import numpy as np
import cupy
from swgpu_core.gpu.search import DeviceWorker
from swgpu_core.scoring import Scoring

assert hasattr(cupy, "CALLS"), "the fake cupy was not the one imported"
worker = DeviceWorker(0, Scoring.protein(), None, None, None)
rng = np.random.default_rng(5)
cases = [
    (rng.gamma(8.0, 5.0, 3000).astype(np.int32), (1, 10, 2999)),  # small scores: high digits all equal
    (rng.integers(-2**31, 2**31 - 1, 700, dtype=np.int64).astype(np.int32), (1, 350, 699)),
    (np.full(100, 42, np.int32), (1, 50)),
    (np.array([2**31 - 1, -2**31, 0, -1, 1, 2**31 - 1], np.int32), (1, 2, 3, 5)),
    (np.concatenate([rng.integers(0, 40, 5000), rng.integers(32768, 200000, 7)]).astype(np.int32), (1, 7, 8, 100)),
]
for scores, ks in cases:
    for k in ks:
        got = int(worker._kth_largest(cupy.asarray(scores), k).get()[0])
        want = int(np.sort(scores)[-k])
        assert got == want, (scores.size, k, got, want)
assert cupy.CALLS["select_count"] > 0 and cupy.CALLS["select_pick"] > 0
print("ok", cupy.CALLS["select_count"], cupy.CALLS["select_pick"])
"""


def test_kth_largest_equals_numpy():
    require_gxx()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS / "cuda_emu" / "fake_cupy"), str(TESTS), str(TESTS.parent)]))
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.startswith("ok ")
