"""``swgpu chunks DBDIR``: list a database's chunks, the units of parallel search jobs.

Prints one line per chunk; ``--json`` writes the same list for a workflow to fan out over.
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import asdict

from ..atomic import atomic_output, check_output_path
from ..database import Database

NAME = "chunks"
HELP = "list the chunks of a database (index, sequences, residues); --json writes them"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("db", help="database directory (from 'swgpu makedb')")
    parser.add_argument("--json", dest="json_out", help="write the chunk list here as JSON")


def run(args: argparse.Namespace) -> int:
    check_output_path(args.json_out)
    db = Database(args.db)
    chunks = [asdict(c) for c in db.chunks]
    for c in db.chunks:
        print(f"chunk {c.index}\tsequences {c.first}-{c.stop - 1}\t{c.n_sequences} seq\t{c.n_residues} residues")
    if args.json_out:
        with atomic_output(args.json_out) as fh:
            fh.write(json.dumps({"database": os.fspath(args.db), "version": db.version_tag, "chunks": chunks}, indent=2) + "\n")
    return 0
