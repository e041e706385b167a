"""``swgpu split-queries FASTA OUTDIR --batch-size N``: query batches for parallel search jobs."""

from __future__ import annotations

import argparse
import sys

from ..batches import split_queries

NAME = "split-queries"
HELP = "cut a query FASTA into OUTDIR/batch-NNNN.fasta files of at most N records (and R residues)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("fasta", help="query FASTA (plain or gzip)")
    parser.add_argument("outdir", help="directory to create (replaced when complete)")
    parser.add_argument("--batch-size", type=int, default=100, help="records per batch at most (default 100)")
    parser.add_argument(
        "--batch-residues",
        type=int,
        help="residues per batch at most (a longer record alone), for batches of about equal work (default: no limit)",
    )


def run(args: argparse.Namespace) -> int:
    paths = split_queries(args.fasta, args.outdir, args.batch_size, args.batch_residues)
    limit = f" and {args.batch_residues} residues" if args.batch_residues else ""
    print(f"{args.fasta}: {len(paths)} batch(es) of at most {args.batch_size} records{limit} in {args.outdir}", file=sys.stderr)
    return 0
