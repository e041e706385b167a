"""Command-line options shared by every command that reports alignments.

``search``, ``merge``, ``align`` and ``report`` take the same ``--align``, ``--evalue``,
``--lambda``/``--kappa`` options and run the traceback the same way through
:func:`alignments_for`, so one rule decides which hits get aligned everywhere.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from ..database import Database
from ..errors import InputError
from ..formats.tabular import table_input
from ..outfmt import OutFormat
from ..scoring import Scoring
from ..search import QueryHits
from ..stats import KarlinAltschul, karlin_altschul
from .hits import AlignedHits, align_query_hits


def add_alignment_arguments(parser: argparse.ArgumentParser, *, backend: bool = False) -> None:
    """``--align``, ``--evalue``, ``--lambda``, ``--kappa`` (and ``--traceback-backend``)."""
    parser.add_argument("--align", type=int, metavar="N", help="trace back the best N hits of each query (default: all reported hits)")
    parser.add_argument("--evalue", type=float, metavar="E", help="report only hits with an E-value of at most E")
    parser.add_argument("--lambda", dest="lam", type=float, help="Karlin-Altschul lambda for scoring systems BLAST has no parameters for")
    parser.add_argument("--kappa", type=float, help="Karlin-Altschul K, with --lambda")
    if backend:
        parser.add_argument("--backend", choices=("cpu", "cuda", "auto"), default="auto", help="traceback backend (default auto: CUDA if usable, else CPU)")


def check_alignment_arguments(args: argparse.Namespace) -> None:
    """Refuse bad ``--align``/``--evalue``/``--lambda``/``--kappa`` before any work starts."""
    if args.align is not None and args.align < 0:
        raise InputError(f"--align must be 0 or more (got {args.align})")
    if args.evalue is not None and not args.evalue > 0:
        raise InputError(f"--evalue must be positive (got {args.evalue})")
    if (args.lam is None) != (args.kappa is None):
        raise InputError("--lambda and --kappa go together: give both or neither")
    if args.lam is not None and not (args.lam > 0 and args.kappa > 0):
        raise InputError(f"--lambda and --kappa must be positive (got {args.lam}, {args.kappa})")


def statistics(args: argparse.Namespace, scoring: Scoring) -> tuple[KarlinAltschul | None, str]:
    """E-value parameters for ``scoring``; says once on stderr why there are none."""
    params, why = karlin_altschul(scoring, args.lam, args.kappa)
    if params is None and not getattr(args, "quiet", False):
        print(f"swgpu: {why}", file=sys.stderr)
    return params, why


def alignments_for(
    args: argparse.Namespace, db: Database, hits: Sequence[QueryHits], scoring: Scoring, backend: str = "cpu"
) -> tuple[AlignedHits, KarlinAltschul | None, str]:
    """Align the hits the options select; also the statistics used and their description."""
    params, why = statistics(args, scoring)
    aligned = align_query_hits(db, hits, scoring, args.align, backend=backend, params=params, max_evalue=args.evalue)
    return aligned, params, why


def table_rows(
    args: argparse.Namespace, fmt: OutFormat, db: Database, hits: Sequence[QueryHits], scoring: Scoring, backend: str = "cpu"
) -> tuple[Sequence[QueryHits], Callable | None]:
    """What :func:`~swgpu_core.outfmt.write_table` needs: the rows' hits and the ``align`` callback.

    Tracebacks run only when a field needs them or ``--evalue`` filters; then only the
    aligned hits get rows.
    """
    if not (fmt.needs_alignment or args.evalue is not None or args.align is not None):
        return hits, None
    aligned, _, _ = alignments_for(args, db, hits, scoring, backend)
    return table_input(hits, aligned.alignments)
