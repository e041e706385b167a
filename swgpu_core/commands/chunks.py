"""``swgpu chunks DBDIR``: list a database's chunks, the units of parallel search jobs.

Prints one line per chunk; ``--json`` writes the same list for a workflow to fan out over.
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import asdict
from pathlib import Path

from ..database import Database

NAME = "chunks"
HELP = "list the chunks of a database (index, sequences, residues); --json writes them"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("db", help="database directory (from 'swgpu makedb')")
    parser.add_argument("--json", dest="json_out", help="write the chunk list here as JSON")


def run(args: argparse.Namespace) -> int:
    db = Database(args.db)
    chunks = [asdict(c) for c in db.chunks]
    for c in db.chunks:
        print(f"chunk {c.index}\tsequences {c.first}-{c.stop - 1}\t{c.n_sequences} seq\t{c.n_residues} residues")
    if args.json_out:
        out = Path(args.json_out)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f".{out.name}.tmp")
        tmp.write_text(json.dumps({"database": os.fspath(args.db), "version": db.version_tag, "chunks": chunks}, indent=2) + "\n")
        os.replace(tmp, out)
    return 0
