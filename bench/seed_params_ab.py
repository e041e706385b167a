"""The fast search under several seed rules in one warm process (issue 15): per rule, the
search's scan seconds (median of interleaved rounds), its candidate stage's seconds (the seed
kernels'), its candidates and extensions, and the recall of its table (its top hits) against the exact search's pairs
with E <= 1e-5 and 1e-3, made first in the same process. One JSON line per rule.

    python bench/seed_params_ab.py DB QUERIES.fasta --points 20,16,52,3 25,16,52,3 [--rounds 3] [--top 500]

A point is SPAN,XDROP,TRIGGER,STEP (:class:`swgpu_core.seed.SeedParams`); the first is run first
in each round.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import swgpu_core as sw
from swgpu_core.fasta import read_sequences
from swgpu_core.seed import SeedParams

sys.path.insert(0, str(Path(__file__).resolve().parent))
from seed_recall import commit, hit_pairs, recall, reference  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("queries")
    parser.add_argument("--points", nargs="+", required=True, metavar="SPAN,XDROP,TRIGGER,STEP")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--top", type=int, default=500)
    args = parser.parse_args()
    db = sw.open_database(args.db)
    queries = read_sequences(args.queries)
    exact = sw.search(db, queries, backend="cuda", top=args.top, show_progress=False, keep_score_stats=False)
    ref = reference(db, exact.hits, sw.statistics(sw.Scoring.protein(), db))  # as bench/seed_recall.py
    points = {p: SeedParams(*(int(v) for v in p.split(","))) for p in args.points}
    found: dict[str, dict] = {}
    scans: dict[str, list[float]] = {p: [] for p in points}
    for round_ in range(args.rounds + 1):  # round 0: each rule's kernel compiled and loaded
        for point, params in points.items():
            result = sw.search(db, queries, backend="cuda", mode="fast", seed_params=params, top=args.top, show_progress=False)
            if round_ == 0:
                found[point] = {
                    "candidates": result.seed.counts["candidates"],
                    "extensions": result.seed.counts["extensions"],
                    **recall(ref, hit_pairs(result.hits)),
                }
            else:
                scans[point].append(round(result.seconds, 4))
                found[point].setdefault("seed_kernels", []).append(round(result.seed.seconds, 4))
    for point in points:
        print(
            json.dumps({
                "kind": "seed-params-ab", "commit": commit(), "point": point, "exact_scan": round(exact.seconds, 3),
                "scan_median": statistics.median(scans[point]), "scan": scans[point], **found[point],
            })
        )  # fmt: skip


if __name__ == "__main__":
    main()
