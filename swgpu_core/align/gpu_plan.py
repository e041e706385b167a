"""How the GPU traceback (``kernels/traceback.cu``) lays out its launches: rows per lane and
nibble bytes per launch. Pure, so the choices are tested without a GPU.

One warp traces one pair; a pass covers ``32 * R`` query rows, ``R`` rows per lane, and
walks every column of the pair, so a pair costs ``passes(R) * (cols + 31)`` steps of ``R``
rows each. Two regimes:

* **Many pairs** (``swgpu pairs``, the alignments of a search): the GPU is full, so the
  throughput counts: the ``R`` of the least cost of the cells of whole passes, padding included,
  a cell of a wider step costing less (``CELL_COST``: a step's shuffles, loads and checks are
  shared by more rows). Until 2026-11-28 every ``R``'s cell cost the same, which gave ``R`` = 4
  to almost every pair and made a search's traceback slower (bench/RESULTS.md, thirtieth session).
* **Few pairs** (align-long's end points: a few hundred alignments of 10^4 rows and more):
  each warp runs alone on its SM, and the call lasts as long as its longest pair, so the
  latency of a step counts. Measured on an H100 for one 10^4 x 10^4 pair
  (``bench/tb_region_probe.py``), a step of ``R`` = 4 / 8 / 16 rows takes 1 : 1.24 : 2.06
  (0.21 / 0.26 / 0.43 us): wider steps are cheaper per row, so the largest ``R`` wins for
  tall pairs (its region pass 0.165 -> 0.086 s, its reverse scan 0.26 -> 0.11 s) and the
  model picks per pair the ``R`` of the least ``passes * STEP_COST[R]``.
* **A few huge pairs among many** (a search's hits where a long query meets the long subjects
  of bench200M: 831 of 23,683 pairs over 10^7 cells, the largest 1.3 * 10^8): a launch lasts
  at least as long as its longest warp, so a pair whose one warp, at the throughput ``R``,
  would outlast an even share of the call's steps (:func:`rows_per_lane`) takes the ``R`` of
  the least latency too, and each launch starts its pairs longest first (:func:`launch_order`),
  so that no long pair starts in the launch's tail. Such a call's ``tb_ends`` took 0.357-0.385 s
  (two H200 hosts), where its 3.3 * 10^10 cells at the kernels' rate for uniform pairs take
  0.04 s; with this, 0.335 s (a third H200 host; bench/RESULTS.md, twenty-ninth session).
  What was left then was the largest pair's own forward and reverse scans on one warp (about
  0.12 s each for 1.3 * 10^8 cells at ``R`` = 16).
* **Teams.** So a latency-bound pair may take a team of ``W`` warps in a block of its own
  (``tb_ends_team``, ``tb_region_team``): a team pass covers ``32 * R * W`` rows, warp ``w``
  running ``TB_TEAM_DELAY`` steps behind warp ``w - 1``, so a pair costs
  ``ceil(rows / (32 R W)) * (cols + (W - 1) * TB_TEAM_DELAY + 31)`` steps whose time grows with
  the warps sharing the SM's schedulers (``TEAM_STEP_COST``). :func:`layout` picks per bound
  pair the (R, W) of the least such latency, W at most what keeps every team of the call
  resident at once (``TEAM_WARPS_PER_SM`` per SM).

A launch's direction nibbles (half a byte per cell of each rectangle) take device memory;
launches were capped at 2 GB, which cut align-long's 200 rectangles of 10^4 x 1.4 * 10^4
(14 GB of nibbles) into seven launches of a few pairs each, seven latency-bound waves on a
few SMs: 1.75 s where one launch takes 0.25 s. The cap is now half the device memory
available to the call (never below 2 GB).
"""

from __future__ import annotations

import numpy as np

from ..kernel_abi import MAX_CODES, TB_TEAM_DELAY, TB_TEAM_MAX_WARPS, TB_WARPS

