"""BLAST tabular output (``-outfmt 6`` and ``7``): one fixed table of named fields.

Each field makes its whole column for a block of rows (:class:`Rows`: some queries' hits,
one query after another), with BLAST's column title (format 7's ``# Fields:`` line) and a
one-line meaning (the commands' ``--help``): a column at a time, a subject's header and
the texts made of it once per table, BTOP for all the rows' alignments in one pass, where
a function per cell cost several times as much. Score fields (ids, lengths, score, E-value,
bit score) need only the search; alignment fields (pident, qstart, cigar, ...) read
``rows.alignments``, which the writer fills only when the chosen fields need them, so
tables of scores and E-values never pay for tracebacks.
E-values and bit scores come from :func:`swgpu_core.significance.hits_significance`, a
block's at once; without statistics the ``evalue`` and ``bitscore`` columns are refused
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
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import TYPE_CHECKING, TextIO

from . import __version__
from .errors import InputError
from .significance import Statistics, hits_significance, require_statistics

if TYPE_CHECKING:
    from .align import Alignment
    from .fasta import EncodedSequence
    from .formats import Subjects
    from .search import QueryHits


@dataclass
class Rows:
    """Consecutive rows of a table: the hits of some queries, one query after another.

    ``queries`` holds each query and its number of rows; ``subjects``, ``scores``,
    ``evalues``/``bitscores`` (None without statistics) and ``alignments`` (None when no
    field needs them) one entry per row. ``headers`` and ``texts`` are the table's own, kept
    from block to block: each subject's header, and each subject field's text of it.
    """

    db: Subjects
    queries: list[tuple[EncodedSequence, int]]
    subjects: list[int]
    scores: list[int]
    evalues: list[float] | None
    bitscores: list[float] | None
    alignments: list[Alignment] | None
    headers: dict[int, tuple[str, str]]
    texts: dict[Callable[[str, str], str], dict[int, str]]

    def per_query(self, text: Callable[[EncodedSequence], str]) -> list[str]:
        """A query's text, made once and repeated over its rows."""
        return [cell for query, n in self.queries for cell in [text(query)] * n]

    def per_subject(self, text: Callable[[str, str], str]) -> list[str]:
        """The text of each row's subject header (id, description), made once per subject and
        table, and spread over the rows by numpy (a block has 4,096 rows or more, see BLOCK_ROWS)."""
        import numpy as np

        made = self.texts.setdefault(text, {})
        distinct, inverse = np.unique(np.asarray(self.subjects, np.int64), return_inverse=True)
        order = distinct.tolist()
        new = [i for i in order if i not in made]
        if new:
            missing = [i for i in new if i not in self.headers]
            self.headers.update(zip(missing, self.db.headers(missing)))
            made.update(zip(new, [text(*self.headers[i]) for i in new]))
        cells = np.empty(len(order), dtype=object)
        cells[:] = [made[i] for i in order]
        return cells[inverse.reshape(-1)].tolist()

    def ranks(self) -> list[str]:
        return [str(rank) for _, n in self.queries for rank in range(1, n + 1)]

    def subject_lengths(self) -> list[str]:
        import numpy as np

        return list(map(str, np.asarray(self.db.lengths)[self.subjects].tolist()))


@dataclass(frozen=True)
class Field:
    """A named output column: ``column`` gives its cells for a block of rows."""

    name: str
    title: str  # the column name in format 7's "# Fields:" line, as BLAST writes it
    meaning: str  # one line for --help
    column: Callable[[Rows], Iterable[str]]
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


def _query(text: Callable[[EncodedSequence], str]) -> Callable[[Rows], list[str]]:
    return lambda rows: rows.per_query(text)


def _subject(text: Callable[[str, str], str]) -> Callable[[Rows], list[str]]:
    return lambda rows: rows.per_subject(text)


def _aligned(text: Callable[[Alignment], str]) -> Callable[[Rows], Iterable[str]]:
    return lambda rows: map(text, rows.alignments)


def _number(name: str) -> Callable[[Rows], Iterable[str]]:
    """An integer attribute of the alignments."""
    value = attrgetter(name)
    return lambda rows: map(str, map(value, rows.alignments))


def _query_id(query: EncodedSequence) -> str:
    return clean(query.id)


def _subject_id(ident: str, description: str) -> str:
    return clean(ident)


def _subject_acc(ident: str, description: str) -> str:
    return clean(accession(ident))


def _subject_title(ident: str, description: str) -> str:
    return clean(description)


def _evalues(rows: Rows) -> Iterable[str]:
    from .stats import format_evalue

    return map(format_evalue, rows.evalues)


def _bitscores(rows: Rows) -> Iterable[str]:
    from .stats import format_bitscore

    return map(format_bitscore, rows.bitscores)


def _btops(rows: Rows) -> list[str]:
    from .align.alignment import btops

    return btops(rows.alignments)


