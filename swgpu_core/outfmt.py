"""BLAST tabular output (``-outfmt 6`` and ``7``): one fixed table of named fields.

Each field is a function of one :class:`Hit` that returns its text, with BLAST's column
title (format 7's ``# Fields:`` line) and a one-line meaning (the commands' ``--help``).
Score fields (ids, lengths, score, E-value, bit score) need only the search; alignment
fields (pident, qstart, cigar, ...) read ``hit.alignment``, which the writer fills only
when the chosen fields need it, so tables of scores and E-values never pay for tracebacks.
E-values and bit scores come from :func:`swgpu_core.significance.query_significance`, a
query's at once; without statistics the ``evalue`` and ``bitscore`` columns are refused
(:func:`~swgpu_core.significance.require_statistics`), never written as ``*``.

Ids and titles as ``blastp`` 2.12 writes them against a ``makeblastdb -parse_seqids``
database: ``sseqid`` is the first word of the FASTA header; ``sacc``/``saccver`` the
accession inside a BLAST-style id (``sp|P69905|HBA_HUMAN`` gives ``P69905``,
``gi|123|ref|NP_1.2|`` gives ``NP_1``/``NP_1.2``), else the whole first word; ``stitle``
the description without the id. Query ids are not parsed (blastp's default without
``-parse_deflines``): ``qseqid``, ``qacc`` and ``qaccver`` are the query's first word.
``std`` is BLAST's twelve columns, ``qaccver saccver pident length mismatch gapopen qstart
qend sstart send evalue bitscore``. A tab inside a FASTA header becomes a space, so it
cannot shift the columns.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from . import __version__
from .errors import InputError
from .significance import Statistics, query_significance, require_statistics

if TYPE_CHECKING:
    from .align import Alignment
    from .fasta import EncodedSequence
    from .formats import Subjects
    from .search import QueryHits


@dataclass
class Hit:
    """One query-subject pair as the output sees it."""

    db: Subjects  # a Database, pairs' subjects or align-long's target
    query: EncodedSequence
    query_index: int
    subject: int  # sorted-numbering database index
    score: int
    rank: int  # 1 = best reported hit of the query
    evalue: float | None = None  # from the score (the writer asks the statistics once per query)
    bitscore: float | None = None
    alignment: Alignment | None = None  # set by the writer when a field needs it

    @property
    def subject_header(self) -> tuple[str, str]:
        return self.db.header(self.subject)

    @property
    def subject_length(self) -> int:
        return int(self.db.lengths[self.subject])


@dataclass(frozen=True)
class Field:
    """A named output column: ``compute`` gives its text for a hit."""

    name: str
    title: str  # the column name in format 7's "# Fields:" line, as BLAST writes it
    meaning: str  # one line for --help
    compute: Callable[[Hit], str]
    needs_alignment: bool = False
    needs_statistics: bool = False


_DB_PREFIXES = {"sp", "tr", "ref", "gb", "emb", "dbj", "pdb", "pir", "prf", "tpg", "tpe", "tpd", "gnl", "lcl"}


def accession(seq_id: str, keep_version: bool = False) -> str:
    """The accession inside a BLAST-style ``db|ACC|NAME`` id (after any ``gi|N|``), BLAST's ``sacc``/``saccver``;
    any other id is its own accession, version included."""
    parts = seq_id.split("|")
    if len(parts) >= 4 and parts[0] == "gi":
        parts = parts[2:]
    if len(parts) >= 2 and parts[0].lower() in _DB_PREFIXES and parts[1]:
        return parts[1] if keep_version else re.sub(r"\.\d+$", "", parts[1])
    return seq_id


def clean(text: str) -> str:
    """A header word or description as one table cell: tabs (and line breaks) become spaces."""
    return text.replace("\t", " ").replace("\r", " ").replace("\n", " ")


def title(ident: str, description: str) -> str:
    """The whole header line after ``>``."""
    return f"{ident} {description}" if description else ident


def _query_id(h: Hit) -> str:
    return clean(h.query.id)


def _subject_id(h: Hit) -> str:
    return clean(h.subject_header[0])


def _evalue(h: Hit) -> str:
    from .stats import format_evalue

    return format_evalue(h.evalue)


def _bitscore(h: Hit) -> str:
    from .stats import format_bitscore

    return format_bitscore(h.bitscore)


def _aligned(fn: Callable[[Alignment], str]) -> Callable[[Hit], str]:
    return lambda h: fn(h.alignment)


_TABLE: tuple[Field, ...] = (
    Field("qseqid", "query id", "query id: the first word of its FASTA header", _query_id),
    Field("qacc", "query acc.", "query accession (query ids are not parsed, as blastp's default: the first word)", _query_id),
    Field("qaccver", "query acc.ver", "query accession.version (the first word, as qacc)", _query_id),
    Field("qtitle", "query title", "query title: its whole FASTA header line", lambda h: clean(title(h.query.id, h.query.description))),
    Field("qlen", "query length", "query length in residues", lambda h: str(len(h.query))),
    Field("sseqid", "subject id", "subject id: the first word of its FASTA header", _subject_id),
    Field("sallseqid", "subject ids", "all subject ids (one per subject here: sseqid)", _subject_id),
    Field(
        "sacc",
        "subject acc.",
        "subject accession (P69905 of sp|P69905|HBA_HUMAN; else the id), without version",
        lambda h: clean(accession(h.subject_header[0])),
    ),
    Field(
        "saccver",
        "subject acc.ver",
        "subject accession with its version (NP_000549.1 of ref|NP_000549.1|)",
        lambda h: clean(accession(h.subject_header[0], keep_version=True)),
    ),
    Field(
        "sallacc", "subject accs.", "all subject accessions (one per subject here: sacc)", lambda h: clean(accession(h.subject_header[0]))
    ),
    Field("stitle", "subject title", "subject title: its FASTA description, without the id", lambda h: clean(h.subject_header[1])),
    Field("salltitles", "subject titles", "all subject titles (one per subject here: stitle)", lambda h: clean(h.subject_header[1])),
    Field("slen", "subject length", "subject length in residues", lambda h: str(h.subject_length)),
    Field("score", "score", "raw Smith-Waterman score", lambda h: str(h.score)),
    Field(
        "evalue", "evalue", "expect value of the score in this database (no traceback; --stats says how)", _evalue, needs_statistics=True
    ),
    Field("bitscore", "bit score", "bit score of the score (no traceback)", _bitscore, needs_statistics=True),
    Field("rank", "rank", "rank of the hit among the query's reported hits (1 = best; swgpu)", lambda h: str(h.rank)),
    Field("pident", "% identity", "percent identical positions of the alignment", _aligned(lambda a: f"{a.pident:.3f}"), True),
    Field("nident", "identical", "identical positions", _aligned(lambda a: str(a.identities)), True),
    Field("positive", "positives", "positions with a positive substitution score", _aligned(lambda a: str(a.positives)), True),
    Field("ppos", "% positives", "percent positive-scoring positions", _aligned(lambda a: f"{a.ppos:.2f}"), True),
    Field("length", "alignment length", "alignment length in columns (pairs plus gap residues)", _aligned(lambda a: str(a.length)), True),
    Field("mismatch", "mismatches", "aligned pairs of different residues", _aligned(lambda a: str(a.mismatches)), True),
    Field("gapopen", "gap opens", "number of gaps (gap openings)", _aligned(lambda a: str(a.gap_opens)), True),
    Field("gaps", "gaps", "gap residues", _aligned(lambda a: str(a.gaps)), True),
    Field("qstart", "q. start", "start of the alignment in the query (1-based)", _aligned(lambda a: str(a.qstart)), True),
    Field("qend", "q. end", "end of the alignment in the query (inclusive)", _aligned(lambda a: str(a.qend)), True),
    Field("sstart", "s. start", "start of the alignment in the subject (1-based)", _aligned(lambda a: str(a.sstart)), True),
    Field("send", "s. end", "end of the alignment in the subject (inclusive)", _aligned(lambda a: str(a.send)), True),
    Field("qseq", "query seq", "aligned part of the query, '-' for gaps", _aligned(lambda a: a.qseq), True),
    Field("sseq", "subject seq", "aligned part of the subject, '-' for gaps", _aligned(lambda a: a.sseq), True),
    Field(
        "btop", "BTOP", "BLAST traceback operations (identical run lengths, else query+subject letters)", _aligned(lambda a: a.btop), True
    ),
    Field("cigar", "cigar", "CIGAR of the aligned part, query as read: =/X/I/D (swgpu)", _aligned(lambda a: a.cigar), True),
    Field("qcovhsp", "% query coverage per hsp", "percent of the query inside the alignment", _aligned(lambda a: str(a.qcovhsp)), True),
)

#: Every tabular field by name: a fixed table, complete at import.
FIELDS: dict[str, Field] = {f.name: f for f in _TABLE}

#: BLAST's twelve standard columns (``std``), as ``blastp`` 2.12 names them.
STANDARD_FIELDS = (
    "qaccver",
    "saccver",
    "pident",
    "length",
    "mismatch",
    "gapopen",
    "qstart",
    "qend",
    "sstart",
    "send",
    "evalue",
    "bitscore",
)

#: What ``-outfmt 6`` alone prints: BLAST's standard columns.
DEFAULT_FIELDS = STANDARD_FIELDS
DEFAULT_OUTFMT = "6 std"


def fields_help() -> str:
    """Every field and its meaning, for a command's ``--help`` epilog."""
    width = max(len(f.name) for f in _TABLE)
    lines = [f"  {f.name:<{width}}  {f.meaning}" for f in _TABLE]
    return (
        "fields of --outfmt (6: tab-separated, 7: with BLAST's comment lines; 'std' = "
        + " ".join(STANDARD_FIELDS)
        + "):\n"
        + "\n".join(lines)
    )


