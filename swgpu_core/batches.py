"""Cut a query FASTA into batches of whole records, so search jobs can run side by side.

Records are copied as they are (id, description, residues); the search validates them.
The batch files are written into a temporary directory beside ``outdir`` that replaces it
only when complete, so a reader never sees a half-written set. An existing ``outdir`` is
replaced only when it is empty or an earlier output of :func:`split_queries` (it holds the
:data:`MARKER` file and nothing but batch files): a mistyped OUTDIR (``.``, a project
directory) is refused, never deleted.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from .atomic import WRITE_ERRORS, check_replaceable, owner_tag, remove_owned, sweep_stale
from .errors import InputError
from .fasta import read_fasta

_WIDTH = 60
#: Written into every batch directory; its presence lets a later run replace the directory.
MARKER = ".swgpu-split-queries"
_BATCH = re.compile(r"batch-\d{4,}\.fasta")


def batch_name(index: int) -> str:
    return f"batch-{index:04d}.fasta"


def _owned(name: str) -> bool:
    return bool(_BATCH.fullmatch(name))


def split_queries(fasta: str | os.PathLike, outdir: str | os.PathLike, batch_size: int, batch_residues: int | None = None) -> list[Path]:
    """Write ``outdir/batch-NNNN.fasta`` with at most ``batch_size`` records each and, with
    ``batch_residues``, at most that many residues (a longer record alone); return the paths.

    Batches are cut in the file's order, each as full as the limits allow, so queries
    appended to the file change the last batch only. A limit in residues gives batches of
    about equal work (a search job's time goes with its query residues): GPU jobs running
    side by side then end together instead of one waiting for the longest batch."""
    if batch_size < 1:
        raise InputError(f"batch size must be at least 1 (got {batch_size})")
    if batch_residues is not None and batch_residues < 1:
        raise InputError(f"batch residues must be at least 1 (got {batch_residues})")
    outdir = Path(outdir)
    check_replaceable(outdir, "batches", "split-queries", MARKER, _owned)
    try:
        outdir.parent.mkdir(parents=True, exist_ok=True)
        sweep_stale(outdir.parent, f".{outdir.name}.tmp-")
        tmp = Path(tempfile.mkdtemp(prefix=f".{outdir.name}.tmp-{owner_tag()}-", dir=outdir.parent))
    except OSError as exc:
        raise InputError(f"{outdir}: cannot create the batch directory ({exc.strerror})") from None
    try:
        (tmp / MARKER).write_text("batch files written by 'swgpu split-queries'; the directory is replaced by the next run\n")
        out, batches, records, residues = None, 0, 0, 0  # the open batch file, batches begun, its records and residues
        try:
            for record in read_fasta(fasta):
                size = len(record.sequence)
                full = records == batch_size or (batch_residues is not None and records and residues + size > batch_residues)
                if out is None or full:
                    if out is not None:
                        out.close()
                    out = open(tmp / batch_name(batches), "w")  # noqa: SIM115 (one per batch, closed above and in finally)
                    batches, records, residues = batches + 1, 0, 0
                records, residues = records + 1, residues + size
                header = f"{record.id} {record.description}".rstrip()
                body = "\n".join(record.sequence[i : i + _WIDTH] for i in range(0, len(record.sequence), _WIDTH))
                out.write(f">{header}\n{body}\n")
        finally:
            if out is not None:
                out.close()
        umask = os.umask(0)
        os.umask(umask)
        tmp.chmod(0o777 & ~umask)
        check_replaceable(outdir, "batches", "split-queries", MARKER, _owned)  # again: reading took a while
        if outdir.exists():
            old = outdir.with_name(f".{outdir.name}.old-{owner_tag()}")
            outdir.rename(old)
            tmp.rename(outdir)
            remove_owned(old, MARKER, _owned)
        else:
            tmp.rename(outdir)
    except OSError as exc:
        if exc.errno not in WRITE_ERRORS:
            raise
        raise InputError(f"{outdir}: cannot write the batches ({exc.strerror})") from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return sorted(outdir.glob("batch-*.fasta"))
