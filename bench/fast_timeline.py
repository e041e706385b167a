"""The GPU's timeline of one warm fast search (issue 15): run under Nsight Systems, which records
only between the profiler's start and stop around the measured search; ``--analyze`` then reads
the kernel and copy trace (``nsys stats -r cuda_gpu_trace -f csv``) and prints, as one JSON line,
the window from the first to the last GPU activity, the time some kernel ran (the union of their
intervals) and each kernel family's own seconds, and the longest gaps with no kernel running.

    nsys profile --capture-range=cudaProfilerApi --capture-range-end=stop -t cuda -o R python bench/fast_timeline.py DB QUERIES.fasta
    nsys stats -r cuda_gpu_trace -f csv -o R R.nsys-rep; python bench/fast_timeline.py --analyze R_cuda_gpu_trace.csv
"""

from __future__ import annotations

import csv
import json
import re
import sys
from collections import defaultdict


def search(db_path: str, queries_path: str) -> None:
    import cupy as cp

    import swgpu_core as sw
    from swgpu_core.fasta import read_sequences

    db = sw.open_database(db_path)
    queries = read_sequences(queries_path)
    sw.search(db, queries, backend="cuda", mode="fast", top=500, show_progress=False)  # warm-up
    cp.cuda.runtime.deviceSynchronize()
    cp.cuda.profiler.start()
    result = sw.search(db, queries, backend="cuda", mode="fast", top=500, show_progress=False)
    cp.cuda.runtime.deviceSynchronize()
    cp.cuda.profiler.stop()
    print(json.dumps({"kind": "fast-timeline-search", "scan": round(result.seconds, 4), "candidate_stage": round(result.seed.seconds, 4)}))


def analyze(trace: str) -> None:
    with open(trace) as f:
        rows = list(csv.DictReader(f))
    start_key = next(k for k in rows[0] if k.startswith("Start"))
    dur_key = next(k for k in rows[0] if k.startswith("Duration"))
    spans = [(int(r[start_key]), int(r[start_key]) + int(r[dur_key]), r["Name"]) for r in rows]
    kernels = sorted((a, b, n) for a, b, n in spans if not n.startswith("[CUDA"))
    first, last = min(a for a, _, _ in spans), max(b for _, b, _ in spans)
    own: dict[str, float] = defaultdict(float)
    for a, b, n in kernels:
        own[re.split(r"[<(]", n)[0]] += (b - a) / 1e9
    busy, gaps, end = 0, [], first
    for a, b, _ in kernels:
        if a > end:
            gaps.append(((a - end) / 1e6, (end - first) / 1e6))
        if b > end:
            busy += b - max(a, end)
            end = b
    copies = sum(b - a for a, b, n in spans if n.startswith("[CUDA")) / 1e9
    print(json.dumps({"kind": "fast-timeline", "window": round((last - first) / 1e9, 4), "kernel_busy": round(busy / 1e9, 4),
                      "kernel_seconds": {k: round(v, 4) for k, v in sorted(own.items(), key=lambda kv: -kv[1])}, "copies": round(copies, 4),
                      "gaps_ms_at_ms": [(round(g, 2), round(t, 1)) for g, t in sorted(gaps, reverse=True)[:12]]}))  # fmt: skip


if __name__ == "__main__":
    if sys.argv[1] == "--analyze":
        analyze(sys.argv[2])
    else:
        search(sys.argv[1], sys.argv[2])
