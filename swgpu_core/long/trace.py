"""Traceback of align-long end points over only the cells each alignment needs.

For an end point ``(ie, je)`` with score ``S`` the reference passes of
:mod:`swgpu_core.align.traceback` run on a window ending at the end point: the reverse
scan (anchored at the end cell) over the last ``W`` query rows and target columns finds
the start, then the region traceback (checkpointed strips, bounded memory) rebuilds the
path inside the start-end rectangle. ``W`` runs 256, 1024, ... (4-fold) until the
window holds an optimal path, from the first window whose size can reach the score
(:func:`first_window`), so the work is about the alignment's own area rather than
the table's; a window wider than ``2 * max_length`` means the alignment is longer than
the sections assumed, which is reported, never silently truncated.

The CPU traces one end point per thread (:func:`trace_end_points`); the GPU
(:func:`trace_on_gpu`, which the CUDA engine of :mod:`swgpu_core.engine` calls) traces all
end points' windows in one batch of the kernels of ``kernels/traceback.cu`` in anchored
mode, then re-runs only the windows that must grow; several GPUs share the end points.
Both give the same traces and raise the same error (that of the first failing end point).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from types import ModuleType

import numpy as np

from ..align.traceback import PairTrace, TracebackError, region_ops, reverse_start, strip_rows
from ..cores import cpu_threads
from ..errors import InputError
from ..kernel_abi import Status
from ..scoring import Scoring
from .endpoints import EndPoint

FIRST_WINDOW = 256


def window_cap(max_length: int) -> int:
    """The widest window tried: an alignment needing more is longer than the sections assumed."""
    return max(FIRST_WINDOW, 2 * max_length)


def first_window(end: EndPoint, scoring: Scoring, max_length: int) -> int:
    """The first window of the sequence 256, 1024, ... (:func:`grown_window`'s) that can hold
    the start of ``end``'s alignment; the traceback starts there and finds what it would have
    found from 256.

    Why the windows before it hold no start: an alignment that starts with the pair
    ``(i, j)`` and ends with ``(end.qend, end.send)`` inside a window has at most as many
    aligned pairs as the window has rows or columns (``min(W, qend, send)``), each scoring at
    most the matrix's best entry, and gaps cost nothing or more. Where that bound is below
    ``end.score``, no cell of the window reaches the score: the reverse scan would report no
    start (never a score above it) and the window would grow. So skipping such windows
    changes no result, including which of several co-optimal starts is found. The skip
    stops where the window would stop growing anyway (at the table's corner or at
    :func:`window_cap`), so the errors are those of the full sequence. A 10^4 DNA alignment
    starts at 16,384 instead of running three futile rounds; a 10^5 one at 262,144."""
    best = int(np.max(scoring.matrix))
    window = FIRST_WINDOW
    if best <= 0 or scoring.gap_open < 0 or scoring.gap_extend < 0:
        return window
    pairs_needed = -(-end.score // best)
    cap = window_cap(max_length)
    while min(window, end.qend, end.send) < pairs_needed and window < cap and not (end.qend <= window and end.send <= window):
        window = min(window * 4, cap)
    return window


def scores_above(end: EndPoint) -> InputError:
    """The error for a reverse scan that finds a start scoring more than ``end.score``: the
    scan saw only part of an alignment ending there (its section started inside it)."""
    return InputError(
        f"an alignment ending at query {end.qend}, target {end.send} scores more than the scan found ({end.score}): "
        "it is longer than --max-alignment-length; raise it"
    )


def region_failed(end: EndPoint, region_score: int) -> TracebackError:
    """The error for a region pass whose path does not score ``end.score``: pass 3 and
    pass 2 disagree, a bug on one side."""
    return TracebackError(
        f"region traceback failed at query {end.qend}, target {end.send} (region score {region_score}, expected {end.score})"
    )


def grown_window(end: EndPoint, window: int, max_length: int) -> int:
    """The next window after one of width ``window`` held no start of ``end``'s alignment.

    Raises when none is left: the window already covered the table's corner (so no such
    alignment exists), or it reached :func:`window_cap`.
    """
    if end.qend <= window and end.send <= window:
        raise TracebackError(f"no alignment of score {end.score} ends at query {end.qend}, target {end.send}")
    cap = window_cap(max_length)
    if window >= cap:
        raise InputError(
            f"the alignment ending at query {end.qend}, target {end.send} is longer than --max-alignment-length {max_length}; raise it"
        )
    return min(window * 4, cap)


def trace_end_point(query: np.ndarray, target: np.ndarray, end: EndPoint, scoring: Scoring, max_length: int) -> PairTrace:
    """The alignment of score ``end.score`` ending at ``(end.qend, end.send)``."""
    mat = np.require(scoring.matrix, np.int32, ["C", "W"])
    go, ge = scoring.gap_open, scoring.gap_extend
    ie, je, score = end.qend, end.send, end.score
    window = first_window(end, scoring, max_length)
    while True:
        i_lo, j_lo = max(0, ie - window), max(0, je - window)
        q = np.require(query[i_lo:ie], np.uint8, ["C", "W"])
        t = np.require(target[j_lo:je], np.uint8, ["C", "W"])
        i0, j0 = reverse_start(q, t, mat, go, ge, ie - i_lo, je - j_lo, score)
        if i0 == -2:
            raise scores_above(end)
        if i0 > 0:
            break
        window = grown_window(end, window, max_length)
    h, w = ie - i_lo - i0 + 1, je - j_lo - j0 + 1
    ops = np.empty(h + w, np.uint8)
    n, total = region_ops(q, t, mat, go, ge, i0, ie - i_lo, j0, je - j_lo, strip_rows(h, w), ops)
    if n < 0 or total != score:
        raise region_failed(end, total)
    return PairTrace(int(score), int(i0 + i_lo), int(ie), int(j0 + j_lo), int(je), ops[:n][::-1].copy())


def trace_end_points(
    query: np.ndarray,
    target: np.ndarray,
    ends: Sequence[EndPoint],
    scoring: Scoring,
    max_length: int,
    threads: int = 0,
) -> list[PairTrace]:
    """Trace every end point, in order, on ``threads`` CPU cores (0: all; the numba passes
    release the GIL)."""
    threads = cpu_threads(threads)
    one = lambda e: trace_end_point(query, target, e, scoring, max_length)  # noqa: E731
    if threads <= 1 or len(ends) < 2:
        return [one(e) for e in ends]
    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(one, ends))


def trace_on_gpu(
    gpu: ModuleType,
    query: np.ndarray,
    target: np.ndarray,
    ends: Sequence[EndPoint],
    scoring: Scoring,
    max_length: int,
    devices: Sequence[int] = (0,),
) -> list[PairTrace]:
    """:func:`trace_end_point` for all ``ends`` in rounds: each round packs the current window
    of every end point still open and traces them in one anchored batch (reverse scan from
    the end cell, then the region pass of those whose start was found); the rest go to the
    next round with 4-fold windows. Errors are kept per end point and the first in order is
    raised, as the CPU's ordered map raises it. ``gpu`` is :mod:`swgpu_core.gpu.traceback`
    (or a stand-in with its ``pack_sequences``, ``align_packed`` and ``on_device``).

    With several ``devices`` the end points are dealt to them round robin (ranked by score,
    so each GPU gets a like share) and each GPU runs its rounds in a thread of its own: a
    long query's alignments are large (200 of about 10^5 x 10^5 cells took 98.8 s on one
    H200), and each end point's trace is the same whichever GPU makes it."""
    devices = list(devices) or [0]
    shares = [s for s in (np.arange(k, len(ends), len(devices)) for k in range(len(devices))) if s.size]
    if not shares:  # no end point: nothing to trace, no GPU to ask
        return []
    traces: list[PairTrace | None] = [None] * len(ends)
    errors: dict[int, Exception] = {}

    def run(device: int, share: np.ndarray) -> None:
        with gpu.on_device(device):
            _rounds(gpu, query, target, ends, share, scoring, max_length, traces, errors)

    if len(shares) == 1:
        run(devices[0], shares[0])
    else:
        with ThreadPoolExecutor(len(shares), thread_name_prefix="swgpu-trace") as pool:
            list(pool.map(run, devices, shares))  # each share's own slots of traces and errors; raises a thread's exception
    if errors:
        raise errors[min(errors)]
    return traces  # type: ignore[return-value]  # all set when no error was kept


