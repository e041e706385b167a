"""GCUPS of the align-long scan kernel on one GPU: one query against one long DNA target.

    python3 bench/bench_align_long.py --sizes 1000x100000000 100000x100000000 --out bench/results.jsonl
    python3 bench/bench_align_long.py --sizes 1000x100000000 --gpu-sections auto 1 8 32   # compare part counts

Random DNA (fixed seed) with a planted copy of the query; SSCA#1 scoring. The whole target
is one section, cut into parts that the GPU scans side by side as ``swgpu align-long``
does (``--gpu-sections``: ``auto`` is the command's default choice; overlap
``--max-alignment-length``). Each size is timed with CUDA events around the kernel after
a warm-up launch (compilation, module load) on a small table; ``--repeat`` launches per
size, the median is reported. GCUPS counts the table's cells, query x target; the cells
scanned again in the parts' overlaps are reported beside it (``overlap_cells``). One JSON
line per size and part count is appended to ``--out``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import subprocess
import time

import cupy as cp
import numpy as np

from swgpu_core.gpu.long_scan import LongScanKernel
from swgpu_core.long.endpoints import BandRule, select
from swgpu_core.long.gpu_plan import gpu_parts, parse_gpu_sections
from swgpu_core.long.sections import layout
from swgpu_core.scoring import Scoring


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", default=["1000x100000000", "100000x100000000"], help="QUERYxTARGET lengths")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default="bench/results.jsonl")
    ap.add_argument("--commit", default=None, help="commit to record (default: git HEAD)")
    ap.add_argument("--max-seconds", type=float, default=120.0, help="skip a size predicted to take longer than this")
    ap.add_argument(
        "--gpu-sections", nargs="+", default=["auto"], help="part counts to measure per size (auto or N, as the command's option)"
    )
    ap.add_argument("--max-alignment-length", type=int, default=10_000, help="overlap of the parts (default 10,000, the command's)")
    args = ap.parse_args()
    scoring = Scoring.nucleotide()
    kernel = LongScanKernel(scoring)
    gpu = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["name"].decode()
    rng = np.random.default_rng(1)
    warm_q = rng.integers(0, 4, 1000).astype(np.uint8)
    warm_t = rng.integers(0, 4, 1_000_000).astype(np.uint8)
    kernel.scan(warm_q, warm_t, layout(warm_t.size, 1, 0), BandRule(warm_q.size, 64), scoring)
    overlap = args.max_alignment_length
    rate = None  # cells/s of the last run, to predict the next
    for size in args.sizes:
        m, n = (int(x) for x in size.lower().split("x"))
        q = rng.integers(0, 4, m).astype(np.uint8)
        t = rng.integers(0, 4, n).astype(np.uint8)
        t[n // 2 : n // 2 + m] = q
        rule = BandRule(m, 64)
        for setting in args.gpu_sections:
            if rate and m * n / rate > args.max_seconds:
                print(f"{m:>9,} x {n:>13,} ({setting}): skipped (predicted {m * n / rate:.0f} s > --max-seconds)")
                continue
            parts = gpu_parts(m, layout(n, 1, overlap)[0], kernel.sms, parse_gpu_sections(setting))
            times = []
            for _ in range(args.repeat if m * n <= 2e12 else 1):
                found, timing = kernel.scan(q, t, parts, rule, scoring)
                times.append(timing.seconds)
            seconds = statistics.median(times)
            rate = m * n / seconds
            t0 = time.perf_counter()
            ends = select(found, rule, 200)
            select_s = time.perf_counter() - t0
            extra = timing.cells - m * n
            row = {
                "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "commit": args.commit or commit(), "gpu": gpu, "kind": "align-long", "query_len": m, "target_len": n,
                "gcups": rate / 1e9, "seconds": seconds, "repeats": len(times), "times": times,
                "gpu_sections": setting, "parts": timing.parts, "overlap": overlap, "overlap_cells": extra,
                "overlap_share": extra / (m * n), "scanned_gcups": timing.cells / seconds / 1e9,
                "scoring": scoring.describe(), "band_width": 64, "bands_found": int(found.bands.size),
                "best": [ends[0].score, ends[0].qend, ends[0].send] if ends else None, "select_seconds": select_s,
            }  # fmt: skip
            with open(args.out, "a") as fh:
                fh.write(json.dumps(row) + "\n")
            print(
                f"{m:>9,} x {n:>13,}: S={timing.parts:<4} {seconds:8.3f} s  {rate / 1e9:8.1f} GCUPS  overlap {extra / (m * n):.2%}"
                f"  (runs {', '.join(f'{x:.3f}' for x in times)}; best {row['best']})"
            )


if __name__ == "__main__":
    main()
