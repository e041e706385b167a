"""The align-long scan on the CPU (numba): the reference for the GPU kernel, and ``--backend cpu``.

Plain Gotoh over the section's columns, one row at a time (linear memory), recording
every owned cell with a positive score into its band's key exactly as
``kernels/sw_long.cu`` does (rule in :mod:`.endpoints`). Single-threaded: a numba loop at
a few ns per cell is enough for tests and for tables up to ~10^10 cells.
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit

from ..scoring import Scoring
from .endpoints import GROUP, BandKeys, BandRule
from .sections import Section

NEG = -(1 << 28)


@njit(cache=True, nogil=True)
def _scan(q, t, mat, gap_open, gap_extend, width, group, scan_lo, own_lo, own_hi, keys):
    m = q.size
    n = t.size
    oe = gap_open + gap_extend
    hrow = np.zeros(n + 1, np.int32)
    frow = np.full(n + 1, NEG, np.int32)
    wr = width + group
    low = np.uint64(0xFFFFFFFF)
    for i in range(1, m + 1):
        sub = mat[q[i - 1]]
        diag = 0
        e = NEG
        hleft = 0
        for c0 in range(0, n, group):  # one segment: c0 is 0-based in the slice (scan_lo is aligned)
            sbest = 0
            sj = 0
            for jj in range(c0 + 1, min(c0 + group, n) + 1):
                up = hrow[jj]
                f = max(up - oe, frow[jj] - gap_extend)
                frow[jj] = f
                e = max(hleft - oe, e - gap_extend)
                h = max(diag + sub[t[jj - 1]], e, f, 0)
                diag = up
                hrow[jj] = h
                hleft = h
                if h > sbest:
                    sbest = h
                    sj = jj
            g0 = scan_lo + c0
            if sbest > 0 and own_lo <= g0 < own_hi:
                dd = g0 + 1 - i + m
                band = dd // width
                lin = i * wr + (dd - band * width) + (sj - 1 - c0)
                key = (np.uint64(sbest) << np.uint64(32)) | (low - np.uint64(lin))
                if key > keys[band]:
                    keys[band] = key


def scan_section(query: np.ndarray, target: np.ndarray, section: Section, rule: BandRule, scoring: Scoring) -> tuple[BandKeys, float]:
    """Band keys of the cells ``section`` owns, and the seconds the scan took."""
    keys = np.zeros(rule.n_bands(target.size), np.uint64)
    q = np.require(query, np.uint8, ["C", "W"])
    t = np.require(target[section.scan_lo : section.own_hi], np.uint8, ["C", "W"])
    mat = np.require(scoring.matrix, np.int32, ["C", "W"])
    start = time.perf_counter()
    if section.own_hi > section.own_lo:
        _scan(q, t, mat, scoring.gap_open, scoring.gap_extend, rule.width, GROUP, section.scan_lo, section.own_lo, section.own_hi, keys)
    return BandKeys.from_dense(keys), time.perf_counter() - start
