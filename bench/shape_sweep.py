"""Per-query kernel time of the inter-task kernel's shapes (device bench): which pass width a query should get.

``python bench/shape_sweep.py DBDIR QUERIES.fasta[.gz] [--sample N]`` scans each of N queries
(spread over the length quantiles of the file) over the database once per inter-task shape
(columns per lane x lanes per group: 16x8 and 8x8 as the backend has them, and the narrower
16x4 and 8x4, compiled here for the experiment), the intra-task shape and the threshold as
the planner chooses them, timed with CUDA events (one warm-up, median of 3), and checks that
every shape gives the same scores. Prints one JSON line: per query its length and seconds per
shape, and the totals of the backend's rule against the per-query best.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from swgpu_core.database import Database  # noqa: E402
from swgpu_core.fasta import read_sequences  # noqa: E402
from swgpu_core.gpu import kernels  # noqa: E402
from swgpu_core.gpu import search as gpu_search  # noqa: E402
from swgpu_core.scoring import Scoring  # noqa: E402

SHAPES = {"16x8": kernels.Shape("inter", 16, 8), "8x8": kernels.Shape("inter", 8, 8),
          "16x4": kernels.Shape("inter", 16, 4), "8x4": kernels.Shape("inter", 8, 4)}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("db")
    ap.add_argument("queries")
    ap.add_argument("--sample", type=int, default=40)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    default_pick = kernels.pick_shapes
    kernels.INTER_SHAPES = kernels.INTER_SHAPES + (SHAPES["16x4"], SHAPES["8x4"])  # compiled with the others
    db = Database(args.db)
    queries = read_sequences(args.queries, db.alphabet)
    order = np.argsort([len(q) for q in queries], kind="stable")
    picks = order[np.unique(np.linspace(0, len(order) - 1, args.sample).round().astype(int))]
    backend = gpu_search.CudaBackend(Scoring.protein())
    worker = backend.workers[0]
    devs = [worker.upload(db, b) for b in backend.batches(db, db.chunks)]
    rows = []
    for qi in picks:
        q = queries[int(qi)]
        row: dict = {"length": len(q)}
        ref = None
        for name, shape in SHAPES.items():
            gpu_search.pick_shapes = lambda ql, n, bt, ic, s=shape: (s, default_pick(ql, n, bt, ic)[1])
            times = []
            for rep in range(args.reps + 1):
                total = 0.0
                scores = []
                for dev in devs:
                    scores.append(worker.scores(dev, q).get())
                    total += worker.last_timing["inter_seconds"]
                if rep:
                    times.append(total)
            got = np.concatenate(scores)
            if ref is None:
                ref = got
            assert np.array_equal(ref, got), (q.id, name)
            row[name] = float(np.median(times))
        gpu_search.pick_shapes = default_pick
        row["rule"] = default_pick(len(q), 10**6, worker.geometry.busy_threads, 256)[0]
        row["rule"] = f"{row['rule'].r}x{row['rule'].lanes}"
        rows.append(row)
        print(json.dumps(row), flush=True)
    totals = {name: sum(r[name] for r in rows) for name in SHAPES}
    rule = sum(r[r["rule"]] for r in rows)
    best = sum(min(r[n] for n in SHAPES) for r in rows)
    print(json.dumps({"kind": "shape-sweep", "device": worker.name, "queries": len(rows), "inter_seconds": totals,
                      "rule_seconds": rule, "best_seconds": best, "scores_equal": True}))  # fmt: skip


if __name__ == "__main__":
    main()
