"""Command-line options shared by the commands that report hits (argparse lives here, not in the library).

``search``, ``merge``, ``align``, ``pairs``, ``align-long`` and ``report`` take the same
output options (``--out``, ``--format``, ``--outfmt``, fields listed in ``--help``) and
hit options (``--align``, ``--evalue``, ``--stats``, ``--lambda``/``--kappa``); these helpers
turn them into the plain values of :mod:`swgpu_core.api`. Not a command: the CLI skips modules whose
name starts with ``_``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .. import cuda_driver
from ..engine import KINDS, warm_up
from ..errors import InputError
from ..formats import FORMATS, Output, choose_format, plan_output
from ..outfmt import DEFAULT_OUTFMT, fields_help
from . import devices

if TYPE_CHECKING:  # the seeding module is imported by the commands that search, not by every one
    from ..seed import SeedParams


def start_gpu(
    args: argparse.Namespace, *, scan: bool = False, seed_params: SeedParams | None = None, warm: list[int] | None = None
) -> list[int] | None:
    """The GPUs the command uses, in this process's numbering (None: every visible one): its
    ``--devices`` or its default (:func:`swgpu_core.commands.devices`), renumbered where
    ``swgpu`` showed CUDA only those (:func:`swgpu_core.cuda_driver.local`). Unless the CPU
    backend was asked for, CUDA's start-up on them begins in the background
    (:func:`swgpu_core.engine.warm_up`; ``scan``: a database search's, ``seed_params``: a fast
    search's; ``warm``: the GPUs to start where the command uses every visible one, of which it
    will take only some, as align-long's :func:`swgpu_core.commands.align_long_devices`, and
    ``swgpu`` did not show CUDA only those already). Called first thing in a command, so that
    it runs while the command reads its inputs."""
    used = cuda_driver.local(devices(args.command, getattr(args, "devices", None)))
    if args.backend != "cpu":
        warm_up(warm if used is None and warm is not None and not cuda_driver.hid_gpus() else used, scan=scan, seed_params=seed_params)
    return used


def gpus_done(args: argparse.Namespace, keep: object = None) -> None:
    """Called where a command has done its last GPU work (its outputs not yet written): where
    its process ends with it (``args.process_ends``, the ``swgpu`` executable), the GPUs are
    let go (:func:`swgpu_core.cuda_driver.release`), so that the driver's teardown of their
    contexts does not delay the command's end. ``keep``: what holds the command's CUDA objects
    beyond its own variables (the engine that made its scanner), held to the end."""
    if args.process_ends and args.backend != "cpu":
        cuda_driver.release(keep)


def add_output_arguments(parser: argparse.ArgumentParser, *, out_help: str, outfmt: str = DEFAULT_OUTFMT, several: bool = False) -> None:
    """``--out`` (several with ``several``), ``--format``, ``--outfmt``; every tabular field in the epilog of ``--help``."""
    if several:
        # extend: `--out a b` and `--out a --out b` both keep every path (nargs="+" alone kept the last --out)
        parser.add_argument("--out", nargs="+", action="extend", default=None, help=out_help)
    else:
        parser.add_argument("--out", help=out_help)
    parser.add_argument(
        "--format", choices=FORMATS, help="output format (default: from the --out extension .sam .bam .jsonl .txt, else tsv)"
    )
    outfmt_help = f"BLAST tabular format 6 or 7 and field names, for tsv output (default {outfmt!r}; fields below)"
    if several:
        # append: tables with different fields from one run, e.g. a score table and an alignment table
        parser.add_argument(
            "--outfmt", action="append", default=None,
            help=f"{outfmt_help}; once for every table, or once per table in the order of the tables' --out",
        )  # fmt: skip
        parser.set_defaults(default_outfmt=outfmt)
    else:
        parser.add_argument("--outfmt", default=outfmt, help=outfmt_help)
    parser.epilog = fields_help()
    parser.formatter_class = argparse.RawDescriptionHelpFormatter


def plan_outputs(args: argparse.Namespace, paths: Sequence[str]) -> list[Output]:
    """The outputs of a command with several ``--out`` (:func:`add_output_arguments`), each
    checked before any work: one ``--outfmt`` (or none) serves every table; several pair with
    the tables (tsv outputs) in the order of ``--out``."""
    kinds = [choose_format(p, args.format) for p in paths]
    n_tables = kinds.count("tsv")
    formats = args.outfmt or [args.default_outfmt]
    if len(formats) > 1 and len(formats) != n_tables:
        raise InputError(
            f"--outfmt is given {len(formats)} times for {n_tables} table(s) among --out: give it once, or once per table in the order of --out"
        )
    per_table = iter(formats if len(formats) > 1 else formats * n_tables)
    return [plan_output(p, args.format, next(per_table) if kind == "tsv" else formats[0]) for p, kind in zip(paths, kinds, strict=True)]


def add_statistics_arguments(parser: argparse.ArgumentParser, *, pairs: bool = False) -> None:
    """``--stats``, ``--lambda``, ``--kappa``: which statistics give E-values and bit scores."""
    from ..significance import STATS_MODES

    fit = (
        "fit is an error here: pairs have no database scores to fit"
        if pairs
        else "fit: each query's fit to the database's own scores, as SSEARCH"
    )
    parser.add_argument(
        "--stats", choices=STATS_MODES, default="auto",
        help=f"E-value statistics (default auto: BLAST's parameters, or --lambda/--kappa, where there are any, else the fit; blast: those only; {fit})",
    )  # fmt: skip
    parser.add_argument(
        "--lambda", dest="lam", type=float, help="Karlin-Altschul lambda, instead of BLAST's (with --kappa; no length correction)"
    )
    parser.add_argument("--kappa", type=float, help="Karlin-Altschul K, with --lambda")


def add_alignment_arguments(parser: argparse.ArgumentParser, *, backend: bool = False, evalue: bool = True) -> None:
    """``--align``, ``--evalue``, ``--stats``, ``--lambda``, ``--kappa`` (and ``--backend`` of the traceback)."""
    parser.add_argument(
        "--align",
        type=int,
        metavar="N",
        help="report (and trace back, when the output needs alignments) the best N hits of each query (default: all)",
    )
    if evalue:
        parser.add_argument(
            "--evalue",
            type=float,
            metavar="E",
            help="report only hits with an E-value of at most E (default 10, as BLAST; from scores, no traceback)",
        )
    add_statistics_arguments(parser)
    if backend:
        parser.add_argument("--backend", choices=KINDS, default="auto", help="traceback backend (default auto: CUDA if usable, else CPU)")
        parser.add_argument("--threads", type=int, default=0, help="CPU threads of a CPU traceback (default 0: all available cores)")


def check_alignment_arguments(args: argparse.Namespace) -> None:
    """Refuse bad ``--align``/``--evalue`` before any work starts (``--stats``/``--lambda``/``--kappa``: :func:`check_statistics`)."""
    if getattr(args, "align", None) is not None and args.align < 0:
        raise InputError(f"--align must be 0 or more (got {args.align})")
    if getattr(args, "threads", 0) < 0:
        raise InputError(f"--threads must be 0 (all cores) or more (got {args.threads})")
    if getattr(args, "evalue", None) is not None and not args.evalue > 0:
        raise InputError(f"--evalue must be positive (got {args.evalue})")


def check_statistics(args: argparse.Namespace, scoring, outputs: Sequence = (), *, no_fit: str | None = None) -> None:
    """Before any scan or traceback: refuse ``--stats``/``--lambda``/``--kappa`` that cannot work, and
    E-value columns or ``--evalue`` where there will be no E-values (``no_fit``: why this run cannot fit)."""
    from ..formats import check_statistics as check_outputs
    from ..significance import NoStatistics
    from ..stats import choose_statistics

    kind, _, why = choose_statistics(scoring, args.stats, args.lam, args.kappa, no_fit=no_fit)
    if kind == "none":
        none = NoStatistics(f"no E-values: {why}")
        check_outputs(outputs, none)
        evalue_cutoff(args, none)


def announced(args: argparse.Namespace, stats, outputs: Sequence = ()):
    """``stats``, checked against the ``outputs`` and ``--evalue`` (E-values where they need
    some); says once on stderr why there are no E-values (unless ``--quiet``)."""
    from ..formats import check_statistics as check_outputs

    check_outputs(outputs, stats)
    evalue_cutoff(args, stats)
    if stats.kind == "none" and not getattr(args, "quiet", False):
        print(f"swgpu: {stats.description}", file=sys.stderr)
    return stats


def statistics_of(args: argparse.Namespace, scoring, outputs: Sequence = ()):
    """The statistics of aligned pairs per ``--stats``/``--lambda``/``--kappa``: no database, each pair its own (no fit)."""
    from ..significance import statistics

    return announced(args, statistics(scoring, None, stats_mode=args.stats, lam=args.lam, kappa=args.kappa), outputs)


def saved_statistics_of(args: argparse.Namespace, scoring, db, batches: Sequence[Sequence], outputs: Sequence = ()):
    """The statistics of saved hit lists (``batches``: lists grouped by query batch), fitted from their summed histograms."""
    from ..significance import saved_statistics

    return announced(args, saved_statistics(scoring, db, batches, stats_mode=args.stats, lam=args.lam, kappa=args.kappa), outputs)


def evalue_cutoff(args: argparse.Namespace, stats) -> float | None:
    """``--evalue``, else BLAST's default 10; an explicit cutoff without E-values is an error."""
    from ..significance import DEFAULT_MAX_EVALUE, require_statistics

    if getattr(args, "evalue", None) is None:
        return DEFAULT_MAX_EVALUE
    require_statistics(stats, "--evalue")
    return args.evalue


