"""The :class:`Alignment` record and its construction from traced paths.

Everything a report needs (aligned strings, CIGAR, identities, positives, gap counts) is
derived once from the path and the two sequences, and the score is recomputed from the
path: :func:`build_alignments` refuses a path whose own score differs from the search
score, so no output ever shows an alignment that does not explain its score.

The records of many paths are built at once (:func:`build_alignments`): their columns are
laid end to end and every quantity comes from a few numpy passes over all of them, then
each record takes its slices. One record at a time, per-column Python and a few dozen
small numpy calls per path cost over 100 microseconds a record, more than the traceback
of a typical hit. The aligned texts (``qseq``, ``sseq``, ``midline``, ``cigar``) are made on
first use, for every record of the call at once (:class:`_Texts`): they are a pass over every
column each, 39% of the records' time for 24,000 alignments of 490 columns on the CPU
machine (bench/RESULTS.md, twenty-ninth session), and BLAST's twelve columns, the default
table, read none of them. BTOP, which few outputs ask for, is derived on first use too
(:func:`btops`, many records at once) and kept.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import NoReturn

import numpy as np

from ..cores import cpu_threads
from ..fasta import EncodedSequence
from ..scoring import Scoring
from .traceback import OP_DEL, OP_INS, OP_PAIR, PairTrace, TracebackError, TracedPaths

GAP = ord("-")

#: The CIGAR letter of a column: its OP_* code plus 3 for a pair of different residues.
_MISMATCH = np.uint8(3)
_CIGAR = np.zeros(4, np.uint8)
_CIGAR[[OP_PAIR, OP_DEL, OP_INS, OP_PAIR + _MISMATCH]] = np.frombuffer(b"=DIX", np.uint8)
#: The midline letter of a column: 2 * identical + positive score (a gap is neither).
_MIDLINE = np.frombuffer(b" +||", np.uint8)


@dataclass(slots=True)
class Alignment:
    """One optimal local alignment of a query and a database sequence.

    Coordinates are 1-based and inclusive, as in BLAST. ``qseq``/``sseq`` are the aligned
    residues with ``-`` for gaps; in the CIGAR the query is the read and the subject the
    reference, so ``I`` is a query residue against a gap and ``D`` a subject residue
    against a gap. Slots: tens of thousands of records are made per output, each in a
    fraction of the time a dictionary-backed instance takes. The four texts are fields
    that :func:`build_alignments` leaves to be made on first read (see :meth:`__getattr__`);
    ``texts`` gives them to a record made by hand, and holds them once made, so that
    :func:`dataclasses.replace` carries them to the new record.
    """

    query_id: str
    query_description: str
    subject_id: str
    subject_description: str
    subject_index: int  # sorted-numbering database index
    rank: int  # 1 = the query's best hit
    score: int
    qstart: int
    qend: int
    sstart: int
    send: int
    qlen: int
    slen: int
    length: int  # alignment columns (pairs plus gap residues)
    identities: int
    positives: int
    mismatches: int
    gap_opens: int
    gaps: int  # gap residues
    evalue: float | None = None
    bitscore: float | None = None
    ops: np.ndarray | None = field(default=None, repr=False, compare=False)
    #: (qseq, sseq, midline, cigar), or where they come from: a call's :class:`_Texts` and this record's number in it
    texts: tuple[str, str, str, str] | tuple[_Texts, int] = field(kw_only=True, repr=False, compare=False)
    qseq: str = field(init=False)
    sseq: str = field(init=False)
    midline: str = field(init=False)  # '|' identical, '+' positive score, ' ' otherwise
    cigar: str = field(init=False)  # =/X/I/D
    _btop: str | None = field(default=None, init=False, repr=False, compare=False)  # see btops()

    def __post_init__(self) -> None:
        if isinstance(self.texts[0], str):
            self.qseq, self.sseq, self.midline, self.cigar = self.texts  # type: ignore[misc]

    def __getstate__(self) -> tuple[None, dict[str, object]]:
        """Pickled and copied with its texts made: its call's columns would go with every record."""
        self.__getattr__("qseq")  # makes the four texts where they are not made yet
        return None, {name: getattr(self, name) for name in self.__slots__}

    def __getattr__(self, name: str) -> str:
        """A text not made yet (an unset slot lands here): all four of this record's, from its
        call's :class:`_Texts`, which makes those of every record of the call at once."""
        texts = object.__getattribute__(self, "texts")
        if name not in _TEXTS:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        if not isinstance(texts[0], str):
            texts = self.texts = texts[0].of(texts[1])
            self.qseq, self.sseq, self.midline, self.cigar = texts
        return object.__getattribute__(self, name)

    @property
    def pident(self) -> float:
        return 100.0 * self.identities / self.length

    @property
    def ppos(self) -> float:
        return 100.0 * self.positives / self.length

    @property
    def qcovhsp(self) -> int:
        """Percent of the query inside the alignment, rounded like BLAST's."""
        return int(100.0 * (self.qend - self.qstart + 1) / self.qlen + 0.5)

    @property
    def cigar_m(self) -> str:
        """The CIGAR with ``=`` and ``X`` merged into ``M``."""
        letters = np.frombuffer(self.cigar_ops, np.uint8)
        merged = np.where((letters == ord("=")) | (letters == ord("X")), ord("M"), letters).astype(np.uint8)
        return _run_lengths(merged, np.array([0, merged.size]))[0]

    @property
    def cigar_ops(self) -> bytes:
        """One CIGAR letter per column."""
        return _expand(self.cigar)

    @property
    def btop(self) -> str:
        """BLAST's trace-back operations: identical run lengths, else query+subject letters."""
        return btops([self])[0]


