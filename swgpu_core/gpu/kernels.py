"""Compile and launch the scan kernels of ``kernels/sw_scan.cu`` through CuPy.

The source and the compile options come from :mod:`swgpu_core.kernel_abi` (the shared
header inlined, the shared constants as ``-D`` options).

CuPy's NVRTC compiles for the running device's architecture and caches the binary on
disk (``~/.cupy/kernel_cache``), but it recompiles a module built with ``name_expressions``
in every process (it needs NVRTC to lower the template names), about half a second of
every run's start-up; :func:`load_functions` keeps the lowered names beside the
calibration cache, so later processes load the cached binary by those names. On compute
capability 9.0 and newer the packed 16-bit kernels use DPX instructions; older GPUs get
the plain packed path. Overflowed subjects are rescored with the 32-bit arithmetic.

Each kernel shape is a template instance; :func:`pick_shapes` chooses, per query length,
the pass width that wastes the fewest padded query columns.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import cupy as cp
import numpy as np

from .. import kernel_abi, scan_profile
from ..kernel_abi import INTER_BLOCK
from ..per_device import PerDevice
from ..plan import INTER_COLS_PER_LANE, INTER_NARROW_COLS_PER_LANE, INTRA_WARPS, inter_cols_per_lane, inter_lanes
from ..scoring import Scoring
from ..subset_tasks import INTRA_TASK_WARPS, TASK_LANES


@dataclass(frozen=True)
class Shape:
    """A kernel instance: inter-task (``lanes`` threads of a warp per group) or intra-task
    (``warps`` warps of a block per group), ``r`` query columns per thread."""

    kind: str  # "inter" or "intra"
    r: int
    lanes: int = 32
    warps: int = 1

    @property
    def cols(self) -> int:
        """Query columns per pass."""
        return self.r * self.lanes * self.warps

    def template(self, arith: str) -> str:
        if self.kind == "inter":
            return f"sw_inter<{arith},{self.r},{self.lanes}>"
        return f"sw_intra<{arith},{self.r},{self.warps}>"

    def task_template(self, arith: str) -> str:
        """The kernel over task lists (many queries, each its own subjects)."""
        if self.kind == "inter":
            return f"sw_inter_tasks<{arith},{self.r},{self.lanes}>"
        return f"sw_intra_tasks<{arith},{self.r},{self.warps}>"


INTER_SHAPES = tuple(Shape("inter", INTER_COLS_PER_LANE, g) for g in (8, 16, 32)) + (Shape("inter", INTER_NARROW_COLS_PER_LANE, 8),)
INTRA_SHAPES = tuple(Shape("intra", 8, 32, w) for w in INTRA_WARPS)
#: the shapes of the task-list kernels (the seeded search's candidates): inter-task ones of
#: TASK_LANES lanes, intra-task ones for the long pairs
INTER_TASK_SHAPES = tuple(s for s in INTER_SHAPES if s.lanes == TASK_LANES)
INTRA_TASK_SHAPES = tuple(s for s in INTRA_SHAPES if s.warps in INTRA_TASK_WARPS)


def pick_shapes(query_length: int, n_short: int, busy_threads: int, intra_cols: int, longest_short: int = 1 << 30) -> tuple[Shape, Shape]:
    """(inter, intra) shapes for a query and the number of short subjects, on a GPU that
    ``busy_threads`` threads fill (:attr:`~swgpu_core.plan.DeviceGeometry.busy_threads`), the
    intra-task blocks ``intra_cols`` wide (the plan's choice, :attr:`~swgpu_core.plan.Plan.intra_cols`).

    Inter: the fewest lanes per pair of subjects that still give the GPU enough threads
    (fewer lanes mean less wavefront fill and drain per pass; how many are enough depends on
    ``longest_short``, the longest of those subjects: :func:`swgpu_core.plan.inter_lanes`),
    16 columns per lane (the most efficient step) or 8 where that is faster for the query's
    length (:func:`swgpu_core.plan.inter_cols_per_lane`, which says why).
    """
    lanes = inter_lanes(n_short // 2, busy_threads, longest_short)
    r = inter_cols_per_lane(query_length, lanes)
    inter = next(s for s in INTER_SHAPES if s.r == r and s.lanes == lanes)
    intra = next(s for s in INTRA_SHAPES if s.cols == intra_cols)
    return inter, intra


def kernel_source() -> str:
    """The scan kernels' source as CuPy compiles it (``common.cuh`` inlined)."""
    return kernel_abi.kernel_source("sw_scan.cu")


def build_profile(query: np.ndarray, scoring: Scoring, shape: Shape) -> np.ndarray:
    """The query's profile for ``shape`` (:func:`swgpu_core.scan_profile.build_profile`)."""
    return scan_profile.build_profile(query, scoring, shape.cols, shape.r)


def _names_path(source: str, options: tuple[str, ...], names: list[str]) -> Path:
    """Where the lowered names of ``names`` compiled from ``source`` with ``options`` are kept."""
    from .calibration import cache_path

    digest = hashlib.sha256("\0".join((source, *options, *names)).encode()).hexdigest()[:16]
    return cache_path().parent / f"kernel-names-{digest}.json"


def load_functions(source: str, options: tuple[str, ...], names: list[str]) -> dict[str, cp.RawKernel]:
    """The kernels ``names`` (C++ name expressions) of ``source``, loaded for the current device.

    The first process compiles with ``name_expressions`` (CuPy writes the binary to its disk
    cache, whose key is the source and options only) and records the lowered names; later
    ones build the module without name expressions, which CuPy loads from its cache, and
    look the kernels up by their lowered names. Anything missing (no record, an emptied
    CuPy cache, a read-only cache directory) falls back to the compiling path.
    """
    path = _names_path(source, options, names)
    try:
        lowered = json.loads(path.read_text())
        module = cp.RawModule(code=source, options=options)
        return {n: module.get_function(lowered[n]) for n in names}
    except (OSError, ValueError, KeyError, TypeError, cp.cuda.driver.CUDADriverError):
        pass
    module = cp.RawModule(code=source, options=options, name_expressions=names)
    functions = {n: module.get_function(n) for n in names}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".kernel-names-")
        with os.fdopen(fd, "w") as fh:
            json.dump({n: module.module.mapping[n] for n in names}, fh)
        os.replace(tmp, path)
    except (OSError, KeyError, TypeError, AttributeError):
        pass  # no record: the next process compiles again
    return functions


