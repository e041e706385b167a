"""GCUPS of the align-long scan on the CPU (``--backend cpu``): one query against one long target.

    python3 bench/bench_align_long_cpu.py --sizes 1000x10000000 10000x10000000 --kinds dna protein --threads 2 --machine cpu-2core

Random residues (fixed seed) with a copy of the query planted in the middle; DNA with the
SSCA#1 scoring (the command's default), protein with BLOSUM62 11/1. The whole target is
one section scanned by ``long.cpu_scan.scan_section`` as the command does, after a warm-up
on a small table (numba compilation or cache load). GCUPS counts query x target cells over
the wall time of the scan; ``gcups_per_core`` divides by the threads, and ``cpu_seconds``
(the process's CPU time during the scan) shows what the threads really got on a shared
machine. ``--check`` also runs the row-by-row reference on the first
``--check-columns`` columns and records whether the band keys agree. The load average
is recorded with each line, since the CPU machines are shared. One JSON line per size and
kind is appended to ``--out``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import resource
import shlex
import subprocess
import sys

import numpy as np

from swgpu_core.cores import cpu_threads
from swgpu_core.long.cpu_scan import reference_scan_section, scan_section
from swgpu_core.long.endpoints import BandRule, select
from swgpu_core.long.sections import layout
from swgpu_core.scoring import Scoring


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", default=["1000x10000000", "10000x10000000"], help="QUERYxTARGET lengths")
    ap.add_argument("--kinds", nargs="+", default=["dna", "protein"], choices=["dna", "protein"])
    ap.add_argument("--threads", type=int, default=0, help="scan threads (0: all cores)")
    ap.add_argument("--machine", default="cpu", help="label recorded with each line")
    ap.add_argument("--check", action="store_true", help="compare with the reference scan on a prefix of the target")
    ap.add_argument("--check-columns", type=int, default=200_000)
    ap.add_argument("--out", default="bench/results.jsonl")
    args = ap.parse_args()
    threads = cpu_threads(args.threads)
    rng = np.random.default_rng(1)
    for kind in args.kinds:
        scoring = Scoring.nucleotide() if kind == "dna" else Scoring.protein()
        letters = 4 if kind == "dna" else 20
        warm = rng.integers(0, letters, 200).astype(np.uint8)
        scan_section(warm, np.tile(warm, 50), layout(10_000, 1, 0)[0], BandRule(warm.size, 64), scoring, threads)
        for size in args.sizes:
            m, n = (int(x) for x in size.lower().split("x"))
            q = rng.integers(0, letters, m).astype(np.uint8)
            t = rng.integers(0, letters, n).astype(np.uint8)
            t[n // 2 : n // 2 + m] = q
            rule = BandRule(m, 64)
            load = os.getloadavg()
            cpu0 = cpu_seconds()
            found, seconds = scan_section(q, t, layout(n, 1, 0)[0], rule, scoring, threads)
            cpu = cpu_seconds() - cpu0
            ends = select(found, rule, 1)
            agrees = None
            if args.check:
                k = min(n, args.check_columns)
                part = layout(k, 1, 0)[0]
                mine, _ = scan_section(q, t[:k], part, BandRule(m, 64), scoring, threads)
                ref = reference_scan_section(q, t[:k], part, BandRule(m, 64), scoring)
                agrees = bool(np.array_equal(mine.bands, ref.bands) and np.array_equal(mine.keys, ref.keys))
            gcups = m * n / seconds / 1e9
            row = {
                "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "commit": commit(), "machine": args.machine, "kind": "align-long-cpu", "alphabet": kind,
                "command": shlex.join([sys.executable.rsplit("/", 1)[-1], *sys.argv]),
                "query_len": m, "target_len": n, "threads": threads, "seconds": seconds, "gcups": gcups,
                "gcups_per_core": gcups / threads, "cpu_seconds": cpu, "gcups_per_cpu_second": m * n / cpu / 1e9,
                "load_before": [round(x, 2) for x in load], "scoring": scoring.describe(), "band_width": 64,
                "bands_found": int(found.bands.size), "best": [ends[0].score, ends[0].qend, ends[0].send] if ends else None,
                "reference_agrees": agrees,
            }  # fmt: skip
            with open(args.out, "a") as fh:
                fh.write(json.dumps(row) + "\n")
            print(
                f"{kind:7} {m:>7,} x {n:>11,}: {seconds:8.2f} s  {gcups:6.2f} GCUPS on {threads} threads"
                f" ({gcups / threads:.2f} per core; {m * n / cpu / 1e9:.2f} per CPU-second)  load {load[0]:.1f}"
                f"  best {row['best']}  reference agrees: {agrees}"
            )


if __name__ == "__main__":
    main()
