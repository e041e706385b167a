"""Cutting the chunks of a search into device batches that fit a GPU memory budget.

A database is written in chunks (the unit of a workflow job), but the GPU is best fed
with as few, as large, batches as fit: every batch costs one launch per query and a
tail where the GPU empties. So the selected chunks are joined, and cut at sequence
boundaries where they exceed the budget, which keeps ``--gpu-memory`` true whatever
chunk size the database was built with.

A batch is a list of *runs* (consecutive sequences) in database order. The database is
sorted by length, so the subjects of a batch, numbered through its runs, are sorted by
length too, which is all the kernels ask of it; a batch need not be one contiguous run.

When the selection must be streamed, each batch is a sample of the whole length
distribution: the selection is cut into a few strata of equal residues and every batch
takes its share of each. Cut in database order instead, the last batches would hold
only the longest subjects, which few GPU blocks scan at a time (one per pair of them):
on the H100 the two last of ten batches of bench200M took 0.58 s for 14% of its
residues, where the resident scan runs those subjects beside the bulk. Pure Python, so
it is tested without a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .database import Chunk, Database

#: strata of a streamed selection (each batch takes a run of each): enough that every batch
#: holds short and long subjects in about the proportions of the whole selection
STREAM_STRATA = 4


def merge(chunks: list[Chunk]) -> Chunk:
    """Consecutive chunks (or pieces) as one; it keeps the first one's index."""
    first, last = chunks[0], chunks[-1]
    return Chunk(first.index, first.first, last.stop, first.residue_start, last.residue_stop)


def pieces(db: Database, chunk: Chunk, limit: int) -> list[Chunk]:
    """``chunk`` cut at sequence boundaries into runs of at most ``limit`` residues (a
    single longer sequence forms a run of its own)."""
    if chunk.n_residues <= limit:
        return [chunk]
    out, start = [], chunk.first
    while start < chunk.stop:
        base = int(db.offsets[start])
        stop = int(np.searchsorted(db.offsets, base + limit, side="right")) - 1
        stop = min(max(stop, start + 1), chunk.stop)
        out.append(Chunk(chunk.index, start, stop, base, int(db.offsets[stop])))
        start = stop
    return out


@dataclass(frozen=True)
class Batch:
    """What one device scan covers: runs of consecutive sequences in database order (so
    sorted by length), numbered 0..n-1 through the runs."""

    runs: tuple[Chunk, ...]

    @classmethod
    def of(cls, chunk: Chunk) -> Batch:
        return cls((chunk,))

    @property
    def n_sequences(self) -> int:
        return sum(r.n_sequences for r in self.runs)

    @property
    def n_residues(self) -> int:
        return sum(r.n_residues for r in self.runs)

    @property
    def key(self) -> tuple[tuple[int, int], ...]:
        return tuple((r.first, r.stop) for r in self.runs)

    def sequences(self) -> np.ndarray:
        """The database (sorted) numbers of the batch's subjects, in batch order."""
        return np.concatenate([np.arange(r.first, r.stop, dtype=np.int64) for r in self.runs])

    def to_database(self, local: np.ndarray) -> np.ndarray:
        """Database numbers of batch subjects ``local``."""
        starts = np.cumsum([0] + [r.n_sequences for r in self.runs])
        shift = np.array([r.first for r in self.runs], np.int64) - starts[:-1]
        return np.asarray(local, np.int64) + shift[np.searchsorted(starts, local, side="right") - 1]

    def offsets(self, db: Database) -> np.ndarray:
        """The subjects' residue offsets in the batch's residues (the runs back to back), n + 1 of them."""
        parts, base = [np.zeros(1, np.int64)], 0
        for r in self.runs:
            parts.append(np.asarray(db.offsets[r.first + 1 : r.stop + 1], np.int64) - r.residue_start + base)
            base += r.n_residues
        return np.concatenate(parts)

    def lengths(self, db: Database) -> np.ndarray:
        return np.concatenate([np.asarray(db.lengths[r.first : r.stop]) for r in self.runs])


def _join(runs: list[Chunk]) -> tuple[Chunk, ...]:
    """Runs in database order, adjacent ones merged."""
    out: list[Chunk] = []
    for r in runs:
        if out and out[-1].stop == r.first:
            out[-1] = merge([out[-1], r])
        else:
            out.append(r)
    return tuple(out)


