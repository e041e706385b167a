#!/usr/bin/env python3
"""GPU benchmark: the 20 classic queries against bench200M (and uniprot20k).

Builds bench200M with ``make_bench_db.py --residues 200000000 --seed 7`` and our
``makedb`` (both timed), then for each query times the scan kernels with CUDA events
(one warm-up, median of ``--reps``), and the whole API search of all queries end to end.
GCUPS = query length x database residues / seconds. Each run is appended as one JSON
line to ``--out`` (machine, commit, per-query and overall numbers).

    python bench/bench.py --data ../shared --work /tmp/bench --out bench/results.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from swgpu_core.database import Database, build_database  # noqa: E402
from swgpu_core.fasta import read_sequences  # noqa: E402
from swgpu_core.gpu.search import CudaBackend  # noqa: E402
from swgpu_core.scoring import Scoring  # noqa: E402
from swgpu_core.search import search  # noqa: E402


def find(data: Path, name: str) -> Path:
    for p in (data / name, data / "data" / name, data / "tools" / name):
        if p.exists():
            return p
    raise SystemExit(f"{name} not found under {data}")


def git_commit() -> str:
    """``SWGPU_COMMIT`` when set (a device copy's .git may be stale), else HEAD (+dirty)."""
    if os.environ.get("SWGPU_COMMIT"):
        return os.environ["SWGPU_COMMIT"]
    try:
        head = subprocess.check_output(["git", "rev-parse", "--short", "HEAD"], text=True, stderr=subprocess.DEVNULL).strip()
        dirty = subprocess.check_output(["git", "status", "--porcelain", "--untracked-files=no"], text=True, stderr=subprocess.DEVNULL)
        return head + ("+dirty" if dirty.strip() else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def prepare(data: Path, work: Path, name: str) -> tuple[Database, dict]:
    work.mkdir(parents=True, exist_ok=True)
    info: dict = {}
    dbdir = work / name
    if name == "uniprot20k":
        fasta = find(data, "uniprot20k.fasta.gz")
    else:
        fasta = work / "bench200M.fasta.gz"
        if not fasta.exists():
            t = time.perf_counter()
            subprocess.check_call([sys.executable, str(find(data, "make_bench_db.py")), str(find(data, "uniprot20k.fasta.gz")),
                                   str(fasta), "--residues", "200000000", "--seed", "7"])  # fmt: skip
            info["make_bench_db_seconds"] = round(time.perf_counter() - t, 1)
    if not (dbdir / "manifest.json").exists():
        t = time.perf_counter()
        build_database(fasta, dbdir, show_progress=False)
        info["makedb_seconds"] = round(time.perf_counter() - t, 1)
    return Database(dbdir), info


def scan_once(worker, devs, q) -> dict:
    """One query over the device batches: summed kernel seconds and their breakdown."""
    part = {"seconds": 0.0, "inter_seconds": 0.0, "intra_seconds": 0.0, "rescored": 0, "predicted_seconds": 0.0}
    for dev in devs:
        worker.scores(dev, q)
        for k in part:
            part[k] += worker.last_timing[k]
    return part


def bench_db(backend: CudaBackend, db: Database, queries, reps: int, sweep: list[int]) -> dict:
    """Per-query kernel time (median of ``reps`` after a warm-up) over the batches the API
    search would use, the API search end to end, and optionally measured against
    predicted time for fixed thresholds."""
    worker = backend.workers[0]
    devs = [worker.upload(db, batch) for batch in backend.batches(db, db.chunks)]
    rows = []
    for q in queries:
        scan_once(worker, devs, q)  # warm-up
        parts = [scan_once(worker, devs, q) for _ in range(reps)]
        sec = float(np.median([p["seconds"] for p in parts]))
        rows.append({
            "query": q.id, "length": len(q), "seconds": sec, "gcups": len(q) * db.n_residues / sec / 1e9,
            "inter_seconds": float(np.median([p["inter_seconds"] for p in parts])),
            "intra_seconds": float(np.median([p["intra_seconds"] for p in parts])),
            "predicted_seconds": parts[0]["predicted_seconds"], "threshold": worker.last_timing["threshold"],
            "rescored": parts[0]["rescored"], "shapes": worker.last_timing["shapes"],
        })  # fmt: skip
        print(f"  {q.id[:24]:24s} {len(q):6d}  {sec * 1e3:9.2f} ms  {rows[-1]['gcups']:8.1f} GCUPS"
              f"  (T={rows[-1]['threshold']}, predicted {rows[-1]['predicted_seconds'] * 1e3:.2f} ms)", flush=True)  # fmt: skip
    total_cells = sum(len(q) for q in queries) * db.n_residues
    total_sec = sum(r["seconds"] for r in rows)
    swept = []
    chosen = worker.threshold
    for t in sweep:
        worker.threshold = t
        parts = [scan_once(worker, devs, q) for q in queries]
        measured, predicted = sum(p["seconds"] for p in parts), sum(p["predicted_seconds"] for p in parts)
        swept.append({"threshold": t, "seconds": measured, "gcups": total_cells / measured / 1e9,
                      "predicted_seconds": predicted, "predicted_gcups": total_cells / predicted / 1e9})  # fmt: skip
        print(f"  sweep T={t:6d}: measured {swept[-1]['gcups']:7.1f} GCUPS, predicted {swept[-1]['predicted_gcups']:7.1f}", flush=True)
    worker.threshold = chosen
    # warm-up: CuPy compiles its top-k helpers (partition, flatnonzero) on first use
    search(db, queries[:1], backend.scoring, backend, top=50, show_progress=False)
    t = time.perf_counter()
    search(db, queries, backend.scoring, backend, top=50, show_progress=False)
    e2e = time.perf_counter() - t
    return {"gcups": total_cells / total_sec / 1e9, "kernel_seconds": total_sec, "api_search_seconds": e2e,
            "api_search_gcups": total_cells / e2e / 1e9, "batches": len(devs), "per_query": rows, "sweep": swept}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared")
    ap.add_argument("--work", type=Path, default=Path("/tmp/swgpu-bench"))
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results.jsonl")
    ap.add_argument("--db", nargs="+", default=["bench200M", "uniprot20k"])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threshold", type=int, default=None)
    ap.add_argument("--arith", choices=("dpx", "plain"), default=None)
    ap.add_argument("--sweep", type=int, nargs="*", default=[], help="also time these fixed thresholds (measured vs predicted)")
    ap.add_argument("--note", default="")
    args = ap.parse_args()

    scoring = Scoring.protein("BLOSUM62", 11, 1)
    queries = read_sequences(find(args.data, "cudasw_queries.fasta"))
    backend = CudaBackend(scoring, threshold=args.threshold, arith=args.arith)
    for name in args.db:
        db, info = prepare(args.data, args.work, name)
        print(f"{name}: {db.n_sequences} sequences, {db.n_residues} residues {info}", flush=True)
        result = bench_db(backend, db, queries, args.reps, args.sweep)
        record = {
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "commit": git_commit(),
            "gpu": backend.device_names[0], "arith": backend.workers[0].kernels.arith, "database": name,
            "sequences": db.n_sequences, "residues": db.n_residues, "queries": len(queries),
            "threshold": backend.workers[0].threshold, "model": backend.workers[0].model.to_json(), "scoring": scoring.describe(), "note": args.note, **info, **result,
        }  # fmt: skip
        print(f"{name}: overall {result['gcups']:.1f} GCUPS (kernels), API search {result['api_search_seconds']:.2f} s "
              f"= {result['api_search_gcups']:.1f} GCUPS end to end", flush=True)  # fmt: skip
        with open(args.out, "a") as fh:
            fh.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
