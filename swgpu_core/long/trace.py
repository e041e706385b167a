"""Traceback of align-long end points over only the cells each alignment needs.

For an end point ``(ie, je)`` with score ``S`` the CPU reference passes of
:mod:`swgpu_core.align.traceback` run on a window ending at the end point: the reverse
scan (anchored at the end cell) over the last ``W`` query rows and target columns finds
the start, then the region traceback (checkpointed strips, bounded memory) rebuilds the
path inside the start-end rectangle. ``W`` starts at 256 and grows 4-fold until the
window holds an optimal path, so the work is about the alignment's own area rather than
the table's; a window wider than ``2 * max_length`` means the alignment is longer than
the sections assumed, which is reported, never silently truncated.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..align.traceback import PairTrace, TracebackError, region_ops, reverse_start, strip_rows
from ..errors import InputError
from ..scoring import Scoring
from .endpoints import EndPoint

FIRST_WINDOW = 256


def trace_end_point(query: np.ndarray, target: np.ndarray, end: EndPoint, scoring: Scoring, max_length: int) -> PairTrace:
    """The alignment of score ``end.score`` ending at ``(end.qend, end.send)``."""
    mat = np.require(scoring.matrix, np.int32, ["C", "W"])
    go, ge = scoring.gap_open, scoring.gap_extend
    ie, je, score = end.qend, end.send, end.score
    window = FIRST_WINDOW
    cap = max(FIRST_WINDOW, 2 * max_length)
    while True:
        i_lo, j_lo = max(0, ie - window), max(0, je - window)
        q = np.require(query[i_lo:ie], np.uint8, ["C", "W"])
        t = np.require(target[j_lo:je], np.uint8, ["C", "W"])
        i0, j0 = reverse_start(q, t, mat, go, ge, ie - i_lo, je - j_lo, score)
        if i0 == -2:
            raise InputError(
                f"an alignment ending at query {ie}, target {je} scores more than the scan found ({score}): "
                "it is longer than --max-alignment-length; raise it"
            )
        if i0 > 0:
            break
        if i_lo == 0 and j_lo == 0:
            raise TracebackError(f"no alignment of score {score} ends at query {ie}, target {je}")
        if window >= cap:
            raise InputError(f"the alignment ending at query {ie}, target {je} is longer than --max-alignment-length {max_length}; raise it")
        window = min(window * 4, cap)
    h, w = ie - i_lo - i0 + 1, je - j_lo - j0 + 1
    ops = np.empty(h + w, np.uint8)
    n, total = region_ops(q, t, mat, go, ge, i0, ie - i_lo, j0, je - j_lo, strip_rows(h, w), ops)
    if n < 0 or total != score:
        raise TracebackError(f"region traceback failed at query {ie}, target {je} (region score {total}, expected {score})")
    return PairTrace(int(score), int(i0 + i_lo), int(ie), int(j0 + j_lo), int(je), ops[:n][::-1].copy())


def trace_end_points(
    query: np.ndarray, target: np.ndarray, ends: Sequence[EndPoint], scoring: Scoring, max_length: int, threads: int = 0
) -> list[PairTrace]:
    """Trace every end point, on all cores (the numba passes release the GIL)."""
    threads = threads or len(os.sched_getaffinity(0))
    one = lambda e: trace_end_point(query, target, e, scoring, max_length)  # noqa: E731
    if threads <= 1 or len(ends) < 2:
        return [one(e) for e in ends]
    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(one, ends))
