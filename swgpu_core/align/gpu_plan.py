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


def rows_per_lane(rows: np.ndarray, cols: np.ndarray, few: bool = False) -> np.ndarray:
    """Per pair, the R of the least cost: steps of all lanes, ``passes * R * (cols + 31)``
    (ties to the smaller R), or with ``few`` the latency of one warp, ``passes * STEP_COST[R]``
    (the columns are the same for every R)."""
    rows = np.asarray(rows, np.int64)
    cols = np.asarray(cols, np.int64) + 31
    if few:
        costs = np.stack([passes(rows, r) * STEP_COST[r] for r in ROWS_PER_LANE])
    else:
        costs = np.stack([passes(rows, r) * (r * cols) for r in ROWS_PER_LANE])
    return np.asarray(ROWS_PER_LANE, np.int64)[np.argmin(costs, axis=0)]


def nibble_bytes(heights: np.ndarray, widths: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Bytes of direction nibbles per rectangle: whole passes of 32 * R rows, 8-byte aligned."""
    padded = passes(heights, r) * (32 * np.asarray(r, np.int64))
    return -(-(padded * np.asarray(widths, np.int64) // 2) // 8) * 8


def launch_bytes(available: int) -> int:
    """Nibble bytes per ``tb_region`` launch given the device memory ``available`` to the call."""
    return max(MIN_LAUNCH_BYTES, available // 2)
