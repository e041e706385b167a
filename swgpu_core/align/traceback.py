"""Exact local-alignment traceback on the CPU: forward scan, reverse scan, region traceback.

This is the reference implementation of the traceback that ``docs/traceback.md``
specifies bit for bit for a GPU kernel. For one (query, subject) pair whose Smith-Waterman
score ``S`` the search already found, it runs three passes over the dynamic-programming
table (query residues ``q[1..m]`` down the rows, subject residues ``s[1..n]`` across the
columns, Gotoh's recurrences with BLAST's gap cost ``open + k * extend``):

1. **Forward scan** (linear memory): the local recurrences over the whole table; the *end
   cell* is the first cell in row-major order (smallest query end ``ie``, then smallest
   subject end ``je``) whose ``H`` equals the best score, which must equal ``S``.
2. **Reverse scan** from the end cell (linear memory): the same recurrences on the reversed
   prefixes ``q[ie..1]`` x ``s[je..1]``, anchored at the end cell (only paths through it
   count, no zero floor). The *start cell* is the first cell in reverse row-major order
   (largest query start ``is``, then largest subject start ``js``) whose diagonal term
   equals ``S``: the shortest optimal alignment that ends at the end cell.
3. **Region traceback**: the global recurrences inside the rectangle
   ``[is..ie] x [js..je]`` only (the only cells the alignment can touch), entered through
   its top-left corner, with 4 direction bits per cell, then the usual Gotoh traceback
   from ``(ie, je)`` with the preference *diagonal > gap in the query (D) > gap in the
   subject (I)*, and for a gap *open > extend*. Rectangles whose direction bits exceed
   the memory budget are cut into strips of rows: one forward pass keeps the ``H`` and
   ``F`` rows at each strip's top as checkpoints, then the strips are recomputed and
   traced from the last to the first. The path is exactly the one full storage would
   give, so the answer never depends on the budget.

Why numba and not numpy anti-diagonals: the passes are tight scalar loops over a few
hundred thousand cells per pair; compiled they run at ~1-2 ns a cell, while numpy
anti-diagonals pay tens of microseconds of call overhead per diagonal (about 1,000 of them
for a 500x500 pair), roughly 10-30 times slower for the default 50 hits x 5 queries. The
functions release the GIL, so pairs run on all cores from a thread pool.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from ..cores import cpu_threads
from ..errors import SwgpuError
from ..lazyjit import njit  # numba is imported on the first call, not at start-up
from ..scoring import Scoring

#: "Minus infinity": far below any reachable score, far enough from int32's limit that
#: subtracting gap costs along a whole row or column cannot wrap around.
NEG = -(1 << 28)

#: Operation codes of a traced path (``ops``), in query/subject order.
OP_PAIR, OP_DEL, OP_INS = 0, 1, 2  # aligned pair; subject residue vs gap ('D'); query residue vs gap ('I')

#: Direction bits of one cell (low nibble): H source (bits 0-1), E and F extend flags.
H_DIAG, H_FROM_E, H_FROM_F = 0, 1, 2
E_EXTEND, F_EXTEND = 4, 8

#: Default budget for direction bits of one pair (bytes); larger rectangles use strips.
DEFAULT_BUDGET = 64 << 20


class TracebackError(SwgpuError):
    """The traceback disagrees with the search score: a bug or mismatched inputs."""


@dataclass(frozen=True)
class PairTask:
    """One pair to align: residue codes and the score the search found."""

    query: np.ndarray
    subject: np.ndarray
    score: int


@dataclass(frozen=True, eq=False)
class PairTasks:
    """Many pairs to trace as arrays, a sequence of :class:`PairTask`: pair ``k`` is
    ``residues[qoff[k]:qoff[k] + qlen[k]]`` against ``residues[soff[k]:soff[k] + slen[k]]``,
    with the search's ``score[k]``.

    Why: the GPU takes its pairs this way, a search's hits share their queries and often
    their subjects, and a :class:`PairTask` per hit only to be packed again cost 0.06 s of a
    traced bench200M x 500 search on the CPU machine (bench/RESULTS.md, thirty-first session).
    ``tasks[k]`` is pair k's :class:`PairTask` (views of ``residues``), for the CPU's traceback.
    """

    residues: np.ndarray  # uint8
    qoff: np.ndarray  # int64
    qlen: np.ndarray  # int32
    soff: np.ndarray  # int64
    slen: np.ndarray  # int32
    score: np.ndarray  # int64

    @classmethod
    def of(cls, sequences: Sequence[np.ndarray], queries: np.ndarray, subjects: np.ndarray, scores: np.ndarray) -> PairTasks:
        """Pair k = (``sequences[queries[k]]``, ``sequences[subjects[k]]``) with ``scores[k]``; each
        sequence once in ``residues``."""
        lengths = np.fromiter((s.size for s in sequences), np.int64, len(sequences))
        starts = np.zeros(lengths.size, np.int64)
        np.cumsum(lengths[:-1], out=starts[1:])
        residues = np.concatenate(sequences).astype(np.uint8, copy=False) if sequences else np.zeros(0, np.uint8)
        q, s = np.asarray(queries, np.int64), np.asarray(subjects, np.int64)
        return cls(residues, starts[q], lengths[q].astype(np.int32), starts[s], lengths[s].astype(np.int32), np.asarray(scores, np.int64))

    def __len__(self) -> int:
        return int(self.score.size)

    def __getitem__(self, k: int) -> PairTask:
        k = range(len(self))[k]  # negative indices, and IndexError past the end
        q, s = int(self.qoff[k]), int(self.soff[k])
        return PairTask(self.residues[q : q + int(self.qlen[k])], self.residues[s : s + int(self.slen[k])], int(self.score[k]))

    def __iter__(self) -> Iterator[PairTask]:
        return (self[k] for k in range(len(self)))


@dataclass(frozen=True)
class PairTrace:
    """A traced optimal local alignment: 1-based inclusive ends and the path, start to end."""

    score: int
    qstart: int
    qend: int
    sstart: int
    send: int
    ops: np.ndarray  # uint8 OP_* codes


@dataclass(frozen=True, eq=False)
class TracedPaths:
    """The traced paths of many pairs as arrays, in pair order: what an engine's traceback
    returns (:meth:`swgpu_core.engine.Engine.traceback`).

    Pair ``k``: ``score[k]``, 1-based inclusive ends ``qstart[k]`` to ``qend[k]`` and
    ``sstart[k]`` to ``send[k]``, and its path ``ops[bounds[k]:bounds[k + 1]]`` (OP_* codes,
    start to end; ``bounds[0] == 0``, ``bounds[-1] == ops.size``). ``paths[k]`` is that pair's
    :class:`PairTrace` (its ``ops`` a view), ``paths[a:b]`` the pairs a to b.

    Why arrays: a search traces tens of thousands of hits at once, and the records
    (:func:`~swgpu_core.align.alignment.build_alignments`) take all their columns in a few
    numpy passes. The GPU returns its results as arrays; a Python object per path, made
    from them only to be taken apart again, cost 0.08-0.12 s of a traced bench200M x 500
    search (bench/RESULTS.md, thirty-first session).
    """

    score: np.ndarray  # int64, like the ends
    qstart: np.ndarray
    qend: np.ndarray
    sstart: np.ndarray
    send: np.ndarray
    ops: np.ndarray  # uint8, the paths end to end
    bounds: np.ndarray  # int64, one more than the pairs

    @classmethod
    def of(cls, traces: Sequence[PairTrace]) -> TracedPaths:
        """The paths of ``traces``, joined."""
        n = len(traces)
        ends = np.array([(t.score, t.qstart, t.qend, t.sstart, t.send, t.ops.size) for t in traces], np.int64).reshape(n, 6)
        bounds = np.zeros(n + 1, np.int64)
        np.cumsum(ends[:, 5], out=bounds[1:])
        ops = np.concatenate([t.ops for t in traces]).astype(np.uint8, copy=False) if n else np.zeros(0, np.uint8)
        return cls(*(np.ascontiguousarray(c) for c in ends[:, :5].T), ops, bounds)

    @classmethod
    def gather(cls, ends: Sequence[np.ndarray], ops: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> TracedPaths:
        """The paths that lie in ``ops`` at ``starts`` (``lengths`` long, anywhere and in any
        order), joined in pair order; ``ends``: the five arrays (score, qstart, qend, sstart, send)."""
        starts, lengths = np.asarray(starts, np.int64), np.asarray(lengths, np.int64)
        bounds = np.zeros(lengths.size + 1, np.int64)
        np.cumsum(lengths, out=bounds[1:])
        # one slice per path joined once: 23,683 paths of 461 columns in 6 ms (CPU machine),
        # where an index array of every column would be 8 bytes a column
        joined = np.concatenate([ops[a:b] for a, b in zip(starts.tolist(), (starts + lengths).tolist())]) if lengths.size else ops[:0]
        return cls(*(np.asarray(a, np.int64) for a in ends), joined.astype(np.uint8, copy=False), bounds)

    def __len__(self) -> int:
        return int(self.score.size)

    def __getitem__(self, k: int | slice) -> PairTrace | TracedPaths:
        if isinstance(k, slice):
            a, b, step = k.indices(len(self))
            if step != 1:
                raise ValueError("TracedPaths slices take every pair")
            b = max(a, b)
            ends = (x[a:b] for x in (self.score, self.qstart, self.qend, self.sstart, self.send))
            return TracedPaths(*ends, self.ops[self.bounds[a] : self.bounds[b]], self.bounds[a : b + 1] - self.bounds[a])
        k = range(len(self))[k]  # negative indices, and IndexError past the end
        a, b = int(self.bounds[k]), int(self.bounds[k + 1])
        ends = (int(x[k]) for x in (self.score, self.qstart, self.qend, self.sstart, self.send))
        return PairTrace(*ends, self.ops[a:b])

    def __iter__(self) -> Iterator[PairTrace]:
        return (self[k] for k in range(len(self)))


@dataclass(frozen=True, eq=False)
class AlignedPairs:
    """The best local alignments of ``len(pairs)`` pairs whose scores were not known: what an
    engine's ``align_pairs`` returns (:meth:`swgpu_core.engine.Engine.align_pairs`).

    ``aligned``: the pairs that have a positive-scoring alignment (their numbers, increasing),
    ``paths``: those alignments, in that order. ``pairs[k]`` is pair k's :class:`PairTrace`,
    or None where it has none; iteration gives every pair so.

    Why arrays: ``swgpu pairs`` aligns 10^5 pairs and more at once; a :class:`PairTrace` per
    pair, made from the GPU's arrays only to be joined again for the records, cost about 2 us a
    pair (bench/RESULTS.md, thirty-first session).
    """

    count: int
    aligned: np.ndarray  # int64
    paths: TracedPaths

    @classmethod
    def of(cls, traces: Sequence[PairTrace | None]) -> AlignedPairs:
        """The alignments of ``traces`` (None: a pair without one), joined."""
        aligned = np.fromiter((k for k, t in enumerate(traces) if t is not None), np.int64)
        return cls(len(traces), aligned, TracedPaths.of([traces[k] for k in aligned.tolist()]))

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, k: int) -> PairTrace | None:
        k = range(self.count)[k]  # negative indices, and IndexError past the end
        at = int(np.searchsorted(self.aligned, k))
        return self.paths[at] if at < self.aligned.size and self.aligned[at] == k else None

    @property
    def mask(self) -> np.ndarray:
        """Per pair, whether it has an alignment."""
        have = np.zeros(self.count, bool)
        have[self.aligned] = True
        return have

    def __iter__(self) -> Iterator[PairTrace | None]:
        paths = iter(self.paths)
        return (next(paths) if h else None for h in self.mask.tolist())


@njit(cache=True, nogil=True)
def forward_end(q: np.ndarray, s: np.ndarray, mat: np.ndarray, gap_open: int, gap_extend: int) -> tuple[int, int, int]:
    """Best local score and its end cell (1-based), first in row-major order; (0, 0, 0) if none."""
    n = s.size
    oe = gap_open + gap_extend
    hrow = np.zeros(n + 1, np.int32)
    frow = np.full(n + 1, NEG, np.int32)
    best, bi, bj = 0, 0, 0
    for i in range(1, q.size + 1):
        sub = mat[q[i - 1]]
        diag = 0
        e = NEG
        hleft = 0
        for j in range(1, n + 1):
            up = hrow[j]
            f = max(up - oe, frow[j] - gap_extend)
            frow[j] = f
            e = max(hleft - oe, e - gap_extend)
            h = max(diag + sub[s[j - 1]], e, f, 0)
            diag = up
            hrow[j] = h
            hleft = h
            if h > best:
                best, bi, bj = h, i, j
    return best, bi, bj


@njit(cache=True, nogil=True)
def reverse_start(
    q: np.ndarray, s: np.ndarray, mat: np.ndarray, gap_open: int, gap_extend: int, ie: int, je: int, score: int
) -> tuple[int, int]:
    """Start cell (1-based) of the shortest alignment of ``score`` ending at (ie, je).

    Scans rows ie..1 and, in each, columns je..1; returns the first cell whose diagonal
    term equals ``score``. (-1, -1): none found; (-2, -2): a term exceeds ``score``, so
    ``score`` is not the best local score.
    """
    oe = gap_open + gap_extend
    hrow = np.full(je + 2, NEG, np.int32)  # H of row i+1, indexed by column
    frow = np.full(je + 2, NEG, np.int32)
    hrow[je + 1] = 0  # the anchor: the empty path just past the end cell
    for i in range(ie, 0, -1):
        sub = mat[q[i - 1]]
        diag = hrow[je + 1]
        hrow[je + 1] = NEG
        e = NEG
        hright = NEG
        for j in range(je, 0, -1):
            up = hrow[j]
            f = max(up - oe, frow[j] - gap_extend)
            frow[j] = f
            e = max(hright - oe, e - gap_extend)
            d = diag + sub[s[j - 1]]
            if d >= score:
                if d > score:
                    return -2, -2
                return i, j
            h = max(d, e, f)
            diag = up
            hrow[j] = h
            hright = h
    return -1, -1


@njit(cache=True, nogil=True)
def _strip(q, s, mat, oe, ge, r0, r1, j0, width, hrow, frow, dirs, store):
    """Global recurrences over rows r0..r1, columns j0..j0+width-1 of the region.

    ``hrow``/``frow`` hold H and F of row r0-1 (index 0: column j0-1) and are updated in
    place to row r1. With ``store``, each cell's direction nibble goes to ``dirs``.
    """
    for i in range(r0, r1 + 1):
        sub = mat[q[i - 1]]
        r = i - r0
        diag = hrow[0]
        hrow[0] = NEG
        e = NEG
        hleft = NEG
        for c in range(1, width + 1):
            up = hrow[c]
            fo = up - oe
            fe = frow[c] - ge
            bits = 0
            if fo >= fe:
                f = fo
            else:
                f = fe
                bits |= 8  # F_EXTEND
            eo = hleft - oe
            ee = e - ge
            if eo >= ee:
                e = eo
            else:
                e = ee
                bits |= 4  # E_EXTEND
            d = diag + sub[s[j0 + c - 2]]
            if d >= e and d >= f:
                h = d
            elif e >= f:
                h = e
                bits |= 1  # H_FROM_E
            else:
                h = f
                bits |= 2  # H_FROM_F
            diag = up
            hrow[c] = h
            frow[c] = f
            hleft = h
            if store:
                k = c - 1
                if k & 1 == 0:
                    dirs[r, k >> 1] = bits
                else:
                    dirs[r, k >> 1] |= bits << 4
    return hrow[width]


@njit(cache=True, nogil=True)
def region_ops(q, s, mat, gap_open, gap_extend, i0, i1, j0, j1, strip_rows, ops):
    """Trace the region [i0..i1] x [j0..j1] from (i1, j1) to its corner; ops end to start.

    Returns (number of ops written, region score H(i1, j1)); -1 ops: the path left the
    region, which a correct start cell makes impossible.
    """
    oe = gap_open + gap_extend
    height = i1 - i0 + 1
    width = j1 - j0 + 1
    nstrips = (height + strip_rows - 1) // strip_rows
    cp_h = np.empty((nstrips, width + 1), np.int32)
    cp_f = np.empty((nstrips, width + 1), np.int32)
    hrow = np.full(width + 1, NEG, np.int32)
    frow = np.full(width + 1, NEG, np.int32)
    hrow[0] = 0  # the corner (i0-1, j0-1): the path enters the region here
    dirs = np.empty((min(strip_rows, height), (width + 1) >> 1), np.uint8)
    cp_h[0] = hrow
    cp_f[0] = frow
    for k in range(nstrips - 1):  # checkpoint pass: H and F above each strip
        r0 = i0 + k * strip_rows
        _strip(q, s, mat, oe, gap_extend, r0, r0 + strip_rows - 1, j0, width, hrow, frow, dirs, False)
        cp_h[k + 1] = hrow
        cp_f[k + 1] = frow
    i, j, state, n = i1, j1, 0, 0
    total = NEG
    for k in range(nstrips - 1, -1, -1):
        r0 = i0 + k * strip_rows
        r1 = min(r0 + strip_rows - 1, i1)
        cols = j - j0 + 1  # the path only moves left, so columns past j are not needed
        hrow[: cols + 1] = cp_h[k, : cols + 1]
        frow[: cols + 1] = cp_f[k, : cols + 1]
        last = _strip(q, s, mat, oe, gap_extend, r0, r1, j0, cols, hrow, frow, dirs, True)
        if k == nstrips - 1:
            total = last
        while i >= r0:
            if j < j0:
                return -1, total
            c = j - j0
            bits = (dirs[i - r0, c >> 1] >> ((c & 1) * 4)) & 15
            if state == 0:
                src = bits & 3
                if src == 0:
                    ops[n] = 0
                    n += 1
                    i -= 1
                    j -= 1
                    if i < i0:
                        return (n if j == j0 - 1 else -1), total
                else:
                    state = src
            elif state == 1:
                ops[n] = 1
                n += 1
                j -= 1
                state = 1 if bits & 4 else 0
            else:
                ops[n] = 2
                n += 1
                i -= 1
                state = 2 if bits & 8 else 0
    return -1, total


def strip_rows(height: int, width: int, budget: int = DEFAULT_BUDGET) -> int:
    """Rows per strip: all of them when they fit ``budget`` bytes of direction nibbles.

    Otherwise at least ``4 * sqrt(height)``, which balances the nibbles of one strip
    against the 8-byte-per-column checkpoints of all strips, so memory grows like
    ``width * sqrt(height)`` instead of ``width * height``.
    """
    fit = max(1, budget // ((width + 1) // 2 + 1))
    return height if fit >= height else min(height, max(fit, 4 * math.isqrt(height)))


def _codes(a: np.ndarray) -> np.ndarray:
    # Writable C arrays of fixed dtypes: one compiled signature (memory-mapped database
    # slices are read-only, which numba would compile, and cache, a second time).
    return np.require(a, np.uint8, ["C", "W"])


def trace_pair(task: PairTask, scoring: Scoring, budget: int = DEFAULT_BUDGET) -> PairTrace:
    """The optimal local alignment of one pair under the documented tie rule."""
    q, s = _codes(task.query), _codes(task.subject)
    mat = np.require(scoring.matrix, np.int32, ["C", "W"])
    best, ie, je = forward_end(q, s, mat, scoring.gap_open, scoring.gap_extend)
    if best != task.score:
        raise TracebackError(f"traceback finds best score {best} where the search reported {task.score}")
    if best <= 0:
        raise TracebackError("no positive-scoring local alignment to trace back")
    return _trace_from_end(q, s, scoring, best, ie, je, budget)


def align_pair(query: np.ndarray, subject: np.ndarray, scoring: Scoring, budget: int = DEFAULT_BUDGET) -> PairTrace | None:
    """Like :func:`trace_pair` for a pair whose score is not known yet; None if none is positive."""
    q, s = _codes(query), _codes(subject)
    mat = np.require(scoring.matrix, np.int32, ["C", "W"])
    best, ie, je = forward_end(q, s, mat, scoring.gap_open, scoring.gap_extend)
    return _trace_from_end(q, s, scoring, best, ie, je, budget) if best > 0 else None


def _trace_from_end(q: np.ndarray, s: np.ndarray, scoring: Scoring, best: int, ie: int, je: int, budget: int) -> PairTrace:
    """Passes 2 and 3 from the end cell of pass 1."""
    mat = np.require(scoring.matrix, np.int32, ["C", "W"])
    i0, j0 = reverse_start(q, s, mat, scoring.gap_open, scoring.gap_extend, ie, je, best)
    if i0 < 0:
        raise TracebackError(f"reverse scan found no start for score {best} ending at query {ie}, subject {je}")
    return trace_region(q, s, scoring, best, i0, ie, j0, je, budget)


def trace_region(
    q: np.ndarray, s: np.ndarray, scoring: Scoring, best: int, i0: int, ie: int, j0: int, je: int, budget: int = DEFAULT_BUDGET
) -> PairTrace:
    """Pass 3 alone, for ends found elsewhere (a GPU pass whose region exceeds its budget)."""
    q, s = _codes(q), _codes(s)
    mat = np.require(scoring.matrix, np.int32, ["C", "W"])
    ops = np.empty((ie - i0 + 1) + (je - j0 + 1), np.uint8)
    rows = strip_rows(ie - i0 + 1, je - j0 + 1, budget)
    n, total = region_ops(q, s, mat, scoring.gap_open, scoring.gap_extend, i0, ie, j0, je, rows, ops)
    if n < 0 or total != best:
        raise TracebackError(f"region traceback failed (region score {total}, expected {best})")
    return PairTrace(int(best), int(i0), int(ie), int(j0), int(je), ops[:n][::-1].copy())


def traceback_pairs(tasks: Sequence[PairTask], scoring: Scoring, threads: int = 0) -> list[PairTrace]:
    """Trace many pairs on all cores; the seam a GPU backend replaces with a batched kernel."""
    threads = cpu_threads(threads)
    if threads <= 1 or len(tasks) < 2:
        return [trace_pair(t, scoring) for t in tasks]
    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(lambda t: trace_pair(t, scoring), tasks))


def align_pairs(queries: Sequence[np.ndarray], subjects: Sequence[np.ndarray], scoring: Scoring, threads: int = 0) -> AlignedPairs:
    """:func:`align_pair` over many pairs on all cores (``swgpu pairs`` on the CPU)."""
    threads = cpu_threads(threads)
    if threads <= 1 or len(queries) < 2:
        return AlignedPairs.of([align_pair(q, s, scoring) for q, s in zip(queries, subjects)])
    with ThreadPoolExecutor(threads) as pool:
        return AlignedPairs.of(list(pool.map(lambda qs: align_pair(qs[0], qs[1], scoring), zip(queries, subjects))))
