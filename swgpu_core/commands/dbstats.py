"""``swgpu dbstats DBDIR``: length statistics, histogram PNG and TSV, long sequences marked."""

from __future__ import annotations

import argparse
import sys

from ..atomic import check_output_path
from ..database import Database
from ..dbstats import default_threshold, length_stats, length_table, plot_histogram, write_tsv
from ..errors import InputError

NAME = "dbstats"
HELP = "print a database's length statistics and write its length histogram (PNG and TSV)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dbdir", help="database directory built by 'swgpu makedb'")
    parser.add_argument(
        "--threshold", type=int, help="long-sequence threshold in residues (default: the planner's for a 1000-residue query)"
    )
    parser.add_argument("--png", help="histogram plot (default: DBDIR.lengths.png)")
    parser.add_argument("--tsv", help="histogram table (default: DBDIR.lengths.tsv)")
    parser.add_argument("--bins", type=int, default=60, help="number of log-spaced length bins (default 60)")


def run(args: argparse.Namespace) -> int:
    if args.bins < 1:
        raise InputError(f"--bins must be at least 1 (got {args.bins})")
    check_output_path(args.png, args.tsv)
    db = Database(args.dbdir)
    threshold = args.threshold if args.threshold is not None else default_threshold(db)
    stats = length_stats(db, threshold)
    table = length_table(db, threshold, args.bins)
    base = str(db.path).rstrip("/")
    png, tsv = args.png or f"{base}.lengths.png", args.tsv or f"{base}.lengths.tsv"
    write_tsv(tsv, table, threshold)
    plot_histogram(png, table, threshold, f"{db.path.name}: {db.n_sequences:,} sequences")
    print("\n".join(stats.lines()))
    print(f"histogram: {png} and {tsv}", file=sys.stderr)
    return 0
