"""The fast mode's scoring with the task kernels' shapes of the eleventh session against the
current ones (issue 15), in one warm process: the same fast search through the CUDA backend
(seeding and scoring overlapped), the two policies interleaved, with each search's scan seconds,
its scoring kernels' seconds and whether both policies give the same hits (they must: the
scores are exact either way).

- ``eleventh``: the narrowest of (8 x 8, 8 x 16, 16 x 16, 32 x 16) lanes x columns that holds the
  query in one pass, else 32 x 16 in several (a warp per group);
- ``current``: :func:`swgpu_core.subset_tasks.task_shape`.

    python bench/task_policy.py DB QUERIES.fasta [--rounds 3]     (one GPU)
"""

from __future__ import annotations

import argparse
import json
import statistics

import swgpu_core as sw
from swgpu_core import subset_tasks
from swgpu_core.engine import get_engine
from swgpu_core.fasta import read_sequences
from swgpu_core.gpu import kernels as gpu_kernels
from swgpu_core.gpu import search as gpu_search
from swgpu_core.scoring import Scoring
from swgpu_core.search import search
from swgpu_core.seed import SeedParams

ELEVENTH_SHAPES = ((8, 8), (8, 16), (16, 16), (32, 16))


def eleventh(query_length: int) -> tuple[int, int]:
    return next((s for s in ELEVENTH_SHAPES if s[0] * s[1] >= query_length), ELEVENTH_SHAPES[-1])


POLICIES = {"eleventh": eleventh, "current": subset_tasks.task_shape}


def use(policy: str) -> None:
    """Lists made with ``policy``'s shapes from now on."""
    subset_tasks.task_shape = gpu_search.task_shape = POLICIES[policy]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("queries")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    gpu_kernels.INTER_TASK_SHAPES = gpu_kernels.INTER_SHAPES  # the eleventh session's shapes compiled too
    db = sw.open_database(args.db)
    queries = read_sequences(args.queries)
    scoring = Scoring.protein()
    engine = get_engine("cuda")
    backend = engine.scanner(scoring)
    seeder = engine.seeder(scoring, queries, SeedParams())
    hits = {}
    for policy in POLICIES:  # warm-up: kernels loaded, the database resident, profiles built
        use(policy)
        result = search(db, queries, scoring, backend, top=500, show_progress=False, seeder=seeder)
        hits[policy] = [(h.subjects.tolist(), h.scores.tolist()) for h in result.hits]
    same = hits["eleventh"] == hits["current"]
    seconds: dict[str, list[float]] = {p: [] for p in POLICIES}
    kernels: dict[str, list[float]] = {p: [] for p in POLICIES}
    for _ in range(args.rounds):
        for policy in POLICIES:
            use(policy)
            score0 = backend.kernel_seconds
            result = search(db, queries, scoring, backend, top=500, show_progress=False, seeder=seeder)
            seconds[policy].append(round(result.seconds, 4))
            kernels[policy].append(round(backend.kernel_seconds - score0, 4))
    for policy in POLICIES:
        print(json.dumps({"kind": "task-policy", "policy": policy, "scan_median": statistics.median(seconds[policy]), "scan": seconds[policy],
                          "scoring_kernels": kernels[policy], "hits_identical": same, "hits": sum(len(s) for s, _ in hits[policy])}))  # fmt: skip


if __name__ == "__main__":
    main()