def _rounds(
    gpu: ModuleType,
    query: np.ndarray,
    target: np.ndarray,
    ends: Sequence[EndPoint],
    todo: np.ndarray,
    scoring: Scoring,
    max_length: int,
    traces: list[PairTrace | None],
    errors: dict[int, Exception],
) -> None:
    """:func:`trace_on_gpu`'s rounds for the end points ``todo`` (indices into ``ends``) on the
    current device: their traces into ``traces``, their errors into ``errors``."""
    qend = np.fromiter((e.qend for e in ends), np.int64, len(ends))
    send = np.fromiter((e.send for e in ends), np.int64, len(ends))
    score = np.fromiter((e.score for e in ends), np.int64, len(ends))
    window = np.zeros(len(ends), np.int64)
    window[todo] = [first_window(ends[p], scoring, max_length) for p in todo.tolist()]
    while todo.size:
        i_lo = np.maximum(0, qend[todo] - window[todo])
        j_lo = np.maximum(0, send[todo] - window[todo])
        rows, cols = qend[todo] - i_lo, send[todo] - j_lo
        packed = gpu.pack_sequences(
            [query[a:b] for a, b in zip(i_lo.tolist(), qend[todo].tolist())],
            [target[a:b] for a, b in zip(j_lo.tolist(), send[todo].tolist())],
        )
        res = gpu.align_packed(*packed, scoring, score[todo].astype(np.int32), end_cells=np.stack([rows, cols], axis=1))
        ok = np.flatnonzero(res.status == Status.OK)
        for k, t in zip(ok.tolist(), res.traces(ok)):
            a, b = int(i_lo[k]), int(j_lo[k])
            traces[todo[k]] = PairTrace(t.score, t.qstart + a, t.qend + a, t.sstart + b, t.send + b, t.ops)
        grow = []
        for k in np.flatnonzero(res.status != Status.OK).tolist():
            p, status = int(todo[k]), int(res.status[k])
            if status == Status.NO_START:
                try:
                    window[p] = grown_window(ends[p], int(window[p]), max_length)
                    grow.append(p)
                except (InputError, TracebackError) as exc:
                    errors[p] = exc
            elif status == Status.ABOVE:
                errors[p] = scores_above(ends[p])
            elif status == Status.BAD_REGION:
                errors[p] = region_failed(ends[p], int(res.region_score[k]))
            else:
                errors[p] = res.error(k, ends[p].score)
        todo = np.asarray(grow, np.int64)
