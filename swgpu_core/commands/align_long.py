"""``swgpu align-long --query Q --target T --out PATH``: one huge local alignment.

A query of 10^2..10^6 residues against one target of up to 10^8+ residues (DNA/RNA or
protein): an exact int32 Smith-Waterman scan of the whole table that keeps the best end
point of every diagonal band, then the ``--top`` best distinct end points (rule in
``docs/align_long.md``) traced back into full alignments and written as BLAST tabular,
SAM, BAM, JSON lines or a pairwise view.

The target can be cut into sections that overlap by ``--max-alignment-length``: one per
GPU of ``--devices`` in this process, or one per process (``--section i/n --save-ends
part-i.npz``, then ``--ends part-*.npz --out ...`` merges them and traces back). Each GPU
cuts its section again into ``--gpu-sections`` parts that it scans side by side.
"""

from __future__ import annotations

import argparse
import sys
import time
import zlib

import numpy as np

from ..alphabet import DNA, PROTEIN
from ..atomic import check_output_path
from ..engine import KINDS
from ..errors import InputError
from ..long import endpoints
from ..long.endpoints import DEFAULT_BAND_WIDTH, DEFAULT_TOP
from ..long.gpu_plan import parse_gpu_sections
from ..long.sections import max_alignment_span, parse_section
from ..scoring import Scoring
from . import align_long_devices
from ._options import add_output_arguments, gpus_done, plan_outputs, start_gpu

NAME = "align-long"
HELP = "one huge local alignment: a long query against one long target (DNA/RNA or protein), top distinct end points"

DEFAULT_OUTFMT = "6 qseqid sseqid score pident length mismatch gapopen qstart qend sstart send"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--query", required=True, help="query FASTA[.gz], one record")
    parser.add_argument("--target", required=True, help="target FASTA[.gz], one record")
    parser.add_argument(
        "--alphabet",
        choices=("dna", "protein"),
        default="dna",
        help="residues: dna (ACGT, U read as T, IUPAC codes) or protein (default dna)",
    )
    parser.add_argument("--match", type=int, default=5, help="DNA: score of a match (default 5)")
    parser.add_argument("--mismatch", type=int, default=-3, help="DNA: score of a mismatch, N and ambiguity codes included (default -3)")
    parser.add_argument("--matrix", default="BLOSUM62", help="protein: substitution matrix (default BLOSUM62)")
    parser.add_argument(
        "--gap-open", type=int, help="gap opening cost; a gap of length k costs open + k*extend (default 8 DNA, 11 protein)"
    )
    parser.add_argument("--gap-extend", type=int, default=1, help="gap extension cost (default 1)")
    parser.add_argument("--top", type=int, default=DEFAULT_TOP, help=f"distinct end points to report (default {DEFAULT_TOP})")
    parser.add_argument(
        "--band-width",
        type=int,
        default=DEFAULT_BAND_WIDTH,
        help=f"diagonals per band: at most one end point per band (default {DEFAULT_BAND_WIDTH})",
    )
    parser.add_argument(
        "--max-alignment-length",
        type=int,
        help="overlap of target sections, the longest alignment they find exactly (default: the longest a positive-scoring alignment of the query can be)",
    )
    parser.add_argument(
        "--backend",
        choices=KINDS,
        default="auto",
        help="scan and traceback backend (default auto: CUDA if a GPU is usable, else CPU)",
    )
    parser.add_argument(
        "--devices",
        help="comma-separated CUDA devices; the target is cut into one section per device, and they share the traceback "
        "(default: as many as the scan's size pays for, 2 for 10^12 cells, 6 for 10^13; the first with --section, --ends or a gzip input). "
        "CUDA is shown only these, which it then initialises faster (about 0.2 s less per GPU left out)",
    )
    parser.add_argument(
        "--gpu-sections",
        default="auto",
        metavar="auto|N",
        help="parts each GPU cuts its section into and scans side by side, overlapping like sections; auto: enough to keep a short query's GPU busy (default auto; 1: no cut)",
    )
    parser.add_argument("--section", metavar="I/N", help="scan only section I (0-based) of N; use with --save-ends")
    parser.add_argument("--save-ends", metavar="PATH", help="save the scanned section's band end points (.npz) for a later --ends merge")
    parser.add_argument("--ends", nargs="+", metavar="NPZ", help="merge saved sections (all N of them) instead of scanning")
    add_output_arguments(
        parser,
        out_help="alignment outputs (table, .sam, .bam, .jsonl, .txt; several from one traceback), '-' for standard output (default '-', or none with --save-ends)",
        outfmt=DEFAULT_OUTFMT,
        several=True,
    )
    parser.add_argument("--threads", type=int, default=0, help="CPU threads for a CPU traceback (default: all cores)")
    parser.add_argument("--quiet", action="store_true", help="no summary on stderr")


