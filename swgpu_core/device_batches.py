"""Cutting the chunks of a search into device batches that fit a GPU memory budget.

A database is written in chunks (the unit of a workflow job), but the GPU is best fed
with as few, as large, batches as fit: every batch costs one launch per query and a
tail where the GPU empties. So the selected chunks are joined, and cut at sequence
boundaries where they exceed the budget, which keeps ``--gpu-memory`` true whatever
chunk size the database was built with.

A batch is a list of *runs* (consecutive sequences) in database order. The database is
sorted by length, so the subjects of a batch, numbered through its runs, are sorted by
length too, which is all the kernels ask of it; a batch need not be one contiguous run
(chunks selected with gaps between them make one batch).

Streamed batches are cut in database order, so the last ones hold only the longest
subjects. Batches that each took a run of every length stratum (so that each held some of
the longest subjects beside short ones, as the resident scan has them) were measured on
two H200s and were slower, not faster (bench200M x 20, budget 1/32: 4.29 s against 3.30 s
of scan; 1/8: 2.46 against 2.36 s): a query's scan of a batch cannot end before its
longest subject's block does, so spreading the longest subjects over every batch put that
latency into every batch instead of into the last few. Spreading only the longest
subjects (an eighth, a quarter or 0.4 of the residues, a contiguous slice of them in each
batch) was slower too, on one H100 (2026-11-26, two inter streams: 1/32 4.36 / 3.23 /
3.01 s against 2.74 s; 1/8 2.35 / 2.40 / 2.34 against 2.16 s); the planner put more of
each batch on the intra-task kernel, whose blocks are latency-bound. Cutting the batches
to equal residues (as few as the budget allows), so that the last one keeps a share of
shorter subjects instead of the longest alone, made no difference beyond noise (H100, one
call, b86d8db: 1/8 2.226 against 2.198 s, 1/32 2.564 against 2.596 s): at 1/8 the last batch
of 33 M residues took 0.57 s where the last two had taken 0.75 s, but the others slowed.
Scanning the last batch beside the first (both resident, as two streamed batches fit; their
queries' scans interleaved, so that the long subjects' intra-task blocks run beside an
inter-task bulk, as in a resident scan) was slower too (H100, one call, 01f486b: 1/8 2.298
against 2.193 s, 1/32 2.597 against 2.510 s): the two batches' scans share the boundary
buffer's rows, so their multi-pass scans wait for each other, and the batch after the pair
is copied only once both are done. With the last batch's scans all one-pass intra-task ones
(no boundary rows written, so no waiting), the pair was still slower (H100, one call,
d5d165b: 1/8 2.245 against 2.195 s, 1/32 2.639 against 2.584 s): the long subjects' blocks
do not run for free beside another batch's bulk as they do beside their own. Pure Python,
so it is tested without a GPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .database import Chunk, Database


def merge(chunks: list[Chunk]) -> Chunk:
    """Consecutive chunks (or pieces) as one; it keeps the first one's index."""
    first, last = chunks[0], chunks[-1]
    return Chunk(first.index, first.first, last.stop, first.residue_start, last.residue_stop)