#: Rows of the query per lane that the kernels are compiled for (a pass is 32 * R rows).
ROWS_PER_LANE = tuple(sorted(TB_WARPS))
#: A step's device time per R relative to R = 4 when one warp runs alone (H100, module docstring).
STEP_COST = {4: 1.0, 8: 1.24, 16: 2.06}
#: A cell's device time per R relative to R = 16 when the GPU is full (the throughput): a
#: step's shuffles, profile load and bounds checks are shared by more rows (H100,
#: ``bench/tb_replay.py --uniform 1000``: 20,000 related pairs of 100 to 1,000 residues,
#: tb_ends + tb_region 0.042 s with every R costed alike, which picked R = 4 for all, 0.034 s
#: with these).
CELL_COST = {4: 1.6, 8: 1.3, 16: 1.0}
#: Pairs per SM up to which a call is latency-bound (every pair's warp resident at once with room to spare).
FEW_PAIRS_PER_SM = 4
#: Warps a pair's team may have (1: a warp of its own, in the kernels of many pairs per block).
TEAM_SIZES = tuple(w for w in (1, 2, 4, 8) if w <= TB_TEAM_MAX_WARPS)
#: A step's device time for a team of W warps relative to one warp alone (same R), measured on
#: an H100 (``bench/tb_team_probe.py``, the region pass of one 10^4 x 10^4 pair; R = 4 / 8 / 16):
#: W = 2 1.58 / 1.53 / 1.38, W = 4 the same, W = 8 1.81 / 2.06 / 1.86. A team's step costs more
#: than a lone warp's even where each warp has a scheduler to itself (the barriers, the ring),
#: and eight warps share the SM's four schedulers.
TEAM_STEP_COST = {1: 1.0, 2: 1.5, 4: 1.5, 8: 1.9}
#: Warps of teams per SM that a call's teams may take together, so that all of them are resident at once.
TEAM_WARPS_PER_SM = 8
#: Nibble bytes per ``tb_region`` launch at least (and the cap before it followed the memory).
MIN_LAUNCH_BYTES = 2 << 30
#: A rectangle with more nibble bytes than this may be traced in strips (:func:`traced_in_strips`).
STRIP_NIBBLES = 1 << 30


