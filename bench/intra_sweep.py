"""The intra-task kernel's time per cell for R = 8 and R = 16 columns per lane (device bench).

``python bench/intra_sweep.py DBDIR QUERIES.fasta [--longest N]``: the database's N longest
subjects (the last streamed batches' kind) as one batch, every subject on the intra-task
kernel (threshold 1), each query scanned with blocks of R = 8 (as compiled) and R = 16 (compiled
here) columns per lane at every block width up to the query's one-pass width, CUDA events,
median of 3 after a warm-up; scores checked equal. One JSON line per query, then the totals
of the best width per R.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from intra_timing import longest_batch, time_intra  # noqa: E402

from swgpu_core.database import Database  # noqa: E402
from swgpu_core.fasta import read_sequences  # noqa: E402
from swgpu_core.gpu import kernels  # noqa: E402
from swgpu_core.gpu import search as gpu_search  # noqa: E402
from swgpu_core.scoring import Scoring  # noqa: E402

WIDE = tuple(kernels.Shape("intra", 16, 32, w) for w in (1, 2, 4, 8, 16))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("db")
    ap.add_argument("queries")
    ap.add_argument("--longest", type=int, default=548)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    kernels.INTRA_SHAPES = kernels.INTRA_SHAPES + WIDE
    db = Database(args.db)
    queries = read_sequences(args.queries, db.alphabet)
    backend = gpu_search.CudaBackend(Scoring.protein(), threshold=1)
    worker = backend.workers[0]
    dev = longest_batch(worker, db, args.longest)
    totals: dict[str, float] = {"R8": 0.0, "R16": 0.0}
    for q in queries:
        row: dict = {"length": len(q)}
        ref = None
        for r, shapes in (("R8", [s for s in kernels.INTRA_SHAPES if s.r == 8]), ("R16", list(WIDE))):
            best = None
            for shape in shapes:
                if shape.warps > 1 and shape.cols // 2 >= len(q):
                    continue  # a narrower block covers the query in one pass already
                t, scores = time_intra(worker, dev, q, shape, args.reps)
                if ref is None:
                    ref = scores
                assert np.array_equal(ref, scores), (q.id, shape)
                row[f"{r}x{shape.warps}"] = round(t, 5)
                best = t if best is None else min(best, t)
            row[r] = best
            totals[r] += best
        print(json.dumps(row), flush=True)
    cells = sum(len(q) for q in queries) * dev.batch.n_residues
    print(json.dumps({"kind": "intra-sweep", "device": worker.name, "subjects": args.longest, "residues": dev.batch.n_residues,
                      "intra_seconds_best_width": totals, "gcups": {k: cells / v / 1e9 for k, v in totals.items()}}))  # fmt: skip


if __name__ == "__main__":
    main()
