#!/usr/bin/env python3
"""What a query's candidate selection costs the GPU and the host (device bench).

``python3 bench/select_probe.py [--sizes 30000 540000] [--top 10] [--reps 50]``: for a batch of
``n`` subjects' scores (int32, like a scan's: mostly 20-60, a few high), the selection as
``DeviceWorker._select`` queues it, the top-th best score found two ways (``radix``: the
worker's radix select, ``kernels/select.cu``; ``partition``: ``cupy.partition``, which it
replaced), then the compaction; each timed three ways: GPU time between CUDA events; the host's
time to queue it on an idle stream; and the host's time to queue it behind a 20 ms spin kernel
on the same stream. Where the last is about 20 ms, the call waits for the stream (a
synchronising library call) and so stalls the pipeline that queues the next query's scans.
The candidates found are checked against numpy's. One JSON line per size and way.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import cupy as cp
import numpy as np

try:  # the tree on PYTHONPATH, else this one
    import swgpu_core  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from swgpu_core.gpu import search as gpu_search  # noqa: E402
from swgpu_core.scoring import Scoring  # noqa: E402

_SPIN = cp.RawKernel(
    r"""extern "C" __global__ void spin(long long cycles) {
    long long t0 = clock64(); while (clock64() - t0 < cycles) { }
}""",
    "spin",
)


def select(
    worker: gpu_search.DeviceWorker, how: str, scores: cp.ndarray, top: int, index: cp.ndarray, value: cp.ndarray, count: cp.ndarray
) -> None:
    """The selection of gpu.search.DeviceWorker._select (without the histogram), the top-th best
    score found ``how``."""
    n = scores.size
    kth = worker._kth_largest(scores, top) if how == "radix" else cp.partition(scores, n - top)[n - top : n - top + 1]
    count.fill(0)
    gpu_search._compact_kernel()(scores, kth, index, value, count)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[30000, 540000])
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--reps", type=int, default=50)
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    worker = gpu_search.DeviceWorker(0, Scoring.protein(), None, None, None)
    stream = cp.cuda.Stream(non_blocking=True)
    clock_hz = cp.cuda.runtime.getDeviceProperties(0)["clockRate"] * 1e3
    for n in args.sizes:
        host_scores = rng.gamma(8.0, 5.0, n).astype(np.int32)
        host_scores[rng.choice(n, 5, replace=False)] = rng.integers(500, 3000, 5)
        expect = int((host_scores >= np.sort(host_scores)[-args.top]).sum())
        for how in ("radix", "partition"):
            with stream:
                scores = cp.asarray(host_scores)
                index, value, count = cp.empty(n, np.int32), cp.empty(n, np.int32), cp.zeros(1, np.int32)
                gpu, idle, behind = [], [], []
                for rep in range(args.reps + 2):
                    stream.synchronize()
                    a, b = cp.cuda.Event(), cp.cuda.Event()
                    t0 = time.perf_counter()
                    a.record(stream)
                    select(worker, how, scores, args.top, index, value, count)
                    b.record(stream)
                    t1 = time.perf_counter()
                    b.synchronize()
                    if rep >= 2:
                        gpu.append(cp.cuda.get_elapsed_time(a, b) / 1e3)
                        idle.append(t1 - t0)
                    _SPIN((1,), (1,), (np.int64(0.02 * clock_hz),))
                    t0 = time.perf_counter()
                    select(worker, how, scores, args.top, index, value, count)
                    t1 = time.perf_counter()
                    if rep >= 2:
                        behind.append(t1 - t0)
                stream.synchronize()
                found = int(count.get()[0])
            print(json.dumps({"kind": "select-probe", "kth": how, "n": n, "top": args.top, "candidates": found, "expected": expect,
                              "gpu_us": round(statistics.median(gpu) * 1e6, 1), "host_idle_us": round(statistics.median(idle) * 1e6, 1),
                              "host_behind_20ms_us": round(statistics.median(behind) * 1e6, 1)}))  # fmt: skip
            assert found == expect, (how, n, found, expect)


if __name__ == "__main__":
    main()