_LOADED: PerDevice[ScanKernels] = PerDevice()  # per (device, arith); two devices load at once


def scan_kernels(device_id: int, arith: str | None = None) -> ScanKernels:
    """The scan kernels of ``device_id``, loaded once per process (and its context made on
    first use): :func:`swgpu_core.engine.warm_up` loads them ahead, from another thread, and
    every :class:`~swgpu_core.gpu.search.DeviceWorker` of a device shares them (a second
    caller waits for the first's load instead of loading again)."""

    def load() -> ScanKernels:
        with cp.cuda.Device(device_id):
            return ScanKernels(arith)

    return _LOADED.once((device_id, arith), load)


class ScanKernels:
    """The compiled kernels for the current device, packed 16-bit and 32-bit."""

    def __init__(self, arith: str | None = None):
        major, minor = cp.cuda.Device().compute_capability[:-1], cp.cuda.Device().compute_capability[-1]
        self.arith = arith or ("dpx" if int(major) * 10 + int(minor) >= 90 else "plain")
        self.packed = {"dpx": "DpxS16x2", "plain": "PlainS16x2"}[self.arith]
        names = [s.template(a) for s in INTER_SHAPES + INTRA_SHAPES for a in (self.packed, "S32")]
        names += [s.task_template(a) for s in INTER_TASK_SHAPES + INTRA_TASK_SHAPES for a in (self.packed, "S32")]
        self._functions = load_functions(kernel_source(), ("-std=c++17", *kernel_abi.compile_options()), names)

    def launch(self, shape: Shape, wide: bool, args: tuple, n_subjects: int, stream: cp.cuda.Stream) -> None:
        """Launch ``shape`` over ``n_subjects`` subjects: packed 16-bit (two subjects per
        group) or, with ``wide``, 32-bit. ``args`` follow ``SWGPU_SCAN_PARAMS``."""
        self._launch(shape.template("S32" if wide else self.packed), shape, wide, args, n_subjects, stream)

    def launch_tasks(self, shape: Shape, wide: bool, args: tuple, n_slots: int, stream: cp.cuda.Stream) -> None:
        """Launch the task-list kernel of ``shape`` over ``n_slots`` list entries (whole warps of
        an inter shape, a block per group of an intra one, see ``swgpu_core.subset_tasks``),
        packed 16-bit or, with ``wide``, 32-bit. ``args`` follow ``SWGPU_TASK_PARAMS``."""
        self._launch(shape.task_template("S32" if wide else self.packed), shape, wide, args, n_slots, stream)

    def _launch(self, name: str, shape: Shape, wide: bool, args: tuple, n: int, stream: cp.cuda.Stream) -> None:
        """Kernel ``name`` of ``shape`` over ``n`` subjects or list entries, in groups of two
        (packed) or one (``wide``): ``shape.lanes`` threads per group in blocks of INTER_BLOCK
        (inter), a block of ``shape.warps`` warps per group (intra)."""
        groups = -(-n // (1 if wide else 2))
        if groups == 0:
            return
        if shape.kind == "inter":
            grid, block = -(-groups * shape.lanes // INTER_BLOCK), INTER_BLOCK
        else:
            grid, block = groups, shape.warps * 32
        with stream:
            self._functions[name]((grid,), (block,), args)
