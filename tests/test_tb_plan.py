"""The GPU traceback's launch decisions (swgpu_core.align.gpu_plan), without a GPU."""

from __future__ import annotations

import numpy as np
import pytest

from swgpu_core.align.gpu_plan import (
    CELL_COST,
    FEW_PAIRS_PER_SM,
    MIN_LAUNCH_BYTES,
    ROWS_PER_LANE,
    STEP_COST,
    STRIP_NIBBLES,
    TEAM_SIZES,
    TEAM_STEP_COST,
    TEAM_WARPS_PER_SM,
    few_pairs,
    latency,
    latency_bound,
    launch_bytes,
    launch_groups,
    launch_order,
    layout,
    nibble_bytes,
    passes,
    rows_per_lane,
    strip_bytes,
    team_cap,
    team_fits,
    team_shared_bytes,
    traced_in_strips,
)
from swgpu_core.kernel_abi import MAX_CODES, TB_TEAM_DELAY, TB_TEAM_MAX_WARPS


def test_many_pairs_take_the_rows_per_lane_of_the_least_cell_cost():
    rows = np.array([100, 128, 129, 200, 256, 300, 10_000])
    cols = np.full(rows.size, 500)
    # passes * 32 R * CELL_COST[R] per column: 100 and 128 rows fill one pass of R = 4 (128 x 1.6 =
    # 205 against 256 x 1.3 = 333); 129 to 256 one of R = 8 (333 against 384 x 1.6 and 512); 300
    # one of R = 16 (512 against 512 x 1.3 and 384 x 1.6 = 614); 10,000 rows R = 16 (20 x 512
    # against 40 x 333 and 79 x 205)
    assert rows_per_lane(rows, cols).tolist() == [4, 4, 8, 8, 8, 16, 16]
    for k in range(rows.size):  # the least cost, ties to the smaller R
        cost = [passes(rows[k : k + 1], r)[0] * r * CELL_COST[r] for r in ROWS_PER_LANE]
        assert rows_per_lane(rows[k : k + 1], cols[k : k + 1])[0] == ROWS_PER_LANE[int(np.argmin(cost))]


def test_few_pairs_take_the_layout_of_the_least_latency():
    """Six pairs are few for 132 SMs: each takes the (R, W) of the least modelled latency; a pair
    of one short pass stays on one warp, tall ones take teams."""
    rows = np.array([100, 128, 200, 256, 512, 10_000])
    cols = np.full(rows.size, 10_000)
    r, w = layout(rows, cols, sms=132)
    for k in range(rows.size):
        best = min(latency(rows[k : k + 1], cols[k : k + 1], x, y)[0] for x in ROWS_PER_LANE for y in TEAM_SIZES)
        assert latency(rows[k : k + 1], cols[k : k + 1], r[k], w[k])[0] == best
    assert w[0] == 1 and w[-1] == max(TEAM_SIZES) and r[-1] == 16
    assert layout(rows, cols)[1].tolist() == [1] * rows.size  # without the GPU's size: throughput, one warp each


def test_a_team_pass_covers_its_warps_rows_and_pays_their_delay():
    # one warp at R = 16: 10,000 rows are 20 passes of cols + 31 steps; 8 warps: 3 team passes of
    # 4,096 rows, each 7 delays longer, at the team's step cost
    rows, cols = np.array([10_000]), np.array([14_000])
    assert latency(rows, cols, 16)[0] == pytest.approx(20 * (14_000 + 31) * STEP_COST[16])
    assert latency(rows, cols, 16, 8)[0] == pytest.approx(3 * (14_000 + 7 * TB_TEAM_DELAY + 31) * STEP_COST[16] * TEAM_STEP_COST[8])
    assert latency(rows, cols, 16, 1)[0] == latency(rows, cols, 16)[0]


