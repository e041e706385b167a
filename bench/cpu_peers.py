"""CPU comparison of swgpu with SSEARCH, BLAST, MMseqs2 and DIAMOND: wall time and recall.

    python bench/cpu_peers.py [--db uniprot20k.fasta.gz] [--queries cudasw_queries.fasta]
                              [--threads 2] [--reps 2] [--work /tmp/cpu_peers] [--json out.json]

Every tool searches the same queries against the same database with the same number of
threads and is asked for its 50 best hits per query (swgpu's default) with an E-value
cutoff of 10 (BLAST's and SSEARCH's default; MMseqs2 and DIAMOND default to 0.001, which
would hide weak hits). The reference is SSEARCH's top 10 per query (``ssearch36 -s BL62
-f -11 -g -1``: exact Smith-Waterman with BLAST's BLOSUM62 11/1, ranked by SSEARCH's own
fitted E()). Recall is the share of those (query, subject) pairs that a tool's first 10
hits hold ("top10", which also counts differences in ranking) and that its first 50 hold
("top50": was the hit found at all), for all of them and for those with SSEARCH E <= 1e-3.

Each tool runs ``--reps`` times and the fastest run counts, because the machine may be
shared; the load average before each run is recorded with it, and so is the CPU time
(user + system of the tool's processes), which contention inflates much less than the
wall time. Database builds (makeblastdb, mmseqs createdb, diamond makedb, swgpu makedb)
are timed separately and not counted in the search time.

Tools come from Debian's packages: ``apt-get install fasta3 ncbi-blast+ mmseqs2 diamond-aligner``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import shlex
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

TOP = 10  # SSEARCH's top hits per query: the reference
LIST = 50  # hits per query asked of every tool (swgpu's default)
SIGNIFICANT = 1e-3


def load() -> str:
    return open("/proc/loadavg").read().split()[0]


def accession(ident: str) -> str:
    """``tr|W0FSK4|W0FSK4_9FLAV`` -> ``W0FSK4``: the one spelling every tool's output can be reduced to."""
    parts = ident.split("|")
    return parts[1] if len(parts) >= 3 and parts[0] in ("sp", "tr") else ident


def top_hits(table: Path, id_col: int = 1, evalue_col: int | None = 2, top: int = LIST) -> dict[str, list[tuple[str, float]]]:
    """First ``top`` distinct subjects per query, in the tool's own order (tab-separated rows)."""
    hits: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for line in Path(table).read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        cols = line.split("\t")
        q, s = cols[0], accession(cols[id_col])
        e = float(cols[evalue_col]) if evalue_col is not None else 0.0
        if len(hits[q]) < top and s not in (x for x, _ in hits[q]):
            hits[q].append((s, e))
    return hits


def recall(reference: dict, found: dict, depth: int) -> tuple[float, float, int, int]:
    """Share of the reference's top pairs among a tool's first ``depth`` hits, overall and among its significant ones."""
    total = hit = sig_total = sig_hit = 0
    for q, ref in reference.items():
        got = {s for s, _ in found.get(q, [])[:depth]}
        for s, e in ref:
            total += 1
            hit += s in got
            if e <= SIGNIFICANT:
                sig_total += 1
                sig_hit += s in got
    return hit / max(total, 1), sig_hit / max(sig_total, 1), total, sig_total


