"""The GPU traceback's launch decisions (swgpu_core.align.gpu_plan), without a GPU."""

from __future__ import annotations

import numpy as np

from swgpu_core.align.gpu_plan import MIN_LAUNCH_BYTES, few_pairs, launch_bytes, nibble_bytes, rows_per_lane


def test_many_pairs_take_the_rows_per_lane_that_pad_least_ties_to_the_smaller():
    rows = np.array([100, 128, 129, 200, 256, 300, 10_000])
    cols = np.full(rows.size, 500)
    # passes * R * (cols + 31): 100 -> one pass of 128 rows; 129 -> two passes of 128 rows cost as
    # one of 256 (R = 8): the smaller R; 300 -> 3 x 128 = 384 rows, the least padding
    assert rows_per_lane(rows, cols).tolist() == [4, 4, 4, 4, 4, 4, 4]


def test_few_pairs_take_the_rows_per_lane_of_the_least_latency():
    # passes * STEP_COST: tall pairs the widest steps, short ones a single pass of the narrowest
    rows = np.array([100, 128, 200, 256, 512, 10_000])
    cols = np.full(rows.size, 10_000)
    assert rows_per_lane(rows, cols, few=True).tolist() == [4, 4, 8, 8, 16, 16]
    assert rows_per_lane(rows, cols, few=False).tolist() != rows_per_lane(rows, cols, few=True).tolist()


def test_a_call_is_few_pairs_while_every_warp_has_room():
    assert few_pairs(200, 132) and few_pairs(528, 132)
    assert not few_pairs(529, 132) and not few_pairs(100_000, 132)


def test_nibble_bytes_are_whole_passes_of_half_bytes_8_aligned():
    assert nibble_bytes(np.array([1]), np.array([1]), np.array([4])).tolist() == [64]  # 128 rows x 1 column / 2
    assert nibble_bytes(np.array([129]), np.array([3]), np.array([4])).tolist() == [384]  # 256 x 3 / 2
    assert nibble_bytes(np.array([10_000]), np.array([14_000]), np.array([16])).tolist() == [10_240 * 14_000 // 2]


def test_align_longs_rectangles_go_in_one_launch_on_a_large_gpu():
    """200 rectangles of 10^4 x 1.4 * 10^4 (align-long's end points on 10^8 of random DNA): 14 GB
    of nibbles, one launch with 70 GB free, where the old 2 GB cap made seven latency-bound ones."""
    heights, widths = np.full(200, 10_000), np.full(200, 14_000)
    total = int(nibble_bytes(heights, widths, rows_per_lane(heights, widths, few=True)).sum())
    assert total > 6 * MIN_LAUNCH_BYTES
    assert total <= launch_bytes(70 << 30)
    assert launch_bytes(1 << 30) == MIN_LAUNCH_BYTES