def passes(rows: np.ndarray, r: int) -> np.ndarray:
    """Passes of ``32 * r`` rows that cover ``rows``."""
    return -(-np.asarray(rows, np.int64) // (32 * r))


def few_pairs(n_pairs: int, sms: int) -> bool:
    """Whether a call of ``n_pairs`` pairs on a GPU of ``sms`` multiprocessors is latency-bound."""
    return n_pairs <= FEW_PAIRS_PER_SM * sms


def latency(rows: np.ndarray, cols: np.ndarray, r: np.ndarray | int, w: np.ndarray | int = 1) -> np.ndarray:
    """A pair's time on ``w`` warps (its team; 1: a warp alone) at ``r`` rows per lane, in steps
    of ``R`` = 4 on one warp alone: team passes of ``32 r w`` rows, each
    ``cols + (w - 1) * TB_TEAM_DELAY + 31`` steps long, a step costing
    ``STEP_COST[r] * TEAM_STEP_COST[w]``."""
    r = np.broadcast_to(np.asarray(r, np.int64), np.shape(rows))
    w = np.broadcast_to(np.asarray(w, np.int64), np.shape(rows))
    cost = np.select([r == x for x in ROWS_PER_LANE], [STEP_COST[x] for x in ROWS_PER_LANE])
    cost = cost * np.select([w == x for x in TEAM_SIZES], [TEAM_STEP_COST[x] for x in TEAM_SIZES])
    steps = np.asarray(cols, np.int64) + (w - 1) * TB_TEAM_DELAY + 31
    return passes(rows, r * w) * steps * cost


def rows_per_lane(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Per pair, the R of the most throughput: the least cost of all lanes' cells,
    ``passes * 32 R * (cols + 31) * CELL_COST[R]`` (padded rows count; ties to the smaller R)."""
    rows = np.asarray(rows, np.int64)
    cols = np.asarray(cols, np.int64)
    choices = np.asarray(ROWS_PER_LANE, np.int64)
    spans = cols + 31
    return choices[np.argmin(np.stack([passes(rows, r) * (r * spans) * CELL_COST[r] for r in ROWS_PER_LANE]), axis=0)]


def latency_bound(rows: np.ndarray, cols: np.ndarray, sms: int) -> np.ndarray:
    """Which pairs of a call count by their latency on a GPU of ``sms`` multiprocessors: every
    pair of a call of few pairs (:func:`few_pairs`), and in a larger call a pair whose one warp,
    at its throughput R, would outlast an even share of the call's steps over
    ``FEW_PAIRS_PER_SM * sms`` warps (the rest of the call, which the GPU's warps share)."""
    rows = np.asarray(rows, np.int64)
    if few_pairs(rows.size, sms):
        return np.ones(rows.size, bool)
    alone = latency(rows, cols, rows_per_lane(rows, cols))
    return alone > alone.sum() / (FEW_PAIRS_PER_SM * sms)


def team_cap(n_bound: int, sms: int) -> int:
    """The most warps per team when ``n_bound`` pairs take teams on ``sms`` multiprocessors: the
    largest team size whose teams all fit ``TEAM_WARPS_PER_SM`` warps per SM."""
    room = TEAM_WARPS_PER_SM * sms // max(n_bound, 1)
    return max([w for w in TEAM_SIZES if w <= room], default=1)


def layout(
    rows: np.ndarray, cols: np.ndarray, sms: int | None = None, shared_bytes: int | None = None, n_codes: int = MAX_CODES
) -> tuple[np.ndarray, np.ndarray]:
    """Per pair, its rows per lane R and its team's warps W (1: a warp alone).

    Every pair takes the R of the most throughput (:func:`rows_per_lane`) on one warp; given the
    GPU's ``sms``, a latency-bound pair (:func:`latency_bound`) takes the (R, W) of the least
    :func:`latency`, W at most :func:`team_cap` (ties: the smaller R, then the smaller W), and
    with ``shared_bytes``, the shared memory a block may have on the GPU, only teams whose
    profiles of ``n_codes`` residue codes fit it (:func:`team_fits`: an H100 takes every team,
    a GPU of 99 KiB per block not eight warps of R = 16)."""
    rows = np.asarray(rows, np.int64)
    cols = np.asarray(cols, np.int64)
    r = rows_per_lane(rows, cols)
    w = np.ones(rows.size, np.int64)
    if sms is None or rows.size == 0:
        return r, w
    bound = latency_bound(rows, cols, sms)
    if bound.any():
        cap = team_cap(int(bound.sum()), sms)
        combos = [(x, y) for x in ROWS_PER_LANE for y in TEAM_SIZES if y <= cap and team_fits(n_codes, x, y, shared_bytes)]
        best = np.argmin(np.stack([latency(rows[bound], cols[bound], x, y) for x, y in combos]), axis=0)
        r[bound] = np.asarray([x for x, _ in combos])[best]
        w[bound] = np.asarray([y for _, y in combos])[best]
    return r, w


def launch_order(rows: np.ndarray, cols: np.ndarray, r: np.ndarray, w: np.ndarray | int = 1) -> np.ndarray:
    """The pairs in launch order: grouped by team size ``w`` (the largest first: they run
    longest) and ``r`` (in ``ROWS_PER_LANE`` order), each group's longest first by
    :func:`latency` (ties in input order), so that a launch starts its longest warps at once
    instead of some in its tail."""
    r = np.asarray(r, np.int64)
    w = np.broadcast_to(np.asarray(w, np.int64), r.shape)
    key = np.searchsorted(np.asarray(ROWS_PER_LANE), r)
    return np.lexsort((-latency(rows, cols, r, w), key, -w))


def launch_groups(r: np.ndarray, w: np.ndarray, order: np.ndarray) -> list[tuple[int, int, np.ndarray]]:
    """The launches' groups of pairs in ``order`` (:func:`launch_order`): (R, W, pairs) per
    distinct (R, W), in that order."""
    r, w = np.asarray(r)[order], np.asarray(w)[order]
    cuts = np.flatnonzero((np.diff(r) != 0) | (np.diff(w) != 0)) + 1
    return [(int(r[a]), int(w[a]), order[a:b]) for a, b in zip(np.r_[0, cuts], np.r_[cuts, order.size]) if b > a]


def team_fits(n_codes: int, r: int, w: int, shared_bytes: int | None) -> bool:
    """Whether a team's dynamic shared memory and the kernel's static matrix (``MAX_CODES``
    squared bytes) fit ``shared_bytes`` (None: no limit; a lone warp always fits)."""
    return w == 1 or shared_bytes is None or team_shared_bytes(n_codes, r, w) + MAX_CODES * MAX_CODES <= shared_bytes


def team_shared_bytes(n_codes: int, r: int, w: int) -> int:
    """Dynamic shared memory of a team kernel (``team_memory`` in ``kernels/traceback.cu``): per
    warp a profile of ``n_codes * 32 * r`` bytes, a ring of ``2 * TB_TEAM_DELAY`` (H, F) pairs
    and four ints of scratch."""
    return w * (n_codes * 32 * r + 2 * TB_TEAM_DELAY * 8 + 16)


def nibble_bytes(heights: np.ndarray, widths: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Bytes of direction nibbles per rectangle: whole passes of 32 * R rows, 8-byte aligned."""
    padded = passes(heights, r) * (32 * np.asarray(r, np.int64))
    return -(-(padded * np.asarray(widths, np.int64) // 2) // 8) * 8


def strip_bytes(heights: np.ndarray, widths: np.ndarray, r: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Device bytes of a rectangle traced in strips with ``r`` rows per lane on teams of ``w``
    warps: a checkpoint row of (H, F), 8 bytes per column and one more, after every team pass
    but the last, and the nibbles of one team pass."""
    heights, widths = np.asarray(heights, np.int64), np.asarray(widths, np.int64)
    span = 32 * np.asarray(r, np.int64) * np.asarray(w, np.int64)
    checkpoints = (passes(heights, span // 32) - 1) * (widths + 1) * 8
    return checkpoints + nibble_bytes(np.minimum(heights, span), widths, r)


def traced_in_strips(nbytes: np.ndarray, pair_budget: int, launch_budget: int) -> np.ndarray:
    """Which rectangles, of ``nbytes`` nibble bytes each, pass 3 traces in strips
    (``kernels/traceback.cu``, "strips": one team pass of nibbles at a time after a pass that
    keeps a checkpoint row per team pass): those over :data:`STRIP_NIBBLES` where the call's
    whole regions would not all fit one launch of ``launch_budget`` bytes, and any that alone
    exceeds ``pair_budget`` (which would go to the CPU otherwise).

    Why: whole regions of more than a launch run a launch after another. align-long's 200
    alignments of 10^5 x 10^5 (5 GB each) ran about a dozen at a time on an H200, 101.7 s; in
    strips each needs about 0.2 GB and all run at once, 30.4 s (bench/RESULTS.md,
    thirty-sixth session). But strips compute a rectangle twice (the checkpoints, then each
    strip again) in two launches per team pass, so where the whole regions run at once anyway
    they would only cost: one such alignment alone, whose region pass takes about 2.7 s on a
    team of eight warps by the step costs above (25 team passes of 1.3 * 10^5 steps), would
    take about as much again. Below :data:`STRIP_NIBBLES` (about 46,000 x 46,000 cells) a
    launch holds enough rectangles at once to keep the GPU busy."""
    nbytes = np.asarray(nbytes, np.int64)
    whole = nbytes <= pair_budget
    crowded = int(nbytes[whole].sum()) > launch_budget
    return (nbytes > STRIP_NIBBLES) & (crowded | ~whole)


def launch_bytes(available: int) -> int:
    """Nibble bytes per ``tb_region`` launch given the device memory ``available`` to the call."""
    return max(MIN_LAUNCH_BYTES, available // 2)
