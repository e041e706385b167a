"""Recall and speed of ``swgpu search --mode fast`` against ``--mode exact`` (and BLAST, MMseqs2).

    python bench/seed_recall.py run --fasta DB.fasta.gz --queries Q.fasta[.gz] --name NAME
        [--top 500] [--threads 2] [--backend cpu|cuda] [--sweep SPAN,X,TRIGGER[,STEP] ...] [--peers] [--work DIR]
        [--out bench/results.jsonl] [--machine cpu-2core]
    python bench/seed_recall.py compare --exact exact.tsv --table NAME=PATH[@QUERIES] ...
        [--top 500] [--json out.json] [--cutoffs 1e-5 1e-3]

Recall is the share of the exact mode's hits that a method finds: the (query, subject)
pairs of the exact top ``--top`` per query (500: deep enough that every hit with
E <= 1e-3 is in it) with E <= 1e-5, and with E <= 1e-3 (BLAST's BLOSUM62 11/1 statistics
for the whole database, the E-values both modes report). A fast-mode hit list holds a
pair iff the pair is a candidate (its rank among the candidates is at most its exact
rank), so recall of a parameter set is measured from the candidates alone (``--sweep``:
the candidate stage only, with its time, counts and the *candidate share*, the share of
the exact mode's cells that the fast mode still scores: sum over candidates of query x
subject length over query x database residues). BLAST and MMseqs2 find a pair when it is
among their reported hits (E <= 10, up to ``--top`` per query); subjects are compared by
accession.

``run``: builds the swgpu database under ``--work`` (and BLAST's and MMseqs2's with
``--peers``), runs (or reuses) the exact search, then each sweep point, then the fast
search with the default parameters through the API (wall time, candidate stage time),
then the peers; appends one JSON line per measurement to ``--out`` with the load average
before and after (the machine may be shared). The queries are renamed q0001... so that
every tool reports the same query ids. ``compare``: the recall of tables (the device
script's: ``swgpu search --outfmt "6 qseqid sseqid evalue"`` of both modes, the peers'
``qseqid sseqid ...``), subjects by accession, printed as JSON. ``--cutoffs``: the
reference's E-value cutoffs; on a database k times smaller than another, cutoff/k gives
the other's reference set (E-values scale with the database's residues).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from cpu_peers import accession, load  # noqa: E402

import swgpu_core as sw  # noqa: E402
from swgpu_core.database import Database  # noqa: E402
from swgpu_core.engine import get_engine  # noqa: E402
from swgpu_core.hitlist import load_hits, save_hits  # noqa: E402
from swgpu_core.seed import SeedParams  # noqa: E402

#: E-value cutoffs of the reference sets (``--cutoffs``)
CUTOFFS = [1e-5, 1e-3]


def commit() -> str:
    """The commit under test: ``SWGPU_COMMIT`` where set (a device's copy of .git can be stale), else git's."""
    if os.environ.get("SWGPU_COMMIT"):
        return os.environ["SWGPU_COMMIT"]
    proc = subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False)
    return proc.stdout.strip() or "?"


def renamed_queries(src: str, dst: Path) -> Path:
    """The queries with ids q0001, q0002... (descriptions kept)."""
    opener = gzip.open if src.endswith(".gz") else open
    n = 0
    with opener(src, "rt") as fh, open(dst, "w") as out:
        for line in fh:
            if line.startswith(">"):
                n += 1
                line = f">q{n:04d} {line[1:]}"
            out.write(line)
    return dst


def reference(db: Database, hits: list[sw.QueryHits], stats) -> dict[float, set[tuple[int, int]]]:
    """Per cutoff, the exact mode's (query number, sorted subject index) pairs with E <= cutoff."""
    out: dict[float, set[tuple[int, int]]] = {c: set() for c in CUTOFFS}
    for k, qh in enumerate(hits):
        e = stats.evalue(k, len(qh.query), qh.scores, np.asarray(db.lengths)[qh.subjects])
        for c in CUTOFFS:
            out[c].update((k, int(s)) for s in qh.subjects[e <= c])
    return out


def hit_pairs(hits: list[sw.QueryHits]) -> set[tuple[int, int]]:
    return {(k, int(s)) for k, qh in enumerate(hits) for s in qh.subjects}


def recall(ref: dict[float, set], found: set) -> dict[str, float | int]:
    out: dict[str, float | int] = {}
    for c, pairs in ref.items():
        out[f"recall_{c:g}"] = round(len(pairs & found) / max(len(pairs), 1), 4)
        out[f"pairs_{c:g}"] = len(pairs)
    return out


def by_accession(db: Database, ref: dict[float, set]) -> dict[float, set[tuple[int, str]]]:
    return {c: {(q, accession(db.seq_id(s))) for q, s in pairs} for c, pairs in ref.items()}


def table_pairs(path: Path, query_numbers: dict[str, int] | None, top: int) -> set[tuple]:
    """(query, subject accession) of a tab-separated ``qseqid sseqid ...`` table, the first ``top``
    subjects per query; the query as its number in ``query_numbers``, or its id without."""
    seen: dict[str, set[str]] = {}
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) < 2:  # a line cut short (a tool stopped by its timeout)
            continue
        q, s = cols[:2]
        got = seen.setdefault(q, set())
        if len(got) < top:
            got.add(accession(s))
    return {(query_numbers[q] if query_numbers is not None else q, s) for q, subjects in seen.items() for s in subjects}


