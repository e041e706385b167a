"""``swgpu check DBDIR``: verify a database completely (structure, checksums, every byte)."""

from __future__ import annotations

import argparse

from ..database import check_database

NAME = "check"
HELP = "verify a database: structure, per-file SHA-256 recorded at build time, residue codes and headers"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("db", help="database directory built by 'swgpu makedb'")


def run(args: argparse.Namespace) -> int:
    for line in check_database(args.db):
        print(line)
    return 0
