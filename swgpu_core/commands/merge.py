"""``swgpu merge HITS.npz ...``: merge per-chunk hit lists into each query's global top hits."""

from __future__ import annotations

import argparse

from ..align.options import add_alignment_arguments, check_alignment_arguments, table_rows
from ..atomic import atomic_output, check_output_path
from ..database import Database
from ..hitlist import load_hits, merge_hits, scoring_of
from ..outfmt import DEFAULT_FIELDS, parse_outfmt, write_table
from .search import check_top

NAME = "merge"
HELP = "merge hit lists saved by 'search --save-hits' into the global top hits and write them like 'search'"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("hits", nargs="+", help="hit lists (.npz) from 'swgpu search --save-hits', one per chunk or group of chunks")
    parser.add_argument("--db", help="the database searched (default: the path recorded in the hit lists)")
    parser.add_argument("--out", default="-", help="result table, '-' for standard output (default)")
    parser.add_argument("--outfmt", default="6 " + " ".join(DEFAULT_FIELDS), help="BLAST tabular format 6 or 7 and field names (default '%(default)s')")
    parser.add_argument("--top", type=int, help="hits kept per query (default: as many as the hit lists kept)")
    parser.add_argument("--partial", action="store_true", help="merge even when some chunks of the database are not covered")
    add_alignment_arguments(parser)


def run(args: argparse.Namespace) -> int:
    fmt = parse_outfmt(args.outfmt)
    check_output_path(args.out)
    check_alignment_arguments(args)
    if args.top is not None:
        check_top(args.top)
    lists = [load_hits(p) for p in args.hits]
    db = Database(args.db or lists[0].meta["database"]["path"])
    merged = merge_hits(lists, db, args.top, partial=args.partial)
    scoring = scoring_of(lists[0])
    rows, align = table_rows(args, fmt, db, merged, scoring)
    with atomic_output(args.out) as fh:
        write_table(fh, fmt, db, rows, align=align, program="swgpu merge", scoring=scoring.describe())
    return 0