def sweep_point(db: Database, queries: list, params: SeedParams, threads: int, backend: str = "cpu") -> tuple[dict, set[tuple[int, int]]]:
    """The candidate stage alone on ``backend``: its time (the GPU's tables built and its kernels
    compiled for each parameter set, so a GPU point's time includes them), counts, candidate
    share and candidate pairs."""
    started = time.perf_counter()
    seeder = get_engine(backend).seeder(sw.Scoring.protein(), queries, params, threads=threads)
    table_s = time.perf_counter() - started
    found: set[tuple[int, int]] = set()
    cells = 0
    lengths = np.asarray(db.lengths, np.int64)
    for chunk in db.chunks:
        for k, (q, subjects) in enumerate(zip(queries, seeder.candidates(db, chunk))):
            found.update((k, int(s)) for s in subjects)
            cells += len(q) * int(lengths[subjects].sum())
    seconds = time.perf_counter() - started
    n_res = sum(len(q) for q in queries)
    row = {
        "params": asdict(params),
        "backend": backend, "seed_seconds": round(seconds, 2), "table_seconds": round(table_s, 2),
        "index_entries": int(seeder.index.positions.size),
        "kernel_seconds": round(seeder.kernel_seconds, 3) if hasattr(seeder, "kernel_seconds") else None,
        **seeder.counts,
        "hits_per_cell": round(seeder.counts["hits"] / (n_res * db.n_residues), 6),
        "candidates_per_query": round(seeder.counts["candidates"] / len(queries), 1),
        "candidate_share_of_pairs": round(seeder.counts["candidates"] / (len(queries) * db.n_sequences), 5),
        "candidate_share_of_cells": round(cells / (n_res * db.n_residues), 5),
    }  # fmt: skip
    return row, found


def peer_commands(work: Path, q_fa: Path, top: int, threads: int) -> dict[str, list[str]]:
    t = str(threads)
    return {
        "blastp": ["blastp", "-query", str(q_fa), "-db", str(work / "blastdb"), "-num_threads", t, "-max_target_seqs", str(top),
                   "-outfmt", "6 qseqid sseqid evalue score", "-out", "{out}"],
        "mmseqs2": ["mmseqs", "easy-search", str(q_fa), str(work / "mmdb"), "{out}", str(work / "mmtmp"), "--threads", t,
                    "-e", "10", "--max-seqs", str(max(top, 300)), "--format-output", "query,target,evalue,raw", "-v", "1"],
    }  # fmt: skip


