#!/usr/bin/env python3
"""GPU timing of ``--mode fast``'s stages on bench200M x the 500 shared queries (H100).

For each ``--variants`` entry (lookup table in global or shared memory, warps per block): the seeder's host tables (build time, groups, shared memory),
then per chunk the seed kernel (CUDA events; one warm-up, median of ``--reps``), with its
counts (hits, queued extensions, candidates) and derived rates; then, with the default
warps' candidates, the exact scoring of the candidates (``scan_subset``: its kernels' time
and wall time per chunk, median of ``--reps``); then the whole fast search through the API
(wall, warm), and the exact search (wall and scan seconds) it is compared with. One JSON
line per run appended to ``--out``, and printed.

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
                       "wall_s": float(np.median(walls)), **per_rep, **{k: dev.last_timing[k] for k in ("blocks", "slices")}})  # fmt: skip
        found.append(cands)
    total = {k: sum(c[k] for c in chunks) for k in ("kernel_s", "wall_s", "hits", "triggers", "extensions", "candidates")}
    total["hits_per_s"] = total["hits"] / total["kernel_s"]
    return {"total": total, "chunks": chunks}, found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=HERE.parents[1] / "shared")
    ap.add_argument("--work", type=Path, default=Path("/tmp/swgpu-bench"))
    ap.add_argument("--out", type=Path, default=HERE / "results.jsonl")
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--variants", nargs="+", default=["global:8", "global:6", "global:12", "shared:12", "shared:8"],
                    help="LUT:WARPS seed kernel variants; the first one's candidates are scored")  # fmt: skip
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--top", type=int, default=500)
    ap.add_argument("--no-exact", action="store_true", help="skip the exact search (its ~15-25 s)")
    args = ap.parse_args()

    scoring = Scoring.protein()
    params = SeedParams()
    db, info = prepare(args.data, args.work, "bench200M")
    queries = read_sequences(find(args.data, "uniprot_queries500.fasta.gz"))[: args.queries]
    engine = get_engine("cuda")
    scanner = engine.scanner(scoring)
    cells = sum(len(q) for q in queries) * db.n_residues
    rec: dict = {"kind": "seed_kernel", "commit": git_commit(), "gpu": scanner.device_names[0], "database": "bench200M",
                 "residues": db.n_residues, "subjects": db.n_sequences, "chunks": len(db.chunks), "queries": len(queries),
                 "query_residues": sum(len(q) for q in queries), "params": vars(params), **info}  # fmt: skip
    rec["seed"] = {}
    found = None
    for variant in args.variants:
        lut, warps = variant.split(":")[0], int(variant.split(":")[1])
        t = time.perf_counter()
        seeder = CudaSeeder(scoring, queries, params, workers=scanner.workers, warps=warps, lut=lut)
        build = time.perf_counter() - t
        tb = seeder.tables
        row, cands = seed_run(seeder, db, args.reps)
        row["tables"] = {"build_s": build, "groups": tb.n_groups, "segments": int(tb.segs.shape[0]), "entries": tb.entries,
                         "smem_bytes": tb.smem_bytes, "ring": tb.ring, "copy_words": tb.copy_words, "lut": tb.lut}  # fmt: skip
        pairs = row["total"]["candidates"]
        lengths = np.asarray(db.lengths)
        row["candidate_cell_share"] = (
            sum(len(q) * int(lengths[np.concatenate([c[k] for c in cands])].sum()) for k, q in enumerate(queries)) / cells
        )
        row["candidates_per_query"] = pairs / len(queries)
        rec["seed"][variant] = row
        print(f"{variant}: seed kernel {row['total']['kernel_s']:.3f} s, wall {row['total']['wall_s']:.3f} s, tables {build:.2f} s, "
              f"{row['total']['hits'] / 1e9:.1f} G hits, {pairs} candidates", flush=True)  # fmt: skip
        if found is None:
            found = cands
    # the exact scoring of the first variant's candidates
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
    sw.search(db, queries[:2], backend=engine, mode="fast", top=args.top)
    t = time.perf_counter()
    fast = sw.search(db, queries, backend=engine, mode="fast", top=args.top)
    rec["fast_search"] = {"wall_s": time.perf_counter() - t, "scan_s": fast.seconds, "seed_s": fast.seed.seconds,
                          "counts": fast.seed.counts}  # fmt: skip
    print(f"fast search: {rec['fast_search']['wall_s']:.2f} s wall, candidate stage {fast.seed.seconds:.2f} s", flush=True)
    if not args.no_exact:
        t = time.perf_counter()
        exact = sw.search(db, queries, backend=engine, mode="exact", top=args.top)
        rec["exact_search"] = {"wall_s": time.perf_counter() - t, "scan_s": exact.seconds, "gcups": cells / exact.seconds / 1e9}
        rec["speedup_wall"] = rec["exact_search"]["wall_s"] / rec["fast_search"]["wall_s"]
        print(f"exact search: {rec['exact_search']['wall_s']:.2f} s wall; fast is {rec['speedup_wall']:.1f}x faster", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "a") as fh:
        fh.write(json.dumps(rec) + "\n")
    print(json.dumps(rec, indent=1))


if __name__ == "__main__":
    main()
