"""Alignment records and their output on the CPU: microseconds per alignment, traceback excluded.

    python bench/bench_records.py --data ../shared/data --work /tmp/records-bench --save /tmp/records-base
    python bench/bench_records.py --data ../shared/data --work /tmp/records-bench --compare /tmp/records-base --json

The 20 classic queries (``cudasw_queries.fasta``) against uniprot20k on the CPU backend,
each query's ``--top`` hits (default 500: 10,000 alignments, from the strong hits down to
the random ones a large ``--align`` reports). The database, the hits and the traced paths
are made once and kept in ``--work`` (a temporary directory without it), so the timed
parts see the same paths on every run and every commit.

Timed, each the best of ``--repeats`` runs: ``records``, :func:`~swgpu_core.align.align_query_hits`
with an engine that replays the stored paths (so: headers, records, E-values, not the
traceback), then :func:`~swgpu_core.formats.write_results` for every format of ``FORMATS``.
``--save DIR`` keeps the outputs, ``--compare DIR`` says for each whether its bytes equal
the saved ones (BAM decompressed, without samtools sort's ``@PG`` line, which names a
temporary file). The SAM/BAM ``@PG`` line of swgpu records the command line, so it is
fixed here: runs with different options write the same bytes.
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import json
import os
import pickle
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from swgpu_core.align import align_query_hits  # noqa: E402
from swgpu_core.database import Database, build_database  # noqa: E402
from swgpu_core.engine import get_engine  # noqa: E402
from swgpu_core.fasta import read_sequences  # noqa: E402
from swgpu_core.formats import Results, write_results  # noqa: E402
from swgpu_core.scoring import Scoring  # noqa: E402
from swgpu_core.search import search  # noqa: E402
from swgpu_core.significance import statistics  # noqa: E402

#: Each timed output: (name, file name, ``--outfmt`` of tables).
FORMATS = (
    ("tsv-std", "std.tsv", "6 std"),
    ("tsv-wide", "wide.tsv", "6 std qseq sseq btop cigar nident positive gaps ppos qcovhsp"),
    ("tsv-7", "std7.tsv", "7 std"),
    ("sam", "out.sam", None),
    ("bam", "out.bam", None),
    ("jsonl", "out.jsonl", None),
    ("pairwise", "out.txt", None),
)


class Replay:
    """An engine whose traceback hands back stored paths: the records are timed without it."""

    kind = "cpu"

    def __init__(self, traces: list) -> None:
        self.traces = traces

    def traceback(self, tasks: list, scoring: Scoring, threads: int = 0, device: int | None = None) -> list:
        if len(tasks) != len(self.traces):
            raise RuntimeError(f"{len(tasks)} pairs to trace, {len(self.traces)} stored paths")
        return self.traces


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def prepare(work: Path, data: Path, top: int, scoring: Scoring) -> tuple[Database, list, list]:
    """The database, hits and traced paths, made once per ``work`` directory and ``top``."""
    db_dir = work / "uniprot20k"
    if not db_dir.is_dir():
        build_database(data / "uniprot20k.fasta.gz", db_dir)
    db = Database(db_dir)
    stored = work / f"traces-top{top}.pickle"
    if stored.is_file():
        with open(stored, "rb") as fh:
            hits, traces = pickle.load(fh)
        return db, hits, traces
    queries = read_sequences(data / "cudasw_queries.fasta", db.alphabet)
    started = time.perf_counter()
    result = search(db, queries, scoring, get_engine("cpu").scanner(scoring), top=top, show_progress=False)
    print(f"search: {time.perf_counter() - started:.1f} s", file=sys.stderr)
    captured: list = []

    class Capture(Replay):
        def traceback(self, tasks: list, scoring: Scoring, threads: int = 0, device: int | None = None) -> list:
            captured.extend(get_engine("cpu").traceback(tasks, scoring))
            return captured

    started = time.perf_counter()
    align_query_hits(db, result.hits, scoring, backend=Capture([]))
    print(f"traceback: {time.perf_counter() - started:.1f} s", file=sys.stderr)
    with open(stored, "wb") as fh:
        pickle.dump((result.hits, captured), fh)
    return db, result.hits, captured


def best_of(repeats: int, fn, *args, **kwargs) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn(*args, **kwargs)
        times.append(time.perf_counter() - started)
    return min(times)


def comparable(path: Path) -> bytes:
    """The bytes a comparison looks at: BAM decompressed, its header text without samtools sort's @PG line."""
    raw = path.read_bytes()
    if path.suffix != ".bam":
        return raw
    raw = gzip.decompress(raw)
    size = int.from_bytes(raw[4:8], "little")  # after the magic: l_text, then the header text
    text = b"".join(line for line in raw[8 : 8 + size].splitlines(keepends=True) if not line.startswith(b"@PG\tID:samtools"))
    return text + raw[8 + size :]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data", help="uniprot20k.fasta.gz and cudasw_queries.fasta")
    parser.add_argument("--work", type=Path, help="keeps the database, hits and paths between runs (default: a temporary directory)")
    parser.add_argument("--top", type=int, default=500, help="hits aligned per query (20 queries)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--save", type=Path, help="keep the outputs in this directory")
    parser.add_argument("--compare", type=Path, help="compare the outputs with those saved here")
    parser.add_argument("--json", action="store_true", help="print one JSON line of the results")
    args = parser.parse_args()
    sys.argv = [sys.argv[0]]  # the @PG line of SAM/BAM (see the module doc)

    scoring = Scoring.protein()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp) / "work"
        work.mkdir(parents=True, exist_ok=True)
        db, hits, traces = prepare(work, args.data, args.top, scoring)
        stats = statistics(scoring, db)
        engine = Replay(traces)
        aligned = align_query_hits(db, hits, scoring, backend=engine, statistics=stats)
        n = aligned.count
        seconds = {"records": best_of(args.repeats, align_query_hits, db, hits, scoring, backend=engine, statistics=stats)}
        results = Results(db, hits, aligned.alignments, stats, scoring.describe())
        out_dir = args.save or Path(tmp) / "out"
        out_dir.mkdir(parents=True, exist_ok=True)
        for name, file, outfmt in FORMATS:
            kwargs = {"outfmt": outfmt} if outfmt else {}
            seconds[name] = best_of(args.repeats, write_results, out_dir / file, results, **kwargs)
        same = {name: comparable(out_dir / file) == comparable(args.compare / file) for name, file, _ in FORMATS} if args.compare else None

    per = {k: v / n * 1e6 for k, v in seconds.items()}
    for k, us in per.items():
        extra = "" if same is None or k not in same else ("  identical" if same[k] else "  DIFFERENT")
        print(f"{k:9s} {us:8.2f} us per alignment{extra}")
    if args.json:
        row = {
            "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "commit": commit(),
            "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
            "alignments": n,
            "columns": int(sum(a.length for alns in aligned.alignments for a in alns)),
            "us_per_alignment": per,
            "identical": same,
        }
        print(json.dumps(row))


if __name__ == "__main__":
    main()
