"""What the second GPU of a search pays before its first launch, step by step (issue 16).

A two-GPU search starts GPU 0 first and makes GPU 1's worker once GPU 0 scans
(gpu/search.py, ``CudaBackend``); GPU 1 joins about 0.2 s later, and half of that is lost
(bench/RESULTS.md, twenty-ninth session). This probe replays GPU 1's start in the order the
worker makes it, each step timed, while GPU 0 runs a kernel that keeps it busy:

    context   the primary context (``cudaFree(0)`` under the device)
    kernels   the scan kernels' module (``scan_kernels``)
    streams   the worker's 1 + INTER + LONG + 1 streams
    pinned    its two small pinned buffers
    zeros     its selection scratch (``cp.zeros``: CuPy's fill kernel)
    peer      ``deviceCanAccessPeer`` and ``deviceEnablePeerAccess`` to GPU 0
    copy      the database's residues (``--mib``) copied from GPU 0
    launch    the first kernel on GPU 1, and its end

``--ring MIB``: pinned host memory made on GPU 0 before GPU 1's context, as the upload ring
is (64 MiB in the product; 0: none). Each run is a fresh process; one JSON line per run.

    python bench/gpu1_start_probe.py drive --runs 3 --rings 0 64 1024
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import numpy as np


def child(ring_mib: int, mib: int) -> None:
    from swgpu_core import cuda_driver

    t0 = time.perf_counter()
    cuda_driver.initialise()
    marks = {"cuInit": time.perf_counter() - t0}
    import cupy as cp

    from swgpu_core.gpu.kernels import scan_kernels
    from swgpu_core.gpu.search import INTER_STREAMS, LONG_STREAMS

    def mark(name: str) -> None:
        marks[name] = round(time.perf_counter() - t0, 4)

    with cp.cuda.Device(0):
        cp.cuda.runtime.free(0)
        mark("gpu0 context")
        ring = [cp.cuda.alloc_pinned_memory(ring_mib << 20)] if ring_mib else []
        mark("gpu0 ring")
        db0 = cp.ones(mib << 20, np.uint8)
        spin = cp.RawKernel(
            r'extern "C" __global__ void spin(long long n) { long long t = clock64(); while (clock64() - t < n) {} }', "spin"
        )
        busy = cp.cuda.Stream(non_blocking=True)
        with busy:
            spin((132,), (128,), (np.int64(4_000_000_000),))  # about 2 s at 2 GHz
        mark("gpu0 busy")
    with cp.cuda.Device(1):
        cp.cuda.runtime.free(0)
        mark("context")
        scan_kernels(1, None)
        mark("kernels")
        streams = [cp.cuda.Stream(non_blocking=True) for _ in range(2 + INTER_STREAMS + LONG_STREAMS)]
        mark("streams")
        pinned = [cp.cuda.alloc_pinned_memory(n) for n in (64, 4096)]
        mark("pinned")
        with streams[0]:
            scratch = [cp.zeros(1 << 11, np.uint32), cp.zeros(2, np.uint32), cp.zeros(1, np.int32)]
        streams[0].synchronize()
        mark("zeros")
        if cp.cuda.runtime.deviceCanAccessPeer(1, 0):
            cp.cuda.runtime.deviceEnablePeerAccess(0)
        mark("peer")
        db1 = cp.empty(mib << 20, np.uint8)
        cp.cuda.runtime.memcpyPeerAsync(db1.data.ptr, 1, db0.data.ptr, 0, db1.nbytes, streams[-1].ptr)
        streams[-1].synchronize()
        mark("copy")
        with streams[1]:
            scratch[0] += 1
        streams[1].synchronize()
        mark("launch")
    del ring, pinned, scratch, db1
    print(json.dumps({"ring_mib": ring_mib, "mib": mib, "marks": marks}), flush=True)


def drive(runs: int, rings: list[int], mib: int) -> None:
    for run in range(runs):
        for ring in rings:
            out = subprocess.run(
                [sys.executable, __file__, "child", "--ring", str(ring), "--mib", str(mib)], capture_output=True, text=True
            )
            if out.returncode:
                sys.exit(out.stderr[-2000:])
            d = json.loads(out.stdout.strip().splitlines()[-1])
            m = d["marks"]
            names = list(m)
            steps = {b: round(m[b] - m[a], 4) for a, b in zip(names[names.index("gpu0 busy") :], names[names.index("gpu0 busy") + 1 :])}
            print(json.dumps({"run": run, "ring_mib": ring, "mib": mib, "cuInit": round(m["cuInit"], 4), "gpu0_context": m["gpu0 context"],
                              "gpu1_steps": steps, "gpu1_total": round(m["launch"] - m["gpu0 busy"], 4)}), flush=True)  # fmt: skip


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("what", choices=("drive", "child"))
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--rings", type=int, nargs="+", default=[0, 64, 1024])
    p.add_argument("--ring", type=int, default=64)
    p.add_argument("--mib", type=int, default=200)
    a = p.parse_args()
    if a.what == "child":
        child(a.ring, a.mib)
    else:
        drive(a.runs, a.rings, a.mib)