@dataclass(frozen=True)
class OutFormat:
    """A parsed ``--outfmt``: 6 (plain table) or 7 (table with comment lines), and its fields."""

    kind: int
    fields: tuple[Field, ...]

    @property
    def needs_alignment(self) -> bool:
        return any(f.needs_alignment for f in self.fields)

    @property
    def needs_statistics(self) -> bool:
        return any(f.needs_statistics for f in self.fields)


def parse_outfmt(spec: str) -> OutFormat:
    """Parse BLAST's syntax, e.g. ``"6 qseqid sseqid score"``; ``std`` is the 12 standard fields."""
    words = spec.replace(",", " ").split()
    if not words:
        raise InputError("--outfmt is empty (try '6 qseqid sseqid score qlen slen')")
    if words[0] not in ("6", "7"):
        raise InputError(f"--outfmt {words[0]!r}: only the tabular formats 6 and 7 are supported")
    names: list[str] = []
    for word in words[1:] or list(DEFAULT_FIELDS):
        names.extend(STANDARD_FIELDS if word == "std" else [word])
    fields = []
    for name in names:
        field = FIELDS.get(name)
        if field is None:
            raise InputError(f"--outfmt: unknown field {name!r} (known: {', '.join(sorted(FIELDS))})")
        fields.append(field)
    return OutFormat(int(words[0]), tuple(fields))


