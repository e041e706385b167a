"""``swgpu merge HITS.npz ...``: merge per-chunk hit lists into each query's global top hits."""

from __future__ import annotations

import argparse

from ._options import add_alignment_arguments, add_output_arguments, check_alignment_arguments, report_hits, saved_statistics_of
from .search import check_top

NAME = "merge"
HELP = "merge hit lists saved by 'search --save-hits' into the global top hits and write them like 'search'"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("hits", nargs="+", help="hit lists (.npz) from 'swgpu search --save-hits', one per chunk or group of chunks")
    parser.add_argument("--db", help="the database searched (default: the path recorded in the hit lists)")
    add_output_arguments(parser, out_help="results (table, .sam, .bam, .jsonl, .txt), '-' for standard output (default)")
    parser.add_argument("--top", type=int, help="hits kept per query (default: as many as the hit lists kept)")
    parser.add_argument("--partial", action="store_true", help="merge even when some chunks of the database are not covered")
    add_alignment_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from .. import api
    from ..formats import plan_output, write_output
    from ..hitlist import load_hits, merge_hits, scoring_of

    output = plan_output(args.out or "-", args.format, args.outfmt)
    check_alignment_arguments(args)
    if args.top is not None:
        check_top(args.top)
    lists = [load_hits(p) for p in args.hits]
    db = api.open_database(args.db or lists[0].meta["database"]["path"])
    merged = merge_hits(lists, db, args.top, partial=args.partial)
    scoring = scoring_of(lists[0])
    stats = saved_statistics_of(args, scoring, db, [lists], [output])  # fitted from the lists' summed histograms: as one search
    program = "swgpu merge" if lists[0].mode == "exact" else f"swgpu merge of a {lists[0].mode}-mode search"  # merge_hits: one mode
    results, _ = report_hits(args, db, merged, scoring, stats, [output], program=program)
    write_output(output, results)
    return 0
