"""Whether the fast mode's two stages gain from overlapping on the GPU (issue 15): in one warm
process, the same fast search through ``CudaBackend.scan_seeded`` (the next run seeded while
the run before is scored) and one stage after the other (the search's own loop, which a scanner
without ``scan_seeded`` gets), interleaved, with the seed and scoring kernels' seconds of each.
One JSON line per mode: the search's scan seconds (median and all rounds).

    python bench/seeded_overlap.py DB QUERIES.fasta [--rounds 5]     (one GPU)
"""

from __future__ import annotations

import argparse
import json
import statistics

import swgpu_core as sw
from swgpu_core.engine import get_engine
from swgpu_core.fasta import read_sequences
from swgpu_core.scoring import Scoring
from swgpu_core.search import search
from swgpu_core.seed import SeedParams


class OneAfterAnother:
    """The CUDA scanner without ``scan_seeded``: the search seeds a chunk, then scores it."""

    def __init__(self, backend) -> None:
        self.backend = backend
        self.name = backend.name

    def scan_subset(self, *args):
        return self.backend.scan_subset(*args)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("queries")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    db = sw.open_database(args.db)
    queries = read_sequences(args.queries)
    scoring = Scoring.protein()
    engine = get_engine("cuda")
    backend = engine.scanner(scoring)
    seeder = engine.seeder(scoring, queries, SeedParams())
    modes = {"overlapped": backend, "one-after-another": OneAfterAnother(backend)}
    for scanner in modes.values():  # warm-up: kernels loaded, the database resident
        search(db, queries, scoring, scanner, top=500, show_progress=False, seeder=seeder)
    seconds: dict[str, list[float]] = {m: [] for m in modes}
    kernels: dict[str, list[tuple[float, float]]] = {m: [] for m in modes}
    for _ in range(args.rounds):
        for mode, scanner in modes.items():
            seed0, score0 = seeder.kernel_seconds, backend.kernel_seconds
            result = search(db, queries, scoring, scanner, top=500, show_progress=False, seeder=seeder)
            seconds[mode].append(round(result.seconds, 4))
            kernels[mode].append((round(seeder.kernel_seconds - seed0, 4), round(backend.kernel_seconds - score0, 4)))
    for mode in modes:
        print(json.dumps({"kind": "seeded-overlap", "mode": mode, "scan_median": statistics.median(seconds[mode]), "scan": seconds[mode],
                          "seed_and_score_kernels": kernels[mode]}))  # fmt: skip


if __name__ == "__main__":
    main()
