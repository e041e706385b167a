"""``swgpu makedb FASTA DBDIR``: build the on-disk database (see :mod:`swgpu_core.database`)."""

from __future__ import annotations

import argparse
import sys

from ..database import DEFAULT_CHUNK_RESIDUES, build_database

NAME = "makedb"
HELP = "build a length-sorted, memory-mappable database from a protein FASTA[.gz] file"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("fasta", help="protein FASTA, plain, gzip or bgzip")
    parser.add_argument("dbdir", help="database directory to create (replaced only when the new one is complete)")
    parser.add_argument(
        "--chunk-residues", type=int, default=DEFAULT_CHUNK_RESIDUES, metavar="N",
        help=f"residues per chunk, the unit a search job streams (default {DEFAULT_CHUNK_RESIDUES:,})",
    )  # fmt: skip
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


def run(args: argparse.Namespace) -> int:
    db = build_database(args.fasta, args.dbdir, chunk_residues=args.chunk_residues, show_progress=not args.quiet)
    m = db.manifest
    print(
        f"{db.path}: {db.n_sequences:,} sequences, {db.n_residues:,} residues, {len(db.chunks)} chunk(s), "
        f"lengths {m['length_stats']['min']}-{m['length_stats']['max']}, built in {m['build_seconds']:.1f} s",
        file=sys.stderr,
    )
    return 0
