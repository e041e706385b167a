"""The task lists of the fast mode's exact scoring (:mod:`swgpu_core.subset_tasks`): which pairs
go to the intra-task kernel, with which block, and the lists of that kernel (a unit per group)."""

from __future__ import annotations

import numpy as np
import pytest

from swgpu_core.plan import intra_cols
from swgpu_core.subset_tasks import (
    INTRA_TASK_WARPS,
    LONG_PAIR_STEPS,
    intra_task_warps,
    pair_kernels,
    scores_by_query,
    task_list,
    task_shape,
)


@pytest.mark.parametrize(
    "query, subject, long",
    [
        (128, 1_000_000, False),  # one inter-task pass of 8 x 16 columns: an intra block would take one too
        (200, LONG_PAIR_STEPS // 2 - 1, False),  # two passes, one step short
        (200, LONG_PAIR_STEPS // 2, True),
        (129, -(-LONG_PAIR_STEPS // 3), True),  # three narrow passes of 8 x 8 columns (plan.inter_cols_per_lane)
        (1024, LONG_PAIR_STEPS // 8, True),  # eight inter passes, one of 4 warps
        (4291, -(-LONG_PAIR_STEPS // 34), True),  # 34 passes (bench200M's longest query)
        (4291, LONG_PAIR_STEPS // 34 - 1, False),
        (100, 36_000, False),
    ],
)
def test_a_pair_is_long_when_its_inter_task_passes_take_the_steps(query, subject, long):
    got, _width = pair_kernels(np.array([query]), np.zeros(2, np.int64), np.array([subject, 10]))
    assert got[0] == long and not got[1]


def _long_pairs(query_length: int, subject_lengths: np.ndarray) -> np.ndarray:
    """The rule for one query, as written before pair_kernels: the inter-task passes of 8 lanes,
    long where they take LONG_PAIR_STEPS steps and the intra-task block takes fewer passes."""
    lanes, r = task_shape(query_length)
    inter_passes = -(-query_length // (lanes * r))
    if -(-query_length // intra_cols(query_length)) >= inter_passes:
        return np.zeros(np.shape(subject_lengths), bool)
    return inter_passes * np.asarray(subject_lengths, np.int64) >= LONG_PAIR_STEPS


def test_the_pairs_kernels_at_once_follow_the_rule_per_query():
    """pair_kernels, the rule for a run's pairs at once, equals the rule per query (_long_pairs,
    intra_task_warps and task_shape), for queries of 1 to 9,000 residues and subjects around the threshold."""
    rng = np.random.default_rng(5)
    queries = np.concatenate((rng.integers(1, 9000, 300), [1, 64, 65, 128, 129, 2048, 2049]))
    owner = np.repeat(np.arange(queries.size), 40)
    subjects = rng.integers(1, 4 * LONG_PAIR_STEPS // 8, owner.size)
    long, width = pair_kernels(queries, owner, subjects)
    assert 0 < long.sum() < long.size
    for q, n in enumerate(queries):
        mine = owner == q
        want = _long_pairs(int(n), subjects[mine])
        assert np.array_equal(long[mine], want)
        assert np.array_equal(width[mine], np.where(want, intra_task_warps(int(n)), task_shape(int(n))[1]))


def test_every_long_query_has_an_intra_task_kernel():
    """Every query that can have long pairs gets a block width whose task kernel is compiled
    (``swgpu_core.gpu.kernels.INTRA_TASK_SHAPES``, those of INTRA_TASK_WARPS)."""
    lengths = np.arange(1, 40_000)
    long, width = pair_kernels(lengths, np.arange(lengths.size), np.full(lengths.size, 1 << 30))
    widths = set(width[long].tolist())
    assert widths == set(INTRA_TASK_WARPS)


def test_an_intra_list_unit_is_one_group():
    """lanes 32: a unit ("warp") per group of two subjects, each unit its query's, longest first,
    multi-pass groups with boundary rows of their own (their longest subject's length)."""
    lengths = np.array([10, 20, 30, 40, 50, 60], np.int64)
    tasks = task_list([np.array([0, 3, 5]), np.array([1, 2])], lengths, 32, 2, [3, 1])
    assert tasks.subjects.tolist() == [5, 3, 0, -1, 2, 1]  # work 3 x 60, 3 x 10, 1 x 30
    assert tasks.group_query.tolist() == [0, 0, 1]
    assert tasks.slot_query.tolist() == [0, 0, 0, -1, 1, 1]
    assert tasks.bnd_rows.tolist() == [0, 60, 70] and tasks.boundary_rows == 60 + 10
    got = scores_by_query(tasks, np.array([7, 6, 3, -1, 5, 4]), [np.array([0, 3, 5]), np.array([1, 2])])
    assert [g.tolist() for g in got] == [[3, 6, 7], [4, 5]]


def test_groups_of_one_pass_queries_share_warps_sorted_by_length():
    """lanes 8: four groups of two subjects per warp, of any queries, longest group first, the
    list padded to whole warps (padding groups carry a query, which the kernel reads)."""
    lengths = np.arange(10, 110, 10, dtype=np.int64)  # subject k is 10 (k + 1) long
    subjects = [np.array([0, 8, 9]), np.array([1, 7]), np.array([2])]
    tasks = task_list(subjects, lengths, 8, 2, [1, 1, 1])
    assert tasks.subjects.tolist() == [9, 8, 7, 1, 2, -1, 0, -1]
    assert tasks.group_query.tolist() == [0, 1, 2, 0]
    assert tasks.boundary_rows == 0 and tasks.bnd_rows.tolist() == [0, 0, 0, 0]
    padded = task_list([np.array([0])], lengths, 8, 2, [1])
    assert padded.subjects.tolist() == [0, -1] + [-1] * 6 and padded.group_query.tolist() == [0, 0, 0, 0]
    got = scores_by_query(tasks, np.array([19, 18, 17, 11, 12, -1, 10, -1]), subjects)
    assert [g.tolist() for g in got] == [[10, 18, 19], [11, 17], [12]]


def test_a_warp_holds_groups_of_one_count_of_passes_most_work_first():
    """Groups of queries of different passes never share a warp (the kernel's shuffles take the
    warp's lanes through every pass together): each count of passes is padded to whole warps,
    its padding groups carrying one of its queries, and the warps go most work first (passes x
    the rows of their longest group); multi-pass groups have boundary rows of their own."""
    lengths = np.arange(10, 110, 10, dtype=np.int64)
    subjects = [np.array([0, 8, 9]), np.array([1, 7]), np.array([2])]
    tasks = task_list(subjects, lengths, 8, 2, [1, 2, 1])
    assert tasks.subjects.tolist() == [7, 1] + [-1] * 6 + [9, 8, 2, -1, 0, -1, -1, -1]  # query 1: 2 x 80 rows before 1 x 100
    assert tasks.group_query.tolist() == [1, 1, 1, 1, 0, 2, 0, 0]
    assert tasks.bnd_rows.tolist() == [0] + [80] * 7 and tasks.boundary_rows == 80
    rng = np.random.default_rng(5)
    lengths = np.sort(rng.integers(20, 3000, 400)).astype(np.int64)
    subjects = [np.unique(rng.integers(0, 400, rng.integers(1, 40))) for _ in range(30)]
    passes = rng.integers(1, 5, 30).tolist()
    tasks = task_list(subjects, lengths, 8, 2, passes)
    warp_passes = np.asarray(passes)[tasks.group_query].reshape(-1, 4)
    assert (warp_passes == warp_passes[:, :1]).all()
    first = tasks.subjects.reshape(-1, 4, 2)[:, 0, 0]
    work = warp_passes[:, 0] * lengths[first]
    assert (np.diff(work) <= 0).all()
    real = tasks.slot_query >= 0
    assert sorted(zip(tasks.slot_query[real].tolist(), tasks.subjects[real].tolist())) == sorted(
        (q, int(s)) for q, subj in enumerate(subjects) for s in subj
    )


def test_entries_name_their_source_and_scores_come_back_in_the_given_order():
    """Every entry names its place among the given subjects end to end (``source``, -1 on
    padding); the order a query's subjects are given in changes neither the list's subjects
    nor the scores each subject gets back."""
    rng = np.random.default_rng(8)
    lengths = np.sort(rng.integers(20, 3000, 300)).astype(np.int64)
    subjects = [np.unique(rng.integers(0, 300, rng.integers(0, 25))) for _ in range(12)]
    passes = rng.integers(1, 4, 12).tolist()
    tasks = task_list(subjects, lengths, 8, 2, passes)
    given = np.concatenate(subjects)
    real = tasks.source >= 0
    assert np.array_equal(tasks.subjects[real], given[tasks.source[real]]) and (tasks.subjects[~real] == -1).all()
    assert sorted(tasks.source[real].tolist()) == list(range(given.size))
    scores = (tasks.subjects * 3 + tasks.slot_query).astype(np.int32)  # a score that names its pair
    for k, got in enumerate(scores_by_query(tasks, scores, subjects)):
        assert got.tolist() == (subjects[k] * 3 + k).tolist()
    shuffled = [rng.permutation(s) for s in subjects]
    again = task_list(shuffled, lengths, 8, 2, passes)
    assert np.array_equal(again.subjects, tasks.subjects) and np.array_equal(again.group_query, tasks.group_query)
    scores = (again.subjects * 3 + again.slot_query).astype(np.int32)
    for k, got in enumerate(scores_by_query(again, scores, shuffled)):
        assert got.tolist() == (shuffled[k] * 3 + k).tolist()