def test_a_huge_pair_among_many_takes_a_team():
    """Long queries against bench200M's long subjects: their one warp would outlast the call's
    many small pairs, so they take teams at the (R, W) of the least latency; the small pairs keep
    one warp each at the least padding."""
    rows = np.concatenate([np.full(20_000, 300), [4_291, 3_000, 2_000]])
    cols = np.concatenate([np.full(20_000, 500), [36_000, 36_000, 36_000]])
    throughput = rows_per_lane(rows, cols)
    assert set(throughput.tolist()) == {16}
    bound = latency_bound(rows, cols, 132)
    assert bound[-3:].all() and not bound[:-3].any()
    share = latency(rows, cols, throughput).sum() / (FEW_PAIRS_PER_SM * 132)
    assert (latency(rows, cols, throughput)[-3:] > share).all() and (latency(rows, cols, throughput)[:-3] < share).all()
    r, w = layout(rows, cols, sms=132)
    assert set(r[:-3].tolist()) == {16} and set(w[:-3].tolist()) == {1}
    assert (w[-3:] > 1).all() and (latency(rows, cols, r, w)[-3:] < latency(rows, cols, throughput)[-3:] / 2).all()
    uniform = np.full(10_000, 300)  # no pair above its share: every pair as before, on one warp
    r, w = layout(uniform, uniform + 200, sms=132)
    assert r.tolist() == rows_per_lane(uniform, uniform + 200).tolist() and set(w.tolist()) == {1}
    assert layout(np.zeros(0, np.int64), np.zeros(0, np.int64), sms=132)[0].size == 0


def test_teams_stay_small_enough_to_be_resident_together():
    # TEAM_WARPS_PER_SM warps of teams per SM: 3 bound pairs take the largest teams, align-long's
    # 200 end points teams of 4 on 132 SMs, a crowd of bound pairs one warp each
    assert team_cap(3, 132) == max(TEAM_SIZES) == TB_TEAM_MAX_WARPS
    assert TEAM_WARPS_PER_SM * 132 // 200 == 5 and team_cap(200, 132) == 4
    assert team_cap(5_000, 132) == 1
    r, w = layout(np.full(200, 10_000), np.full(200, 14_000), sms=132)
    assert set(w.tolist()) == {4}


def test_a_team_fits_the_shared_memory_of_a_block():
    # per warp a profile of n_codes * 32 * R bytes, a ring of 2 * delay (H, F) pairs, 4 ints; the
    # largest team beside the kernel's static matrix fits the 227 KiB a block may opt into (H100)
    assert team_shared_bytes(27, 4, 2) == 2 * (27 * 128 + 2 * TB_TEAM_DELAY * 8 + 16)
    assert team_shared_bytes(MAX_CODES, 16, TB_TEAM_MAX_WARPS) + MAX_CODES * MAX_CODES <= 227 << 10


def test_teams_fit_the_shared_memory_of_the_gpu():
    """A GPU of 99 KiB per block (compute capability 8.6, 8.9) cannot hold eight warps of R = 16:
    its bound pairs take the best team that fits; an H100 (227 KiB) takes any."""
    rows, cols = np.array([10_000, 4_291]), np.array([14_000, 29_880])
    assert not team_fits(27, 16, 8, 99 << 10) and team_fits(27, 16, 8, 227 << 10) and team_fits(27, 16, 1, 1)
    assert team_fits(27, 16, 8, None)
    big = layout(rows, cols, sms=132, shared_bytes=227 << 10, n_codes=27)
    small = layout(rows, cols, sms=132, shared_bytes=99 << 10, n_codes=27)
    assert (16, 8) in set(zip(*(x.tolist() for x in big)))
    assert all(team_fits(27, r, w, 99 << 10) for r, w in zip(*(x.tolist() for x in small)))
    assert (small[1] > 1).all()  # still teams, smaller ones


