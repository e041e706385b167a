"""Where the host thread of a fast search spends its time (issue 15 on several GPUs): one cold
search (the process's first, as the command's) and one warm, each under cProfile, through the
API on the devices named; the top functions by own time and by cumulative time, and the scans.

    python bench/fast_profile.py DB QUERIES.fasta --devices 0,1 [--save DIR]

``--save``: the two profiles also as DIR/fast_cold.prof and DIR/fast_warm.prof (pstats).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats

import swgpu_core as sw
from swgpu_core.fasta import read_sequences


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("queries")
    parser.add_argument("--devices", default="0")
    parser.add_argument("--save", help="a folder for the profiles (pstats files)")
    args = parser.parse_args()
    db = sw.open_database(args.db)
    queries = read_sequences(args.queries)
    devices = [int(d) for d in args.devices.split(",")]
    for name in ("cold", "warm"):
        profile = cProfile.Profile()
        profile.enable()
        result = sw.search(db, queries, backend="cuda", mode="fast", top=500, devices=devices, show_progress=False)
        profile.disable()
        if args.save:
            profile.dump_stats(f"{args.save}/fast_{name}.prof")
        print(f"== {name}: devices {devices}, scan {result.seconds:.3f} s, candidate stage {result.seed.seconds:.3f} s")
        for key in ("tottime", "cumulative"):
            text = io.StringIO()
            pstats.Stats(profile, stream=text).sort_stats(key).print_stats(18)
            print("\n".join(line[:150] for line in text.getvalue().splitlines()[6:]))


if __name__ == "__main__":
    main()
