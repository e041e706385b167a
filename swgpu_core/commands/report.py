"""``swgpu report --db DB --hits HITS.npz... --alignments ALN.jsonl... --out report.html``: the HTML report.

The hit lists may come from several query batches, each searched in several chunk jobs
(what the workflow produces): lists are grouped by their queries, each group is merged
into the global top hits like ``swgpu merge``, and the batches are reported one after the
other. The alignments are those ``swgpu align --out x.jsonl`` wrote for the same hits;
the report reads them and traces nothing. Scan timings are summed from the lists.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..atomic import check_output_path
from ..database import Database
from ..dbstats import default_threshold
from ..errors import InputError
from ..hitlist import HitList, load_hits, merge_hits, scoring_of
from ..report import RunInfo, read_alignments, render, write_report
from ..search import QueryHits
from ._options import add_statistics_arguments, saved_statistics_of

NAME = "report"
HELP = "write one self-contained HTML report (per-query summary, distributions, hits, alignments, run details)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", required=True, help="the database searched")
    parser.add_argument("--hits", required=True, nargs="+", help="hit lists (.npz) of every query batch and chunk")
    parser.add_argument("--alignments", required=True, nargs="+", metavar="ALN.jsonl",
                        help="the alignments of those hits, JSON lines of 'swgpu align --out x.jsonl' (every batch)")  # fmt: skip
    parser.add_argument("--out", required=True, help="the HTML file to write")
    parser.add_argument("--plan", help="plan.json of 'swgpu plan', for the length threshold drawn on the histogram")
    parser.add_argument("--show-alignments", type=int, default=5, help="alignments per query shown in full (default 5)")
    parser.add_argument("--partial", action="store_true", help="accept hit lists that do not cover every chunk")
    parser.add_argument("--quiet", action="store_true", help="no summary on stderr")
    # Only to name the statistics under "Run details": give what 'swgpu align' was given (the E-values are the alignments').
    add_statistics_arguments(parser)


def _batches(lists: list[HitList]) -> list[list[HitList]]:
    """Hit lists grouped by the queries they hold (one group per query batch), in first-seen order."""
    groups: dict[tuple[str, ...], list[HitList]] = {}
    for hl in lists:
        groups.setdefault(tuple(qh.query.id for qh in hl.hits), []).append(hl)
    return list(groups.values())


def _seeding(lists: list[HitList]) -> str:
    """The fast mode's parameters and candidate count (summed over the lists), or "" for exact searches."""
    fast = [hl.meta["seed"] for hl in lists if hl.mode == "fast"]
    if not fast:
        return ""
    params = fast[0].get("description") or ", ".join(f"{k} {v}" for k, v in fast[0]["params"].items())
    found = sum(int(f.get("counts", {}).get("candidates", 0)) for f in fast)
    return f"{params}; {found:,} candidate (query, subject) pairs scored"


def _threshold(path: str | None, db: Database) -> int:
    if path is None:
        return default_threshold(db)
    try:
        plan = json.loads(Path(path).read_text())
        return int(plan["plan"]["threshold"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{path}: not a readable plan.json with a threshold ({exc})") from None


def run(args: argparse.Namespace) -> int:
    check_output_path(args.out)
    if args.show_alignments < 0:
        raise InputError(f"--show-alignments must be 0 or more (got {args.show_alignments})")
    lists = [load_hits(p) for p in args.hits]
    db = Database(args.db)
    scoring = scoring_of(lists[0])
    hits: list[QueryHits] = []
    batches = _batches(lists)
    for group in batches:
        hits.extend(merge_hits(group, db, partial=args.partial))
    alignments = read_alignments(args.alignments, db, hits)
    stats = saved_statistics_of(args, scoring, db, batches)  # its description only: the E-values are the alignments'
    info = RunInfo(
        scoring=scoring,
        statistics=stats.description,
        scan_seconds=sum(float(hl.meta.get("seconds", 0.0)) for hl in lists),
        scan_cells=sum(int(hl.meta.get("cells", 0)) for hl in lists),
        backends=[hl.meta.get("backend", "unknown") for hl in lists],
        mode=", ".join(sorted({hl.mode for hl in lists})),
        seeding=_seeding(lists),
        top=min(hl.top for hl in lists),
        threshold=_threshold(args.plan, db),
        sources=list(args.hits),
        alignment_sources=list(args.alignments),
    )
    write_report(args.out, render(db, hits, alignments, info, shown_alignments=args.show_alignments))
    if not args.quiet:
        print(f"swgpu report: {len(hits)} queries, {sum(map(len, alignments))} alignments -> {args.out}", file=sys.stderr)
    return 0
