"""Text views of alignments: JSON lines for programs, a BLAST/SSEARCH-like pairwise view for people."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

from .. import __version__
from ..database import Database
from ..fasta import EncodedSequence
from ..stats import format_bitscore, format_evalue

if TYPE_CHECKING:
    from ..align import Alignment

#: Residues per line of the pairwise view, as in BLAST.
WIDTH = 60


#: ``json.dumps``'s own encoder of a string (its default, ``ensure_ascii``).
_string = json.encoder.encode_basestring_ascii


def _float(value: float | None) -> str:
    """A float as ``json.dumps`` writes it."""
    return "null" if value is None else float.__repr__(value) if math.isfinite(value) else json.dumps(value)


def json_line(aln: Alignment) -> str:
    """Every reported quantity of one alignment as one JSON object and a newline: the text
    ``json.dumps`` gives a dictionary of them, in this order, formatted directly (a tenth of its time)."""
    return (
        f'{{"query_id": {_string(aln.query_id)}, "query_description": {_string(aln.query_description)}, '
        f'"subject_id": {_string(aln.subject_id)}, "subject_description": {_string(aln.subject_description)}, '
        f'"rank": {aln.rank}, "score": {aln.score}, "evalue": {_float(aln.evalue)}, "bitscore": {_float(aln.bitscore)}, '
        f'"qstart": {aln.qstart}, "qend": {aln.qend}, "sstart": {aln.sstart}, "send": {aln.send}, "qlen": {aln.qlen}, '
        f'"slen": {aln.slen}, "length": {aln.length}, "identities": {aln.identities}, "positives": {aln.positives}, '
        f'"mismatches": {aln.mismatches}, "gap_opens": {aln.gap_opens}, "gaps": {aln.gaps}, "pident": {_float(round(aln.pident, 3))}, '
        f'"qcovhsp": {aln.qcovhsp}, "cigar": {_string(aln.cigar)}, "qseq": {_string(aln.qseq)}, "sseq": {_string(aln.sseq)}, '
        f'"midline": {_string(aln.midline)}}}\n'
    )


#: The fields of :func:`json_line` that :func:`alignment_from_record` needs (the rest are derived).
_STORED = (
    "query_id", "query_description", "subject_id", "subject_description", "rank", "score", "evalue", "bitscore", "qstart", "qend",
    "sstart", "send", "qlen", "slen", "qseq", "sseq", "midline", "cigar", "identities", "positives", "mismatches", "gap_opens", "gaps",
)  # fmt: skip


def alignment_from_record(record: dict, subject_index: int = -1) -> Alignment:
    """The :class:`Alignment` of one JSON line of :func:`write_jsonl` (its inverse).

    The database index is not stored (it is the sorted numbering of one database build);
    a reader that knows it from the hit lists passes it as ``subject_index``. Raises
    ``KeyError`` or ``TypeError`` for a record that lacks a field.
    """
    # Imported here: writing needs Alignment only as a type, so the module does not import align at load time.
    from ..align.alignment import Alignment as Record

    values = {name: record[name] for name in _STORED}
    if not isinstance(values["qseq"], str) or not isinstance(values["score"], int):
        raise TypeError("qseq must be a string and score an integer")
    texts = tuple(values.pop(name) for name in ("qseq", "sseq", "midline", "cigar"))
    return Record(subject_index=subject_index, length=len(texts[0]), texts=texts, **values)


def write_jsonl(out: TextIO, alignments: Sequence[Sequence[Alignment]]) -> None:
    """One JSON object per line and alignment, queries in input order, best hit first."""
    for alns in alignments:
        out.writelines(map(json_line, alns))


def _title(ident: str, description: str) -> str:
    return f"{ident} {description}" if description else ident


def _percent(part: int, whole: int) -> str:
    return f"{part}/{whole} ({round(100 * part / whole)}%)"


def format_pairwise(aln: Alignment) -> str:
    """One alignment as BLAST shows it: header lines, then query, match and subject lines."""
    expect = "" if aln.evalue is None else f",  Expect = {format_evalue(aln.evalue, pairwise=True)}"
    bits = f"{format_bitscore(aln.bitscore)} bits ({aln.score})" if aln.bitscore is not None else f"{aln.score}"
    lines = [
        f">{_title(aln.subject_id, aln.subject_description)}",
        f"Length={aln.slen}",
        "",
        f" Score = {bits}{expect}",
        f" Identities = {_percent(aln.identities, aln.length)}, Positives = {_percent(aln.positives, aln.length)}, "
        f"Gaps = {_percent(aln.gaps, aln.length)}",
        f" CIGAR = {aln.cigar}",
        "",
    ]
    return "\n".join(lines + pairwise_rows(aln)) + "\n"


def pairwise_rows(aln: Alignment, midline: str | None = None) -> list[str]:
    """The Query / match / Sbjct lines, ``WIDTH`` columns each, with coordinates, as BLAST prints them;
    the match line is ``midline`` where given (the report's, BLAST's letters), else the record's.

    Each block ends with an empty line; the HTML report shows the same rows as the text view.
    """
    lines = []
    qpos, spos = aln.qstart, aln.sstart
    pad = len(str(max(aln.qend, aln.send)))
    middle = aln.midline if midline is None else midline
    for k in range(0, aln.length, WIDTH):
        q, m, s = aln.qseq[k : k + WIDTH], middle[k : k + WIDTH], aln.sseq[k : k + WIDTH]
        qn, sn = len(q) - q.count("-"), len(s) - s.count("-")
        lines.append(f"Query  {qpos:<{pad}}  {q}  {qpos + qn - 1}")
        lines.append(f"       {'':<{pad}}  {m}")
        lines.append(f"Sbjct  {spos:<{pad}}  {s}  {spos + sn - 1}")
        lines.append("")
        qpos, spos = qpos + qn, spos + sn
    return lines


def write_pairwise(
    out: TextIO, db: Database, queries: Sequence[EncodedSequence], alignments: Sequence[Sequence[Alignment]], scoring: str, note: str = ""
) -> None:
    """The BLAST-like report: per query, a one-line summary of each hit, then the alignments."""
    out.write(f"swgpu {__version__}: exact Smith-Waterman local alignments\n\n")
    out.write(f"Database: {db.path} ({db.n_sequences:,} sequences; {db.n_residues:,} total letters; version {db.version_tag})\n")
    out.write(f"Scoring: {scoring}\n{note + chr(10) if note else ''}\n")
    for query, alns in zip(queries, alignments):
        out.write(f"Query= {_title(query.id, query.description)}\n\nLength={len(query)}\n\n")
        if not alns:
            out.write("***** No hits found *****\n\n")
            continue
        out.write(f"{'Sequences producing significant alignments:':<70}{'Score':>8}{'E':>10}\n\n")
        for a in alns:
            evalue = "*" if a.evalue is None else format_evalue(a.evalue, pairwise=True)
            out.write(f"{_title(a.subject_id, a.subject_description)[:68]:<70}{a.score:>8}{evalue:>10}\n")
        out.write("\n")
        for a in alns:
            out.write(format_pairwise(a) + "\n")
