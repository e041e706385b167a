"""The GPU traceback's launch decisions (swgpu_core.align.gpu_plan), without a GPU."""

from __future__ import annotations

import numpy as np

from swgpu_core.align.gpu_plan import (
    FEW_PAIRS_PER_SM,
    MIN_LAUNCH_BYTES,
    ROWS_PER_LANE,
    few_pairs,
    latency,
    launch_bytes,
    launch_order,
    nibble_bytes,
    rows_per_lane,
)


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
    assert rows_per_lane(rows, cols, sms=132).tolist() == [4, 4, 8, 8, 16, 16]  # 6 pairs: few for 132 SMs
    assert rows_per_lane(rows, cols).tolist() != rows_per_lane(rows, cols, sms=132).tolist()


def test_a_huge_pair_among_many_takes_the_rows_per_lane_of_the_least_latency():
    """Long queries against bench200M's long subjects: their one warp would outlast the call's
    many small pairs, so they take the widest steps; the small pairs keep the least padding."""
    rows = np.concatenate([np.full(20_000, 300), [4_291, 3_000, 2_000]])
    cols = np.concatenate([np.full(20_000, 500), [36_000, 36_000, 36_000]])
    throughput = rows_per_lane(rows, cols)
    assert throughput[-3:].tolist() == [4, 4, 4] and set(throughput[:-3].tolist()) == {4}
    chosen = rows_per_lane(rows, cols, sms=132)
    assert chosen[-3:].tolist() == [16, 16, 16] and set(chosen[:-3].tolist()) == {4}
    share = latency(rows, cols, throughput).sum() / (FEW_PAIRS_PER_SM * 132)
    assert (latency(rows, cols, throughput)[-3:] > share).all() and (latency(rows, cols, throughput)[:-3] < share).all()
    assert (latency(rows, cols, chosen) <= latency(rows, cols, throughput)).all()
    uniform = np.full(10_000, 300)  # no pair above its share: every pair as before
    assert rows_per_lane(uniform, uniform + 200, sms=132).tolist() == rows_per_lane(uniform, uniform + 200).tolist()
    assert rows_per_lane(np.zeros(0, np.int64), np.zeros(0, np.int64), sms=132).size == 0


def test_launches_start_their_longest_pairs_first():
    rng = np.random.default_rng(3)
    rows, cols = rng.integers(1, 5_000, 3_000), rng.integers(1, 40_000, 3_000)
    rows[:10], cols[:10] = 300, 700  # ties keep their input order
    r = rows_per_lane(rows, cols, sms=132)
    order = launch_order(rows, cols, r)
    assert sorted(order.tolist()) == list(range(rows.size))
    assert np.all(np.diff(np.searchsorted(np.asarray(ROWS_PER_LANE), r[order])) >= 0)  # grouped by R, in its order
    for x in ROWS_PER_LANE:
        group = order[r[order] == x]
        assert np.all(np.diff(latency(rows[group], cols[group], x)) <= 0)
    ties = [k for k in order.tolist() if k < 10]
    assert ties == sorted(ties)


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
    total = int(nibble_bytes(heights, widths, rows_per_lane(heights, widths, sms=132)).sum())
    assert total > 6 * MIN_LAUNCH_BYTES
    assert total <= launch_bytes(70 << 30)
    assert launch_bytes(1 << 30) == MIN_LAUNCH_BYTES
