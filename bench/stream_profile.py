#!/usr/bin/env python3
"""Where a streamed scan loses against the resident one: kernel time per device batch.

    python3 bench/stream_profile.py DB QUERIES.fasta [--budgets resident 1/8 1/32] [--inter-streams K ...] [--lag N ...] [--order interleave] [--json OUT]

For each memory budget (a fraction of 9 bytes per residue of the database) a fresh
:class:`~swgpu_core.gpu.search.CudaBackend` scans every query once to warm up, then once
timed; every query's flight on every batch is recorded from the worker's own CUDA events
(``DeviceWorker._account``: scan kernels, inter and intra kernels, the threshold and the
planner's prediction). Printed per batch: its subjects and length range, then the summed
kernel, inter and intra seconds and the predicted seconds over the queries, so a batch that
the GPU cannot fill shows as measured far above predicted. One JSON line per budget. Runs
against an older ``swgpu_core`` too (whose batches are one chunk). ``--inter-streams`` and
``--lag`` repeat every budget with the pipeline's constants (``INTER_STREAMS``; ``SELECT_LAG``
and the lags, depth and long streams that follow from it) set to each value, for A/B runs in
one process.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import sys
import time
from fractions import Fraction

import cupy as cp

from swgpu_core.database import Database
from swgpu_core.fasta import read_sequences
from swgpu_core.gpu import search as gpu_search
from swgpu_core.scoring import Scoring
from swgpu_core.search import search


def idle_gaps(rows: list[dict]) -> list[tuple[float, dict]]:
    """The times when no scan of the run was running (from the flights' spans, each from its
    first kernel's queueing point to its last scan's end): (seconds, the flight that began after
    the gap, with its place in its batch's order)."""
    places: dict[int, int] = {}
    for row in rows:  # in launch order
        row["place"] = places.get(row["batch"], 0)
        places[row["batch"]] = row["place"] + 1
    gaps, end = [], None
    for row in sorted(rows, key=lambda r: r["span"][0]):
        start, stop = row["span"]
        if end is not None and start > end:
            gaps.append((start - end, row))
        end = stop if end is None else max(end, stop)
    return gaps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("db")
    ap.add_argument("queries")
    ap.add_argument("--budgets", nargs="+", default=["resident", "1/8", "1/32"])
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--inter-streams", type=int, nargs="+", default=[0],
                    help="run every budget with gpu.search.INTER_STREAMS set to each value (0: as it is)")  # fmt: skip
    ap.add_argument("--lag", type=int, nargs="+", default=[0],
                    help="run every budget with gpu.search.SELECT_LAG set to each value and the pipeline's other constants after it (0: as it is)")  # fmt: skip
    ap.add_argument("--order", choices=["file", "interleave"], nargs="+", default=["file"],
                    help="run every budget with the queries in the file's order, and/or longest, shortest, second longest, ... (interleave)")  # fmt: skip
    ap.add_argument("--cprofile", type=int, default=0, help="print the host's N costliest functions (own time) of each streamed timed run")
    ap.add_argument("--busy-per-sm", type=int, nargs="+", default=[0],
                    help="run every budget with DeviceGeometry.busy_threads (the inter-task lanes' target) set to SMs x each value (0: as it is)")  # fmt: skip
    ap.add_argument("--timeline", action="store_true", help="print each query's intra-task scan span on batches of mostly long subjects")
    ap.add_argument("--json")
    args = ap.parse_args()
    db = Database(args.db)
    in_file, scoring = read_sequences(args.queries, db.alphabet), Scoring.protein()
    # device_batches.streamed_query_order's rule, written out: this script also runs against
    # older trees (device_check.sh's A/B), which lack that function
    by_length = sorted(in_file, key=len)
    orders = {"file": in_file, "interleave": [by_length[-1 - i // 2] if i % 2 == 0 else by_length[i // 2] for i in range(len(by_length))]}
    # budgets as fractions of 9 bytes per residue: the resident footprint until the boundary buffer
    # was halved (2026-11-25), so that a budget names the same memory in every session's runs
    full = 9 * db.n_residues
    rows: list[dict] = []
    account = gpu_search.DeviceWorker._account

    base: list = []  # the timed run's first scan's start event

    def recording(self, dev, f, *previous) -> None:
        account(self, dev, f, *previous)
        t = self.last_timing
        if not base:
            base.append(f.marks[0])
        span = (cp.cuda.get_elapsed_time(base[0], f.marks[0]) / 1e3, cp.cuda.get_elapsed_time(base[0], f.marks[-1]) / 1e3)
        intra_span = tuple(cp.cuda.get_elapsed_time(base[0], m) / 1e3 for m in f.marks[1:3])
        shapes = getattr(f, "shapes", None)
        runs = dev.batch.runs if hasattr(dev, "batch") else (dev.chunk,)
        rows.append({"batch": runs[0].first, "n": sum(r.n_sequences for r in runs), "residues": sum(r.n_residues for r in runs),
                     "q": f.query_length, "runs": len(runs), "lo": int(db.lengths[runs[0].first]), "hi": int(db.lengths[runs[-1].stop - 1]),
                     "s": t["seconds"], "inter": t["inter_seconds"], "intra": t["intra_seconds"], "pred": t["predicted_seconds"],
                     "thr": t["threshold"], "n_short": t["n_short"], "span": span, "intra_span": intra_span,
                     "intra_cols": shapes[1].cols if shapes else 0, "inter_cols": shapes[0].cols if shapes else 0})  # fmt: skip

    gpu_search.DeviceWorker._account = recording
    # the host's own time in the worker's methods (waits for events happen outside them, in the
    # driver, but a synchronising library call inside one counts here)
    host: dict[str, float] = {}

    def timed(name, method):
        def wrapper(*a, **k):
            t0 = time.perf_counter()
            try:
                return method(*a, **k)
            finally:
                host[name] = host.get(name, 0.0) + time.perf_counter() - t0

        return wrapper

    for name in ("_launch", "_rescore", "_select", "_fetch", "upload", "_forget_profiles"):
        setattr(gpu_search.DeviceWorker, name, timed(name, getattr(gpu_search.DeviceWorker, name)))
    out = []
    from swgpu_core import plan as plan_module

    busy_default = plan_module.DeviceGeometry.busy_threads
    settings = [(k, lag, order, busy, name) for k in args.inter_streams for lag in args.lag for order in args.order
                for busy in args.busy_per_sm for name in args.budgets]  # fmt: skip
    for k, lag, order, busy, name in settings:
        plan_module.DeviceGeometry.busy_threads = property(lambda g, b=busy: g.sms * b) if busy else busy_default
        queries = orders[order]
        if k:
            gpu_search.INTER_STREAMS = k
        if lag:
            gpu_search.SELECT_LAG, gpu_search.FETCH_LAG, gpu_search.LONG_STREAMS = lag, lag + 1, lag + 1
            gpu_search.PIPELINE_DEPTH = gpu_search.UPLOAD_AT = lag + 2
        print(
            f"== inter streams {getattr(gpu_search, 'INTER_STREAMS', 1)}, select lag {gpu_search.SELECT_LAG}, query order {order}, busy threads per SM {busy or 'as is'}"
        )
        budget = None if name == "resident" else int(full * Fraction(name))
        backend = gpu_search.CudaBackend(scoring, memory_budget=budget)
        search(db, queries, scoring, backend, top=args.top, show_progress=False)  # warm-up
        rows.clear()
        host.clear()
        base.clear()
        profiler = cProfile.Profile() if args.cprofile and name != "resident" else None
        if profiler is not None:
            profiler.enable()
        r = search(db, queries, scoring, backend, top=args.top, show_progress=False)
        if profiler is not None:
            profiler.disable()
            pstats.Stats(profiler).sort_stats("tottime").print_stats(args.cprofile)
        batches: dict[int, list[dict]] = {}
        for row in rows:
            batches.setdefault(row["batch"], []).append(row)
        print(f"== {name}: {len(batches)} batches, scan {r.seconds:.3f} s ({r.gcups:.0f} GCUPS), "
              f"kernels {sum(x['s'] for x in rows):.3f} s (inter {sum(x['inter'] for x in rows):.3f}, intra {sum(x['intra'] for x in rows):.3f}), "
              f"predicted {sum(x['pred'] for x in rows):.3f} s")  # fmt: skip
        print(f"   host busy {sum(host.values()):.3f} s: " + ", ".join(f"{k} {v:.3f}" for k, v in sorted(host.items())))
        idle = idle_gaps(rows)
        print(f"   no scan running: {sum(g for g, _ in idle):.3f} s in {len(idle)} gaps; before a batch's first scan "
              f"{sum(g for g, r in idle if r['place'] == 0):.3f} s; before scans of queries <= 600 residues "
              f"{sum(g for g, r in idle if r['place'] and r['q'] <= 600):.3f} s, of longer ones {sum(g for g, r in idle if r['place'] and r['q'] > 600):.3f} s")  # fmt: skip
        per_batch = []
        for first, fl in sorted(batches.items()):
            n = fl[0]["n"]
            b = {"first": first, "n": n, "residues": fl[0]["residues"], "runs": fl[0]["runs"], "min_len": fl[0]["lo"], "max_len": fl[0]["hi"],
                 "kernel_s": sum(x["s"] for x in fl), "inter_s": sum(x["inter"] for x in fl), "intra_s": sum(x["intra"] for x in fl),
                 "pred_s": sum(x["pred"] for x in fl), "thresholds": sorted({x["thr"] for x in fl})}  # fmt: skip
            per_batch.append(b)
            print(f"  {first:8d} n {n:7d} runs {b['runs']} res {b['residues']:10d} len {b['min_len']:6d}-{b['max_len']:6d} kernels {b['kernel_s']:.3f} "
                  f"(inter {b['inter_s']:.3f} intra {b['intra_s']:.3f}) predicted {b['pred_s']:.3f} thr {b['thresholds'][:4]}")  # fmt: skip
        for first, fl in sorted(batches.items()):
            if args.timeline and fl[0]["n_short"] < fl[0]["n"] // 2:  # mostly long subjects: each query's intra-task scan in time
                print(f"  batch {first}: per query (launch order), intra-task scan's start-end in ms from the run's first scan")
                for x in fl:
                    q, cols = x["q"], x["intra_cols"]
                    print(f"    query {q:5d} n_short {x['n_short']:6d} intra {cols // 256:2d} warps {-(-q // cols) if cols else 0} pass(es) "
                          f"{x['intra_span'][0] * 1e3:9.2f}-{x['intra_span'][1] * 1e3:9.2f} ({x['intra'] * 1e3:6.2f} ms)")  # fmt: skip
        if len(batches) == 1 and len(rows) <= 50:  # resident: per query, to see which scan is each query's critical path
            for x in rows:
                print(f"    query {x['q']:5d}: kernels {x['s'] * 1e3:7.2f} ms (inter {x['inter'] * 1e3:7.2f}, intra {x['intra'] * 1e3:7.2f}) "
                      f"predicted {x['pred'] * 1e3:7.2f} thr {x['thr']}")  # fmt: skip
        out.append({"budget": name, "busy_per_sm": busy, "inter_streams": getattr(gpu_search, "INTER_STREAMS", 1), "select_lag": gpu_search.SELECT_LAG, "batches": len(batches), "scan_s": r.seconds, "gcups": r.gcups,
                    "kernel_s": sum(x["s"] for x in rows), "host_s": dict(host), "order": order, "per_batch": per_batch})  # fmt: skip
        del backend
        sys.stdout.flush()
    if args.json:
        with open(args.json, "w") as fh:
            fh.writelines(json.dumps(o) + "\n" for o in out)


if __name__ == "__main__":
    main()
