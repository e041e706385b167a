"""Launch the align-long scan kernel (``kernels/sw_long.cu``) through CuPy.

One launch scans one section on the current device, cut into the parts that
:mod:`.gpu_plan` chose (each part's columns padded to whole column blocks, back to back
in one buffer); the parts' band keys meet in one array, merged by ``atomicMax``. The
number of warps and the slot memory are :func:`.gpu_plan.launch_warps`'s.
:func:`scan_sections` runs the sections of a target on one or more GPUs (the engine's
align-long scan).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass

import cupy as cp
import numpy as np

from .. import kernel_abi
from ..kernel_abi import PartField
from ..long.endpoints import GROUP, BandKeys, BandRule
from ..long.gpu_plan import COLS_PER_WARP, WARPS_PER_BLOCK, gpu_parts, launch_warps, part_table
from ..long.sections import Section, SectionResult
from ..scoring import Scoring
from .device import geometry
from .kernels import load_functions

PAD_SCORE = -(1 << 26)


@dataclass(frozen=True)
class ScanTiming:
    """Kernel time (CUDA events), the cells scanned (the parts' overlaps included) and the parts."""

    seconds: float
    cells: int
    parts: int


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


class LongScanKernel:
    """The compiled ``sw_long`` kernel for the current device and a scoring's alphabet."""

    def __init__(self, scoring: Scoring) -> None:
        self.shape = TableShape.for_scoring(scoring)
        code = kernel_abi.kernel_source("sw_long.cu")
        name = f"sw_long<{GROUP},{self.shape.codes},{self.shape.copies}>"
        self.function = load_functions(code, ("-std=c++17", *kernel_abi.compile_options()), [name])[name]
        self.sms = geometry(cp.cuda.Device().id).sms

    def scan(
        self, query: np.ndarray, target: np.ndarray, parts: Sequence[Section], rule: BandRule, scoring: Scoring, locked: bool = False
    ) -> tuple[BandKeys, ScanTiming]:
        """Band keys of the cells ``parts`` own, in one launch (the same as :func:`.cpu_scan.scan_section` on each, merged).

        ``locked``: ``target`` is page-locked (:func:`page_locked`) until this returns."""
        m = int(query.size)
        parts = [p for p in parts if p.own_hi > p.own_lo]
        if not parts:
            return BandKeys(np.empty(0, np.int64), np.empty(0, np.uint64)), ScanTiming(0.0, 0, 0)
        table = part_table(parts)
        blocks = table[:, PartField.BLOCKS]
        warps = launch_warps(m, int(blocks.sum()), len(parts), self.sms)
        n_slots = max(1, warps // len(parts))  # any n_slots >= 1 is safe (kernel comment); this keeps m * 8 bytes per warp
        slots = cp.zeros(len(parts) * n_slots * m, cp.uint64)
        counter = cp.zeros(1, cp.int32)
        keys = cp.zeros(rule.n_bands(target.size), cp.uint64)
        args = (
            device_columns(target, table, self.shape.pad, locked), cp.asarray(table), np.int32(len(parts)), np.int32(blocks.max()),
            cp.asarray(padded_query(query, self.shape.pad)), np.int32(m), cp.asarray(kernel_matrix(scoring, self.shape)),
            np.int32(scoring.first_gap_cost), np.int32(scoring.gap_extend), np.int32(rule.width), np.int32(n_slots),
            slots, counter, keys,
        )  # fmt: skip
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        self.function((warps // WARPS_PER_BLOCK,), (32 * WARPS_PER_BLOCK,), args)
        stop.record()
        stop.synchronize()
        seconds = cp.cuda.get_elapsed_time(start, stop) / 1000.0
        cells = m * sum(p.scanned for p in parts)
        return BandKeys.from_dense(keys.get()), ScanTiming(seconds, cells, len(parts))


def device_columns(target: np.ndarray, table: np.ndarray, pad: int, locked: bool = False) -> cp.ndarray:
    """The parts' columns as :meth:`swgpu_core.long.gpu_plan.PartBuffers.build` lays them out, made on the
    current device: the target's span that ``table``'s parts scan is uploaded once (they
    overlap), then each part's columns are copied to their place in a buffer of ``pad``.

    Why not upload the host's buffers: building them took 0.03 s for a 10^8-column section on
    an H200's host, and their upload 0.064 s, most of it CuPy's first page-locked staging
    buffer of that size (bench/long_scan_steps.py, thirty-fourth session). ``locked``: the
    target is page-locked (:func:`page_locked`), so the span goes up in one DMA straight
    from it, queued on the current stream (the caller synchronises before it unlocks)."""
    f = PartField
    lo = int(table[:, f.COL0].min())
    hi = int((table[:, f.COL0] + table[:, f.COLUMNS]).max())
    host = target[lo:hi]
    if locked:
        span = cp.empty(host.size, cp.uint8)
        kind = cp.cuda.runtime.memcpyHostToDevice
        cp.cuda.runtime.memcpyAsync(span.data.ptr, host.ctypes.data, host.nbytes, kind, cp.cuda.get_current_stream().ptr)
    else:
        span = cp.asarray(host)
    columns = cp.full(int(table[:, f.BLOCKS].sum()) * COLS_PER_WARP, pad, cp.uint8)
    for off, n, col0 in table[:, [f.OFFSET, f.COLUMNS, f.COL0]].tolist():
        columns[off : off + n] = span[col0 - lo : col0 - lo + n]
    return columns


#: cudaHostRegisterPortable: the registered memory counts as page-locked for every GPU
HOST_REGISTER_PORTABLE = 1


@contextmanager
def page_locked(host: np.ndarray) -> Iterator[bool]:
    """``host`` (C-contiguous) page-locked in place for every GPU while the block runs
    (``cudaHostRegister``: 0.005 s for 10^8 bytes on an H200's host), where the driver
    allows it (True); else False (memory it refuses, such as a read-only mapping, or memory
    already registered), and the uploads take CuPy's staging."""
    try:
        cp.cuda.runtime.hostRegister(host.ctypes.data, host.nbytes, HOST_REGISTER_PORTABLE)
    except cp.cuda.runtime.CUDARuntimeError:
        yield False
        return
    try:
        yield True
    finally:
        cp.cuda.runtime.hostUnregister(host.ctypes.data)


def scan_sections(
    query: np.ndarray, target: np.ndarray, sections: Sequence[Section], rule: BandRule, scoring: Scoring,
    devices: Sequence[int] = (0,), parts: int | None = None,
) -> list[SectionResult]:  # fmt: skip
    """Scan ``sections`` with one thread per device (section k on device k mod len(devices)),
    each section cut into ``parts`` parts (None: :func:`.gpu_plan.auto_parts`) scanned side
    by side in one launch; results in section order."""
    m = int(query.size)
    target = np.ascontiguousarray(target)

    def on_device(k: int, locked: bool) -> list[SectionResult]:
        device = devices[k % len(devices)]
        with cp.cuda.Device(device) as gpu:
            try:
                kernel = LongScanKernel(scoring)
                out = []
                for s in sections[k :: len(devices)]:
                    found, timing = kernel.scan(query, target, gpu_parts(m, s, kernel.sms, parts), rule, scoring, locked)
                    out.append(SectionResult(s, found, timing.seconds, device, timing.cells, m * s.owned, timing.parts))
                return out
            finally:  # no upload from the target left in flight when it is unlocked, even after an error
                gpu.synchronize()

    with cp.cuda.Device(devices[0]), page_locked(target) as locked, ThreadPoolExecutor(len(devices)) as pool:
        done = list(pool.map(on_device, range(min(len(devices), len(sections))), [locked] * len(devices)))
    return sorted((r for d in done for r in d), key=lambda r: r.section.index)
