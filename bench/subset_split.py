"""Where the exact scoring of the fast mode's candidates spends its time on the long subjects
(issue 15): ``scan_subset`` of bench200M's two chunks of the longest subjects, with the default
seeds' candidates of all queries, then of the queries up to 512 residues (one pass of the task
kernel's widest shape), longer than 512, longer than 2,048; best of 3 after a warm-up, with the
pairs, cells and GCUPS of each. For comparison, the exact scan (``scan_chunk``: the intra-task
kernel for such subjects) of the queries longer than 2,048 residues over the whole chunk.

With ``--steps``, instead: the candidates' scoring of every chunk (best of 3) for each value of
``subset_tasks.LONG_PAIR_STEPS`` (0: no long pairs, everything in the inter-task lists), with the
long pairs' count and the cells scored, as JSON lines.

    python bench/subset_split.py DB QUERIES.fasta [--steps 0 32768 65536 ...]     (one GPU)
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

import numpy as np

import swgpu_core as sw
from swgpu_core import subset_tasks
from swgpu_core.engine import get_engine
from swgpu_core.fasta import read_sequences
from swgpu_core.scoring import Scoring
from swgpu_core.seed import SeedParams

SPLITS: dict[str, Callable[[int], bool]] = {
    "all": lambda n: True,
    "q<=512": lambda n: n <= 512,
    "q>512": lambda n: n > 512,
    "q>2048": lambda n: n > 2048,
}


def timed(scanner, db, chunk, queries, subsets: list[np.ndarray]) -> float:
    """Best of 3 wall seconds of ``scan_subset`` after a warm-up."""
    scanner.scan_subset(db, chunk, queries, subsets, 500)
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        scanner.scan_subset(db, chunk, queries, subsets, 500)
        best = min(best, time.perf_counter() - t)
    return best


def steps_sweep(db, scanner, seeder, queries, values: list[int]) -> None:
    """Per LONG_PAIR_STEPS value, every chunk's candidates scored: seconds (best of 3), the last run's
    GPU seconds (from the first launch's start to the last kernel's end), pairs, long pairs."""
    found = {chunk.index: seeder.candidates(db, chunk) for chunk in db.chunks}
    for value in values:
        subset_tasks.LONG_PAIR_STEPS = value or 1 << 62
        per_chunk = []
        for chunk in db.chunks:
            seconds = timed(scanner, db, chunk, queries, found[chunk.index])
            timing = scanner.workers[0].last_timing
            per_chunk.append({"chunk": chunk.index, "seconds": round(seconds, 4), "kernels": round(timing["seconds"], 4), "pairs": timing["pairs"],
                              "long_pairs": timing["long_pairs"], "cells": timing["cells"]})  # fmt: skip
        total = sum(c["seconds"] for c in per_chunk)
        print(
            json.dumps({"kind": "subset-long-pairs", "long_pair_steps": value, "seconds": round(total, 4), "chunks": per_chunk}), flush=True
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("queries")
    parser.add_argument("--steps", type=int, nargs="+", help="LONG_PAIR_STEPS values to time (0: none)")
    args = parser.parse_args()
    db = sw.open_database(args.db)
    queries = read_sequences(args.queries)
    engine, scoring = get_engine("cuda"), Scoring.protein()
    scanner = engine.scanner(scoring)
    seeder = engine.seeder(scoring, queries, SeedParams())
    if args.steps:
        steps_sweep(db, scanner, seeder, queries, args.steps)
        return
    lengths = np.asarray(db.lengths, np.int64)
    for chunk in db.chunks[-2:]:
        found = seeder.candidates(db, chunk)
        for name, keep in SPLITS.items():
            subsets = [s if keep(len(q)) else np.zeros(0, np.int64) for q, s in zip(queries, found)]
            seconds = timed(scanner, db, chunk, queries, subsets)
            cells = sum(len(q) * int(lengths[s].sum()) for q, s in zip(queries, subsets))
            pairs = sum(s.size for s in subsets)
            print(
                f"chunk {chunk.index} {name}: {seconds:.4f} s, {pairs} pairs, {cells / 1e9:.2f} G cells, {cells / seconds / 1e9:.1f} GCUPS"
            )
        long = [q for q in queries if len(q) > 2048]
        scanner.scan_chunk(db, chunk, long, 500)
        best = float("inf")
        for _ in range(3):
            t = time.perf_counter()
            scanner.scan_chunk(db, chunk, long, 500)
            best = min(best, time.perf_counter() - t)
        cells = sum(len(q) for q in long) * chunk.n_residues
        print(
            f"chunk {chunk.index} exact scan of the {len(long)} queries > 2048: {best:.4f} s, {cells / 1e9:.2f} G cells, {cells / best / 1e9:.1f} GCUPS"
        )


if __name__ == "__main__":
    main()