def run(args: argparse.Namespace) -> int:
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    q_fa = renamed_queries(args.queries, work / f"queries-{args.name}.fasta")
    db_dir = work / f"swdb-{args.name}"
    if not db_dir.exists():
        sw.build_database(args.fasta, db_dir)
    db = sw.open_database(db_dir)
    queries = sw.read_queries(q_fa)
    base = {"date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "commit": commit(), "machine": args.machine,
            "database": args.name, "residues": db.n_residues, "sequences": db.n_sequences, "queries": len(queries),
            "query_residues": sum(len(q) for q in queries), "top": args.top, "threads": args.threads}  # fmt: skip
    rows = []

    def record(kind: str, row: dict, before: str) -> None:
        rows.append({**base, "kind": kind, **row, "load_before": before, "load_after": load()})
        print(json.dumps(rows[-1]), flush=True)

    exact_npz = Path(args.exact) if args.exact else work / f"exact-{args.name}-top{args.top}.npz"
    before = load()
    if exact_npz.exists():
        saved = load_hits(exact_npz)
        exact_hits, exact_s = saved.hits, float(saved.meta["seconds"])
    else:
        result = sw.search(db, queries, backend=args.backend, top=args.top, threads=args.threads, keep_score_stats=False)
        save_hits(exact_npz, result, args.top, list(range(len(db.chunks))))
        exact_hits, exact_s = result.hits, result.seconds
        record("seed-exact", {"seconds": round(exact_s, 2)}, before)
    stats = sw.statistics(sw.Scoring.protein(), db)
    ref = reference(db, exact_hits, stats)

    for spec in args.sweep:
        params = SeedParams(*(int(x) for x in spec.split(",")))
        before = load()
        row, found = sweep_point(db, queries, params, args.threads, args.backend)
        record("seed-sweep", {**row, **recall(ref, found)}, before)

    if not args.fast:
        return finish(args, rows)
    before = load()
    fast = sw.search(db, queries, backend=args.backend, top=args.top, threads=args.threads, mode="fast")
    found = hit_pairs(fast.hits)
    record(
        "seed-fast",
        {"params": asdict(fast.seed.params), "seconds": round(fast.seconds, 2),
         "seed_seconds": round(fast.seed.seconds, 2), "exact_seconds": round(exact_s, 2), "speedup": round(exact_s / fast.seconds, 2),
         **fast.seed.counts, **recall(ref, found)},
        before,
    )  # fmt: skip

    if args.peers:
        db_fa = work / f"{args.name}.fasta"
        if not db_fa.exists():
            with gzip.open(args.fasta, "rb") as src, open(db_fa, "wb") as dst:
                shutil.copyfileobj(src, dst)
        builds = {"blastp": ["makeblastdb", "-dbtype", "prot", "-in", str(db_fa), "-out", str(work / "blastdb")],
                  "mmseqs2": ["mmseqs", "createdb", str(db_fa), str(work / "mmdb")]}  # fmt: skip
        acc_ref = by_accession(db, ref)
        numbers = {q.id: k for k, q in enumerate(queries)}
        for name, cmd in peer_commands(work, q_fa, args.top, args.threads).items():
            subprocess.run(builds[name], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            table = work / f"{name}-{args.name}.tsv"
            full = [str(table) if c == "{out}" else c for c in cmd]
            shutil.rmtree(work / "mmtmp", ignore_errors=True)
            before = load()
            started = time.perf_counter()
            subprocess.run(full, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            seconds = time.perf_counter() - started
            record(
                f"seed-peer-{name}",
                {"seconds": round(seconds, 2), "command": shlex.join(full), **recall(acc_ref, table_pairs(table, numbers, args.top))},
                before,
            )

    return finish(args, rows)


def finish(args: argparse.Namespace, rows: list[dict]) -> int:
    if args.out:
        with open(args.out, "a") as fh:
            for row in rows:
                fh.write(json.dumps(row) + "\n")
    return 0


def compare(args: argparse.Namespace) -> int:
    """Recall of tables against the exact mode's table (all ``qseqid sseqid evalue ...``,
    E-values in the third column: swgpu's, the same for both modes)."""
    ref: dict[float, set[tuple[str, str]]] = {c: set() for c in CUTOFFS}
    for line in Path(args.exact).read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            q, s, e = line.split("\t")[:3]
            for c in CUTOFFS:
                if float(e) <= c:
                    ref[c].add((q, accession(s)))
    out: dict[str, dict] = {}
    for spec in args.table:
        name, _, rest = spec.partition("=")
        path, _, subset = rest.partition("@")
        if not Path(path).is_file():
            out[name] = {"error": f"no table {path}"}
            continue
        found = table_pairs(Path(path), None, args.top)
        mine = ref
        if subset:  # the tool searched only these queries: recall over theirs
            ids = {line[1:].split()[0] for line in Path(subset).read_text().splitlines() if line.startswith(">")}
            mine = {c: {p for p in pairs if p[0] in ids} for c, pairs in ref.items()}
        out[name] = recall(mine, found)
    text = json.dumps(out)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--fasta", required=True)
    r.add_argument("--queries", required=True)
    r.add_argument("--name", required=True)
    r.add_argument("--top", type=int, default=500)
    r.add_argument("--threads", type=int, default=2)
    r.add_argument("--backend", choices=["cpu", "cuda"], default="cpu", help="where the exact search, the sweep and the fast search run")
    r.add_argument("--sweep", nargs="*", default=[], metavar="SPAN,X,TRIGGER[,STEP]")
    r.add_argument("--peers", action="store_true")
    r.add_argument("--no-fast", dest="fast", action="store_false", help="no fast search with the default parameters (sweep only)")
    r.add_argument(
        "--exact", help="the exact search's saved hit list of the same queries in the same order (else made and cached under --work)"
    )
    r.add_argument("--work", default="/tmp/seed_recall")
    r.add_argument("--out", help="append the JSON lines here (e.g. bench/results.jsonl)")
    r.add_argument("--machine", default="cpu-2core")
    c = sub.add_parser("compare")
    c.add_argument("--exact", required=True, help="the exact mode's table (qseqid sseqid evalue ...)")
    c.add_argument(
        "--table",
        nargs="+",
        required=True,
        metavar="NAME=PATH[@QUERIES]",
        help="tables to score; @QUERIES: the FASTA of the queries that tool searched",
    )
    c.add_argument("--top", type=int, default=500)
    c.add_argument("--json")
    for p in (r, c):
        p.add_argument("--cutoffs", type=float, nargs="+", default=CUTOFFS, help="E-value cutoffs of the reference sets")
    args = parser.parse_args()
    CUTOFFS[:] = args.cutoffs
    return run(args) if args.command == "run" else compare(args)


if __name__ == "__main__":
    sys.exit(main())
