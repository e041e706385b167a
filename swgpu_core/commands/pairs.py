"""``swgpu pairs``: align given pairs (two FASTA files in step, or an id table against a database).

    swgpu pairs --query A.fasta --subject B.fasta --out pairs.tsv
    swgpu pairs --pairs ids.tsv --db DB [--query Q.fasta] --out pairs.sam

Output as ``swgpu align`` writes it (BLAST tabular per ``--outfmt``, SAM, BAM, JSON lines,
pairwise text), one entry per pair in input order; see :mod:`swgpu_core.pairs` for the
E-values (each pair is its own search space).
"""

from __future__ import annotations

import argparse
import sys
import time

from ..engine import KINDS
from ..errors import InputError
from ._options import add_output_arguments, add_statistics_arguments, gpus_done, start_gpu, statistics_of
from .search import add_scoring_arguments

NAME = "pairs"
HELP = "align given pairs of sequences: two FASTA files in matching order, or a table of id pairs against a database"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--query",
        help="query FASTA: record k pairs with record k of --subject; with --pairs, where query ids are looked up (default: the database)",
    )
    parser.add_argument("--subject", help="subject FASTA, in the order of --query")
    parser.add_argument("--pairs", help="table of 'query_id subject_id' lines (tab or space separated, '#' comments)")
    parser.add_argument("--db", help="database directory holding the --pairs subjects (and queries, without --query)")
    add_output_arguments(parser, out_help="output file (table, .sam, .bam, .jsonl, .txt), '-' for standard output (default)")
    parser.add_argument("--backend", choices=KINDS, default="auto", help="alignment backend (default auto: CUDA if usable, else CPU)")
    add_statistics_arguments(parser, pairs=True)
    parser.add_argument("--quiet", action="store_true", help="no summary on stderr")
    add_scoring_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from .. import collector

    # one pause from the reading to the writing: the library pauses each step, and the
    # collector's first passes after each would take up what it skipped (0.4 s of 100,000
    # pairs' 2.6 s on the host, bench/RESULTS.md, thirty-second session)
    with collector.paused():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    start_gpu(args)
    from .. import api
    from ..formats import plan_output, write_output
    from ..scoring import Scoring

    output = plan_output(args.out or "-", args.format, args.outfmt)
    scoring = Scoring.protein(args.matrix, args.gap_open, args.gap_extend)
    stats = statistics_of(args, scoring, [output])  # no database: each pair its own (BLAST's or --lambda/--kappa; no fit)
    if args.pairs:
        if not args.db or args.subject:
            raise InputError("--pairs takes --db (and optionally --query), not --subject")
        pairs = api.table_pairs(args.pairs, api.open_database(args.db), args.query)
    elif args.query and args.subject:
        if args.db:
            raise InputError("--query with --subject aligns two FASTA files; --db goes with --pairs")
        pairs = api.fasta_pairs(args.query, args.subject)
    else:
        raise InputError("give --query A.fasta --subject B.fasta, or --pairs TABLE --db DB")
    started = time.perf_counter()
    results, backend = api.align_pairs(pairs, scoring, backend=args.backend, statistics=stats)
    seconds = time.perf_counter() - started
    gpus_done(args)
    write_output(output, results)
    if not args.quiet:
        n = sum(len(a) for a in results.alignments)
        print(f"swgpu pairs: {n} of {len(pairs)} pairs aligned in {seconds:.2f} s on {backend} ({output.kind})", file=sys.stderr)
    return 0
