"""Alignment outputs: BLAST tabular, SAM, BAM, JSON lines and a pairwise text view.

The format is ``--format`` when given, else the output file's extension (``.sam``,
``.bam``, ``.jsonl``/``.json``, ``.txt``/``.pairwise``), else BLAST tabular per
``--outfmt``. Importing this package registers the alignment fields of the tabular
format (:mod:`.tabular`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ..align import Alignment
from ..atomic import atomic_output
from ..database import Database
from ..errors import InputError
from ..outfmt import OutFormat, write_table
from ..search import QueryHits
from .tabular import table_input
from .text import write_jsonl, write_pairwise

FORMATS = ("tsv", "sam", "bam", "jsonl", "pairwise")
_EXTENSIONS = {".sam": "sam", ".bam": "bam", ".jsonl": "jsonl", ".json": "jsonl", ".txt": "pairwise", ".pairwise": "pairwise"}


def choose_format(path: str, explicit: str | None = None) -> str:
    """The output format: ``explicit``, else from the extension of ``path`` (default tsv)."""
    if explicit is not None:
        if explicit not in FORMATS:
            raise InputError(f"--format {explicit!r}: choose one of {', '.join(FORMATS)}")
        return explicit
    name = os.fspath(path).lower()
    if name.endswith(".gz"):
        raise InputError(f"{path}: compressed output is not supported; write plain files and compress them")
    return _EXTENSIONS.get(os.path.splitext(name)[1], "tsv")


def write_alignments(
    path: str,
    kind: str,
    db: Database,
    hits: Sequence[QueryHits],
    alignments: Sequence[Sequence[Alignment]],
    *,
    table: OutFormat | None = None,
    scoring: str = "",
    program: str = "swgpu align",
    note: str = "",
) -> None:
    """Write ``alignments`` (per query of ``hits``, best first) to ``path`` in format ``kind``."""
    queries = [qh.query for qh in hits]
    if kind in ("sam", "bam"):
        from .sam import write_bam, write_sam  # pysam is imported only for these formats (start-up time)

        (write_bam if kind == "bam" else write_sam)(path, db, queries, alignments, scoring)
    elif kind == "tsv":
        if table is None:
            raise InputError("tabular output needs --outfmt")
        rows, align = table_input(hits, alignments)
        with atomic_output(path) as fh:
            write_table(fh, table, db, rows, align=align, program=program, scoring=scoring)
    else:
        with atomic_output(path) as fh:
            if kind == "jsonl":
                write_jsonl(fh, alignments)
            else:
                write_pairwise(fh, db, queries, alignments, scoring, note)
