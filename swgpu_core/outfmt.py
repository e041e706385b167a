"""BLAST tabular output (``-outfmt 6`` and ``7``): a registry of named fields.

Each field is a function of one :class:`Hit` that returns its text. Fields that describe
an alignment (pident, qstart, evalue, ...) are known by name but have no function until
the alignment code registers one with :func:`register_field` (``needs_alignment=True``);
asking for them before that is a one-line error, never a wrong value. A hit carries an
``alignment`` object only when the chosen format needs one, so searches that print only
scores never pay for tracebacks.

Sequence ids follow BLAST: ``sseqid`` is the first word of the FASTA header; ``sacc`` is
the accession inside a ``db|ACCESSION|NAME`` id (UniProt ``sp|P69905|HBA_HUMAN`` gives
``P69905``), else the whole id; ``stitle`` is the whole header line after ``>``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TextIO

from . import __version__
from .database import Database
from .errors import InputError
from .fasta import EncodedSequence
from .search import QueryHits


@dataclass
class Hit:
    """One query-subject pair as the output sees it."""

    db: Database
    query: EncodedSequence
    subject: int  # sorted-numbering database index
    score: int
    rank: int  # 1 = best hit of the query
    alignment: object | None = None  # set by the aligner when a field needs it

    @property
    def subject_header(self) -> tuple[str, str]:
        return self.db.header(self.subject)

    @property
    def subject_length(self) -> int:
        return int(self.db.lengths[self.subject])


@dataclass(frozen=True)
class Field:
    """A named output column: ``compute`` gives its text for a hit (None: not available yet)."""

    name: str
    title: str  # the column name in format 7's "# Fields:" line
    compute: Callable[[Hit], str] | None
    needs_alignment: bool = False


FIELDS: dict[str, Field] = {}

#: BLAST's twelve standard columns (``std``).
STANDARD_FIELDS = ("qseqid", "sseqid", "pident", "length", "mismatch", "gapopen", "qstart", "qend", "sstart", "send", "evalue", "bitscore")

#: What ``-outfmt 6`` alone prints: BLAST's standard columns (alignment fields are
#: registered by :mod:`swgpu_core.formats.tabular`).
DEFAULT_FIELDS = STANDARD_FIELDS


def register_field(name: str, title: str, compute: Callable[[Hit], str] | None, *, needs_alignment: bool = False) -> None:
    """Add or replace a field; the alignment code calls this for the alignment fields."""
    FIELDS[name] = Field(name, title, compute, needs_alignment)


_DB_PREFIXES = {"sp", "tr", "ref", "gb", "emb", "dbj", "pdb", "pir", "prf", "tpg", "tpe", "tpd", "gnl", "lcl"}


def accession(seq_id: str, keep_version: bool = False) -> str:
    """The accession inside a ``db|ACC|NAME`` style id, BLAST's ``sacc``/``saccver``."""
    parts = seq_id.split("|")
    acc = parts[1] if len(parts) >= 2 and parts[0].lower() in _DB_PREFIXES and parts[1] else seq_id
    return acc if keep_version else re.sub(r"\.\d+$", "", acc)


def _title(ident: str, description: str) -> str:
    return f"{ident} {description}" if description else ident


def _register_builtin() -> None:
    q = lambda hit: hit.query.id  # noqa: E731
    s = lambda hit: hit.subject_header[0]  # noqa: E731
    for name, title, fn in (
        ("qseqid", "query id", q),
        ("qacc", "query acc.", lambda h: accession(q(h))),
        ("qaccver", "query acc.ver", lambda h: accession(q(h), keep_version=True)),
        ("qtitle", "query title", lambda h: _title(h.query.id, h.query.description)),
        ("qlen", "query length", lambda h: str(len(h.query))),
        ("sseqid", "subject id", s),
        ("sallseqid", "subject ids", s),
        ("sacc", "subject acc.", lambda h: accession(s(h))),
        ("saccver", "subject acc.ver", lambda h: accession(s(h), keep_version=True)),
        ("sallacc", "subject accs.", lambda h: accession(s(h))),
        ("stitle", "subject title", lambda h: _title(*h.subject_header)),
        ("salltitles", "subject titles", lambda h: _title(*h.subject_header)),
        ("slen", "subject length", lambda h: str(h.subject_length)),
        ("score", "score", lambda h: str(h.score)),
        ("rank", "rank", lambda h: str(h.rank)),
    ):
        register_field(name, title, fn)
    for name, title in (
        ("pident", "% identity"),
        ("nident", "identical"),
        ("positive", "positives"),
        ("ppos", "% positives"),
        ("length", "alignment length"),
        ("mismatch", "mismatches"),
        ("gapopen", "gap opens"),
        ("gaps", "gaps"),
        ("qstart", "q. start"),
        ("qend", "q. end"),
        ("sstart", "s. start"),
        ("send", "s. end"),
        ("qseq", "query seq"),
        ("sseq", "subject seq"),
        ("cigar", "cigar"),
        ("btop", "BTOP"),
        ("qcovhsp", "% query coverage per hsp"),
        ("evalue", "evalue"),
        ("bitscore", "bit score"),
    ):
        register_field(name, title, None, needs_alignment=True)


_register_builtin()


@dataclass(frozen=True)
class OutFormat:
    """A parsed ``--outfmt``: 6 (plain table) or 7 (table with comment lines), and its fields."""

    kind: int
    fields: tuple[Field, ...]

    @property
    def needs_alignment(self) -> bool:
        return any(f.needs_alignment for f in self.fields)


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
        if field.compute is None:
            raise InputError(f"--outfmt: field {name} needs alignments (not available yet)")
        fields.append(field)
    return OutFormat(int(words[0]), tuple(fields))


def iter_hits(db: Database, hits: Iterable[QueryHits]) -> Iterator[tuple[EncodedSequence, list[Hit]]]:
    """Per query, its hits as :class:`Hit` objects, best first."""
    for qh in hits:
        yield qh.query, [
            Hit(db, qh.query, int(s), int(sc), rank) for rank, (s, sc) in enumerate(zip(qh.subjects, qh.scores), start=1)
        ]


def write_table(
    out: TextIO,
    fmt: OutFormat,
    db: Database,
    hits: Sequence[QueryHits],
    *,
    align: Callable[[Hit], object] | None = None,
    program: str = "swgpu search",
    scoring: str = "",
) -> int:
    """Write the table; ``align`` fills ``hit.alignment`` when a field needs it. Returns rows written."""
    if fmt.needs_alignment and align is None:
        raise InputError("--outfmt asks for alignment fields but no aligner is available")
    rows = 0
    for query, qhits in iter_hits(db, hits):
        if fmt.kind == 7:
            out.write(f"# swgpu {__version__} ({program})\n# Query: {_title(query.id, query.description)}\n")
            out.write(f"# Database: {db.path}{f' ({scoring})' if scoring else ''}\n")
            if qhits:
                out.write(f"# Fields: {', '.join(f.title for f in fmt.fields)}\n")
            out.write(f"# {len(qhits)} hits found\n")
        for hit in qhits:
            if fmt.needs_alignment:
                hit.alignment = align(hit)
            out.write("\t".join(f.compute(hit) for f in fmt.fields) + "\n")
            rows += 1
    if fmt.kind == 7:
        out.write(f"# swgpu processed {len(hits)} queries\n")
    return rows
