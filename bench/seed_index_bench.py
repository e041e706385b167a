"""How long the fast mode's seed index takes on the host (``swgpu_core.seed.seed_index``).

    python bench/seed_index_bench.py QUERIES.fasta[.gz] [--copies 1 8] [--threads 1 2 0] [--repeats 3] [--save DIR]

For each number of copies of the queries (K copies: K times the work) and each thread count
(0: every core), the best of ``--repeats`` runs, one line each. ``--save DIR`` keeps each index
(``idx_<copies>.npz``), so the indexes of two commits can be compared array for array: run it
once per tree (``PYTHONPATH=<tree>``) and ``cmp`` the files. A tree before 4394046 makes the
shapes one after the other whatever ``--threads`` says.
"""

from __future__ import annotations

import argparse
import inspect
import time
from pathlib import Path

import numpy as np

from swgpu_core import api
from swgpu_core.alphabet import PROTEIN
from swgpu_core.seed import SeedParams, seed_index


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("queries")
    ap.add_argument("--copies", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--save", type=Path)
    a = ap.parse_args()
    codes = [q.codes for q in api.read_queries(a.queries, PROTEIN)]
    takes_threads = "threads" in inspect.signature(seed_index).parameters
    for copies in a.copies:
        batch = codes * copies
        for threads in a.threads:
            best = float("inf")
            for _ in range(a.repeats):
                began = time.perf_counter()
                index = seed_index(batch, SeedParams(), threads) if takes_threads else seed_index(batch, SeedParams())
                best = min(best, time.perf_counter() - began)
            print(f"queries {len(batch)} threads {threads or 'all'}: {best:.3f} s")
        if a.save is not None:
            a.save.mkdir(parents=True, exist_ok=True)
            np.savez(
                a.save / f"idx_{copies}.npz", **{k: getattr(index, k) for k in ("codes", "starts", "keys", "positions", "shape_starts")}
            )


if __name__ == "__main__":
    main()