_TABLE: tuple[Field, ...] = (
    Field("qseqid", "query id", "query id: the first word of its FASTA header", _query(_query_id)),
    Field("qacc", "query acc.", "query accession (query ids are not parsed, as blastp's default: the first word)", _query(_query_id)),
    Field("qaccver", "query acc.ver", "query accession.version (the first word, as qacc)", _query(_query_id)),
    Field("qtitle", "query title", "query title: its whole FASTA header line", _query(lambda q: clean(title(q.id, q.description)))),
    Field("qlen", "query length", "query length in residues", _query(lambda q: str(len(q)))),
    Field("sseqid", "subject id", "subject id: the first word of its FASTA header", _subject(_subject_id)),
    Field("sallseqid", "subject ids", "all subject ids (one per subject here: sseqid)", _subject(_subject_id)),
    Field(
        "sacc", "subject acc.", "subject accession (P69905 of sp|P69905|HBA_HUMAN; else the id), without version", _subject(_subject_acc)
    ),
    Field(
        "saccver",
        "subject acc.ver",
        "subject accession with its version (NP_000549.1 of ref|NP_000549.1|)",
        _subject(lambda ident, _: clean(accession(ident, keep_version=True))),
    ),
    Field("sallacc", "subject accs.", "all subject accessions (one per subject here: sacc)", _subject(_subject_acc)),
    Field("stitle", "subject title", "subject title: its FASTA description, without the id", _subject(_subject_title)),
    Field("salltitles", "subject titles", "all subject titles (one per subject here: stitle)", _subject(_subject_title)),
    Field("slen", "subject length", "subject length in residues", Rows.subject_lengths),
    Field("score", "score", "raw Smith-Waterman score", lambda rows: map(str, rows.scores)),
    Field(
        "evalue", "evalue", "expect value of the score in this database (no traceback; --stats says how)", _evalues, needs_statistics=True
    ),
    Field("bitscore", "bit score", "bit score of the score (no traceback)", _bitscores, needs_statistics=True),
    Field("rank", "rank", "rank of the hit among the query's reported hits (1 = best; swgpu)", Rows.ranks),
    Field("pident", "% identity", "percent identical positions of the alignment", _aligned(lambda a: f"{a.pident:.3f}"), True),
    Field("nident", "identical", "identical positions", _number("identities"), True),
    Field("positive", "positives", "positions with a positive substitution score", _number("positives"), True),
    Field("ppos", "% positives", "percent positive-scoring positions", _aligned(lambda a: f"{a.ppos:.2f}"), True),
    Field("length", "alignment length", "alignment length in columns (pairs plus gap residues)", _number("length"), True),
    Field("mismatch", "mismatches", "aligned pairs of different residues", _number("mismatches"), True),
    Field("gapopen", "gap opens", "number of gaps (gap openings)", _number("gap_opens"), True),
    Field("gaps", "gaps", "gap residues", _number("gaps"), True),
    Field("qstart", "q. start", "start of the alignment in the query (1-based)", _number("qstart"), True),
    Field("qend", "q. end", "end of the alignment in the query (inclusive)", _number("qend"), True),
    Field("sstart", "s. start", "start of the alignment in the subject (1-based)", _number("sstart"), True),
    Field("send", "s. end", "end of the alignment in the subject (inclusive)", _number("send"), True),
    Field("qseq", "query seq", "aligned part of the query, '-' for gaps", _aligned(attrgetter("qseq")), True),
    Field("sseq", "subject seq", "aligned part of the subject, '-' for gaps", _aligned(attrgetter("sseq")), True),
    Field("btop", "BTOP", "BLAST traceback operations (identical run lengths, else query+subject letters)", _btops, True),
    Field("cigar", "cigar", "CIGAR of the aligned part, query as read: =/X/I/D (swgpu)", _aligned(attrgetter("cigar")), True),
    Field("qcovhsp", "% query coverage per hsp", "percent of the query inside the alignment", _number("qcovhsp"), True),
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


#: Rows per block of a table (whole queries): its columns are made at once, and held until written.
BLOCK_ROWS = 4096


def _blocks(hits: Sequence[QueryHits]) -> Iterator[list[int]]:
    """Query numbers in runs of whole queries of at least ``BLOCK_ROWS`` rows (the last may have fewer)."""
    block, size = [], 0
    for qi, qh in enumerate(hits):
        block.append(qi)
        size += len(qh)
        if size >= BLOCK_ROWS:
            yield block
            block, size = [], 0
    if block:
        yield block


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
    for qh, alns in zip(hits, alignments) if fmt.needs_alignment else ():
        if len(alns) != len(qh):
            raise InputError(f"{qh.query.id}: {len(qh)} hits but {len(alns)} alignments")
    import numpy as np

    lengths = np.asarray(db.lengths)
    headers: dict[int, tuple[str, str]] = {}
    texts: dict[Callable[[str, str], str], dict[int, str]] = {}
    for block in _blocks(hits):
        evalues, bitscores = None, None
        if fmt.needs_statistics:
            e, b = hits_significance(statistics, [hits[qi] for qi in block], lengths, block)
            evalues, bitscores = e.tolist(), b.tolist()
        rows = Rows(
            db, [(hits[qi].query, len(hits[qi])) for qi in block], [i for qi in block for i in hits[qi].subjects.tolist()],
            [score for qi in block for score in hits[qi].scores.tolist()], evalues, bitscores,
            [a for qi in block for a in alignments[qi]] if fmt.needs_alignment else None, headers, texts,
        )  # fmt: skip
        lines = list(map("\t".join, zip(*(f.column(rows) for f in fmt.fields))))
        start = 0
        for query, n in rows.queries:
            if fmt.kind == 7:
                out.write(
                    f"# BLASTP swgpu-{__version__} ({program}: exact Smith-Waterman)\n# Query: {clean(title(query.id, query.description))}\n"
                )
                out.write(f"# Database: {db.path}\n")
                if n:
                    out.write(f"# Fields: {', '.join(f.title for f in fmt.fields)}\n")
                out.write(f"# {n} hits found\n")
            if n:
                out.write("\n".join(lines[start : start + n]) + "\n")
            start += n
    if fmt.kind == 7:
        out.write(f"# BLAST processed {len(hits)} queries\n")
    return sum(len(qh) for qh in hits)