def report_hits(
    args: argparse.Namespace, db, hits: Sequence, scoring, stats, outputs: Sequence, *, program: str, backend="cpu",
    device: int | None = None,
):  # fmt: skip
    """Select the hits the options ask for (E-value, count; from scores), trace them only when an output needs alignments.

    ``stats``: the run's statistics (:func:`statistics_of`, :func:`saved_statistics_of`, or
    the search result's); ``device``: the GPU of the traceback (None: the current one).
    Returns the :class:`~swgpu_core.formats.Results` every output is written from, and the
    traceback's :class:`~swgpu_core.align.AlignedHits` (None without traceback).
    """
    from .. import api
    from ..formats import check_statistics as check_outputs
    from ..formats import needs_alignments

    check_outputs(outputs, stats)  # before any traceback
    cutoff = evalue_cutoff(args, stats)
    selected = api.select_hits(db, hits, stats, max_evalue=cutoff, limit=args.align)
    threads = getattr(args, "threads", 0)  # search's and align's --threads
    aligned = (
        api.align(db, selected, scoring, backend=backend, statistics=stats, threads=threads, device=device)
        if needs_alignments(outputs)
        else None
    )
    results = api.Results(db, selected, aligned.alignments if aligned else None, stats, scoring.describe(), program, stats.description)
    return results, aligned
