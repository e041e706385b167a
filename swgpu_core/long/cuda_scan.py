"""Launch the align-long scan kernel (``kernels/sw_long.cu``) through CuPy.

One launch scans one section on the current device. The number of warps is what keeps
the column blocks' pipeline full (a block takes ``m + 31`` wavefront steps and the next
one starts about 40 steps later), capped by the GPU's size and by a memory budget for the
boundary slots (``m`` words of 8 bytes per warp).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

import cupy as cp
import numpy as np

from ..scoring import Scoring
from .endpoints import GROUP, BandKeys, BandRule
from .sections import Section

PAD_SCORE = -(1 << 26)
WARPS_PER_BLOCK = 4
COLS_PER_WARP = 32 * GROUP
#: Device memory for the boundary slots of all warps.
SLOT_BUDGET = 2 << 30


@dataclass(frozen=True)
class ScanTiming:
    """Kernel time (CUDA events) and the cells of the section's table."""

    seconds: float
    cells: int


@dataclass(frozen=True)
class TableShape:
    """The kernel's score table: ``codes`` x ``codes`` (the last code pads) in ``copies`` copies."""

    codes: int
    copies: int

    @classmethod
    def for_scoring(cls, scoring: Scoring) -> TableShape:
        """32 copies (no bank conflicts) when they fit 40 KB of shared memory (DNA), else 8 (protein)."""
        codes = scoring.alphabet.size + 1
        return cls(codes, 32 if codes * codes * 32 * 4 <= 40 << 10 else 8)

    @property
    def pad(self) -> int:
        return self.codes - 1


def kernel_matrix(scoring: Scoring, shape: TableShape) -> np.ndarray:
    """``codes`` x ``codes`` int32 table of S + open + extend; the padding code scores PAD_SCORE."""
    out = np.full((shape.codes, shape.codes), PAD_SCORE, np.int32)
    n = scoring.alphabet.size
    out[:n, :n] = scoring.matrix + scoring.first_gap_cost
    return out


def padded_query(query: np.ndarray, pad: int) -> np.ndarray:
    """32 padding codes, the query, then padding for the wavefront's last steps."""
    return np.concatenate([np.full(32, pad, np.uint8), query.astype(np.uint8), np.full(64, pad, np.uint8)])


def n_warps(m: int, n_blocks: int, sms: int) -> int:
    """Warps to launch (a multiple of WARPS_PER_BLOCK): the pipeline depth, the GPU, the budget."""
    want = min(2 * (m + 32) // 32 + 32, 16 * sms, max(WARPS_PER_BLOCK, SLOT_BUDGET // (8 * max(m, 1))), max(n_blocks, 1))
    return max(WARPS_PER_BLOCK, want // WARPS_PER_BLOCK * WARPS_PER_BLOCK)


class LongScanKernel:
    """The compiled ``sw_long`` kernel for the current device and a scoring's alphabet."""

    def __init__(self, scoring: Scoring) -> None:
        self.shape = TableShape.for_scoring(scoring)
        code = resources.files("swgpu_core").joinpath("kernels/sw_long.cu").read_text()
        name = f"sw_long<{GROUP},{self.shape.codes},{self.shape.copies}>"
        self.module = cp.RawModule(code=code, options=("-std=c++17",), name_expressions=[name])
        self.function = self.module.get_function(name)
        self.sms = cp.cuda.Device().attributes["MultiProcessorCount"]

    def scan(self, query: np.ndarray, target: np.ndarray, section: Section, rule: BandRule, scoring: Scoring) -> tuple[BandKeys, ScanTiming]:
        """Band keys of the cells ``section`` owns (the same as :func:`.cpu_scan.scan_section`)."""
        m = int(query.size)
        ncols = section.own_hi - section.scan_lo
        keys = cp.zeros(rule.n_bands(target.size), cp.uint64)
        if ncols <= 0 or section.own_hi <= section.own_lo:
            return BandKeys(np.empty(0, np.int64), np.empty(0, np.uint64)), ScanTiming(0.0, 0)
        n_blocks = -(-ncols // COLS_PER_WARP)
        cols = np.full(n_blocks * COLS_PER_WARP + 16, self.shape.pad, np.uint8)
        cols[:ncols] = target[section.scan_lo : section.own_hi]
        d_target = cp.asarray(cols)
        d_query = cp.asarray(padded_query(query, self.shape.pad))
        d_matrix = cp.asarray(kernel_matrix(scoring, self.shape))
        warps = n_warps(m, n_blocks, self.sms)
        slots = cp.zeros(warps * m, cp.uint64)
        counter = cp.zeros(1, cp.int32)
        args = (
            d_target, np.int64(ncols), np.int64(section.scan_lo), np.int64(section.own_lo), np.int64(section.own_hi),
            d_query, np.int32(m), d_matrix, np.int32(scoring.first_gap_cost), np.int32(scoring.gap_extend),
            np.int32(rule.width), np.int32(n_blocks), np.int32(warps), slots, counter, keys,
        )  # fmt: skip
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        self.function((warps // WARPS_PER_BLOCK,), (32 * WARPS_PER_BLOCK,), args)
        stop.record()
        stop.synchronize()
        seconds = cp.cuda.get_elapsed_time(start, stop) / 1000.0
        return BandKeys.from_dense(keys.get()), ScanTiming(seconds, m * ncols)