def main() -> int:
    here = Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", default="/work/shared/data/uniprot20k.fasta.gz")
    parser.add_argument("--queries", default="/work/shared/data/cudasw_queries.fasta")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--work", default="/tmp/cpu_peers")
    parser.add_argument("--python", default=sys.executable, help="the Python that runs swgpu (with swgpu_core importable)")
    parser.add_argument("--only", nargs="*", help="run only these tools (names as in the table; SSEARCH's earlier table is reused)")
    parser.add_argument("--reference", help="SSEARCH's table (-m 8) from an earlier run, instead of running ssearch36")
    parser.add_argument(
        "--swgpu-backend", default="cpu", choices=("cpu", "cuda"), help="swgpu's backend (cuda: the same protocol on a GPU)"
    )
    parser.add_argument("--json", help="write the results here as JSON")
    args = parser.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    t = str(args.threads)

    # Inputs: the database unpacked (ssearch36 reads plain FASTA), queries renamed q01.. so
    # that every tool writes the same query id.
    db_fa = work / "db.fasta"
    if not db_fa.exists():
        with gzip.open(args.db, "rb") as src, open(db_fa, "wb") as dst:
            shutil.copyfileobj(src, dst)
    q_fa = work / "queries.fasta"
    n = 0
    with open(q_fa, "w") as out:
        for line in Path(args.queries).read_text().splitlines(keepends=True):
            if line.startswith(">"):
                n += 1
                line = f">q{n:02d} {line[1:]}"
            out.write(line)

    builds = {}
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(here.parent), os.environ.get("PYTHONPATH")])))
    swgpu = [args.python, "-m", "swgpu_core"]
    steps = {
        "makeblastdb": ["makeblastdb", "-dbtype", "prot", "-in", str(db_fa), "-out", str(work / "blastdb")],
        "mmseqs createdb": ["mmseqs", "createdb", str(db_fa), str(work / "mmdb")],
        "diamond makedb": ["diamond", "makedb", "--in", str(db_fa), "-d", str(work / "dmnd"), "--threads", t],
        "swgpu makedb": swgpu + ["makedb", str(db_fa), str(work / "swdb"), "--quiet"],
    }
    wanted = {"makeblastdb": "blastp", "mmseqs createdb": "mmseqs2", "diamond makedb": "diamond", "swgpu makedb": "swgpu"}
    for name, cmd in steps.items():
        if name.startswith("swgpu") and (work / "swdb").exists():
            continue
        if args.only and not any(tool.startswith(wanted[name]) for tool in args.only):
            continue
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        builds[name] = round(time.perf_counter() - start, 2)

    out = work / "out"
    out.mkdir(exist_ok=True)
    tools = {
        # name: (command writing a table to PATH, subject column, E-value column)
        # ssearch36 writes its table to standard output (-O keeps only the last query's)
        "ssearch36": (["ssearch36", "-T", t, "-s", "BL62", "-f", "-11", "-g", "-1", "-m", "8", "-b", str(LIST), "-d", "0", "-q",
                       str(q_fa), str(db_fa)], 1, 10),
        f"swgpu {args.swgpu_backend}": (swgpu + ["search", "--backend", args.swgpu_backend, "--threads", t, "--db", str(work / "swdb"), "--query", str(q_fa),
                               "--top", str(LIST), "--quiet", "--outfmt", "6 qseqid sseqid evalue score", "--out", "{out}"], 1, 2),
        "blastp": (["blastp", "-query", str(q_fa), "-db", str(work / "blastdb"), "-num_threads", t, "-max_target_seqs", str(LIST),
                    "-outfmt", "6 qseqid sseqid evalue score", "-out", "{out}"], 1, 2),
        "mmseqs2": (["mmseqs", "easy-search", str(q_fa), str(work / "mmdb"), "{out}", str(work / "mmtmp"), "--threads", t,
                     "-e", "10", "--format-output", "query,target,evalue,raw", "-v", "1"], 1, 2),
        "mmseqs2 -s 7.5": (["mmseqs", "easy-search", str(q_fa), str(work / "mmdb"), "{out}", str(work / "mmtmp75"), "--threads", t,
                            "-s", "7.5", "-e", "10", "--format-output", "query,target,evalue,raw", "-v", "1"], 1, 2),
        "diamond": (["diamond", "blastp", "-q", str(q_fa), "-d", str(work / "dmnd"), "-o", "{out}", "--threads", t, "-k", str(LIST), "-e", "10",
                     "--outfmt", "6", "qseqid", "sseqid", "evalue", "score", "--quiet"], 1, 2),
        "diamond --ultra-sensitive": (["diamond", "blastp", "-q", str(q_fa), "-d", str(work / "dmnd"), "-o", "{out}", "--threads", t,
                                       "-k", str(LIST), "-e", "10", "--ultra-sensitive", "--outfmt", "6", "qseqid", "sseqid", "evalue", "score",
                                       "--quiet"], 1, 2),
    }  # fmt: skip
    results = []
    reference = None
    for name, (cmd, scol, ecol) in tools.items():
        table = out / (name.replace(" ", "_").replace("-", "") + ".tsv")
        if name == "ssearch36" and args.reference:
            reference = {q: h[:TOP] for q, h in top_hits(Path(args.reference), scol, ecol).items()}
            continue
        if args.only and name not in args.only:
            if name != "ssearch36":
                continue
            if table.exists():  # the reference from an earlier run's table
                reference = {q: h[:TOP] for q, h in top_hits(table, scol, ecol).items()}
                continue
        runs = []
        for rep in range(args.reps):
            before = load()
            full = [str(table) if c == "{out}" else c for c in cmd]
            if full[:2] == ["mmseqs", "easy-search"]:
                shutil.rmtree(full[5], ignore_errors=True)
            start, cpu = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
            with open(table if "{out}" not in cmd else os.devnull, "w") as stdout, open(out / f"{table.stem}.{rep}.log", "w") as log:
                subprocess.run(full, check=True, stdout=stdout, stderr=log, env=env)
            wall, used = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu_s = used.ru_utime + used.ru_stime - cpu.ru_utime - cpu.ru_stime
            runs.append({"seconds": round(wall, 2), "cpu_seconds": round(cpu_s, 2), "load_before": before, "load_after": load()})
            print(f"{name}: {runs[-1]}  ({shlex.join(full)})", file=sys.stderr, flush=True)
        hits = top_hits(table, scol, ecol)
        if name == "ssearch36":
            reference = {q: h[:TOP] for q, h in hits.items()}
        r10, r10_sig, n_all, n_sig = recall(reference, hits, TOP)
        r50, r50_sig, _, _ = recall(reference, hits, LIST)
        results.append({
            "tool": name, "min_seconds": min(r["seconds"] for r in runs), "min_cpu_seconds": min(r["cpu_seconds"] for r in runs), "runs": runs,
            "recall_top10": round(r10, 4), "recall_top10_significant": round(r10_sig, 4), "found_in_top50": round(r50, 4),
            "found_in_top50_significant": round(r50_sig, 4), "reference_pairs": n_all, "reference_significant_pairs": n_sig,
            "command": shlex.join(cmd),
        })  # fmt: skip
    versions = {}
    for tool, cmd in {"ssearch36": ["ssearch36", "-h"], "blastp": ["blastp", "-version"], "mmseqs": ["mmseqs", "version"],
                      "diamond": ["diamond", "version"]}.items():  # fmt: skip
        if shutil.which(cmd[0]) is None:
            continue
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        text = (proc.stdout + proc.stderr).strip().splitlines()
        versions[tool] = next((x for x in text if any(c.isdigit() for c in x)), "?")[:80]
    report = {"db": args.db, "queries": args.queries, "threads": args.threads, "reps": args.reps, "cpus": os.cpu_count(),
              "builds_seconds": builds, "versions": versions, "results": results}  # fmt: skip
    print(f"{'tool':<28}{'min wall s':>11}{'min CPU s':>11}{'top10':>8}{'sig':>8}{'top50':>8}{'sig':>8}  loads before runs")
    for r in results:
        loads = ", ".join(x["load_before"] for x in r["runs"])
        print(f"{r['tool']:<28}{r['min_seconds']:>11.2f}{r['min_cpu_seconds']:>11.2f}{r['recall_top10']:>8.3f}"
              f"{r['recall_top10_significant']:>8.3f}{r['found_in_top50']:>8.3f}{r['found_in_top50_significant']:>8.3f}  {loads}")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
