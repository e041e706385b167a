"""Where align-long's GPU scan call spends what its kernel does not (one section per GPU).

On an H200 a 10^4 x 10^8 DNA scan's ``scan_sections`` took 0.96 s for 0.815 s of kernel
(bench/RESULTS.md, thirty-fourth session). This replays one section's steps in a fresh
process, each timed: the kernel's load (``LongScanKernel``), the parts' columns, the slot
and key buffers, the kernel, the keys' copy back and their compaction. The columns three
ways (``--modes``): ``host`` builds them on the host and uploads them (``PartBuffers``, as
before the thirty-fourth session), ``device`` uploads the target's span and lays them out
on the GPU (``device_columns``), ``locked`` does that from the target page-locked in place
(``page_locked``, as ``scan_sections`` does).

    python bench/long_scan_steps.py QUERY.fa TARGET.fa [--runs 3] [--modes host device locked]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import time


def child(query_path: str, target_path: str, mode: str) -> None:
    import cupy as cp
    import numpy as np

    from swgpu_core.alphabet import DNA
    from swgpu_core.gpu.long_scan import LongScanKernel, device_columns, kernel_matrix, padded_query, page_locked
    from swgpu_core.long.endpoints import DEFAULT_BAND_WIDTH, BandKeys, BandRule
    from swgpu_core.long.gpu_plan import WARPS_PER_BLOCK, PartBuffers, gpu_parts, launch_warps, part_table
    from swgpu_core.long.run import read_single
    from swgpu_core.long.sections import layout, max_alignment_span
    from swgpu_core.scoring import Scoring

    scoring = Scoring.nucleotide()
    query = read_single(query_path, DNA, "query").codes
    target = read_single(target_path, DNA, "target").codes
    cp.cuda.runtime.free(0)  # the context, as the warm-up makes it
    marks: dict[str, float] = {}
    t = time.perf_counter()

    def mark(name: str) -> None:
        nonlocal t
        cp.cuda.Device().synchronize()
        now = time.perf_counter()
        marks[name] = round(now - t, 4)
        t = now

    kernel = LongScanKernel(scoring)
    mark("kernel load")
    m = int(query.size)
    rule = BandRule(m, DEFAULT_BAND_WIDTH)
    (section,) = layout(len(target), 1, max_alignment_span(m, scoring))
    parts = [p for p in gpu_parts(m, section, kernel.sms, None) if p.own_hi > p.own_lo]
    if mode == "host":
        buffers = PartBuffers.build(target, parts, kernel.shape.pad)
        mark("part buffers (host)")
        columns, table = cp.asarray(buffers.columns), cp.asarray(buffers.table)
        mark(f"uploads ({buffers.columns.nbytes >> 20} MiB)")
    else:
        with page_locked(target) if mode == "locked" else contextlib.nullcontext(False) as locked:
            mark(f"page-locked: {locked}")
            table = part_table(parts)
            columns = device_columns(target, table, kernel.shape.pad, locked)
            mark(f"columns on the device ({columns.nbytes >> 20} MiB)")
        table = cp.asarray(table)
        mark("unlocked, table up")
        buffers = PartBuffers(np.empty(0, np.uint8), table.get())
    warps = launch_warps(m, int(buffers.blocks.sum()), len(parts), kernel.sms)
    n_slots = max(1, warps // len(parts))
    slots = cp.zeros(len(parts) * n_slots * m, cp.uint64)
    counter = cp.zeros(1, cp.int32)
    keys = cp.zeros(rule.n_bands(target.size), cp.uint64)
    mark(f"slots and keys ({slots.nbytes >> 20} MiB, {keys.nbytes >> 20} MiB)")
    q, mat = cp.asarray(padded_query(query, kernel.shape.pad)), cp.asarray(kernel_matrix(scoring, kernel.shape))
    args = (
        columns, table, np.int32(len(parts)), np.int32(buffers.blocks.max()), q, np.int32(m), mat,
        np.int32(scoring.first_gap_cost), np.int32(scoring.gap_extend), np.int32(rule.width), np.int32(n_slots), slots, counter, keys,
    )  # fmt: skip
    kernel.function((warps // WARPS_PER_BLOCK,), (32 * WARPS_PER_BLOCK,), args)
    mark("kernel")
    dense = keys.get()
    mark("keys back")
    BandKeys.from_dense(dense)
    mark("keys compacted")
    print(json.dumps({"mode": mode, "parts": len(parts), "warps": warps, "marks": marks}), flush=True)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("query")
    p.add_argument("target")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--modes", nargs="+", choices=("host", "device", "locked"), default=["host", "device", "locked"])
    p.add_argument("--child")
    a = p.parse_args()
    if a.child:
        child(a.query, a.target, a.child)
    else:
        for _ in range(a.runs):
            for mode in a.modes:
                out = subprocess.run([sys.executable, __file__, a.query, a.target, "--child", mode], capture_output=True, text=True)
                print(out.stdout.strip() or out.stderr[-2000:], flush=True)
