"""Align given pairs of sequences (``swgpu pairs``): score and traceback, no search.

The pairs come either from two FASTA files read in step (record k of the query file with
record k of the subject file) or from a table of (query id, subject id) lines against a
database, with the query ids looked up in a query FASTA or in the database. Each pair is
aligned on its own (the best local alignment of those two sequences, under the same tie
rules as every swgpu alignment) by the CPU reference or the GPU kernels, and reported
through the writers of ``swgpu align``: one entry per pair, in input order, rank 1.

E-values: a pair is its own search space, the query against that one subject (as in
``blastp -subject``; :func:`swgpu_core.significance.statistics` with no database): BLAST's
statistics, or the given lambda and K. There are no database scores to fit, so a scoring
system BLAST has no parameters for has no E-values without lambda and K. They are
comparable between pairs of similar lengths, not with E-values of a database search.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import collector
from .align import Alignment, build_alignments
from .alphabet import PROTEIN, Alphabet
from .database import Database
from .engine import Engine, get_engine
from .errors import InputError
from .fasta import EncodedSequence, encoded_records
from .scoring import Scoring
from .search import QueryHits
from .significance import NO_STATISTICS, Statistics, query_significance


class SubjectSet:
    """The subjects of FASTA pairs, with the part of :class:`~swgpu_core.database.Database`'s
    interface that the output writers use (headers, lengths, order, identity).

    Records with the same id are one subject (SAM needs unique reference names); the same
    id with other residues is an error.
    """

    def __init__(self, path: str, records: Sequence[EncodedSequence], alphabet: Alphabet):
        self.path = Path(path)
        self.alphabet = alphabet
        self._records = list(records)
        self.lengths = np.array([len(r) for r in self._records], np.int64)
        self.order = np.arange(len(self._records), dtype=np.int64)
        with open(path, "rb") as fh:
            self.version_tag = hashlib.file_digest(fh, "sha256").hexdigest()[:16]

    @property
    def n_sequences(self) -> int:
        return len(self._records)

    @property
    def n_residues(self) -> int:
        return int(self.lengths.sum())

    def codes(self, i: int) -> np.ndarray:
        return self._records[i].codes

    def header(self, i: int) -> tuple[str, str]:
        return self._records[i].id, self._records[i].description

    def headers(self, indices: Sequence[int]) -> list[tuple[str, str]]:
        return [self.header(i) for i in indices]

    def codes_of(self, indices: Sequence[int]) -> list[np.ndarray]:
        return [self._records[i].codes for i in indices]

    def seq_id(self, i: int) -> str:
        return self._records[i].id


@dataclass
class PairSet:
    """Pairs to align: per pair its query, and its subject as an index of ``subjects``."""

    queries: list[EncodedSequence]
    subject_index: list[int]
    subjects: Database | SubjectSet

    def subject(self, k: int) -> EncodedSequence:
        i = self.subject_index[k]
        ident, desc = self.subjects.header(i)
        return EncodedSequence(ident, desc, np.asarray(self.subjects.codes(i)))

    def subject_sequences(self) -> list[EncodedSequence]:
        """:meth:`subject` of every pair, the headers and codes read at once (each distinct subject once)."""
        unique, where = np.unique(np.asarray(self.subject_index, np.int64), return_inverse=True)
        heads, codes = self.subjects.headers(unique.tolist()), self.subjects.codes_of(unique.tolist())
        distinct = [EncodedSequence(ident, desc, np.asarray(c)) for (ident, desc), c in zip(heads, codes)]
        return [distinct[k] for k in where.tolist()]

    def __len__(self) -> int:
        return len(self.queries)


def fasta_pairs(query_path: str, subject_path: str, alphabet: Alphabet = PROTEIN) -> PairSet:
    """Record k of ``query_path`` with record k of ``subject_path``; the counts must agree."""
    with collector.paused():  # a record or two per pair
        queries = list(encoded_records(query_path, alphabet))  # ids may repeat: a sequence in several pairs
        subjects = list(encoded_records(subject_path, alphabet))
    if len(queries) != len(subjects):
        short, long_path, extra = (
            (subject_path, query_path, queries) if len(queries) > len(subjects) else (query_path, subject_path, subjects)
        )
        k = min(len(queries), len(subjects))
        raise InputError(f"{long_path}: record {k + 1} ({extra[k].id}) has no partner: {short} has only {k} records")
    unique: list[EncodedSequence] = []
    where: dict[str, int] = {}
    index = []
    for k, rec in enumerate(subjects, start=1):
        if rec.id not in where:
            where[rec.id] = len(unique)
            unique.append(rec)
        elif not np.array_equal(unique[where[rec.id]].codes, rec.codes):
            raise InputError(f"{subject_path}: record {k} ({rec.id}) repeats an id with other residues")
        index.append(where[rec.id])
    return PairSet(queries, index, SubjectSet(subject_path, unique, alphabet))


def table_pairs(table: str, db: Database, query_path: str | None = None) -> PairSet:
    """Pairs named by a table of ``query_id subject_id`` lines (tab or space separated;
    blank lines and ``#`` comments skipped); subjects from ``db``, queries from
    ``query_path`` when given, else from ``db``."""
    with collector.paused():  # a record or two per pair
        return _table_pairs(table, db, query_path)


def _table_pairs(table: str, db: Database, query_path: str | None) -> PairSet:
    try:
        lines = Path(table).read_text().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{table}: cannot read the pair table ({exc})") from None
    named = [(number, line.split("#", 1)[0].split()) for number, line in enumerate(lines, start=1)]
    named = [(number, words) for number, words in named if words]
    if query_path is not None:
        queries = {}
        for rec in encoded_records(query_path, db.alphabet):
            queries.setdefault(rec.id, rec)
    # only the ids the table names are looked up (a dict of every id of the database took
    # 0.7 s for bench200M's 407,808 sequences, and grows with it; bench/RESULTS.md, thirty-second session)
    ids = db.find_ids({w for _, words in named if len(words) == 2 for w in (words if query_path is None else words[1:])})
    pairs = PairSet([], [], db)
    for number, words in named:
        if len(words) != 2:
            raise InputError(f"{table}: line {number}: expected 'query_id subject_id', found {len(words)} fields")
        qid, sid = words
        if sid not in ids:
            raise InputError(f"{table}: line {number}: subject {sid!r} is not in the database {db.path}")
        if query_path is not None:
            if qid not in queries:
                raise InputError(f"{table}: line {number}: query {qid!r} is not in {query_path}")
            query = queries[qid]
        else:
            if qid not in ids:
                raise InputError(f"{table}: line {number}: query {qid!r} is not in the database {db.path}")
            ident, desc = db.header(ids[qid])
            query = EncodedSequence(ident, desc, np.asarray(db.codes(ids[qid])))
        pairs.queries.append(query)
        pairs.subject_index.append(ids[sid])
    if not pairs.queries:
        raise InputError(f"{table}: no pairs")
    return pairs


def align_pair_set(
    pairs: PairSet, scoring: Scoring, backend: str | Engine = "auto", statistics: Statistics = NO_STATISTICS
) -> tuple[list[QueryHits], list[list[Alignment]], str]:
    """One (hits, alignments) entry per pair, as the writers take them, and the engine kind
    used (``backend``: an engine, or its name for :func:`~swgpu_core.engine.get_engine`).

    A pair without a positive-scoring alignment has no hit and no alignment.
    """
    with collector.paused():  # a record and a hit list per pair
        return _align_pair_set(pairs, scoring, get_engine(backend), statistics)


def _align_pair_set(
    pairs: PairSet, scoring: Scoring, engine: Engine, statistics: Statistics
) -> tuple[list[QueryHits], list[list[Alignment]], str]:
    subjects = pairs.subject_sequences()
    found = engine.align_pairs([q.codes for q in pairs.queries], [s.codes for s in subjects], scoring)
    aligned = found.aligned.tolist()
    built = build_alignments(
        found.paths, [pairs.queries[k] for k in aligned], [subjects[k] for k in aligned],
        [pairs.subject_index[k] for k in aligned], [1] * len(aligned), scoring,
    )  # fmt: skip
    # every pair's E-value in one call: pair k is query number k against its subject alone, with
    # the paths' scores (the records', which build_alignments checked)
    # (one call per pair cost 46 us a pair, most of the host's time, bench/RESULTS.md, thirty-first session)
    both = query_significance(
        statistics, np.asarray(aligned, np.int64), np.fromiter((len(pairs.queries[k]) for k in aligned), np.int64, len(aligned)),
        found.paths.score.astype(np.int64), np.fromiter((len(subjects[k]) for k in aligned), np.int64, len(aligned)),
    )  # fmt: skip
    if both is not None:
        for aln, evalue, bitscore in zip(built, both[0].tolist(), both[1].tolist()):
            aln.evalue, aln.bitscore = evalue, bitscore
    # each pair's hit list is views of two arrays: its subject and score, or none (two arrays
    # a pair took 0.39 s of 100,000 pairs, bench/RESULTS.md, thirty-second session)
    subject_of = np.asarray(pairs.subject_index, np.int64)
    score_of = np.zeros(len(pairs), np.int32)
    score_of[found.aligned] = found.paths.score
    records = iter(built)
    hits = [QueryHits(q, subject_of[k : k + h], score_of[k : k + h]) for k, (q, h) in enumerate(zip(pairs.queries, found.mask.tolist()))]
    alignments = [[next(records)] if len(h) else [] for h in hits]
    return hits, alignments, engine.kind