def _cut(db: Database, runs: list[Chunk], limit: int) -> list[list[Chunk]]:
    """``runs`` (in database order) cut at sequence boundaries into consecutive parts of at
    most ``limit`` residues each (a single longer sequence forms a part of its own)."""
    parts: list[list[Chunk]] = []
    part: list[Chunk] = []
    room = limit
    for run in runs:
        for piece in pieces(db, run, limit):
            if piece.n_residues > room and part:  # cut the piece where the part is full
                base = int(db.offsets[piece.first])
                stop = int(np.searchsorted(db.offsets, base + room, side="right")) - 1
                if stop > piece.first:
                    part.append(Chunk(piece.index, piece.first, stop, base, int(db.offsets[stop])))
                    piece = Chunk(piece.index, stop, piece.stop, int(db.offsets[stop]), piece.residue_stop)
                parts.append(part)
                part, room = [], limit
            part.append(piece)
            room -= piece.n_residues
    if part:
        parts.append(part)
    return parts


def _split(db: Database, runs: list[Chunk], n: int) -> list[list[Chunk]]:
    """``runs`` (in database order) cut into ``n`` consecutive parts of about equal residues: at
    the sequence boundaries nearest to the equal shares, so a part is within one sequence
    length of its share (parts left empty by long sequences are dropped)."""
    cum = np.cumsum([0] + [r.n_residues for r in runs])
    cuts = [(0, runs[0].first)]
    for k in range(1, n):
        target = int(cum[-1]) * k // n
        j = min(int(np.searchsorted(cum, target, side="right")) - 1, len(runs) - 1)
        r = runs[j]
        at = target - int(cum[j]) + r.residue_start
        s = r.first + int(np.searchsorted(db.offsets[r.first : r.stop + 1], at))  # the first boundary at or after it
        if s > r.first and at - int(db.offsets[s - 1]) < int(db.offsets[s]) - at:
            s -= 1
        cuts.append((j, s))
    cuts.append((len(runs) - 1, runs[-1].stop))
    parts = []
    for (j0, s0), (j1, s1) in zip(cuts, cuts[1:]):
        part = []
        for j in range(j0, j1 + 1):
            r = runs[j]
            a, b = (s0 if j == j0 else r.first), (s1 if j == j1 else r.stop)
            if b > a:
                part.append(Chunk(r.index, a, b, int(db.offsets[a]), int(db.offsets[b])))
        if part:
            parts.append(part)
    return parts


def device_batches(
    db: Database,
    chunks: list[Chunk],
    budget_residues: int,
    n_devices: int = 1,
    streamed_residues: int | None = None,
    strata: int = STREAM_STRATA,
) -> list[Batch]:
    """The batches that cover ``chunks`` (in database order), each subject once.

    All of it fits the budget: consecutive batches of at most an even share per device
    (one batch on one GPU). Otherwise batches of at most ``streamed_residues`` (by default
    half the budget: the next batch is uploaded while one is scanned), each a sample of the
    length distribution (module doc) when ``strata`` > 1 and the longest subject leaves
    room for it: each batch takes one of ``n`` equal parts of each of the equal strata, so
    it is within the sum of the strata's longest sequence lengths of 1/n of the selection."""
    runs = list(_join(list(chunks)))
    if not runs:
        return []
    total = sum(r.n_residues for r in runs)
    share = -(-total // max(n_devices, 1))
    if total <= budget_residues:
        return [Batch(_join(p)) for p in _cut(db, runs, max(1, min(budget_residues, share)))]
    limit = max(1, min(budget_residues // 2 if streamed_residues is None else streamed_residues, share))
    layers = _split(db, runs, max(1, min(strata, -(-total // limit))))
    slack = sum(int(db.lengths[layer[-1].stop - 1]) for layer in layers)  # the parts' rounding, at most
    if len(layers) == 1 or 2 * slack > limit:
        return [Batch(_join(p)) for p in _cut(db, runs, limit)]
    n = -(-total // (limit - slack))
    parts = [_split(db, layer, n) for layer in layers]
    return [Batch(_join([r for p in parts if k < len(p) for r in p[k]])) for k in range(max(len(p) for p in parts))]
