"""``swgpu search --db DBDIR --query FASTA``: exact Smith-Waterman top hits per query
(of every subject, or with ``--mode fast`` of the seeded candidates).

Everything that can be wrong with the inputs (output format, matrix, database, queries,
chunk list) is checked before the scan starts, and the outputs are written atomically.
"""

from __future__ import annotations

import argparse
import sys
import time

from .. import gpu_choice
from ..atomic import check_output_path
from ..engine import KINDS
from ..errors import InputError
from ..seed import FAST_NO_FIT, SEARCH_MODES, SeedParams
from . import parse_index_list
from ._options import (
    add_alignment_arguments,
    add_output_arguments,
    announced,
    check_alignment_arguments,
    check_statistics,
    gpus_done,
    plan_outputs,
    report_hits,
    start_gpu,
)

NAME = "search"
HELP = "search protein queries against a database; exact Smith-Waterman scores, top hits per query"


def add_scoring_arguments(parser: argparse.ArgumentParser) -> None:
    from ..scoring import PROTEIN_MATRICES

    parser.add_argument("--matrix", default="BLOSUM62", help=f"substitution matrix ({', '.join(PROTEIN_MATRICES)}; default BLOSUM62)")
    parser.add_argument("--gap-open", type=int, default=11, help="gap opening cost; a gap of length k costs open + k*extend (default 11)")
    parser.add_argument("--gap-extend", type=int, default=1, help="gap extension cost (default 1)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", required=True, help="database directory built by 'swgpu makedb'")
    parser.add_argument("--query", required=True, help="query FASTA[.gz], one or more protein sequences")
    add_output_arguments(
        parser,
        out_help="results (table, .sam, .bam, .jsonl, .txt), each in the format of its extension, all from one traceback;"
        " '-' for standard output (default '-', or none when --save-hits is given)",
        several=True,
    )
    parser.add_argument(
        "--backend",
        choices=KINDS,
        default="auto",
        help="compute backend (default auto: CUDA if a GPU is usable, else CPU)",
    )
    parser.add_argument(
        "--mode",
        choices=SEARCH_MODES,
        default="exact",
        help="exact: every subject scored (default); fast: only the subjects a seeding stage finds (spaced seeds in a "
        "reduced alphabet, ungapped extension) are scored, exactly: same scores and E-values, some hits may be missed (docs/seeded.md)",
    )
    parser.add_argument("--top", type=int, default=50, help="hits kept per query (default 50)")
    add_scoring_arguments(parser)
    parser.add_argument("--threads", type=int, default=0, help="CPU threads (default: all available cores)")
    parser.add_argument(
        "--devices",
        help="comma-separated CUDA device indices (default: as many visible GPUs as the search's size pays for, by "
        f"query x database residues: exact, k GPUs from k(k-1) x {gpu_choice.EXACT_GPU_COST_CELLS:.2g}, so one below "
        f"{2 * gpu_choice.EXACT_GPU_COST_CELLS:.2g}; --mode fast, one per {gpu_choice.FAST_CELLS_PER_GPU:.2g}, at most "
        f"{gpu_choice.FAST_MAX_GPUS}; docs/seeded.md). CUDA is shown only these, which it then initialises faster (about 0.2 s "
        "less per GPU left out)",
    )
    parser.add_argument(
        "--threshold",
        type=int,
        help="GPU: inter/intra-task length threshold (default: chosen per batch and query by the planner; see 'swgpu plan')",
    )
    parser.add_argument(
        "--gpu-memory", help="GPU: memory budget for the database per device, e.g. 8G or 512M (default: 60%% of free memory)"
    )
    parser.add_argument("--chunks", help="comma-separated chunk indices or ranges (e.g. 0,2-4) to scan (default: all)")
    parser.add_argument("--save-hits", metavar="PATH", help="also save the raw hit list (.npz) for 'swgpu merge'")
    parser.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    add_alignment_arguments(parser)


_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def parse_size(spec: str, option: str) -> int:
    """``"8G"`` -> 8 GiB in bytes; plain numbers are bytes."""
    text = spec.strip().upper().removesuffix("B").removesuffix("I")
    unit = text[-1:] if text[-1:] in _UNITS else ""
    try:
        value = float(text[: len(text) - len(unit)])
    except ValueError:
        raise InputError(f"{option} {spec!r}: not a size like 8G, 512M or 1000000") from None
    if value <= 0:
        raise InputError(f"{option} {spec!r}: must be positive")
    return int(value * _UNITS[unit])