def write_table(
    out: TextIO,
    fmt: OutFormat,
    db: Subjects,
    hits: Sequence[QueryHits],
    statistics: Statistics,
    *,
    alignments: Sequence[Sequence[Alignment]] | None = None,
    program: str = "swgpu search",
) -> int:
    """Write the table of ``hits`` (per query, best first); returns the rows written.

    ``alignments`` (per query, one per hit of ``hits``, same order) is needed only when a
    field needs alignments; ``statistics`` when one is ``evalue`` or ``bitscore`` (else
    an error saying why there are none). Format 7 writes BLAST's comment lines; the
    program line names swgpu as the version (``# BLASTP swgpu-0.1.0 ...``).
    """
    if fmt.needs_alignment and alignments is None:
        raise InputError("--outfmt asks for alignment fields but no alignments were computed")
    if fmt.needs_statistics:
        require_statistics(statistics, "--outfmt evalue/bitscore")
    import numpy as np

    rows = 0
    for qi, qh in enumerate(hits):
        alns = alignments[qi] if alignments is not None else None
        if alns is not None and fmt.needs_alignment and len(alns) != len(qh):
            raise InputError(f"{qh.query.id}: {len(qh)} hits but {len(alns)} alignments")
        if fmt.kind == 7:
            out.write(
                f"# BLASTP swgpu-{__version__} ({program}: exact Smith-Waterman)\n# Query: {clean(title(qh.query.id, qh.query.description))}\n"
            )
            out.write(f"# Database: {db.path}\n")
            if len(qh):
                out.write(f"# Fields: {', '.join(f.title for f in fmt.fields)}\n")
            out.write(f"# {len(qh)} hits found\n")
        significance = (
            query_significance(statistics, qi, len(qh.query), qh.scores, np.asarray(db.lengths)[qh.subjects])
            if fmt.needs_statistics
            else None
        )
        for k, (subject, score) in enumerate(zip(qh.subjects.tolist(), qh.scores.tolist())):
            e, b = (float(significance[0][k]), float(significance[1][k])) if significance is not None else (None, None)
            hit = Hit(db, qh.query, qi, int(subject), int(score), k + 1, e, b, alns[k] if fmt.needs_alignment else None)
            out.write("\t".join(f.compute(hit) for f in fmt.fields) + "\n")
            rows += 1
    if fmt.kind == 7:
        out.write(f"# BLAST processed {len(hits)} queries\n")
    return rows
