"""Command-line options shared by the commands that report hits (argparse lives here, not in the library).

``search``, ``merge``, ``align``, ``pairs``, ``align-long`` and ``report`` take the same
output options (``--out``, ``--format``, ``--outfmt``, fields listed in ``--help``) and
hit options (``--align``, ``--evalue``, ``--lambda``/``--kappa``); these helpers turn them
into the plain values of :mod:`swgpu_core.api`. Not a command: the CLI skips modules whose
name starts with ``_``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..errors import InputError
from ..formats import FORMATS
from ..outfmt import DEFAULT_OUTFMT, fields_help


def add_output_arguments(parser: argparse.ArgumentParser, *, out_help: str, outfmt: str = DEFAULT_OUTFMT, several: bool = False) -> None:
    """``--out`` (several with ``several``), ``--format``, ``--outfmt``; every tabular field in the epilog of ``--help``."""
    if several:
        parser.add_argument("--out", nargs="+", default=None, help=out_help)
    else:
        parser.add_argument("--out", help=out_help)
    parser.add_argument("--format", choices=FORMATS, help="output format (default: from the --out extension .sam .bam .jsonl .txt, else tsv)")
    parser.add_argument("--outfmt", default=outfmt, help="BLAST tabular format 6 or 7 and field names, for tsv output (default '%(default)s'; fields below)")
    parser.epilog = fields_help()
    parser.formatter_class = argparse.RawDescriptionHelpFormatter


def add_alignment_arguments(parser: argparse.ArgumentParser, *, backend: bool = False, evalue: bool = True) -> None:
    """``--align``, ``--evalue``, ``--lambda``, ``--kappa`` (and ``--backend`` of the traceback)."""
    parser.add_argument("--align", type=int, metavar="N", help="report (and trace back, when the output needs alignments) the best N hits of each query (default: all)")
    if evalue:
        parser.add_argument("--evalue", type=float, metavar="E", help="report only hits with an E-value of at most E (default 10, as BLAST; from scores, no traceback)")
    parser.add_argument("--lambda", dest="lam", type=float, help="Karlin-Altschul lambda for scoring systems BLAST has no parameters for")
    parser.add_argument("--kappa", type=float, help="Karlin-Altschul K, with --lambda")
    if backend:
        parser.add_argument("--backend", choices=("cpu", "cuda", "auto"), default="auto", help="traceback backend (default auto: CUDA if usable, else CPU)")


def check_alignment_arguments(args: argparse.Namespace) -> None:
    """Refuse bad ``--align``/``--evalue``/``--lambda``/``--kappa`` before any work starts."""
    if getattr(args, "align", None) is not None and args.align < 0:
        raise InputError(f"--align must be 0 or more (got {args.align})")
    if getattr(args, "evalue", None) is not None and not args.evalue > 0:
        raise InputError(f"--evalue must be positive (got {args.evalue})")
    if (args.lam is None) != (args.kappa is None):
        raise InputError("--lambda and --kappa go together: give both or neither")
    if args.lam is not None and not (args.lam > 0 and args.kappa > 0):
        raise InputError(f"--lambda and --kappa must be positive (got {args.lam}, {args.kappa})")


def statistics_of(args: argparse.Namespace, scoring):
    """The run's statistics (``--lambda``/``--kappa`` or BLAST's table); says once on stderr why there are none."""
    from ..significance import statistics

    stats = statistics(scoring, args.lam, args.kappa)
    if not stats.available and not getattr(args, "quiet", False):
        print(f"swgpu: {stats.description}", file=sys.stderr)
    return stats


def evalue_cutoff(args: argparse.Namespace, stats) -> float | None:
    """``--evalue``, else BLAST's default 10; an explicit cutoff without E-values is an error."""
    from ..significance import DEFAULT_MAX_EVALUE

    if args.evalue is None:
        return DEFAULT_MAX_EVALUE
    if not stats.available:
        raise InputError("--evalue needs E-values, which this scoring system does not have (give --lambda and --kappa)")
    return args.evalue


def hit_options(args: argparse.Namespace, scoring) -> tuple:
    """The statistics and the E-value cutoff of the options, checked before any scan or traceback."""
    stats = statistics_of(args, scoring)
    return stats, evalue_cutoff(args, stats)


def report_hits(args: argparse.Namespace, db, hits: Sequence, scoring, outputs: Sequence, *, program: str, backend="cpu", options: tuple | None = None):
    """Select the hits the options ask for (E-value, count; from scores), trace them only when an output needs alignments.

    ``options``: what :func:`hit_options` returned, when the command asked before its scan.
    Returns the :class:`~swgpu_core.formats.Results` every output is written from, and the
    traceback's :class:`~swgpu_core.align.AlignedHits` (None without traceback).
    """
    from .. import api
    from ..formats import needs_alignments

    stats, cutoff = options if options is not None else hit_options(args, scoring)
    selected = api.select_hits(db, hits, stats, max_evalue=cutoff, limit=args.align)
    aligned = api.align(db, selected, scoring, backend=backend, statistics=stats) if needs_alignments(outputs) else None
    results = api.Results(db, selected, aligned.alignments if aligned else None, stats, scoring.describe(), program, stats.description)
    return results, aligned


def alignments_for(args: argparse.Namespace, db, hits: Sequence, scoring, backend: str = "cpu"):
    """Alignments of the hits the options select (the report's); also the statistics and their description."""
    from .. import api

    stats = statistics_of(args, scoring)
    cutoff = None if args.evalue is None else evalue_cutoff(args, stats)  # the report shows every hit unless asked
    aligned = api.align(db, hits, scoring, backend=backend, statistics=stats, limit=args.align, max_evalue=cutoff)
    return aligned, stats, stats.description