def _expand(cigar: str) -> bytes:
    out, num = bytearray(), ""
    for ch in cigar:
        if ch.isdigit():
            num += ch
        else:
            out += ch.encode() * int(num)
            num = ""
    return bytes(out)


def _runs(keys: np.ndarray, bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and length of each run of equal ``keys``; a run never crosses a record's bounds
    (record k: columns ``bounds[k]`` to ``bounds[k+1]``)."""
    n = keys.size
    new = np.ones(n, bool)
    new[1:] = keys[1:] != keys[:-1]
    new[bounds[:-1][bounds[:-1] < n]] = True
    starts = np.flatnonzero(new)
    return starts, np.diff(np.append(starts, n))


def _sums(values: np.ndarray, bounds: np.ndarray, dtype: type = np.int32) -> np.ndarray:
    """Per-record sums along the last axis of ``values`` (record k: ``bounds[k]`` to ``bounds[k+1]``,
    none empty). Counts of columns fit int32, which reduceat adds twice as fast as int64.

    Row by row: numpy's reduceat of a 2-D array whose values it must cast took 0.4-0.7 s the
    first time in a process for 4 rows of 25 M columns, against 0.05 s for the same rows one
    by one (and 0.04 s for the 2-D call made again); bench/RESULTS.md, thirty-second session."""
    if values.ndim == 1:
        return np.add.reduceat(values, bounds[:-1], dtype=dtype)
    return np.stack([np.add.reduceat(row, bounds[:-1], dtype=dtype) for row in values])


def _digits(values: np.ndarray) -> np.ndarray:
    """Decimal digits of each positive value."""
    widths = np.ones(values.size, np.int64)
    power, top = 10, int(values.max()) if values.size else 0
    while power <= top:
        widths += values >= power
        power *= 10
    return widths


def _put_numbers(out: np.ndarray, at: np.ndarray, values: np.ndarray, widths: np.ndarray) -> None:
    """Write each value in decimal into ``out``, its first digit at ``at``: the last digits of
    all values, then the tens of those that have them, and so on (most runs are short)."""
    end, rest = at + widths - 1, values
    while rest.size:
        out[end] = ord("0") + rest % 10
        more = rest >= 10
        end, rest = end[more] - 1, rest[more] // 10


def _split(letters: np.ndarray, cuts: np.ndarray) -> list[str]:
    """The texts of ``letters`` between consecutive ``cuts``: one string made, then sliced."""
    text = letters.tobytes().decode("ascii")
    at = cuts.tolist()
    return [text[a:b] for a, b in zip(at[:-1], at[1:])]


def _run_texts(out: np.ndarray, run_at: np.ndarray, run_pos: np.ndarray, bounds: np.ndarray) -> list[str]:
    """Each record's text: ``out`` holds the texts of all runs end to end, run r's from ``run_pos[r]``."""
    return _split(out, np.append(run_pos, out.size)[np.searchsorted(run_at, bounds)])


def _run_lengths(letters: np.ndarray, bounds: np.ndarray) -> list[str]:
    """Run-length code of each record's uint8 letters, e.g. ``5=1X2I``."""
    run_at, run_len = _runs(letters, bounds)
    widths = _digits(run_len)
    size = widths + 1
    pos = np.cumsum(size) - size
    out = np.empty(int(size.sum()), np.uint8)
    _put_numbers(out, pos, run_len, widths)
    out[pos + widths] = letters[run_at]
    return _run_texts(out, run_at, pos, bounds)


def btops(alignments: Sequence[Alignment]) -> list[str]:
    """The BTOP of each alignment: runs of identical columns as their length, every other
    column as its query and subject letters (``7AG3-K``). Derived in one pass over the
    alignments that lack it, and kept in each record."""
    todo = [a for a in alignments if a._btop is None]
    if todo:
        lengths = np.fromiter((len(a.qseq) for a in todo), np.int64, len(todo))
        bounds = np.concatenate(([0], np.cumsum(lengths)))
        q = np.frombuffer("".join(a.qseq for a in todo).encode("ascii"), np.uint8)
        s = np.frombuffer("".join(a.sseq for a in todo).encode("ascii"), np.uint8)
        same = q == s
        run_at, run_len = _runs(same, bounds)
        identical = same[run_at]
        widths = _digits(run_len)
        size = np.where(identical, widths, 2 * run_len)
        pos = np.cumsum(size) - size
        out = np.empty(int(size.sum()), np.uint8)
        _put_numbers(out, pos[identical], run_len[identical], widths[identical])
        run = np.repeat(np.arange(run_at.size), run_len)  # the run of each column
        cols = np.flatnonzero(~same)
        at = pos[run[cols]] + 2 * (cols - run_at[run[cols]])
        out[at], out[at + 1] = q[cols], s[cols]
        for a, text in zip(todo, _run_texts(out, run_at, pos, bounds)):
            a._btop = text
    return [a._btop for a in alignments]


_TEXTS = frozenset(("qseq", "sseq", "midline", "cigar"))


class _Texts:
    """The aligned texts of the records of one :func:`build_alignments` call, made for all of
    them when the first record is asked for one, from the columns the call laid end to end:
    each column's residue codes (a gap is code ``size``), its path op, and the records' bounds.

    The records refer to this object, not it to them, so it lives as long as a record that
    has not read its texts does, and no cycle is made. Records of one call read from two
    threads make the texts once (a lock)."""

    __slots__ = ("_columns", "_made", "_lock")

    def __init__(self, qcodes: np.ndarray, scodes: np.ndarray, ops: np.ndarray, bounds: np.ndarray, scoring: Scoring) -> None:
        self._columns: tuple | None = (qcodes, scodes, ops, bounds, scoring)
        self._made: list[tuple[str, str, str, str]] | None = None
        self._lock = threading.Lock()

    def of(self, k: int) -> tuple[str, str, str, str]:
        """Record ``k``'s (qseq, sseq, midline, cigar)."""
        made = self._made
        if made is None:
            with self._lock:
                if self._made is None:
                    self._made = list(zip(*self._make()))
                    self._columns = None  # the columns are no longer needed
            made = self._made
        return made[k]

    def _make(self) -> tuple[list[str], list[str], list[str], list[str]]:
        qcodes, scodes, ops, bounds, scoring = self._columns
        size = scoring.alphabet.size
        letters = np.full(size + 1, GAP, np.uint8)
        letters[:size] = scoring.alphabet.decode_table
        # the midline letter of each pair of codes: 2 x identical + positive score, as one lookup
        identical = np.identity(size + 1, np.uint8).reshape(-1)
        midline = _MIDLINE[identical * np.uint8(2) + (_padded(scoring) > 0)]
        mismatch = (ops == OP_PAIR) & (qcodes != scodes)  # no column is a gap in both
        return (
            _split(letters[qcodes], bounds),
            _split(letters[scodes], bounds),
            _split(midline[_pairs(qcodes, scodes, size)], bounds),
            _run_lengths(_CIGAR[ops + _MISMATCH * mismatch], bounds),
        )


def _padded(scoring: Scoring) -> np.ndarray:
    """The matrix with a row and a column of zeros for the gap code ``size``, flattened for
    :func:`_pairs`: a gap scores 0 against anything."""
    size = scoring.alphabet.size
    matrix = np.zeros((size + 1, size + 1), np.int32)
    matrix[:size, :size] = scoring.matrix
    return matrix.reshape(-1)


def _pairs(qcodes: np.ndarray, scodes: np.ndarray, size: int) -> np.ndarray:
    """Each column's index into :func:`_padded`: one flat lookup, 2.3 times as fast as indexing
    the square matrix by the two code arrays (12 M columns, CPU machine), with a 16-bit index
    where the alphabet allows (a quarter of ``intp``'s bytes)."""
    wide = np.uint16 if (size + 1) ** 2 <= 1 << 16 else np.intp
    return qcodes.astype(wide) * wide(size + 1) + scodes


def build_alignments(
    traces: TracedPaths | Sequence[PairTrace],
    queries: Sequence[EncodedSequence],
    subjects: Sequence[EncodedSequence],
    subject_indices: Sequence[int],
    ranks: Sequence[int],
    scoring: Scoring,
    *,
    threads: int = 0,
) -> list[Alignment]:
    """The record of each traced path: ``traces[k]`` aligns ``queries[k]`` with ``subjects[k]``.

    Checks every path against its sequences and its search score: the first that does not
    span its end coordinates inside its sequences, or whose own score differs, is a
    :class:`~swgpu_core.align.traceback.TracebackError`. A record's ``ops`` is its path
    (a view of ``traces.ops`` where the paths come as :class:`TracedPaths`).

    Many columns are cut into parts of whole records built side by side on ``threads`` cores
    (0: all this process may use): numpy's passes over the columns release the interpreter's
    lock. A traced bench200M x 500 search's records (11 M columns) took 0.3 s of one core on
    a device's host (bench/RESULTS.md, thirty-first session). Each part's texts are made on
    the first read of one of its records.
    """
    if not len(traces):
        return []
    paths = traces if isinstance(traces, TracedPaths) else TracedPaths.of(traces)
    given = None if isinstance(traces, TracedPaths) else traces
    parts = record_parts(paths.bounds, cpu_threads(threads))
    if len(parts) == 1:
        return _build(given, paths, queries, subjects, subject_indices, ranks, scoring)
    with ThreadPoolExecutor(len(parts), thread_name_prefix="swgpu-records") as pool:
        built = [
            pool.submit(
                _build,
                None if given is None else given[a:b],
                paths[a:b],
                queries[a:b],
                subjects[a:b],
                subject_indices[a:b],
                ranks[a:b],
                scoring,
            )
            for a, b in parts
        ]
    # in order: the first part's error is the first path's (each part's is its first)
    return [record for part in built for record in part.result()]


#: Columns below which a part of the records is not worth a thread of its own (about 5 ms of work).
PART_COLUMNS = 1 << 20
#: At most this many parts: the passes are bound by memory, which a few cores fill.
MAX_PARTS = 8


def record_parts(bounds: np.ndarray, threads: int) -> list[tuple[int, int]]:
    """Records ``a`` to ``b`` of each part: about equal columns (``bounds``: each record's first
    column, then the end), at least :data:`PART_COLUMNS` each, at most ``threads`` and
    :data:`MAX_PARTS` of them, none empty."""
    n, columns = bounds.size - 1, int(bounds[-1])
    count = max(1, min(threads, MAX_PARTS, columns // PART_COLUMNS, n))
    cuts = np.searchsorted(bounds, np.arange(1, count) * (columns / count)).tolist()
    edges = sorted({0, n, *(min(max(c, 1), n - 1) for c in cuts)})
    return list(zip(edges[:-1], edges[1:]))


def _build(
    given: Sequence[PairTrace] | None,
    paths: TracedPaths,
    queries: Sequence[EncodedSequence],
    subjects: Sequence[EncodedSequence],
    subject_indices: Sequence[int],
    ranks: Sequence[int],
    scoring: Scoring,
) -> list[Alignment]:
    """:func:`build_alignments` of one part, on this thread; ``given``: the paths as the caller
    gave them (their arrays become the records' ``ops``), or None (views of ``paths.ops``)."""
    n = len(paths)
    if not n:
        return []
    # Every path's ends, score and columns, and its sequences' lengths as arrays; the checks on
    # arrays (with those below, 0.194 -> 0.145 s for 14,378 records against a check per record,
    # bench/RESULTS.md, twenty-sixth session).
    qstart, qend, sstart, send, found = paths.qstart, paths.qend, paths.sstart, paths.send, paths.score
    bounds, ops = paths.bounds, paths.ops
    lengths = np.diff(bounds)
    qlen = np.fromiter((q.codes.size for q in queries), np.int64, n)  # the first n, as zip takes them
    slen = np.fromiter((s.codes.size for s in subjects), np.int64, n)
    outside = np.flatnonzero((lengths == 0) | (qstart < 1) | (qend > qlen) | (sstart < 1) | (send > slen))
    if outside.size:
        _refuse_span(int(outside[0]), paths, queries, subjects, subject_indices, ranks, scoring)
    # Per-column flags, summed per record by one reduceat for the span check and one for the rest.
    flags = np.empty((6, ops.size), bool)
    on_q, on_s, gapped, opens, same, positive = flags
    np.not_equal(ops, OP_DEL, out=on_q)
    np.not_equal(ops, OP_INS, out=on_s)
    # residues of the query and of the subject each path must cover (reduceat: every path has columns)
    off = np.flatnonzero((_sums(flags[:2], bounds) != np.stack([qend - qstart + 1, send - sstart + 1])).any(axis=0))
    if off.size:
        _refuse_span(int(off[0]), paths, queries, subjects, subject_indices, ranks, scoring)
    # Each column's residue codes; a gap is code `size`, which scores 0 against anything and is
    # identical to nothing (no column is a gap in both).
    qfirst, qlast, sfirst, slast = qstart.tolist(), qend.tolist(), sstart.tolist(), send.tolist()
    size = scoring.alphabet.size
    qcodes = np.full(ops.size, size, np.uint8)
    qcodes[on_q] = np.concatenate([q.codes[a - 1 : b] for q, a, b in zip(queries, qfirst, qlast)])
    scodes = np.full(ops.size, size, np.uint8)
    scodes[on_s] = np.concatenate([s.codes[a - 1 : b] for s, a, b in zip(subjects, sfirst, slast)])
    sub = _padded(scoring)[_pairs(qcodes, scodes, size)]
    np.equal(qcodes, scodes, out=same)
    np.greater(sub, 0, out=positive)
    np.not_equal(ops, OP_PAIR, out=gapped)
    np.not_equal(ops[1:], ops[:-1], out=opens[1:])
    opens[bounds[:-1]] = True  # each record's first column (column 0 too)
    opens &= gapped
    n_gaps, n_opens, n_same, n_positive = _sums(flags[2:], bounds)
    scores = _sums(sub, bounds, np.int64) - np.int64(scoring.gap_open) * n_opens - np.int64(scoring.gap_extend) * n_gaps
    wrong = np.flatnonzero(scores != found)
    if wrong.size:
        k = int(wrong[0])
        raise TracebackError(f"alignment of {queries[k].id} vs {subjects[k].id} scores {scores[k]}, the search found {found[k]}")
    texts = _Texts(qcodes, scodes, ops, bounds, scoring)
    numbers = (lengths, n_same, n_positive, lengths - n_gaps - n_same, n_opens, n_gaps)  # length, identities ... gaps
    cuts = bounds.tolist()
    # positional, in the fields' order up to ``ops`` (E-values come later), which costs less than 25 keywords per record
    return [
        Alignment(q.id, q.description, s.id, s.description, *row, None, None,
                  ops[cuts[k] : cuts[k + 1]] if given is None else given[k].ops, texts=(texts, k))
        for k, (q, s, row) in enumerate(
            zip(
                queries,
                subjects,
                zip(
                    map(int, subject_indices),
                    map(int, ranks),
                    scores.tolist(),
                    qfirst,
                    qlast,
                    sfirst,
                    slast,
                    qlen.tolist(),
                    slen.tolist(),
                    *(x.tolist() for x in numbers),
                ),
            )
        )
    ]  # fmt: skip


def _refuse_span(
    k: int,
    traces: TracedPaths,
    queries: Sequence[EncodedSequence],
    subjects: Sequence[EncodedSequence],
    subject_indices: Sequence[int],
    ranks: Sequence[int],
    scoring: Scoring,
) -> NoReturn:
    """Path k does not span its end coordinates: the error, or an earlier path's wrong score."""
    _build(None, traces[:k], queries[:k], subjects[:k], subject_indices[:k], ranks[:k], scoring)
    raise TracebackError(f"path of {queries[k].id} vs {subjects[k].id} does not span its end coordinates")


def build_alignment(
    trace: PairTrace,
    query: EncodedSequence,
    subject: EncodedSequence,
    subject_index: int,
    rank: int,
    scoring: Scoring,
) -> Alignment:
    """The record of one traced path (:func:`build_alignments` of one)."""
    return build_alignments([trace], [query], [subject], [subject_index], [rank], scoring)[0]
