#!/usr/bin/env python3
"""Regenerate the bundled test data in resources/ from the shared UniProt files.

    python3 scripts/make_resources.py ../shared/data/uniprot20k.fasta.gz \
        ../shared/data/uniprot_queries500.fasta.gz resources/

The database is 3,000 sequences of uniprot20k chosen with a fixed seed, always including
some of the longest (over 3,000 residues, for the long-sequence path) and some of the
shortest (under 30), written in source order. The queries are the five sequences of
uniprot_queries500 closest in length to 50, 150, 350, 700 and 1,500 residues, so that
query length varies. Output is byte-for-byte reproducible (gzip without a timestamp).
Standard library and numpy only.
"""

from __future__ import annotations

import argparse
import gzip
import io
from pathlib import Path

import numpy as np

SEED = 20240611
N_DB = 3000
N_LONG, LONG = 8, 3000
N_SHORT, SHORT = 12, 30
QUERY_LENGTHS = (50, 150, 350, 700, 1500)


def read_fasta(path: Path) -> list[tuple[str, str]]:
    """(header line without '>', sequence) pairs."""
    records: list[tuple[str, list[str]]] = []
    with gzip.open(path, "rt") if path.suffix == ".gz" else open(path) as fh:
        for line in fh:
            line = line.rstrip("\n")
            if line.startswith(">"):
                records.append((line[1:].rstrip(), []))
            elif line.strip():
                records[-1][1].append(line.strip())
    return [(h, "".join(s)) for h, s in records]


def fasta_text(records: list[tuple[str, str]]) -> str:
    out = io.StringIO()
    for header, seq in records:
        out.write(f">{header}\n")
        for i in range(0, len(seq), 60):
            out.write(seq[i : i + 60] + "\n")
    return out.getvalue()


def choose_database(records: list[tuple[str, str]]) -> list[tuple[str, str]]:
    rng = np.random.default_rng(SEED)
    lengths = np.array([len(s) for _, s in records])
    long = np.flatnonzero(lengths > LONG)
    short = np.flatnonzero(lengths < SHORT)
    keep = set(rng.choice(long, N_LONG, replace=False).tolist()) | set(rng.choice(short, N_SHORT, replace=False).tolist())
    rest = np.setdiff1d(np.arange(len(records)), np.array(sorted(keep)))
    keep |= set(rng.choice(rest, N_DB - len(keep), replace=False).tolist())
    return [records[i] for i in sorted(keep)]


def choose_queries(records: list[tuple[str, str]]) -> list[tuple[str, str]]:
    lengths = np.array([len(s) for _, s in records])
    picked = [int(np.argmin(np.abs(lengths - target))) for target in QUERY_LENGTHS]
    return [records[i] for i in picked]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("database", type=Path, help="uniprot20k.fasta.gz")
    parser.add_argument("queries", type=Path, help="uniprot_queries500.fasta.gz")
    parser.add_argument("outdir", type=Path, help="where db.fasta.gz and queries.fasta go")
    args = parser.parse_args()
    args.outdir.mkdir(parents=True, exist_ok=True)
    db = choose_database(read_fasta(args.database))
    with open(args.outdir / "db.fasta.gz", "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz:
        gz.write(fasta_text(db).encode())
    queries = choose_queries(read_fasta(args.queries))
    (args.outdir / "queries.fasta").write_text(fasta_text(queries))
    lengths = [len(s) for _, s in db]
    print(f"db.fasta.gz: {len(db)} sequences, {sum(lengths)} residues, lengths {min(lengths)}-{max(lengths)}")
    print(f"queries.fasta: {len(queries)} queries of lengths {', '.join(str(len(s)) for _, s in queries)}")


if __name__ == "__main__":
    main()
