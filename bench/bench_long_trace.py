"""align-long traceback: the GPU's anchored batches against the CPU's threads, same end points.

    python bench/bench_long_trace.py --query-length 10000 --target-length 10000000 --top 200 --out results.jsonl

DNA with SSCA#1 scoring: a random query, a random target with ``--plants`` mutated copies
of query pieces (200 residues to the whole query) planted in it. The end points are the
``--top`` of one GPU scan (``long.run.scan_sections``); with this scoring, random DNA
aligns in the linear phase, so most of them are alignments across the whole query. Their
traceback (the engine's ``trace_end_points``) is timed on the GPU (a warm-up, then the
median of ``--repeats`` runs, wall clock) and once on the CPU (numba, all cores), and the
traces must be equal. One JSON line is printed and appended to ``--out``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from swgpu_core.cores import cpu_threads  # noqa: E402
from swgpu_core.engine import get_engine  # noqa: E402
from swgpu_core.long.endpoints import BandRule  # noqa: E402
from swgpu_core.long.run import end_points, scan_sections  # noqa: E402
from swgpu_core.long.sections import layout  # noqa: E402
from swgpu_core.scoring import Scoring  # noqa: E402


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def make_inputs(m: int, n: int, plants: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Query and target codes: ``plants`` copies of query pieces with ~3% substitutions and
    a few short indels, at random places."""
    rng = np.random.default_rng(seed)
    query = rng.integers(0, 4, m).astype(np.uint8)
    target = rng.integers(0, 4, n).astype(np.uint8)
    for _ in range(plants):
        length = int(np.exp(rng.uniform(np.log(min(200, m)), np.log(m))))
        a = int(rng.integers(0, m - length + 1))
        piece = query[a : a + length].copy()
        sub = rng.random(length) < 0.03
        piece[sub] = (piece[sub] + rng.integers(1, 4, int(sub.sum()))) % 4
        for _ in range(3):  # short deletions and insertions
            at, k = int(rng.integers(0, piece.size)), int(rng.integers(1, 8))
            piece = (
                np.delete(piece, np.s_[at : at + k]) if rng.random() < 0.5 else np.insert(piece, at, rng.integers(0, 4, k).astype(np.uint8))
            )
        at = int(rng.integers(0, n - piece.size))
        target[at : at + piece.size] = piece
    return query, target


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--query-length", type=int, default=10_000)
    p.add_argument("--target-length", type=int, default=10_000_000)
    p.add_argument("--plants", type=int, default=20)
    p.add_argument("--top", type=int, default=200)
    p.add_argument("--max-alignment-length", type=int, default=10_000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", type=Path, help="append the result (a JSON line) here")
    args = p.parse_args()

    import cupy as cp

    scoring = Scoring.nucleotide()
    query, target = make_inputs(args.query_length, args.target_length, args.plants)
    rule = BandRule(query.size, 64)
    t0 = time.perf_counter()
    scanned = scan_sections(query, target, layout(target.size, 1, args.max_alignment_length), rule, scoring, "cuda")
    ends = end_points([r.found for r in scanned], rule, args.top)
    scan_seconds = time.perf_counter() - t0
    print(f"scan {query.size:,} x {target.size:,}: {len(ends)} end points in {scan_seconds:.2f} s", flush=True)

    run = lambda backend: get_engine(backend).trace_end_points(query, target, ends, scoring, args.max_alignment_length)  # noqa: E731
    run("cuda")  # warm-up: kernel compilation
    walls = []
    for _ in range(args.repeats):
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        got = run("cuda")
        walls.append(time.perf_counter() - t0)
    gpu_seconds = statistics.median(walls)
    print(f"gpu traceback: {gpu_seconds:.3f} s (runs {', '.join(f'{w:.3f}' for w in walls)})", flush=True)
    t0 = time.perf_counter()
    want = run("cpu")
    cpu_seconds = time.perf_counter() - t0
    threads = cpu_threads()
    print(f"cpu traceback: {cpu_seconds:.3f} s on {threads} threads", flush=True)

    key = lambda t: (t.score, t.qstart, t.qend, t.sstart, t.send, t.ops.tobytes())  # noqa: E731
    equal = [key(g) for g in got] == [key(w) for w in want]
    heights = np.array([t.qend - t.qstart + 1 for t in want])
    widths = np.array([t.send - t.sstart + 1 for t in want])
    row = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": os.environ.get("SWGPU_COMMIT") or commit(),
        "gpu": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
        "kind": "long-trace",
        "query_length": int(query.size),
        "target_length": int(target.size),
        "plants": args.plants,
        "end_points": len(ends),
        "max_alignment_length": args.max_alignment_length,
        "median_height": float(np.median(heights)),
        "max_side": int(max(heights.max(), widths.max())),
        "rectangle_cells": int((heights * widths).sum()),
        "scan_seconds": scan_seconds,
        "gpu_seconds": gpu_seconds,
        "gpu_repeats": walls,
        "cpu_seconds": cpu_seconds,
        "cpu_threads": threads,
        "speedup": cpu_seconds / gpu_seconds,
        "equal": equal,
        "scoring": scoring.describe(),
    }
    print(json.dumps(row))
    if args.out:
        with open(args.out, "a") as fh:
            fh.write(json.dumps(row) + "\n")
    if not equal:
        sys.exit("GPU and CPU traces differ")


if __name__ == "__main__":
    main()
