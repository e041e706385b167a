"""Cutting the chunks of a search into device batches that fit a GPU memory budget.

A database is written in chunks (the unit of a workflow job), but the GPU is best fed
with as few, as large, batches as fit: every batch costs one launch per query and a
tail where the GPU empties. So consecutive chunks are merged, and a chunk larger than
the budget is cut at sequence boundaries, which keeps ``--gpu-memory`` true whatever
chunk size the database was built with. Pure Python, so it is tested without a GPU.
"""

from __future__ import annotations

import numpy as np

from .database import Chunk, Database


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


def device_batches(
    db: Database, chunks: list[Chunk], budget_residues: int, n_devices: int = 1, streamed_residues: int | None = None
) -> list[tuple[list[Chunk], Chunk]]:
    """(the chunks complete once this batch is scanned, the batch), in database order.

    The batch limit is the budget, or ``streamed_residues`` when the selection does not fit
    (by default half the budget: the next batch is uploaded while one is scanned), and at
    most an even share per device so that every GPU gets work."""
    total = sum(c.n_residues for c in chunks)
    share = -(-total // max(n_devices, 1))
    streamed = budget_residues // 2 if streamed_residues is None else streamed_residues
    limit = max(1, min(budget_residues if total <= budget_residues else streamed, share))
    out: list[tuple[list[Chunk], Chunk]] = []
    for c in chunks:
        for piece in pieces(db, c, limit):
            last = piece.stop == c.stop
            if out and out[-1][1].stop == piece.first and out[-1][1].n_residues + piece.n_residues <= limit:
                done, batch = out[-1]
                out[-1] = (done + [c] * last, merge([batch, piece]))
            else:
                out.append(([c] * last, piece))
    return out
