"""``swgpu align --db DB --hits HITS.npz... --out PATH``: full alignments of saved top hits.

The hit lists (from ``search --save-hits``, one per chunk or group of chunks) are merged
into each query's global top hits exactly as ``swgpu merge`` does, then traced back and
written as BLAST tabular, SAM, BAM, JSON lines or a pairwise view (``--format`` or the
output's extension). ``--out`` may be repeated: the hits are traced back once and every
output is written from that one result, each in the format of its extension (one
workflow job per query batch). The queries travel inside the hit lists; ``--query`` is
only checked against them, so a workflow can pass the batch FASTA it searched.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from ..align.options import add_alignment_arguments, alignments_for, check_alignment_arguments
from ..database import Database
from ..errors import InputError
from ..fasta import read_sequences
from ..formats import FORMATS, choose_format, write_alignments
from ..hitlist import load_hits, merge_hits, scoring_of
from ..outfmt import STANDARD_FIELDS, parse_outfmt
from .search import check_top

NAME = "align"
HELP = "trace back saved top hits into full alignments (BLAST tabular, SAM, BAM, JSON lines, pairwise)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", required=True, help="the database searched")
    parser.add_argument("--hits", required=True, nargs="+", help="hit lists (.npz) from 'swgpu search --save-hits' covering the database")
    parser.add_argument("--query", help="the query FASTA searched (optional: checked against the queries inside the hit lists)")
    parser.add_argument(
        "--out", action="append", help="output file, '-' for standard output (default); repeat it to write several formats from one traceback"
    )
    parser.add_argument("--format", choices=FORMATS, help="output format (default: from the --out extension .sam .bam .jsonl .txt, else tsv); one --out only")
    parser.add_argument("--outfmt", default="6 " + " ".join(STANDARD_FIELDS), help="BLAST tabular format 6 or 7 and fields, for tsv output (default: 6 std)")
    parser.add_argument("--top", type=int, help="hits per query to consider (default: as many as the hit lists kept)")
    parser.add_argument("--partial", action="store_true", help="accept hit lists that do not cover every chunk")
    parser.add_argument("--quiet", action="store_true", help="no summary on stderr")
    add_alignment_arguments(parser, backend=True)


def run(args: argparse.Namespace) -> int:
    outs = args.out or ["-"]
    if args.format is not None and len(outs) > 1:
        raise InputError("--format applies to one --out; with several, each output's extension names its format")
    if len(set(outs)) != len(outs):
        raise InputError(f"--out {next(o for o in outs if outs.count(o) > 1)} is given twice")
    kinds = [choose_format(out, args.format) for out in outs]
    check_alignment_arguments(args)
    table = parse_outfmt(args.outfmt) if "tsv" in kinds else None
    if args.top is not None:
        check_top(args.top)
    lists = [load_hits(p) for p in args.hits]
    db = Database(args.db)
    hits = merge_hits(lists, db, args.top, partial=args.partial)
    if args.query:
        queries = read_sequences(args.query, db.alphabet)
        if [q.id for q in queries] != [qh.query.id for qh in hits] or not all(
            np.array_equal(q.codes, qh.query.codes) for q, qh in zip(queries, hits)
        ):
            raise InputError(f"{args.query}: its sequences are not the queries of the hit lists ({args.hits[0]})")
    scoring = scoring_of(lists[0])
    aligned, _, why = alignments_for(args, db, hits, scoring, args.backend)
    for out, kind in zip(outs, kinds):
        write_alignments(out, kind, db, hits, aligned.alignments, table=table, scoring=scoring.describe(), note=why)
    if not args.quiet:
        print(f"swgpu align: {aligned.count} alignments of {len(hits)} queries in {aligned.seconds:.2f} s ({', '.join(kinds)})", file=sys.stderr)
    return 0
