"""SAM and BAM output through pysam: queries are the reads, database sequences the references.

Each alignment is one record: the query's best hit primary, the others secondary (flag
256); a query without alignments is one unmapped record, so every query appears. ``@SQ``
lists only the subjects that have alignments, in source-FASTA order. The CIGAR soft-clips
the unaligned query ends, so SEQ is the whole query. Tags: ``AS:i`` score, ``ZE:f``
E-value, ``ZB:f`` bit score (both absent without statistics), ``NM:i`` mismatches plus gap
residues, ``ZR:i`` rank, and ``ZQ:Z`` the query residues again: BAM stores SEQ in 4-bit
nucleotide codes, which turn most amino-acid letters into ``N``, so SEQ is exact in SAM
only and ``ZQ`` is the lossless copy in both. ``ZE`` is single precision: E-values below
about 1e-38 read back as 0, as BLAST prints 0.0 below 1e-180. BAM is coordinate-sorted and
indexed (``.bai``); both files appear only when complete.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pysam

from .. import __version__
from ..atomic import install
from ..database import Database
from ..errors import InputError
from ..fasta import EncodedSequence

if TYPE_CHECKING:
    from ..align import Alignment


def _header(db: Database, alignments: Sequence[Sequence[Alignment]], scoring: str) -> tuple[pysam.AlignmentHeader, dict[int, str]]:
    """The header, and the reference name of each aligned subject: its id, which its alignments carry."""
    names = {a.subject_index: a.subject_id for alns in alignments for a in alns}
    subjects = sorted(names, key=lambda i: int(db.order[i]))
    header = {
        "HD": {"VN": "1.6", "SO": "unsorted"},
        "SQ": [{"SN": names[i], "LN": int(db.lengths[i])} for i in subjects],
        "PG": [{"ID": "swgpu", "PN": "swgpu", "VN": __version__, "CL": " ".join(sys.argv)}],
        "CO": [f"database: {db.path} version {db.version_tag}", f"scoring: {scoring}"],
    }
    return pysam.AlignmentHeader.from_dict(header), names


def _record(header: pysam.AlignmentHeader, query: EncodedSequence, residues: str, aln: Alignment | None, ref: str) -> pysam.AlignedSegment:
    """One record: an alignment's fields and ZQ parsed from a SAM line by htslib, then its typed tags.

    Setting an alignment's fields one attribute at a time costs about 30 microseconds,
    mostly pysam parsing the CIGAR in Python. The other tags are set one by one (each goes
    after the last) because htslib would store the integers of a SAM line in their smallest
    type, which changes the BAM bytes; the unmapped record of a query without alignments is
    set field by field, as htslib would give it another BAM bin.
    """
    if aln is None:
        rec = pysam.AlignedSegment(header)
        rec.query_name = query.id
        rec.query_sequence = residues
        rec.set_tag("ZQ", residues, "Z")
        rec.flag = 4
        return rec
    clip5, clip3 = aln.qstart - 1, aln.qlen - aln.qend
    cigar = (f"{clip5}S" if clip5 else "") + aln.cigar + (f"{clip3}S" if clip3 else "")
    flag = 0 if aln.rank == 1 else 256
    rec = pysam.AlignedSegment.fromstring(
        f"{query.id}\t{flag}\t{ref}\t{aln.sstart}\t255\t{cigar}\t*\t0\t0\t{residues}\t*\tZQ:Z:{residues}", header
    )
    rec.set_tag("AS", aln.score, "i")
    if aln.evalue is not None:
        rec.set_tag("ZE", aln.evalue, "f")
        rec.set_tag("ZB", aln.bitscore, "f")
    rec.set_tag("NM", aln.mismatches + aln.gaps, "i")
    rec.set_tag("ZR", aln.rank, "i")
    return rec


def _write(
    path: str, mode: str, db: Database, queries: Sequence[EncodedSequence], alignments: Sequence[Sequence[Alignment]], scoring: str
) -> None:
    header, names = _header(db, alignments, scoring)
    with pysam.AlignmentFile(path, mode, header=header) as out:
        for query, alns in zip(queries, alignments):
            residues = db.alphabet.decode(query.codes)
            if not alns:
                out.write(_record(header, query, residues, None, "*"))
            for aln in alns:
                out.write(_record(header, query, residues, aln, names[aln.subject_index]))


def write_sam(
    path: str | os.PathLike, db: Database, queries: Sequence[EncodedSequence], alignments: Sequence[Sequence[Alignment]], scoring: str
) -> None:
    """SAM text, in query order (``-``: standard output)."""
    if os.fspath(path) == "-":
        _write("-", "w", db, queries, alignments, scoring)
        return
    with _staging(path) as tmp:
        _write(os.fspath(tmp / "out.sam"), "w", db, queries, alignments, scoring)
        install(tmp / "out.sam", path)  # never a rename over /dev/null or a pipe


def write_bam(
    path: str | os.PathLike, db: Database, queries: Sequence[EncodedSequence], alignments: Sequence[Sequence[Alignment]], scoring: str
) -> None:
    """Coordinate-sorted BAM and its ``.bai`` index."""
    if os.fspath(path) == "-":
        raise InputError("BAM output needs a file name (it is sorted and indexed), not '-'")
    if os.path.exists(path) and not os.path.isfile(path):
        raise InputError(f"{path}: BAM output needs a regular file (it is sorted and indexed beside it)")
    with _staging(path) as tmp:
        _write(os.fspath(tmp / "unsorted.bam"), "wbu", db, queries, alignments, scoring)  # uncompressed: sort reads it once
        pysam.sort("-o", os.fspath(tmp / "out.bam"), os.fspath(tmp / "unsorted.bam"))
        pysam.index(os.fspath(tmp / "out.bam"))
        os.replace(tmp / "out.bam", path)
        os.replace(tmp / "out.bam.bai", f"{os.fspath(path)}.bai")


@contextlib.contextmanager
def _staging(path: str | os.PathLike):
    """A private directory beside ``path``, removed afterwards, for files renamed into place."""
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = tempfile.TemporaryDirectory(prefix=f".{target.name}.", dir=target.parent)
    except OSError as exc:
        raise InputError(f"{target}: cannot write ({exc.strerror})") from None
    with tmp as name:
        yield Path(name)
