"""The query profile the scan kernels (``kernels/sw_scan.cu``) read, built on the host: pure numpy,
so that the tests that run the kernels' source on the CPU build it as the CUDA backend does."""

from __future__ import annotations

import numpy as np

from .kernel_abi import PAD_RESIDUE, PROFILE_ROWS
from .scoring import Scoring

#: Profile score of padding: query columns past the query's end, and the rows of codes
#: the alphabet does not use (the padding residue's among them).
PAD_SCORE = -1024


def build_profile(query: np.ndarray, scoring: Scoring, cols: int, r: int) -> np.ndarray:
    """``[PROFILE_ROWS, qpad]`` int16 for passes of ``cols`` columns, ``r`` per thread: S(query[j], r)
    + open + extend (the kernels keep H - oe, see sw_scan.cu) in row r; padding scores PAD_SCORE.

    Within a pass, a thread's ``r`` columns are stored as blocks of 8 interleaved across the
    pass's threads (block k of thread t at ``(k * threads + t) * 8``), so that each 16-byte
    load of a warp reads whole cache lines: with thread-contiguous columns a warp's load
    touches every 32-byte sector only half.
    """
    n_passes = max(1, -(-query.size // cols))
    prof = np.full((PROFILE_ROWS, n_passes * cols), PAD_SCORE, dtype=np.int16)
    n = scoring.alphabet.size
    if n > PAD_RESIDUE:
        raise ValueError(f"{scoring.alphabet.name}: {n} residue codes, the scan kernels hold {PAD_RESIDUE}")
    prof[:n, : query.size] = scoring.matrix[query.astype(np.intp)].T[:n] + scoring.first_gap_cost
    threads = cols // r
    blocks = prof.reshape(PROFILE_ROWS, n_passes, threads, r // 8, 8).transpose(0, 1, 3, 2, 4)
    return np.ascontiguousarray(blocks).reshape(PROFILE_ROWS, n_passes * cols)
