"""``swgpu report --db DB --hits HITS.npz... --out report.html``: the run's HTML report.

The hit lists may come from several query batches, each searched in several chunk jobs
(what the workflow produces): lists are grouped by their queries, each group is merged
into the global top hits like ``swgpu merge``, and the batches are reported one after the
other. Scan timings are summed from the lists; the traceback is timed here.
"""

from __future__ import annotations

import argparse
import json
import sys

from ._options import add_alignment_arguments, alignments_for, check_alignment_arguments
from ..database import Database
from ..dbstats import default_threshold
from ..errors import InputError
from ..hitlist import HitList, load_hits, merge_hits, scoring_of
from ..report import RunInfo, render, write_report
from ..search import QueryHits

NAME = "report"
HELP = "write one self-contained HTML report (parameters, distributions, top hits, alignments, timings)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", required=True, help="the database searched")
    parser.add_argument("--hits", required=True, nargs="+", help="hit lists (.npz) of every query batch and chunk")
    parser.add_argument("--out", required=True, help="the HTML file to write")
    parser.add_argument("--plan", help="plan.json of 'swgpu plan', for the length threshold drawn on the histogram")
    parser.add_argument("--table-rows", type=int, default=10, help="hits per query in the top-hit tables (default 10)")
    parser.add_argument("--show-alignments", type=int, default=3, help="alignments per query shown in full (default 3)")
    parser.add_argument("--partial", action="store_true", help="accept hit lists that do not cover every chunk")
    parser.add_argument("--quiet", action="store_true", help="no summary on stderr")
    add_alignment_arguments(parser, backend=True)


def _batches(lists: list[HitList]) -> list[list[HitList]]:
    """Hit lists grouped by the queries they hold (one group per query batch), in first-seen order."""
    groups: dict[tuple[str, ...], list[HitList]] = {}
    for hl in lists:
        groups.setdefault(tuple(qh.query.id for qh in hl.hits), []).append(hl)
    return list(groups.values())


def _threshold(path: str | None, db: Database) -> int:
    if path is None:
        return default_threshold(db)
    try:
        plan = json.loads(open(path).read())
        return int(plan["plan"]["threshold"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{path}: not a readable plan.json with a threshold ({exc})") from None


def run(args: argparse.Namespace) -> int:
    lists = [load_hits(p) for p in args.hits]
    check_alignment_arguments(args)
    db = Database(args.db)
    scoring = scoring_of(lists[0])
    hits: list[QueryHits] = []
    for group in _batches(lists):
        hits.extend(merge_hits(group, db, partial=args.partial))
    aligned, _, why = alignments_for(args, db, hits, scoring, args.backend)
    info = RunInfo(
        scoring=scoring,
        statistics=why,
        scan_seconds=sum(float(hl.meta.get("seconds", 0.0)) for hl in lists),
        scan_cells=sum(int(hl.meta.get("cells", 0)) for hl in lists),
        backends=[hl.meta.get("backend", "unknown") for hl in lists],
        top=min(hl.top for hl in lists),
        threshold=_threshold(args.plan, db),
        sources=list(args.hits),
    )
    write_report(args.out, render(db, hits, aligned, info, table_rows=args.table_rows, shown_alignments=args.show_alignments))
    if not args.quiet:
        print(f"swgpu report: {len(hits)} queries, {aligned.count} alignments -> {args.out}", file=sys.stderr)
    return 0