def test_launches_start_their_teams_and_longest_pairs_first():
    rng = np.random.default_rng(3)
    rows, cols = rng.integers(1, 1_500, 3_000), rng.integers(1, 5_000, 3_000)
    rows[:10], cols[:10] = 300, 700  # ties keep their input order
    rows[-6:], cols[-6:] = [4_000, 4_000, 2_500, 9_000, 700, 3_000], [40_000, 40_000, 30_000, 5_000, 60_000, 9_000]  # huge ones
    r, w = layout(rows, cols, sms=132)
    assert len(set(w.tolist())) > 2 and len(set(r.tolist())) > 1
    order = launch_order(rows, cols, r, w)
    assert sorted(order.tolist()) == list(range(rows.size))
    groups = launch_groups(r, w, order)
    assert np.array_equal(np.concatenate([g for _, _, g in groups]), order)
    keys = [(-gw, ROWS_PER_LANE.index(gr)) for gr, gw, _ in groups]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)  # teams first, the largest first; then by R
    for gr, gw, group in groups:
        assert set(r[group].tolist()) == {gr} and set(w[group].tolist()) == {gw}
        assert np.all(np.diff(latency(rows[group], cols[group], gr, gw)) <= 0)
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
    total = int(nibble_bytes(heights, widths, layout(heights, widths, sms=132)[0]).sum())
    assert total > 6 * MIN_LAUNCH_BYTES
    assert total <= launch_bytes(70 << 30)
    assert launch_bytes(1 << 30) == MIN_LAUNCH_BYTES


def test_strips_hold_checkpoints_and_one_team_pass():
    """A rectangle in strips holds (H, F) of w + 1 columns after each team pass but the last, and
    one team pass of nibbles; so a 10^5 x 10^5 alignment (5 GB of nibbles, over STRIP_NIBBLES)
    takes about 0.2 GB on teams of four warps of R = 16."""
    assert strip_bytes(np.array([100]), np.array([50]), 4, 1)[0] == nibble_bytes(np.array([100]), np.array([50]), 4)[0]  # one pass
    h, w = np.array([1000, 1000, 4096, 4097]), np.array([300, 300, 10, 10])
    r, team = np.array([4, 16, 16, 16]), np.array([2, 1, 8, 8])
    span = 32 * r * team
    want = (-(-h // span) - 1) * (w + 1) * 8 + nibble_bytes(np.minimum(h, span), w, r)
    assert strip_bytes(h, w, r, team).tolist() == want.tolist()
    assert strip_bytes(h, w, r, team)[2] == nibble_bytes(h[2:3], w[2:3], 16)[0]  # 4,096 rows: one team pass, no checkpoint
    assert strip_bytes(h, w, r, team)[3] == 11 * 8 + nibble_bytes(np.array([4096]), np.array([10]), 16)[0]
    big = np.array([100_000])
    assert nibble_bytes(big, big, 16)[0] > 4 * STRIP_NIBBLES
    assert strip_bytes(big, big, 16, 4)[0] < 0.25e9


def test_strips_only_where_the_whole_regions_would_wait_or_not_fit():
    """Huge rectangles go to strips where the call's whole regions exceed a launch (align-long's
    200 alignments of 10^5 x 10^5) or one alone exceeds the per-pair budget; one such alignment,
    or a few that fit a launch together, keep the whole region (computed once, not twice)."""
    five_gb, launch, pair = nibble_bytes(np.array([100_000]), np.array([100_000]), 16)[0], 70 << 30, 35 << 30
    assert not traced_in_strips(np.array([five_gb]), pair, launch).any()  # --top 1
    assert not traced_in_strips(np.full(10, five_gb), pair, launch).any()  # 50 GB: one launch holds them
    assert traced_in_strips(np.full(200, five_gb), pair, launch).all()  # 1 TB: a dozen at a time otherwise
    small = np.full(200, STRIP_NIBBLES)  # 3 x 10^4 alignments are below it: never in strips
    assert not traced_in_strips(small, pair, launch).any()
    mixed = np.array([five_gb] * 20 + [1000] * 5)  # only the huge ones of a crowded call
    assert traced_in_strips(mixed, pair, launch).tolist() == [True] * 20 + [False] * 5
    alone = np.array([pair + 1, 1000])  # over the per-pair budget: strips rather than the CPU, crowded or not
    assert traced_in_strips(alone, pair, launch).tolist() == [True, False]