#: Why a search of some chunks has no fitted E-values.
SOME_CHUNKS = "a search of some chunks does not see the database's scores: save the hit lists of every chunk and merge them (swgpu merge)"


def check_top(top: int) -> None:
    from ..search import check_search_options

    check_search_options(top)


def run(args: argparse.Namespace) -> int:
    from ..engine import get_engine

    devices = start_gpu(args, scan=True, seed_params=SeedParams() if args.mode == "fast" else None)
    from .. import api
    from ..formats import needs_alignments, write_output
    from ..hitlist import save_hits
    from ..scoring import Scoring
    from ..search import check_search_options

    check_output_path(args.save_hits)
    paths = args.out if args.out is not None else ([] if args.save_hits else ["-"])
    if len(set(paths)) != len(paths):
        raise InputError(f"--out names a file twice ({' '.join(paths)})")
    outputs = plan_outputs(args, paths)
    check_search_options(args.top, args.threads, args.threshold, args.mode)
    check_alignment_arguments(args)
    scoring = Scoring.protein(args.matrix, args.gap_open, args.gap_extend)
    db = api.open_database(args.db)
    chunks = parse_index_list(args.chunks, "--chunks", len(db.chunks)) if args.chunks else None
    api.check_ahead(db, chunks, args.mode)  # before anything waits for the GPU's start
    some_chunks = chunks is not None and len(chunks) < len(db.chunks)
    no_fit = FAST_NO_FIT if args.mode == "fast" else (SOME_CHUNKS if some_chunks else None)
    check_statistics(args, scoring, outputs, no_fit=no_fit)
    queries = api.read_queries(args.query, db.alphabet)
    budget = parse_size(args.gpu_memory, "--gpu-memory") if args.gpu_memory else None
    engine = get_engine(args.backend)
    if engine.choice.reason and not args.quiet:
        print(f"swgpu: no usable GPU ({engine.choice.reason}); searching on the CPU", file=sys.stderr)
    result = api.search(
        db, queries, scoring, backend=engine, top=args.top, chunks=chunks, threads=args.threads, devices=devices,
        threshold=args.threshold, memory_budget=budget, show_progress=not args.quiet, stats_mode=args.stats, lam=args.lam, kappa=args.kappa,
        keep_score_stats=True if args.save_hits else None,  # a merge of the saved lists may fit
        mode=args.mode,
    )  # fmt: skip
    if not needs_alignments(outputs):
        gpus_done(args, keep=engine)  # the scan was the last GPU work; the engine holds its workers
    results, aligned, writing = None, None, 0.0
    if outputs:
        stats = announced(args, result.statistics, outputs)
        program = "swgpu search" if args.mode == "exact" else f"swgpu search --mode {args.mode}"
        results, aligned = report_hits(
            args,
            db,
            result.hits,
            scoring,
            stats,
            outputs,
            program=program,
            backend=engine,
            device=result.devices[0] if result.devices else None,
        )  # traced on a GPU that searched
    gpus_done(args, keep=engine)  # after the traceback (where it already let go, nothing)
    if args.save_hits:
        save_hits(args.save_hits, result, args.top, chunks if chunks is not None else list(range(len(db.chunks))))
    if outputs:
        writing = time.perf_counter()
        for output in outputs:
            write_output(output, results)
        writing = time.perf_counter() - writing
    if not args.quiet:
        on = f"{result.backend} ({result.gpus} GPUs)" if result.gpus > 1 else result.backend
        print(
            f"swgpu search: {len(queries)} queries x {db.n_sequences:,} subjects ({result.cells / 1e9:.2f} G cells) "
            f"in {result.seconds:.2f} s, {result.gcups:.2f} GCUPS on {on}",
            file=sys.stderr,
        )
        if result.seed is not None:
            found = result.seed.counts.get("candidates", 0)
            print(
                f"swgpu search: fast mode: {found:,} candidates ({found / max(len(queries), 1):,.1f} per query, "
                f"{100 * found / max(len(queries) * db.n_sequences, 1):.2f}% of the pairs) found in {result.seed.seconds:.2f} s; "
                "GCUPS counts the whole database",
                file=sys.stderr,
            )
        if aligned is not None:  # the other phases of the run, for whoever compares it with a workflow's jobs
            print(
                f"swgpu search: {aligned.count} alignments traced in {aligned.seconds:.2f} s on {aligned.backend}, "
                f"{', '.join(o.kind for o in outputs)} written in {writing:.2f} s",
                file=sys.stderr,
            )
    return 0
