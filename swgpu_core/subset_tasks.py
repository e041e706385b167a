"""Task lists of the task-list scan kernels (``sw_inter_tasks`` and ``sw_intra_tasks`` in
``kernels/sw_scan.cu``): each query scored against its own few subjects, many queries in one
launch. Pure numpy.

``--mode fast`` scores only each query's candidates, often a few dozen: a launch per query
would leave the GPU nearly idle and pay a launch and a selection per query. Instead the
queries of one kernel shape share a launch: every group of lanes scans its own query (its
profile and padded length are per group), each query's candidates padded to whole groups
(``-1`` entries, which the kernel skips), the groups of all queries ordered by their work,
the most first, so the long ones start early and a warp's groups are of about one length
(:func:`task_list`). A query wider than one pass keeps, per group of subjects, boundary rows
of its own (``bnd_rows``); one-pass queries read none.

A pair of a query of several passes and a long subject is one group's passes one after the
other, the launch's critical path: on bench200M's longest subjects (24,740-36,000 residues),
208 pairs of queries longer than 2,048 residues took 0.106 s of a chunk's 0.192 s
(bench/RESULTS.md, tenth session). :func:`pair_kernels` sends those to the intra-task kernel's
task lists instead (``sw_intra_tasks``: a block per group, the query across its warps, so a
pass covers up to 2,048 columns, not 128).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from .plan import INTRA_COLS_PER_WARP, inter_cols_per_lane, intra_cols

#: lanes per group of the inter-task lists, for every query: the exact scan's choice for a
#: chunk's bulk of pairs (plan.inter_lanes, where the pairs fill the GPU). Queries wider than one
#: pass of 8 x 16 columns take several (their groups share warps only with groups of as many
#: passes, :func:`task_list`). Before, each query took the narrowest of 8 x 8, 8 x 16, 16 x 16
#: and 32 x 16 that held it in one pass, else 32 x 16 in several: the 500 queries padded to 75%
#: useful columns, against 85% here, and a 32-lane pass fills and drains its wavefront for 31
#: steps, not 7. The fast search of bench200M x 500 (H100, bench/task_policy.py of 7f12580, one process,
#: 3 rounds each, the same hits): 0.693 s against 0.733 s.
TASK_LANES = 8


def task_shape(query_length: int) -> tuple[int, int]:
    """(lanes, columns per lane) for a query: TASK_LANES lanes, with the columns the exact scan
    gives a query on that many (:func:`swgpu_core.plan.inter_cols_per_lane`: 8 for 1-64 and
    129-192 residues, else 16)."""
    return TASK_LANES, inter_cols_per_lane(query_length, TASK_LANES)


#: a pair whose inter-task scan takes at least this many serial steps (its passes times the
#: subject's rows) goes to the intra-task kernel, where it takes fewer passes (see the module's
#: docstring). Scoring the candidates of bench200M x 500 (H100, bench/subset_split.py --steps,
#: the four chunks, best of 3): wall 0.614 s with none, 0.589 s at 131,072 steps, 0.599 s at
#: 65,536, 0.528 s at 32,768; GPU seconds (a second call) 0.532 s with none, 0.437 s at 32,768,
#: 0.448 s at 16,384, 0.450 s at 8,192, 0.454 s at 4,096 (bench/RESULTS.md)
LONG_PAIR_STEPS = 1 << 15
#: the intra-task task kernel's widths (warps of INTRA_COLS_PER_WARP columns) that long pairs
#: use: intra_cols of the queries wider than the widest inter-task pass
INTRA_TASK_WARPS = (1, 2, 4, 8)


def intra_task_warps(query_length: int) -> int:
    """The intra-task block's warps for a query's long pairs: the default intra pass (one of INTRA_TASK_WARPS)."""
    return intra_cols(query_length) // INTRA_COLS_PER_WARP


@functools.cache
def _query_rule(query_length: int) -> tuple[int, int, int]:
    """(inter-task columns per lane, inter-task passes where a long pair would take fewer passes
    in the intra-task kernel else 0, the intra-task block's warps) of a query length."""
    lanes, cols = task_shape(query_length)
    passes = -(-query_length // (lanes * cols))
    fewer = -(-query_length // intra_cols(query_length)) < passes
    return cols, passes if fewer else 0, intra_task_warps(query_length)


def pair_kernels(query_lengths: np.ndarray, owner: np.ndarray, subject_lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per pair (query ``owner[k]`` of ``query_lengths``, a subject of ``subject_lengths[k]``):
    whether it is long, and its kernel's width: the intra-task block's warps
    (:func:`intra_task_warps`) for a long pair, else the inter-task lane's columns
    (:func:`task_shape`). A pair is long, and scored by the intra-task kernel, when its
    inter-task scan would take LONG_PAIR_STEPS serial steps or more (the query's inter-task
    passes times the subject's rows) and the intra-task block takes the query in fewer passes.
    Every pair of a run at once: a loop over 500 queries cost the host milliseconds at each
    run, where the last run's scoring waits for it."""
    rules = np.array([_query_rule(int(n)) for n in query_lengths], np.int64).reshape(-1, 3)
    cols, passes, warps = rules[owner, 0], rules[owner, 1], rules[owner, 2]
    long = (passes > 0) & (passes * np.asarray(subject_lengths, np.int64) >= LONG_PAIR_STEPS)
    return long, np.where(long, warps, cols)


@dataclass(frozen=True)
class TaskList:
    """One launch's list: ``subjects[k]`` (chunk-relative, -1 padding) scanned against query
    ``slot_query[k]`` (an index into the launch's queries); group ``g`` (its subjects
    ``subjects[g * per_group : (g + 1) * per_group]``) scans ``group_query[g]``."""

    subjects: np.ndarray  # int32 [n_slots]
    slot_query: np.ndarray  # int32 [n_slots] (-1 on padding)
    group_query: np.ndarray  # int32 [n_groups], padded to whole warps (blocks)
    bnd_rows: np.ndarray  # int64 [n_groups]: first boundary row of each group
    boundary_rows: int  # rows the boundary buffer needs
    source: np.ndarray  # int64 [n_slots]: each entry's index into the given subjects end to end (-1 on padding)

    @property
    def n_slots(self) -> int:
        return int(self.subjects.size)


def task_list(subjects: list[np.ndarray], lengths: np.ndarray, lanes: int, per_group: int, passes: list[int]) -> TaskList:
    """The list for queries ``0..len(subjects)-1`` (``subjects[q]``: chunk-relative indices,
    ``lengths``: the chunk's subject lengths), ``lanes`` threads per group of ``per_group``
    subjects (2 in the packed 16-bit kernels, 1 in the 32-bit one), ``passes[q]`` passes.
    The intra-task kernel's lists take ``lanes`` 32: a group per block.

    A group holds one query's subjects. The groups that share a warp (32 / ``lanes`` of them, of
    any queries) make the same number of passes, since the warp's shuffles take all its lanes
    through every step of every pass: the groups are sorted by passes, then by their longest
    subject, each count of passes padded to whole warps, and the warps then ordered by their
    work (passes x the rows of their longest group), the most first, so the long ones start
    early and a warp's groups run about the same number of rows (a warp runs as many as its
    longest). Per query, its candidates are spread over the chunk's lengths, and warps of one
    query's subjects ran each to the longest of theirs."""
    per_warp = 32 // lanes  # groups
    arrays = [np.asarray(subj, np.int64) for subj in subjects]
    sizes = np.array([a.size for a in arrays], np.int64)
    if not sizes.sum():
        empty = np.zeros(0, np.int32)
        return TaskList(empty, empty, empty, np.zeros(0, np.int64), 0, np.zeros(0, np.int64))
    # each query's subjects longest first (the chunk is sorted by length: the highest index
    # first), padded to whole groups; source: each entry's index into the subjects end to end
    given = np.concatenate(arrays)
    owner = np.repeat(np.arange(sizes.size), sizes)
    first = np.cumsum(sizes) - sizes
    rank = np.arange(given.size) - first[owner]  # the entry's place among its query's, as given
    if np.any((np.diff(given) < 0) & (np.diff(owner) == 0)):
        by = np.lexsort((given, owner))  # sorted within each query
        rank[by] = np.arange(given.size) - first[owner[by]]
    padded = -(-sizes // per_group) * per_group
    place = (np.cumsum(padded) - padded)[owner] + sizes[owner] - 1 - rank
    source = np.full(int(padded.sum()), -1, np.int64)
    source[place] = np.arange(given.size)
    source = source.reshape(-1, per_group)
    group_query = np.repeat(np.arange(sizes.size, dtype=np.int32), padded // per_group)
    group_passes = np.asarray(passes, np.int64)[group_query]
    longest = lengths[given[source[:, 0]]]  # a group's first subject is its longest (and never padding)
    # the groups' order, composed as indices and applied once (the gathers are the cost): by
    # passes, then longest subject, the most first (a stable sort: ties in the query's order)
    order = np.argsort(-((group_passes << 32) | longest), kind="stable")
    # each count of passes padded to whole warps (the kernel reads every group's query: a padding
    # group carries the last real one's, of the same passes)
    ends = np.flatnonzero(np.diff(group_passes[order], append=-1)) + 1
    starts = np.concatenate(([0], ends[:-1]))
    take = np.concatenate([np.concatenate((np.arange(a, b), np.full(-(b - a) % per_warp, -1))) for a, b in zip(starts, ends)])
    pad = take < 0
    pick = order[take[np.maximum.accumulate(np.where(pad, 0, np.arange(take.size)))]]  # a padding group: the real one before it
    # whole warps, the most work first (stable: within a count of passes, the order above; a
    # warp's first group is a real one)
    warps = np.argsort(-(group_passes[pick] * longest[pick])[::per_warp], kind="stable")
    at = (warps[:, None] * per_warp + np.arange(per_warp)).ravel()
    pick, pad = pick[at], pad[at]
    source = source[pick]
    source[pad] = -1
    source = source.ravel()
    group_query = group_query[pick]
    flat = np.where(source >= 0, given[np.maximum(source, 0)], -1)
    slot_query = np.where(flat >= 0, np.repeat(group_query, per_group), -1).astype(np.int32)
    # each group's rows, its longest subject's: a maximum over the group's columns (numpy's
    # reduction along a short last axis took five times as long)
    entry_rows = np.where(flat >= 0, lengths[np.maximum(flat, 0)], 0).reshape(-1, per_group)
    rows = entry_rows[:, 0].copy()
    for column in range(1, per_group):
        np.maximum(rows, entry_rows[:, column], out=rows)
    rows = np.where(np.asarray(passes, np.int64)[group_query] > 1, rows, 0)
    bnd_rows = np.concatenate(([0], np.cumsum(rows)[:-1])).astype(np.int64)
    return TaskList(flat.astype(np.int32), slot_query, group_query.astype(np.int32), bnd_rows, int(rows.sum()), source)


def scores_by_query(tasks: TaskList, scores: np.ndarray, subjects: list[np.ndarray]) -> list[np.ndarray]:
    """Each query's scores in the order of its ``subjects`` (as given to :func:`task_list`), from
    the launch's per-entry ``scores``."""
    sizes = [np.asarray(subj).size for subj in subjects]
    real = tasks.source >= 0
    given = np.zeros(sum(sizes), np.int32)
    given[tasks.source[real]] = scores[real]
    return np.split(given, np.cumsum(sizes)[:-1])
