"""The seed kernel on one chunk of a database, for Nsight Compute (issue 15): the seeder is made
and one chunk seeded (the launch to skip), then the chunk named seeded again (the launch to
profile).

    ncu --kernel-name seed_candidates --launch-skip 1 --launch-count 1 ... python bench/seed_ncu.py DB QUERIES CHUNK [--lineinfo]

``--lineinfo``: the kernel compiled with ``-lineinfo``, for Nsight Compute's source counters (the
instructions and stalls of each line of ``kernels/seed.cu``).
"""

from __future__ import annotations

import sys

import swgpu_core as sw
from swgpu_core import kernel_abi
from swgpu_core.engine import get_engine
from swgpu_core.fasta import read_sequences
from swgpu_core.scoring import Scoring
from swgpu_core.seed import SeedParams


def main() -> None:
    if "--lineinfo" in sys.argv:
        options = kernel_abi.compile_options
        kernel_abi.compile_options = lambda: (*options(), "-lineinfo")
    db = sw.open_database(sys.argv[1])
    queries = read_sequences(sys.argv[2])
    chunk = db.chunks[int(sys.argv[3])]
    seeder = get_engine("cuda").seeder(Scoring.protein(), queries, SeedParams())
    seeder.candidates(db, db.chunks[-1])
    found = seeder.candidates(db, chunk)
    print(f"chunk {chunk.index}: {sum(f.size for f in found)} candidates, {seeder.counts}")


if __name__ == "__main__":
    main()
