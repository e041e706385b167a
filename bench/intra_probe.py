"""One query's intra-task scan of a database's longest subjects, for a profiler (device bench).

``python bench/intra_probe.py DBDIR QUERIES.fasta --length 1000 --warps 4 [--longest 548] [--max-length L] [--reps 3]``:
the N longest subjects (of at most L residues) as one batch, all on the intra-task kernel (threshold 1), the query of
``QUERIES.fasta`` nearest to ``--length`` residues scanned with blocks of ``--warps`` warps:
one warm-up and ``--reps`` timed scans (CUDA events); prints the median seconds, the steps of
the longest block and the nanoseconds per step. Run it under ``ncu --kernel-name regex:sw_intra
--launch-skip 1`` to see where a step's time goes (streamed batches of long subjects run
this kernel alone, at a third of the inter-task kernel's cell rate: bench/RESULTS.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

try:  # the tree on PYTHONPATH (device_check.sh's A/B runs an older one with this script), else this one
    import swgpu_core  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from intra_timing import longest_batch, time_intra  # noqa: E402

from swgpu_core.database import Database  # noqa: E402
from swgpu_core.fasta import read_sequences  # noqa: E402
from swgpu_core.gpu import kernels  # noqa: E402
from swgpu_core.gpu import search as gpu_search  # noqa: E402
from swgpu_core.kernel_abi import intra_fill_steps  # noqa: E402
from swgpu_core.scoring import Scoring  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("db")
    ap.add_argument("queries")
    ap.add_argument("--length", type=int, default=1000)
    ap.add_argument("--warps", type=int, default=4)
    ap.add_argument("--longest", type=int, default=548)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument(
        "--max-length", type=int, help="the N longest subjects of at most this many residues (small cases, for compute-sanitizer)"
    )
    args = ap.parse_args()
    db = Database(args.db)
    queries = read_sequences(args.queries, db.alphabet)
    query = min(queries, key=lambda q: abs(len(q) - args.length))
    worker = gpu_search.CudaBackend(Scoring.protein(), threshold=1).workers[0]
    dev = longest_batch(worker, db, args.longest, args.max_length)
    shape = next(s for s in kernels.INTRA_SHAPES if s.warps == args.warps)
    seconds, _scores = time_intra(worker, dev, query, shape, args.reps)
    passes = -(-len(query) // shape.cols)
    steps = passes * (int(dev.rows[-1] - dev.rows[-2]) + intra_fill_steps(shape.warps))
    cells = len(query) * dev.batch.n_residues
    print(json.dumps({"kind": "intra-probe", "device": worker.name, "query_length": len(query), "warps": shape.warps,
                      "subjects": args.longest, "residues": dev.batch.n_residues, "blocks": -(-args.longest // 2),
                      "seconds": round(seconds, 5), "gcups": round(cells / seconds / 1e9, 1), "longest_block_steps": steps,
                      "ns_per_step": round(seconds / steps * 1e9, 1)}))  # fmt: skip


if __name__ == "__main__":
    main()
