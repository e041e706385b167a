"""The fast mode's candidate scoring on one chunk of a database, for Nsight Compute (issue 15):
the default seeds' candidates of every query (``scan_subset``: the task-list kernels), or, with
``--exact``, the exact scan of the chunk by the first 8 queries (``scan_chunk``: the kernels the
scoring is compared with). No warm-up: the kernels are compiled before their first launch.

    ncu --kernel-name regex:sw_inter_tasks --launch-count 2 ... python bench/subset_ncu.py DB QUERIES CHUNK [--exact]
"""

from __future__ import annotations

import sys

import swgpu_core as sw
from swgpu_core.engine import get_engine
from swgpu_core.fasta import read_sequences
from swgpu_core.scoring import Scoring
from swgpu_core.seed import SeedParams


def main() -> None:
    db = sw.open_database(sys.argv[1])
    queries = read_sequences(sys.argv[2])
    chunk = db.chunks[int(sys.argv[3])]
    engine, scoring = get_engine("cuda"), Scoring.protein()
    scanner = engine.scanner(scoring)
    if "--exact" in sys.argv:
        scanner.scan_chunk(db, chunk, queries[:8], 500)
        print(f"chunk {chunk.index}: exact scan of {len(queries[:8])} queries")
        return
    found = engine.seeder(scoring, queries, SeedParams()).candidates(db, chunk)
    scanner.scan_subset(db, chunk, queries, found, 500)
    print(
        f"chunk {chunk.index}: {sum(f.size for f in found)} candidates scored, {scanner.workers[0].last_timing} (cells: query x subject residues)"
    )


if __name__ == "__main__":
    main()
