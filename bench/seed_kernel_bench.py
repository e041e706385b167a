#!/usr/bin/env python3
"""GPU timing of ``--mode fast``'s stages on bench200M x the 500 shared queries (H100).

For each ``--points`` entry (SPAN:XDROP:TRIGGER[:TRIGGER_STEP] of :class:`~swgpu_core.seed.SeedParams`, the
other parameters default): the seeder's set-up (seed index on the host, key tables on the
device), then per chunk the seed kernel (CUDA events; one warm-up, median of ``--reps``), with
its counts (hits, extensions, candidates) and the candidates' share of the exact mode's cells;
then, with the first point's candidates, their exact scoring (``scan_subset``: its kernels'
time and wall time per chunk, median of ``--reps``); then the whole fast search with the
first point's parameters through the API (wall, warm), and the exact search (wall and scan
seconds) it is compared with, from whose hits each point's recall follows (the exact top
``--top`` pairs with E <= 1e-5 and E <= 1e-3 that are candidates). One JSON line per run
appended to ``--out``, and printed.

    python bench/seed_kernel_bench.py --data .carry --work /tmp/bench --out $OUT/seed_kernel.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import swgpu_core as sw  # noqa: E402
from bench import find, git_commit, prepare  # noqa: E402
from swgpu_core.engine import get_engine  # noqa: E402
from swgpu_core.fasta import read_sequences  # noqa: E402
from swgpu_core.gpu.seed import CudaSeeder  # noqa: E402
from swgpu_core.scoring import Scoring  # noqa: E402
from swgpu_core.seed import SeedParams  # noqa: E402


def seed_run(seeder: CudaSeeder, db, reps: int) -> tuple[dict, list[list[np.ndarray]]]:
    """Seed kernel seconds per chunk (median of ``reps`` after a warm-up), summed; the candidates."""
    dev = seeder.devices[0]
    chunks, found = [], []
    for chunk in db.chunks:
        seeder.candidates(db, chunk)  # warm-up: upload, compile
        secs, walls = [], []
        before = dict(seeder.counts)
        for _ in range(reps):
            t = time.perf_counter()
            cands = seeder.candidates(db, chunk)
            walls.append(time.perf_counter() - t)
            secs.append(dev.last_timing["seconds"])
        per_rep = {k: (seeder.counts[k] - before[k]) // reps for k in seeder.counts}
        chunks.append({"chunk": chunk.index, "residues": chunk.n_residues, "kernel_s": float(np.median(secs)),
                       "wall_s": float(np.median(walls)), **per_rep, "blocks": dev.last_timing["blocks"]})  # fmt: skip
        found.append(cands)
    total = {k: sum(c[k] for c in chunks) for k in ("kernel_s", "wall_s", "hits", "extensions", "candidates")}
    total["hits_per_s"] = total["hits"] / total["kernel_s"]
    return {"total": total, "chunks": chunks}, found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=HERE.parents[1] / "shared")
    ap.add_argument("--work", type=Path, default=Path("/tmp/swgpu-bench"))
    ap.add_argument("--out", type=Path, default=HERE / "results.jsonl")
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--points", nargs="+", default=["20:16:52:3"],
                    help="SPAN:XDROP:TRIGGER[:STEP] seeding rules; the first one's candidates are scored")  # fmt: skip
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--top", type=int, default=500)
    ap.add_argument("--no-exact", action="store_true", help="skip the exact search (its ~15-25 s)")
    args = ap.parse_args()

    scoring = Scoring.protein()
    points = {p: SeedParams(*(int(x) for x in p.split(":"))) for p in args.points}
    params = points[args.points[0]]
    db, info = prepare(args.data, args.work, "bench200M")
    queries = read_sequences(find(args.data, "uniprot_queries500.fasta.gz"))[: args.queries]
    engine = get_engine("cuda")
    scanner = engine.scanner(scoring)
    cells = sum(len(q) for q in queries) * db.n_residues
    rec: dict = {"kind": "seed_kernel", "commit": git_commit(), "gpu": scanner.device_names[0], "database": "bench200M",
                 "residues": db.n_residues, "subjects": db.n_sequences, "chunks": len(db.chunks), "queries": len(queries),
                 "query_residues": sum(len(q) for q in queries), "params": params.describe(), **info}  # fmt: skip
    rec["seed"] = {}
    found = None
    candidates = {}
    for point, p in points.items():
        t = time.perf_counter()
        seeder = CudaSeeder(scoring, queries, p, workers=scanner.workers)
        build = time.perf_counter() - t
        row, cands = seed_run(seeder, db, args.reps)
        row["setup_s"] = build
        row["index_entries"] = int(seeder.index.positions.size)
        pairs = row["total"]["candidates"]
        lengths = np.asarray(db.lengths)
        row["candidate_cell_share"] = (
            sum(len(q) * int(lengths[np.concatenate([c[k] for c in cands])].sum()) for k, q in enumerate(queries)) / cells
        )
        row["candidates_per_query"] = pairs / len(queries)
        rec["seed"][point] = row
        candidates[point] = cands
        print(f"{point}: seed kernel {row['total']['kernel_s']:.3f} s, wall {row['total']['wall_s']:.3f} s, set-up {build:.2f} s, "
              f"{row['total']['hits'] / 1e9:.2f} G hits, {pairs} candidates", flush=True)  # fmt: skip
    found = candidates[args.points[0]]
    # the exact scoring of the first point's candidates
    worker = scanner.workers[0]
    subset = []
    for chunk, cands in zip(db.chunks, found):
        scanner.scan_subset(db, chunk, queries, cands, args.top)  # warm-up
        secs, walls = [], []
        for _ in range(args.reps):
            t = time.perf_counter()
            scanner.scan_subset(db, chunk, queries, cands, args.top)
            walls.append(time.perf_counter() - t)
            secs.append(worker.last_timing["seconds"])
        subset.append({"chunk": chunk.index, "kernel_s": float(np.median(secs)), "wall_s": float(np.median(walls)),
                       "launches": worker.last_timing["launches"], "pairs": worker.last_timing["pairs"]})  # fmt: skip
    rec["subset"] = {"kernel_s": sum(s["kernel_s"] for s in subset), "wall_s": sum(s["wall_s"] for s in subset), "chunks": subset}
    print(f"scan_subset: kernels {rec['subset']['kernel_s']:.3f} s, wall {rec['subset']['wall_s']:.3f} s", flush=True)
    # whole searches through the API (the fast one warm: its tables built, kernels compiled)
    sw.search(db, queries[:2], backend=engine, mode="fast", top=args.top, seed_params=params)
    t = time.perf_counter()
    fast = sw.search(db, queries, backend=engine, mode="fast", top=args.top, seed_params=params)
    rec["fast_search"] = {"wall_s": time.perf_counter() - t, "scan_s": fast.seconds, "seed_s": fast.seed.seconds,
                          "counts": fast.seed.counts}  # fmt: skip
    print(f"fast search: {rec['fast_search']['wall_s']:.2f} s wall, candidate stage {fast.seed.seconds:.2f} s", flush=True)
    if not args.no_exact:
        t = time.perf_counter()
        exact = sw.search(db, queries, backend=engine, mode="exact", top=args.top)
        rec["exact_search"] = {"wall_s": time.perf_counter() - t, "scan_s": exact.seconds, "gcups": cells / exact.seconds / 1e9}
        rec["speedup_wall"] = rec["exact_search"]["wall_s"] / rec["fast_search"]["wall_s"]
        rec["speedup_scan"] = exact.seconds / fast.seconds
        print(f"exact search: {rec['exact_search']['wall_s']:.2f} s wall; fast is {rec['speedup_wall']:.1f}x faster in wall, "
              f"{rec['speedup_scan']:.1f}x in scan", flush=True)  # fmt: skip
        lengths = np.asarray(db.lengths)
        for point, cands in candidates.items():
            per_query = [set(np.concatenate([c[k] for c in cands]).tolist()) for k in range(len(queries))]
            recall = {}
            for cut in (1e-5, 1e-3):
                want = got = 0
                for k, h in enumerate(exact.hits):
                    sig = h.subjects[exact.statistics.evalue(k, len(h.query), h.scores, lengths[h.subjects]) <= cut]
                    want += sig.size
                    got += sum(int(x) in per_query[k] for x in sig)
                recall[f"{cut:g}"] = {"recall": got / max(want, 1), "pairs": want}
            rec["seed"][point]["recall"] = recall
            print(f"{point}: recall {recall}", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "a") as fh:
        fh.write(json.dumps(rec) + "\n")
    print(json.dumps(rec, indent=1))


if __name__ == "__main__":
    main()
