"""Cut a query FASTA into batches of whole records, so search jobs can run side by side.

Records are copied as they are (id, description, residues); the search validates them.
The batch files are written into a temporary directory that replaces ``outdir`` only when
complete, so a reader never sees a half-written set.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from .errors import InputError
from .fasta import read_fasta

_WIDTH = 60


def batch_name(index: int) -> str:
    return f"batch-{index:04d}.fasta"


def count_batches(fasta: str | os.PathLike, batch_size: int) -> int:
    """How many batches :func:`split_queries` will write: known before splitting, so a
    workflow can lay out its jobs when it starts."""
    if batch_size < 1:
        raise InputError(f"batch size must be at least 1 (got {batch_size})")
    n = sum(1 for _ in read_fasta(fasta))
    return -(-n // batch_size)


def split_queries(fasta: str | os.PathLike, outdir: str | os.PathLike, batch_size: int) -> list[Path]:
    """Write ``outdir/batch-NNNN.fasta`` with at most ``batch_size`` records each; return the paths."""
    if batch_size < 1:
        raise InputError(f"batch size must be at least 1 (got {batch_size})")
    outdir = Path(outdir)
    outdir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{outdir.name}.tmp-", dir=outdir.parent))
    try:
        count, out = 0, None
        for count, record in enumerate(read_fasta(fasta), start=1):
            if (count - 1) % batch_size == 0:
                if out is not None:
                    out.close()
                out = open(tmp / batch_name((count - 1) // batch_size), "w")
            header = f"{record.id} {record.description}".rstrip()
            body = "\n".join(record.sequence[i : i + _WIDTH] for i in range(0, len(record.sequence), _WIDTH))
            out.write(f">{header}\n{body}\n")
        if out is not None:
            out.close()
        tmp.chmod(0o755)
        if outdir.exists():
            shutil.rmtree(outdir)
        tmp.rename(outdir)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return sorted(outdir.glob("batch-*.fasta"))
