"""Batched traceback on the GPU: the kernels of ``kernels/traceback.cu`` through CuPy.

The answers equal the CPU reference (:func:`swgpu_core.align.traceback.traceback_pairs`)
bit for bit: the kernels run the same int32 recurrences and tie rules (see
``docs/traceback.md``). The work per call:

1. ``tb_ends`` (one warp per pair): the forward scan gives the best score and the end cell,
   the anchored reverse scan the start cell. Pairs are grouped by their rows per lane ``R``
   and team size ``W`` (:func:`swgpu_core.align.gpu_plan.layout`: the least padding on one
   warp when the pairs fill the GPU; the least latency, on a team of warps where that pays,
   when they are few or one of them is huge), longest first, in launches of at most
   :data:`PAIRS_PER_LAUNCH`. Each group's launches run on a stream of their own, beside the
   other groups' (on one stream, a group's longest pairs waited for every launch before
   theirs; teams, ``tb_ends_team``, a block per pair, would have held up the launches after
   them). With
   ``end_cells`` (align-long's end points, whose scores its own scan found) the forward
   scan is skipped and the reverse scan is anchored at the given cell.
2. On the host, each rectangle's direction nibbles are counted exactly. A rectangle over
   the per-pair budget (by default half a launch: a quarter of the device memory
   available) is traced by the CPU reference's pass 3 (checkpointed strips) from the GPU's
   ends, so a huge pair costs time, never a wrong answer or an out-of-memory. The others go
   in launches of at most ``launch_bytes`` of nibbles (by default half the device memory
   available); a rectangle traced in strips counts its checkpoints and one strip.
3. ``tb_region`` (one warp per pair, or ``tb_region_team``) stores the nibbles, ``tb_walk``
   (one thread per pair) follows them and writes each path. Huge rectangles that would not
   all fit one launch are traced in strips instead
   (:func:`~swgpu_core.align.gpu_plan.traced_in_strips`; ``tb_strip``, ``tb_walk_strip``: the
   kernel source derives why the paths are the same), holding one team pass of nibbles at a
   time, so that they run at once.

:func:`align_packed` is the low-level entry (residues back to back, offsets, optional
expected scores; results as flat arrays, no Python object per pair);
:func:`traceback_pairs` traces pairs whose score a search found and :func:`align_pairs`
pairs whose score is not known yet (``swgpu pairs``); the CUDA engine
(:mod:`swgpu_core.engine`) calls them. Status codes, output fields and the
kernels' warps per block are :mod:`swgpu_core.kernel_abi`'s.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field

import cupy as cp
import numpy as np

from .. import kernel_abi
from ..align import traceback as cpu
from ..align.gpu_plan import (
    ROWS_PER_LANE,
    latency,
    launch_groups,
    launch_order,
    layout,
    nibble_bytes,
    passes,
    strip_bytes,
    team_fits,
    team_shared_bytes,
    traced_in_strips,
)
from ..align.gpu_plan import launch_bytes as planned_launch_bytes
from ..align.traceback import AlignedPairs, PairTask, PairTasks, PairTrace, TracebackError, TracedPaths, trace_region
from ..errors import BackendUnavailable
from ..kernel_abi import MAX_CODES, TB_WALKING, EndField, Status, WalkField
from ..per_device import PerDevice
from ..scoring import Scoring
from .device import geometry
from .kernels import load_functions

#: Warps (pairs) per block of each R, as in ``Warps<R>`` of the kernel source.
WARPS = kernel_abi.TB_WARPS
#: Pairs per ``tb_ends`` launch: about ten waves of an H100 at full occupancy.
PAIRS_PER_LAUNCH = 1 << 15


_LOADED: PerDevice[dict[str, cp.RawKernel]] = PerDevice()  # per device; align-long's GPUs trace from threads of their own


def _functions(device_id: int) -> dict[str, cp.RawKernel]:
    """The kernels, loaded once per device (a loaded module belongs to one device's context);
    a thread that comes while another loads them waits for that one (:class:`PerDevice`)."""

    def load() -> dict[str, cp.RawKernel]:
        source = kernel_abi.kernel_source("traceback.cu")
        kinds = ("tb_ends", "tb_ends_team", "tb_region", "tb_region_team", "tb_strip", "tb_strip_team")
        names = [f"{k}<{r}>" for k in kinds for r in ROWS_PER_LANE] + ["tb_walk", "tb_walk_strip"]
        with cp.cuda.Device(device_id):
            return load_functions(source, ("-std=c++17", *kernel_abi.compile_options()), names)

    return _LOADED.once(device_id, load)


def _kernel(name: str) -> cp.RawKernel:
    """Kernel ``name`` of the current device."""
    return _functions(cp.cuda.Device().id)[name]


def on_device(device: int) -> cp.cuda.Device:
    """The context manager under which :func:`align_packed` runs on GPU ``device``."""
    return cp.cuda.Device(device)


@dataclass
class PackedTraces:
    """Results of :func:`align_packed`, one entry per pair in input order.

    ``ops[ops_start[k] : ops_start[k] + ops_len[k]]`` is pair ``k``'s path (OP_* codes,
    start to end) when ``status[k] == Status.OK``; ``region_score`` explains a
    ``Status.BAD_REGION``. ``on_cpu`` counts pairs whose pass 3 ran on the CPU, ``in_strips``
    those traced in strips.
    """

    status: np.ndarray
    score: np.ndarray
    qstart: np.ndarray
    qend: np.ndarray
    sstart: np.ndarray
    send: np.ndarray
    region_score: np.ndarray
    ops: np.ndarray
    ops_start: np.ndarray
    ops_len: np.ndarray
    on_cpu: int = 0
    in_strips: int = 0
    kernel_seconds: dict[str, float] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.status.size)

    def trace(self, k: int) -> PairTrace:
        return self.traces(np.array([k]))[0]

    def paths(self, which: np.ndarray) -> TracedPaths:
        """The traced pairs ``which`` (all ``Status.OK``), in that order, their paths joined
        out of their slots."""
        ends = [a[which] for a in (self.score, self.qstart, self.qend, self.sstart, self.send)]
        return TracedPaths.gather(ends, self.ops, self.ops_start[which], self.ops_len[which])

    def traces(self, which: np.ndarray) -> list[PairTrace]:
        """:meth:`trace` of the pairs ``which``."""
        return list(self.paths(which))

    def error(self, k: int, expected: int | None = None) -> TracebackError | None:
        """The CPU reference's error for pair ``k`` (None when it traced)."""
        s = int(self.status[k])
        best = int(self.score[k])
        if s == Status.MISMATCH:
            return TracebackError(f"traceback finds best score {best} where the search reported {expected}")
        if s == Status.NO_ALIGNMENT:
            return TracebackError("no positive-scoring local alignment to trace back")
        if s in (Status.NO_START, Status.ABOVE):  # one error for both in the CPU reference
            return TracebackError(f"reverse scan found no start for score {best} ending at query {self.qend[k]}, subject {self.send[k]}")
        if s == Status.BAD_REGION:
            return TracebackError(f"region traceback failed (region score {self.region_score[k]}, expected {best})")
        return None