def device_parts(db: Database, chunks: list[Chunk], n_devices: int) -> list[list[tuple[int, Chunk]]]:
    """How the fast mode shares chunks between devices: each chunk cut at the first sequence
    boundary at or after each of ``n_devices`` equal shares of its residues (the whole chunk on
    one device), run ``k`` to device ``k``. Per device, its (index into ``chunks``, run) pairs in order. The seeder
    and the scoring of the candidates take the same cut, so each device scores the runs it
    seeded. Exactly one run per device: runs of at most a share (as this cut was before c357be0)
    leave a third, small run where the sequences do not fall on the share's edge, and every run
    costs a seed launch, task lists and profiles on the one host thread that drives the devices."""
    out: list[list[tuple[int, Chunk]]] = [[] for _ in range(n_devices)]
    for c, chunk in enumerate(chunks):
        shares = [chunk.residue_start + chunk.n_residues * k // n_devices for k in range(1, n_devices)]
        cuts = [chunk.first, *(int(np.searchsorted(db.offsets, x)) for x in shares), chunk.stop]
        cuts = [min(max(x, chunk.first), chunk.stop) for x in cuts]
        for k, (start, stop) in enumerate(zip(cuts, cuts[1:])):
            if stop > start:
                out[k].append((c, Chunk(chunk.index, start, stop, int(db.offsets[start]), int(db.offsets[stop]))))
    return out


#: the share of its residues to which the fast mode's pipeline (CudaBackend.scan_seeded) cuts
#: its first and its last run (:func:`pipeline_runs`). Measured on H100s (bench200M x 500, the
#: warm search through the API, rounds of three, trees interleaved; bench/RESULTS.md, thirteenth
#: session): against no cut, a quarter gave 0.505 / 0.529 s against 0.555 / 0.581 s (the last run
#: alone cut: 0.524 / 0.586 s); on other machines, halves 0.473 / 0.478 / 0.504 / 0.490 s against
#: a quarter's 0.546 / 0.529 / 0.497 / 0.494 s, an eighth 0.509 / 0.508 s, every run halved
#: 0.521 / 0.519 s. (Tried at 313537e, when each run's host work looped over the queries, a
#: quarter gave nothing.)
EDGE_SHARE = 2


def _split(db: Database, run: Chunk, at_residue: int) -> tuple[Chunk, Chunk] | None:
    """``run`` cut at the first sequence boundary at or after ``at_residue``: (shorter subjects,
    longer ones), or None where that leaves one side empty."""
    cut = int(np.searchsorted(db.offsets, at_residue))
    if not run.first < cut < run.stop:
        return None
    return (
        Chunk(run.index, run.first, cut, run.residue_start, int(db.offsets[cut])),
        Chunk(run.index, cut, run.stop, int(db.offsets[cut]), run.residue_stop),
    )


def seeded_order(chunks: Sequence[int]) -> list[int]:
    """The order in which the fast mode's pipeline on GPUs takes ``chunks`` (indices in database
    order; :func:`pipeline_runs`): the longest subjects first, so the last chunk first, and what
    runs alone at the end is the scoring of the shortest subjects, many short warps, not that of
    the longest. A search checks the database's chunks ahead in this order
    (:meth:`swgpu_core.database.Database.verify_ahead`), so that the pipeline's first uploads
    find theirs checked."""
    return list(reversed(chunks))


def pipeline_runs(db: Database, runs: list[tuple[int, Chunk]], share: int = EDGE_SHARE) -> list[tuple[int, Chunk]]:
    """One device's ``runs`` ((chunk index, run) in database order, :func:`device_parts`) in the
    order the pipeline takes them (:func:`seeded_order`), with the first and the last cut: the
    pipeline seeds its first run with nothing beside it on the GPU and scores its last alone, so
    those two are made short. The first run's last ``1/share`` of residues (its longest subjects,
    whose scoring is the critical path) becomes a run of its own, taken first; the last run's
    first ``1/share`` (its shortest subjects) is taken last."""
    out = [runs[k] for k in seeded_order(range(len(runs)))]
    if out:
        c, run = out[0]
        pieces = _split(db, run, run.residue_stop - run.n_residues // share)
        if pieces is not None:
            out[0:1] = [(c, pieces[1]), (c, pieces[0])]
        c, run = out[-1]
        pieces = _split(db, run, run.residue_start + run.n_residues // share)
        if pieces is not None:
            out[-1:] = [(c, pieces[1]), (c, pieces[0])]
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

    def longest(self, db: Database) -> int:
        """The length of its longest subject (the last: runs in database order)."""
        return int(db.lengths[self.runs[-1].stop - 1])

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
    most ``limit`` residues each, each filled as far as it goes (a single longer sequence
    forms a part of its own)."""
    parts: list[list[Chunk]] = []
    part: list[Chunk] = []
    room = limit
    for run in runs:
        start = run.first
        while start < run.stop:
            base = int(db.offsets[start])
            stop = min(int(np.searchsorted(db.offsets, base + max(room, 0), side="right")) - 1, run.stop)
            if stop == start and part:  # the next sequence does not fit what is left of this part
                parts.append(part)
                part, room = [], limit
                continue
            stop = max(stop, start + 1)
            part.append(Chunk(run.index, start, stop, base, int(db.offsets[stop])))
            room -= int(db.offsets[stop]) - base
            start = stop
    if part:
        parts.append(part)
    return parts


def device_batches(
    db: Database, chunks: list[Chunk], budget_residues: int, n_devices: int = 1, streamed_residues: int | None = None
) -> list[Batch]:
    """The batches that cover ``chunks`` (in database order), each subject once.

    All of it fits the budget: consecutive batches of at most an even share per device
    (one batch on one GPU). Otherwise batches of at most ``streamed_residues`` (by default
    half the budget: the next batch is uploaded while one is scanned)."""
    runs = list(_join(list(chunks)))
    if not runs:
        return []
    total = sum(r.n_residues for r in runs)
    share = -(-total // max(n_devices, 1))
    limit = budget_residues if total <= budget_residues else budget_residues // 2 if streamed_residues is None else streamed_residues
    return [Batch(_join(p)) for p in _cut(db, runs, max(1, min(limit, share)))]


def streamed_query_order(lengths: list[int]) -> list[int]:
    """The order in which a worker scans the queries over each of several streamed batches:
    the longest, the shortest, the second longest, the second shortest, and so on.

    Why not the queries' own order: the host's work per query and batch (queueing the scans,
    the planner, the selection; about 1.2 ms on the H100's host) is fixed, while a streamed
    batch is small (9.3 M residues at a budget of 1/32 of bench200M), so a short query's scans
    of it take less GPU time than that (0.5 ms for 144 residues). A run of short queries then
    drains the pipeline faster than the host refills it, and the GPU waits. Alternated, each
    short query's host work is done while a long query's scans run (H100, bench200M x 20 at
    1/32, one run each: 2.435 against 2.542 s; commit a40ee97). The candidates are returned
    per query index, so the order changes nothing else."""
    by_length = sorted(range(len(lengths)), key=lambda q: (lengths[q], q))
    return [by_length[-1 - k // 2] if k % 2 == 0 else by_length[k // 2] for k in range(len(by_length))]
