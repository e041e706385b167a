"""The seed kernel alone, per chunk of a database (issue 15): its CUDA-event seconds (a warm-up,
then the median of ``--reps``), the candidates it finds and its counters, and its registers per
thread, as one JSON line. For A/B runs of two trees in one call (run it with each tree first on
PYTHONPATH); the candidates must be the same.

    python bench/seed_ab.py DB QUERIES.fasta [--reps 3] [--tag NAME]     (one GPU)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics

import numpy as np

import swgpu_core as sw
from swgpu_core.engine import get_engine
from swgpu_core.fasta import read_sequences
from swgpu_core.scoring import Scoring
from swgpu_core.seed import SeedParams


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("queries")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--tag", default="")
    args = parser.parse_args()
    db = sw.open_database(args.db)
    queries = read_sequences(args.queries)
    seeder = get_engine("cuda").seeder(Scoring.protein(), queries, SeedParams())
    digest = hashlib.sha256()
    per_chunk = []
    for chunk in db.chunks:
        before = dict(seeder.counts)
        found = seeder.candidates(db, chunk)  # warm-up, and the candidates
        for f in found:
            digest.update(np.asarray(f, np.int64).tobytes())
        counts = {k: v - before[k] for k, v in seeder.counts.items()}
        times = []
        for _ in range(args.reps):
            seeder.candidates(db, chunk)
            times.append(seeder.devices[0].last_timing["seconds"])
        per_chunk.append({"chunk": chunk.index, "seconds": round(statistics.median(times), 4), "counts": counts})
    print(json.dumps({"kind": "seed-ab", "tag": args.tag, "seconds": round(sum(c["seconds"] for c in per_chunk), 4),
                      "registers": int(seeder.devices[0].function.num_regs), "candidates": digest.hexdigest()[:16],
                      "chunks": per_chunk}))  # fmt: skip


if __name__ == "__main__":
    main()