def kernels_fit(scoring: Scoring) -> bool:
    """Whether the kernels hold this matrix (int8 scores in a shared-memory table of 32 codes)."""
    mat = np.asarray(scoring.matrix)
    return mat.shape[0] <= MAX_CODES and mat.min() >= -128 and mat.max() <= 127


def _device_matrix(scoring: Scoring) -> cp.ndarray | None:
    """The matrix as int8 for the kernels, or None when it does not fit them."""
    return cp.asarray(np.ascontiguousarray(scoring.matrix, dtype=np.int8)) if kernels_fit(scoring) else None


def _boundary(rows: np.ndarray, cols: np.ndarray, r: int) -> tuple[cp.ndarray | None, cp.ndarray]:
    """Per-pair column buffers between passes (only when some pair needs two passes)."""
    offs = np.zeros(rows.size, np.int64)
    if rows.size == 0 or rows.max() <= 32 * r:
        return None, cp.asarray(offs)
    sizes = cols.astype(np.int64) + 1
    offs[1:] = np.cumsum(sizes)[:-1]
    return cp.empty((int(sizes.sum()), 2), np.int32), cp.asarray(offs)


class _Timer:
    """Device time per kernel name, from CUDA events around each launch, read at the end
    (reading them launch by launch would stall the host between launches)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, cp.cuda.Event, cp.cuda.Event]] = []

    def __call__(self, name: str, fn: cp.RawKernel, grid: int, block: int, args: tuple, shared_mem: int = 0) -> None:
        """Launch ``fn`` on the current stream, between two events of it."""
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn((grid,), (block,), args, shared_mem=shared_mem)
        stop.record()
        self.events.append((name, start, stop))

    def totals(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for name, start, stop in self.events:
            stop.synchronize()
            out[name] = out.get(name, 0.0) + cp.cuda.get_elapsed_time(start, stop) / 1e3
        return out


def align_packed(
    residues: np.ndarray,
    qoff: np.ndarray,
    qlen: np.ndarray,
    soff: np.ndarray,
    slen: np.ndarray,
    scoring: Scoring,
    expected: np.ndarray | None = None,
    *,
    end_cells: np.ndarray | None = None,
    pair_budget: int | None = None,
    launch_bytes: int | None = None,
    team_warps: int | None = None,
    strip_nibbles: int | None = None,
) -> PackedTraces:
    """Trace pair ``k`` = (residues[qoff[k]:+qlen[k]], residues[soff[k]:+slen[k]]) for all k.

    With ``expected``, a pair whose best score differs gets ``Status.MISMATCH`` (the search
    and the traceback disagree); without, the best score is found here.

    ``end_cells`` (anchored mode, needs ``expected``): per pair the 1-based ``(qend, send)``
    of an alignment scoring ``expected[k]``, traced from there without the forward scan,
    whose best cell may be another one. The reverse scan then reports ``Status.NO_START``
    when no start lies inside the pair (align-long grows its window) and ``Status.ABOVE``
    when an alignment ending there scores more than ``expected[k]``.

    Rows per lane, teams and the launches' size follow :mod:`swgpu_core.align.gpu_plan` (a call
    of few pairs is latency-bound; ``launch_bytes`` None: half the device memory available).
    ``strip_nibbles`` (tests): every rectangle of more nibble bytes is traced in strips (0:
    every one); None: :func:`~swgpu_core.align.gpu_plan.traced_in_strips` decides. ``pair_budget``: the most device bytes of one rectangle traced on the GPU (its
    nibbles, or in strips its checkpoints and one strip); larger ones run pass 3 on the CPU.
    None: half of ``launch_bytes``, which holds such a rectangle whether the launches of teams
    and of one-warp pairs run side by side (each then has half) or not. Until 2026-11-28 it
    was 256 MiB, which sent every alignment longer than about 23,000 x 23,000 to one CPU
    core: align-long with one 10^5 DNA alignment took 78.9 s instead of 14.2 s (one H200,
    bench/RESULTS.md, thirty-fifth session).
    ``team_warps`` (tests and benchmarks): every pair on a team of that many warps (1: every
    pair on one warp), at the planned R for that team size, instead of the plan's choice.
    """
    n = int(np.size(qoff))
    qoff = np.asarray(qoff, np.int64)
    soff = np.asarray(soff, np.int64)
    qlen = np.asarray(qlen, np.int32)
    slen = np.asarray(slen, np.int32)
    if n and (qlen.min() < 1 or slen.min() < 1):
        raise TracebackError("a pair has an empty sequence")
    if end_cells is not None:
        end_cells = np.ascontiguousarray(end_cells, np.int32).reshape(n, 2)
        if expected is None:
            raise ValueError("end_cells need the expected scores")
        if n and ((end_cells < 1).any() or (end_cells[:, 0] > qlen).any() or (end_cells[:, 1] > slen).any()):
            raise ValueError("an end cell lies outside its pair")
    ends = np.zeros((n, len(EndField)), np.int32)
    f = EndField
    out = PackedTraces(
        status=ends[:, f.STATUS],
        score=ends[:, f.SCORE],
        qstart=ends[:, f.Q_START],
        qend=ends[:, f.Q_END],
        sstart=ends[:, f.S_START],
        send=ends[:, f.S_END],
        region_score=np.zeros(n, np.int32),
        ops=np.zeros(0, np.uint8),
        ops_start=np.zeros(n, np.int64),
        ops_len=np.zeros(n, np.int32),
    )
    if n == 0:
        return out
    mat = _device_matrix(scoring)
    if mat is None:
        raise BackendUnavailable(f"the GPU traceback holds matrices of at most {MAX_CODES} codes and int8 scores, not {scoring.describe()}")
    timer = _Timer()
    device = cp.cuda.Device().id
    k = _Kernels(
        cp.asarray(np.ascontiguousarray(residues, np.uint8)),
        mat,
        scoring,
        timer,
        geometry(device).sms,
        _block_shared_bytes(device),
        team_warps,
    )
    _ends(k, qoff, qlen, soff, slen, expected, end_cells, ends)
    if launch_bytes is None:  # what the device has free, and what CuPy's pool holds unused
        launch_bytes = planned_launch_bytes(cp.cuda.runtime.memGetInfo()[0] + cp.get_default_memory_pool().free_bytes())
    pair_budget = launch_bytes // 2 if pair_budget is None else pair_budget
    _regions(k, residues, qoff, qlen, soff, slen, out, pair_budget, launch_bytes, strip_nibbles)
    out.kernel_seconds = timer.totals()
    return out


@dataclass
class _Kernels:
    """What every launch of one :func:`align_packed` call shares."""

    residues: cp.ndarray
    matrix: cp.ndarray
    scoring: Scoring
    timer: _Timer
    sms: int  # the GPU's multiprocessors: which pairs take rows per lane for latency (align.gpu_plan)
    shared_bytes: int | None  # the shared memory a block may have on the GPU: which teams fit
    team_warps: int | None = None  # align_packed's: a team size forced on every pair
    streams: dict = field(default_factory=dict)  # the side streams (cupy.cuda.Stream) by key, as launches ask for them
    held: list = field(default_factory=list)  # what the launches queued on side streams use

    @property
    def scalars(self) -> tuple[np.int32, np.int32, np.int32]:
        return np.int32(self.matrix.shape[0]), np.int32(self.scoring.gap_open), np.int32(self.scoring.gap_extend)

    def layout(self, rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per pair (R, W): the plan's, or every pair on ``team_warps`` warps at the R of its
        least latency on them."""
        n_codes = int(self.matrix.shape[0])
        if self.team_warps is None:
            return layout(rows, cols, self.sms, self.shared_bytes, n_codes)
        fit = [r for r in ROWS_PER_LANE if team_fits(n_codes, r, self.team_warps, self.shared_bytes)]
        costs = np.stack([latency(rows, cols, r, self.team_warps) for r in fit])
        return np.asarray(fit, np.int64)[np.argmin(costs, axis=0)], np.full(np.size(rows), self.team_warps, np.int64)

    def launch(self, kind: str, r: int, w: int, n: int, args: tuple, apart: object = None) -> None:
        """``kind`` ("tb_ends", "tb_region" or "tb_strip") of ``n`` pairs: one warp per pair (w = 1), or a
        block per pair with a team of ``w`` warps; on the current stream, or with ``apart`` on the
        side stream of that key, so that it runs beside the launches of other streams."""
        if w == 1:
            self._run(apart, kind, _kernel(f"{kind}<{r}>"), -(-n // WARPS[r]), 32 * WARPS[r], args)
            return
        fn = _kernel(f"{kind}_team<{r}>")
        shared = team_shared_bytes(int(self.matrix.shape[0]), r, w)
        fn.max_dynamic_shared_size_bytes = shared
        self._run(apart, kind, fn, n, 32 * w, args, shared)

    def walk(self, apart: object, n: int, args: tuple, kind: str = "tb_walk") -> None:
        """``kind`` (``tb_walk``, ``tb_walk_strip``) of ``n`` pairs, on the stream of their region pass."""
        self._run(apart, kind, _kernel(kind), -(-n // 128), 128, args)

    def _run(self, apart: object, name: str, fn: cp.RawKernel, grid: int, block: int, args: tuple, shared: int = 0) -> None:
        if apart is None:
            self.timer(name, fn, grid, block, args, shared)
            return
        if apart not in self.streams:  # after what the current stream has queued: the launches read it
            self.streams[apart] = cp.cuda.Stream(non_blocking=True)
            self.streams[apart].wait_event(cp.cuda.get_current_stream().record())
        # the arrays stay referenced until join(): freed earlier, CuPy's pool could hand their
        # memory to the current stream while a side stream still works on it
        self.held.append(args)
        with self.streams[apart]:
            self.timer(name, fn, grid, block, args, shared)

    def join(self) -> None:
        """The current stream waits for everything queued on the side streams."""
        current = cp.cuda.get_current_stream()
        for stream in self.streams.values():
            current.wait_event(stream.record())
        self.held.clear()


@functools.cache
def _block_shared_bytes(device_id: int) -> int:
    """The shared memory a block of ``device_id`` may opt into (227 KiB on an H100)."""
    return int(cp.cuda.runtime.getDeviceProperties(device_id)["sharedMemPerBlockOptin"])


def _ends(k: _Kernels, qoff, qlen, soff, slen, expected, end_cells, ends: np.ndarray) -> None:
    """Passes 1 and 2 (or 2 alone from ``end_cells``): launches grouped by rows per lane and
    team size of the rows and columns scanned, all queued, one download at the end."""
    rows, cols = (qlen, slen) if end_cells is None else (end_cells[:, 0], end_cells[:, 1])
    r_pair, w_pair = k.layout(rows, cols)
    perm = launch_order(rows, cols, r_pair, w_pair)
    rows_p, cols_p = rows[perm], cols[perm]
    d_qoff, d_qlen, d_soff, d_slen = (cp.asarray(a[perm]) for a in (qoff, qlen, soff, slen))
    d_exp = None if expected is None else cp.asarray(np.asarray(expected, np.int32)[perm])
    d_given = None if end_cells is None else cp.asarray(end_cells[perm])
    d_ends = cp.empty((perm.size, len(EndField)), np.int32)
    first = 0
    for r, w, group in launch_groups(r_pair, w_pair, perm):
        last = first + group.size
        for k0 in range(first, last, PAIRS_PER_LAUNCH):
            sl = slice(k0, min(k0 + PAIRS_PER_LAUNCH, last))
            bnd, bnd_off = _boundary(rows_p[sl], cols_p[sl], r * w)
            args = (
                k.residues,
                d_qoff[sl],
                d_qlen[sl],
                d_soff[sl],
                d_slen[sl],
                np.int32(sl.stop - sl.start),
                k.matrix,
                *k.scalars,
                None if d_exp is None else d_exp[sl],
                None if d_given is None else d_given[sl],
                bnd,
                bnd_off,
                d_ends[sl],
            )
            k.launch("tb_ends", r, w, sl.stop - sl.start, args, apart=(r, w))  # the groups side by side
        first = last
    k.join()
    ends[perm] = d_ends.get()


def _regions(
    k: _Kernels, residues, qoff, qlen, soff, slen, out: PackedTraces, pair_budget: int, launch_bytes: int, strip_nibbles: int | None
) -> None:
    """Pass 3 and the walk for the traced pairs: on the GPU in launches of at most
    ``launch_bytes`` of device memory (half each for the teams and the one-warp pairs when a
    call has both: their launches run side by side), in strips those that
    :func:`~swgpu_core.align.gpu_plan.traced_in_strips` names (or ``strip_nibbles`` says), on
    the CPU those whose device memory exceeds ``pair_budget``. The
    paths land in one host buffer (``out.ops``), each pair's in a slot of height + width bytes."""
    ok = np.flatnonzero(out.status == Status.OK)
    heights = (out.qend[ok] - out.qstart[ok] + 1).astype(np.int64)
    widths = (out.send[ok] - out.sstart[ok] + 1).astype(np.int64)
    r_reg, w_reg = k.layout(heights, widths)
    nbytes = nibble_bytes(heights, widths, r_reg)
    in_strips = traced_in_strips(nbytes, pair_budget, launch_bytes) if strip_nibbles is None else nbytes > strip_nibbles
    cost = np.where(in_strips, strip_bytes(heights, widths, r_reg, w_reg), nbytes)  # device bytes while traced
    on_gpu = cost <= pair_budget
    out.ops = np.empty(int((heights + widths).sum()), np.uint8)
    order = launch_order(heights, widths, r_reg, w_reg)  # teams first, longest first within each group
    order = order[on_gpu[order]]
    both = bool((w_reg[order] > 1).any() and (w_reg[order] == 1).any())
    budget = launch_bytes // 2 if both else launch_bytes
    base = 0
    pending: list[_RegionLaunch | _StripLaunch] = []  # launches on side streams, read once those are joined
    pending_bytes = 0
    for strips in (False, True):
        for r, w, mine in launch_groups(r_reg, w_reg, order[in_strips[order] == strips]):
            start = 0
            while start < mine.size:
                total = np.cumsum(cost[mine[start:]])
                stop = start + max(1, int(np.searchsorted(total, budget, side="right")))
                part = mine[start:stop]
                part_bytes = int(cost[part].sum())
                queued = strips or w > 1
                if queued and pending and pending_bytes + part_bytes > budget:
                    # the memory of queued launches stays allocated until they are read: at most
                    # one budget of it at a time (200 alignments of 10^5 x 10^5, 5 GB of nibbles
                    # each, ran out of an H200's memory otherwise)
                    _finish(k, pending, out)
                    pending_bytes = 0
                kind = _StripLaunch if strips else _RegionLaunch
                launch = kind(k, ok[part], heights[part], widths[part], r, w, out, qoff, soff, base)
                base += launch.size
                if queued:
                    pending.append(launch)
                    pending_bytes += part_bytes
                else:
                    launch.finish(out)
                start = stop
    _finish(k, pending, out)
    for p in ok[~on_gpu].tolist():
        q = residues[qoff[p] : qoff[p] + qlen[p]]
        s = residues[soff[p] : soff[p] + slen[p]]
        try:
            t = trace_region(q, s, k.scoring, int(out.score[p]), int(out.qstart[p]), int(out.qend[p]), int(out.sstart[p]), int(out.send[p]))
        except TracebackError:
            out.status[p] = Status.BAD_REGION
            continue
        out.ops[base : base + t.ops.size] = t.ops
        out.ops_start[p], out.ops_len[p] = base, t.ops.size
        base += t.ops.size
    out.on_cpu = int(np.count_nonzero(~on_gpu))
    out.in_strips = int(np.count_nonzero(in_strips & on_gpu))


def _finish(k: _Kernels, pending: list[_RegionLaunch], out: PackedTraces) -> None:
    """Join the side streams, read the ``pending`` launches' paths, and let go of them (their
    memory goes back to CuPy's pool once everything that used it has run)."""
    k.join()
    for launch in pending:
        launch.finish(out)
    pending.clear()


class _Paths:
    """The paths of one launch's ``pairs``: each pair's slot of height + width bytes in one device
    buffer, read back into ``out.ops`` from ``base`` by :meth:`finish`."""

    def __init__(self, pairs, heights, widths, out: PackedTraces, base: int) -> None:
        m = pairs.size
        self.rect = cp.asarray(np.stack([out.qstart[pairs], out.qend[pairs], out.sstart[pairs], out.send[pairs]], axis=1).astype(np.int32))
        self.score = cp.empty(m, np.int32)
        self.slots = heights + widths
        self.ops_off = np.zeros(m, np.int64)
        self.ops_off[1:] = np.cumsum(self.slots)[:-1]
        self.size = int(self.slots.sum())
        self.d_ops = cp.empty(self.size, np.uint8)
        self.n_ops = cp.empty(m, np.int32)
        self.pairs, self.base = pairs, base

    def finish(self, out: PackedTraces) -> None:
        """The paths, their lengths and the region scores back; a path that left its region or
        scores otherwise than the ends marks its pair ``BAD_REGION``."""
        pairs, base = self.pairs, self.base
        self.d_ops.get(out=out.ops[base : base + self.size])
        got_n, got_score = self.n_ops.get(), self.score.get()
        out.region_score[pairs] = got_score
        bad = (got_n < 0) | (got_score != out.score[pairs])
        out.status[pairs[bad]] = Status.BAD_REGION
        out.ops_len[pairs] = np.where(bad, 0, got_n)
        out.ops_start[pairs] = base + self.ops_off + self.slots - out.ops_len[pairs]


def _offsets(sizes: np.ndarray) -> np.ndarray:
    """Where each of ``sizes`` starts when they lie back to back."""
    offs = np.zeros(sizes.size, np.int64)
    offs[1:] = np.cumsum(sizes)[:-1]
    return offs


class _RegionLaunch(_Paths):
    """Pass 3 and the walk for ``pairs`` (all of rows per lane ``r`` and team size ``w``), queued
    when made."""

    def __init__(self, k: _Kernels, pairs, heights, widths, r: int, w: int, out: PackedTraces, qoff, soff, base: int) -> None:
        super().__init__(pairs, heights, widths, out, base)
        m = pairs.size
        nbytes = nibble_bytes(heights, widths, r)
        d_dirs_off = cp.asarray(_offsets(nbytes))
        dirs = cp.empty(int(nbytes.sum()), np.uint8)
        bnd, bnd_off = _boundary(heights, widths, r * w)
        args = (k.residues, cp.asarray(qoff[pairs]), cp.asarray(soff[pairs]), self.rect, np.int32(m), k.matrix, *k.scalars, bnd, bnd_off,
                dirs, d_dirs_off, self.score)  # fmt: skip
        apart = (r, w) if w > 1 else None  # teams beside the one-warp launches, which read back as they go
        k.launch("tb_region", r, w, m, args, apart)
        walk = (self.rect, np.int32(m), np.int32(r), dirs, d_dirs_off, self.d_ops, cp.asarray(self.ops_off), self.n_ops)
        k.walk(apart, m, walk)


class _StripLaunch(_Paths):
    """Pass 3 and the walk in strips for ``pairs`` (all of rows per lane ``r`` and team size ``w``),
    queued when made: the checkpoints, then per team pass from the last, that pass's nibbles
    and the walk through them (``kernels/traceback.cu``, "strips")."""

    def __init__(self, k: _Kernels, pairs, heights, widths, r: int, w: int, out: PackedTraces, qoff, soff, base: int) -> None:
        super().__init__(pairs, heights, widths, out, base)
        m = pairs.size
        span = 32 * r * w
        n_passes = passes(heights, r * w)
        ckpt_rows = (n_passes - 1) * (widths + 1)
        ckpt = cp.empty((max(int(ckpt_rows.sum()), 1), 2), np.int32)
        strip = nibble_bytes(np.minimum(heights, span), widths, r)
        d_dirs_off = cp.asarray(_offsets(strip))
        dirs = cp.empty(int(strip.sum()), np.uint8)
        common = (k.residues, cp.asarray(qoff[pairs]), cp.asarray(soff[pairs]), self.rect, np.int32(m), k.matrix, *k.scalars, ckpt,
                  cp.asarray(_offsets(ckpt_rows)))  # fmt: skip
        apart = ("strips", r, w)
        k.launch("tb_strip", r, w, m, (*common, None, dirs, d_dirs_off, self.score), apart)  # every pass: checkpoints, H(ie, je)
        state = np.zeros((m, len(WalkField)), np.int32)
        state[:, WalkField.I], state[:, WalkField.J] = heights, widths
        d_state, d_ops_off = cp.asarray(state), cp.asarray(self.ops_off)
        self.n_ops = cp.full(m, TB_WALKING, np.int32)
        for step in range(int(n_passes.max())):  # the strips from the last: pass n_passes - 1 - step of each pair
            pass_of = cp.asarray((n_passes - 1 - step).astype(np.int32))
            k.launch("tb_strip", r, w, m, (*common, pass_of, dirs, d_dirs_off, self.score), apart)
            walk = (
                self.rect,
                np.int32(m),
                np.int32(r),
                np.int32(span),
                pass_of,
                dirs,
                d_dirs_off,
                self.d_ops,
                d_ops_off,
                d_state,
                self.n_ops,
            )
            k.walk(apart, m, walk, "tb_walk_strip")


def pack_sequences(queries: Sequence[np.ndarray], subjects: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
    """Residues back to back (each distinct array once) and the pairs' offsets and lengths."""
    where: dict[int, int] = {}
    parts: list[np.ndarray] = []
    size = 0

    def place(a: np.ndarray) -> int:
        nonlocal size
        key = id(a)
        if key not in where:
            where[key] = size
            parts.append(a)
            size += a.size
        return where[key]

    qoff = np.fromiter((place(a) for a in queries), np.int64, len(queries))
    soff = np.fromiter((place(a) for a in subjects), np.int64, len(subjects))
    qlen = np.fromiter((a.size for a in queries), np.int32, len(queries))
    slen = np.fromiter((a.size for a in subjects), np.int32, len(subjects))
    residues = np.concatenate(parts).astype(np.uint8, copy=False) if parts else np.zeros(0, np.uint8)
    return residues, qoff, qlen, soff, slen


def traceback_pairs(tasks: Sequence[PairTask] | PairTasks, scoring: Scoring, device: int | None = None, **budgets: int) -> TracedPaths:
    """The GPU twin of :func:`swgpu_core.align.traceback.traceback_pairs` (same results, same
    errors), on GPU ``device`` (None: the current one); the paths as arrays, as the kernels
    leave them (:class:`~swgpu_core.align.traceback.TracedPaths`)."""
    if not kernels_fit(scoring):
        return TracedPaths.of(cpu.traceback_pairs(tasks, scoring))
    if isinstance(tasks, PairTasks):  # packed already (a search's hits)
        packed = (tasks.residues, tasks.qoff, tasks.qlen, tasks.soff, tasks.slen)
        expected = tasks.score
    else:
        packed = pack_sequences([t.query for t in tasks], [t.subject for t in tasks])
        expected = np.fromiter((t.score for t in tasks), np.int64, len(tasks))
    if expected.size and (expected.min() < np.iinfo(np.int32).min or expected.max() > np.iinfo(np.int32).max):
        raise TracebackError("a search score does not fit 32 bits")
    with cp.cuda.Device(device):  # None: CuPy's current device
        res = align_packed(*packed, scoring, expected.astype(np.int32), **budgets)
    failed = np.flatnonzero(res.status != Status.OK)
    if failed.size:  # the first failure in task order, as the CPU raises it
        raise res.error(int(failed[0]), tasks[int(failed[0])].score)
    return res.paths(np.arange(len(tasks)))


def align_pairs(queries: Sequence[np.ndarray], subjects: Sequence[np.ndarray], scoring: Scoring, **budgets: int) -> AlignedPairs:
    """Best local alignment of each (query, subject) pair, where one scores above 0; as arrays,
    as the kernels leave them (:class:`~swgpu_core.align.traceback.AlignedPairs`)."""
    if not kernels_fit(scoring):
        return cpu.align_pairs(queries, subjects, scoring)
    res = align_packed(*pack_sequences(queries, subjects), scoring, **budgets)
    failed = np.flatnonzero((res.status != Status.OK) & (res.status != Status.NO_ALIGNMENT))
    if failed.size:
        raise res.error(int(failed[0]))
    traced = np.flatnonzero(res.status == Status.OK)
    return AlignedPairs(len(res), traced, res.paths(traced))
