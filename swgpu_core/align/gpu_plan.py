"""How the GPU traceback (``kernels/traceback.cu``) lays out its launches: rows per lane and
nibble bytes per launch. Pure, so the choices are tested without a GPU.

One warp traces one pair; a pass covers ``32 * R`` query rows, ``R`` rows per lane, and
walks every column of the pair, so a pair costs ``passes(R) * (cols + 31)`` steps of ``R``
rows each. Two regimes:

* **Many pairs** (``swgpu pairs``, the alignments of a search): the GPU is full, so the
  throughput counts: the ``R`` that pads the query least, ties to the smaller ``R`` (fewer
  registers, more warps resident).
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
  What is left is the largest pair's own forward and reverse scans on one warp (about 0.12 s
  each for 1.3 * 10^8 cells at ``R`` = 16), which only several warps per pair would shorten.

A launch's direction nibbles (half a byte per cell of each rectangle) take device memory;
launches were capped at 2 GB, which cut align-long's 200 rectangles of 10^4 x 1.4 * 10^4
(14 GB of nibbles) into seven launches of a few pairs each, seven latency-bound waves on a
few SMs: 1.75 s where one launch takes 0.25 s. The cap is now half the device memory
available to the call (never below 2 GB).
"""

from __future__ import annotations

import numpy as np

from ..kernel_abi import TB_WARPS

#: Rows of the query per lane that the kernels are compiled for (a pass is 32 * R rows).
ROWS_PER_LANE = tuple(sorted(TB_WARPS))
#: A step's device time per R relative to R = 4 when one warp runs alone (H100, module docstring).
STEP_COST = {4: 1.0, 8: 1.24, 16: 2.06}
#: Pairs per SM up to which a call is latency-bound (every pair's warp resident at once with room to spare).
FEW_PAIRS_PER_SM = 4
#: Nibble bytes per ``tb_region`` launch at least (and the cap before it followed the memory).
MIN_LAUNCH_BYTES = 2 << 30


def passes(rows: np.ndarray, r: int) -> np.ndarray:
    """Passes of ``32 * r`` rows that cover ``rows``."""
    return -(-np.asarray(rows, np.int64) // (32 * r))


def few_pairs(n_pairs: int, sms: int) -> bool:
    """Whether a call of ``n_pairs`` pairs on a GPU of ``sms`` multiprocessors is latency-bound."""
    return n_pairs <= FEW_PAIRS_PER_SM * sms


def latency(rows: np.ndarray, cols: np.ndarray, r: np.ndarray | int) -> np.ndarray:
    """One warp's time for a pair at ``r`` rows per lane, in steps of ``R`` = 4 alone:
    ``passes * (cols + 31) * STEP_COST[r]``."""
    r = np.broadcast_to(np.asarray(r, np.int64), np.shape(rows))
    cost = np.select([r == x for x in ROWS_PER_LANE], [STEP_COST[x] for x in ROWS_PER_LANE])
    return passes(rows, r) * (np.asarray(cols, np.int64) + 31) * cost


def rows_per_lane(rows: np.ndarray, cols: np.ndarray, sms: int | None = None) -> np.ndarray:
    """Per pair, the R of the least cost: steps of all lanes, ``passes * R * (cols + 31)``
    (ties to the smaller R), or for a latency-bound pair the latency of its one warp,
    ``passes * STEP_COST[R]`` (the columns are the same for every R). With ``sms``, the
    multiprocessors of the GPU, every pair of a call of few pairs (:func:`few_pairs`) is
    latency-bound, and so is a pair of a larger call whose :func:`latency` at its throughput R
    exceeds the call's summed latency over ``FEW_PAIRS_PER_SM * sms`` warps: its one warp
    would outlast the rest of the call, which the GPU's warps share."""
    rows = np.asarray(rows, np.int64)
    cols = np.asarray(cols, np.int64)
    choices = np.asarray(ROWS_PER_LANE, np.int64)
    spans = cols + 31
    chosen = choices[np.argmin(np.stack([passes(rows, r) * (r * spans) for r in ROWS_PER_LANE]), axis=0)]
    if sms is None or rows.size == 0:
        return chosen
    alone = latency(rows, cols, chosen)
    bound = np.ones(rows.size, bool) if few_pairs(rows.size, sms) else alone > alone.sum() / (FEW_PAIRS_PER_SM * sms)
    if bound.any():
        quickest = np.argmin(np.stack([passes(rows[bound], r) * STEP_COST[r] for r in ROWS_PER_LANE]), axis=0)
        chosen[bound] = choices[quickest]
    return chosen


def launch_order(rows: np.ndarray, cols: np.ndarray, r: np.ndarray) -> np.ndarray:
    """The pairs in launch order: grouped by ``r`` (in ``ROWS_PER_LANE`` order), each group's
    longest first by :func:`latency` (ties in input order), so that a launch starts its longest
    warps at once instead of some in its tail."""
    r = np.asarray(r, np.int64)
    key = np.searchsorted(np.asarray(ROWS_PER_LANE), r)
    return np.lexsort((-latency(rows, cols, r), key))


def nibble_bytes(heights: np.ndarray, widths: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Bytes of direction nibbles per rectangle: whole passes of 32 * R rows, 8-byte aligned."""
    padded = passes(heights, r) * (32 * np.asarray(r, np.int64))
    return -(-(padded * np.asarray(widths, np.int64) // 2) // 8) * 8


def launch_bytes(available: int) -> int:
    """Nibble bytes per ``tb_region`` launch given the device memory ``available`` to the call."""
    return max(MIN_LAUNCH_BYTES, available // 2)