def scoring_of(args: argparse.Namespace) -> Scoring:
    if args.alphabet == "dna":
        return Scoring.nucleotide(args.match, args.mismatch, 8 if args.gap_open is None else args.gap_open, args.gap_extend)
    return Scoring.protein(args.matrix, 11 if args.gap_open is None else args.gap_open, args.gap_extend)


def _checksum(codes: np.ndarray) -> int:
    return zlib.crc32(np.ascontiguousarray(codes).data)


def run(args: argparse.Namespace) -> int:
    devices = start_gpu(args, warm=align_long_devices(args.query, args.target, args.section, args.ends))
    from .. import api
    from ..formats import write_output

    if args.top < 1:
        raise InputError(f"--top must be >= 1 (got {args.top})")
    if args.section and not args.save_ends:
        raise InputError("--section scans one part of the target: give --save-ends to keep it")
    if args.ends and (args.section or args.save_ends):
        raise InputError("--ends merges saved sections: it takes neither --section nor --save-ends")
    check_output_path(args.save_ends)
    paths = args.out if args.out is not None else ([] if args.save_ends else ["-"])
    if len(set(paths)) != len(paths):
        raise InputError(f"--out names a file twice ({' '.join(paths)})")
    outputs = plan_outputs(args, paths)
    gpu_sections = parse_gpu_sections(args.gpu_sections)
    section = parse_section(args.section) if args.section else None
    scoring = scoring_of(args)
    alphabet = DNA if args.alphabet == "dna" else PROTEIN
    query = api.read_sequence(args.query, alphabet, "query")
    target = api.read_sequence(args.target, alphabet, "target")
    max_length = max_alignment_span(len(query), scoring) if args.max_alignment_length is None else args.max_alignment_length

    def meta() -> dict:
        """What a saved section records of its scan, and what a section given back must match.
        Made only for them: the checksum of a 10^8-residue target takes 0.014 s on the CPU machine."""
        return {
            "query_id": query.id, "query_length": len(query), "query_crc": _checksum(query.codes),
            "target_id": target.id, "target_length": len(target), "target_crc": _checksum(target.codes),
            "scoring": scoring.describe(), "band_width": args.band_width, "overlap": max_length,
        }  # fmt: skip

    shape = {"band_width": args.band_width, "max_alignment_length": max_length}

    started = time.perf_counter()
    traced_on = devices  # the traceback's GPUs: those of the scan, where there is one
    if args.ends:
        found = _load_sections(args.ends, meta())
    else:
        scan = api.scan_long(
            query, target, scoring, **shape, backend=args.backend, devices=devices, gpu_sections=gpu_sections, section=section
        )
        found, traced_on = scan.found, scan.devices
        if args.save_ends:
            index, count = section if section else (0, 1)
            endpoints.save(args.save_ends, endpoints.merge(found), {**meta(), "section_index": index, "section_count": count})
        if not args.quiet and scan.cells:
            rate = scan.cells / scan.seconds / 1e9 if scan.seconds > 0 else float("inf")
            where = f"{len(scan.devices)} GPU(s), {scan.parts} part(s) per section" if scan.backend == "cuda" else scan.backend
            print(
                f"swgpu align-long: {scan.cells:,} cells (+{scan.extra_cells:,} overlap) on {where} in {scan.seconds:.3f} s ({rate:.2f} GCUPS)",
                file=sys.stderr,
            )
    if not outputs:
        return 0
    # with --ends nothing was scanned here: the traceback still resolves its own backend
    results = api.trace_long(
        query, target, found, scoring, top=args.top, **shape, backend=args.backend, threads=args.threads, target_path=args.target,
        devices=traced_on,
    )  # fmt: skip
    gpus_done(args)
    for output in outputs:
        write_output(output, results)
    if not args.quiet:
        print(
            f"swgpu align-long: {len(results.alignments[0])} alignments in {time.perf_counter() - started:.2f} s"
            f" ({', '.join(o.kind for o in outputs)})",
            file=sys.stderr,
        )
    return 0


def _load_sections(paths: list[str], meta: dict) -> list[endpoints.BandKeys]:
    """Saved sections, checked against these inputs and for covering the target exactly once."""
    found, seen, count = [], set(), None
    for path in paths:
        keys, saved = endpoints.load(path)
        for k, v in meta.items():
            if saved.get(k) != v:
                raise InputError(f"{path}: saved for another scan ({k} is {saved.get(k)!r}, here {v!r})")
        n = int(saved["section_count"])
        if count is not None and n != count:
            raise InputError(f"{path}: section of {n}, the others are of {count}")
        count = n
        index = int(saved["section_index"])
        if index in seen:
            raise InputError(f"{path}: section {index}/{n} given twice")
        seen.add(index)
        found.append(keys)
    missing = sorted(set(range(count or 0)) - seen)
    if missing:
        raise InputError(f"--ends: sections {', '.join(map(str, missing))} of {count} are missing")
    return found
