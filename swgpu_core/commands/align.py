"""``swgpu align --db DB --hits HITS.npz... --out PATH...``: full alignments of saved top hits.

The hit lists (from ``search --save-hits``, one per chunk or group of chunks) are merged
into each query's global top hits exactly as ``swgpu merge`` does, then traced back once
and written as BLAST tabular, SAM, BAM, JSON lines or a pairwise view (``--format`` or
each output's extension): several ``--out`` paths are all written from that one
traceback. The queries travel inside the hit lists; ``--query`` is only checked against
them, so a workflow can pass the batch FASTA it searched.
"""

from __future__ import annotations

import argparse
import sys

from ..errors import InputError
from ._options import (
    add_alignment_arguments,
    add_output_arguments,
    check_alignment_arguments,
    gpus_done,
    plan_outputs,
    report_hits,
    saved_statistics_of,
    start_gpu,
)
from .search import check_top

NAME = "align"
HELP = "trace back saved top hits into full alignments (BLAST tabular, SAM, BAM, JSON lines, pairwise)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", required=True, help="the database searched")
    parser.add_argument("--hits", required=True, nargs="+", help="hit lists (.npz) from 'swgpu search --save-hits' covering the database")
    parser.add_argument("--query", help="the query FASTA searched (optional: checked against the queries inside the hit lists)")
    add_output_arguments(
        parser, out_help="output files, each in the format of its extension; '-' for standard output (default)", several=True
    )
    parser.add_argument("--top", type=int, help="hits per query to consider (default: as many as the hit lists kept)")
    parser.add_argument("--partial", action="store_true", help="accept hit lists that do not cover every chunk")
    parser.add_argument("--quiet", action="store_true", help="no summary on stderr")
    add_alignment_arguments(parser, backend=True)


def run(args: argparse.Namespace) -> int:
    start_gpu(args)
    import numpy as np

    from .. import api
    from ..formats import write_output
    from ..hitlist import load_hits, merge_hits, scoring_of

    paths = args.out or ["-"]
    if len(set(paths)) != len(paths):
        raise InputError(f"--out names a file twice ({' '.join(paths)})")
    outputs = plan_outputs(args, paths)
    check_alignment_arguments(args)
    if args.top is not None:
        check_top(args.top)
    lists = [load_hits(p) for p in args.hits]
    db = api.open_database(args.db)
    hits = merge_hits(lists, db, args.top, partial=args.partial)
    if args.query:
        queries = api.read_queries(args.query, db.alphabet)
        if [q.id for q in queries] != [qh.query.id for qh in hits] or not all(
            np.array_equal(q.codes, qh.query.codes) for q, qh in zip(queries, hits)
        ):
            raise InputError(f"{args.query}: its sequences are not the queries of the hit lists ({args.hits[0]})")
    scoring = scoring_of(lists[0])
    stats = saved_statistics_of(args, scoring, db, [lists], outputs)  # fitted from the lists' summed histograms: as one search
    results, aligned = report_hits(args, db, hits, scoring, stats, outputs, program="swgpu align", backend=args.backend)
    gpus_done(args)
    for output in outputs:
        write_output(output, results)
    if not args.quiet:
        traced = (
            f"{aligned.count} alignments of {len(hits)} queries in {aligned.seconds:.2f} s"
            if aligned
            else f"{len(hits)} queries, no traceback needed"
        )
        print(f"swgpu align: {traced} ({', '.join(o.kind for o in outputs)})", file=sys.stderr)
    return 0
