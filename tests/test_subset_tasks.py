"""The task lists of the fast mode's exact scoring (:mod:`swgpu_core.subset_tasks`): which pairs
go to the intra-task kernel, with which block, and the lists of that kernel (a unit per group)."""

from __future__ import annotations

import numpy as np
import pytest

from swgpu_core.subset_tasks import INTRA_TASK_WARPS, LONG_PAIR_STEPS, intra_task_warps, long_pairs, scores_by_query, task_list


@pytest.mark.parametrize(
    "query, subject, long",
    [
        (512, 1_000_000, False),  # one inter-task pass: an intra block would take one too
        (513, LONG_PAIR_STEPS // 2 - 1, False),  # two passes, one step short
        (513, LONG_PAIR_STEPS // 2, True),
        (1024, LONG_PAIR_STEPS // 2, True),  # two inter passes, one of 4 warps
        (4291, -(-LONG_PAIR_STEPS // 9), True),  # nine passes (bench200M's longest query)
        (4291, LONG_PAIR_STEPS // 9 - 1, False),
        (100, 36_000, False),
    ],
)
def test_a_pair_is_long_when_its_inter_task_passes_take_the_steps(query, subject, long):
    assert long_pairs(query, np.array([subject, 10]))[0] == long
    assert not long_pairs(query, np.array([subject, 10]))[1]


def test_every_long_query_has_an_intra_task_kernel():
    """Every query that can have long pairs gets a block width whose task kernel is compiled
    (``swgpu_core.gpu.kernels.INTRA_TASK_SHAPES``, those of INTRA_TASK_WARPS)."""
    widths = {intra_task_warps(n) for n in range(1, 40_000) if long_pairs(n, np.array([1 << 30]))[0]}
    assert widths == set(INTRA_TASK_WARPS)


def test_an_intra_list_unit_is_one_group():
    """lanes 32: a unit ("warp") per group of two subjects, each unit its query's, longest first,
    multi-pass groups with boundary rows of their own (their longest subject's length)."""
    lengths = np.array([10, 20, 30, 40, 50, 60], np.int64)
    tasks = task_list([np.array([0, 3, 5]), np.array([1, 2])], lengths, 32, 2, [3, 1])
    assert tasks.subjects.tolist() == [5, 3, 2, 1, 0, -1]
    assert tasks.group_query.tolist() == [0, 1, 0]
    assert tasks.slot_query.tolist() == [0, 0, 1, 1, 0, -1]
    assert tasks.bnd_rows.tolist() == [0, 60, 60] and tasks.boundary_rows == 60 + 10
    got = scores_by_query(tasks, np.array([7, 6, 5, 4, 3, -1]), [np.array([0, 3, 5]), np.array([1, 2])])
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
    with pytest.raises(ValueError, match="several passes"):
        task_list(subjects, lengths, 8, 2, [1, 2, 1])
    got = scores_by_query(tasks, np.array([19, 18, 17, 11, 12, -1, 10, -1]), subjects)
    assert [g.tolist() for g in got] == [[10, 18, 19], [11, 17], [12]]
