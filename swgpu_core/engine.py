"""The compute engine: the one place that decides CPU or GPU, and what runs on it.

Every product (database search, alignments of hits, ``pairs``, ``align-long``) needs the
same few operations; an :class:`Engine` offers them, with one implementation per kind of
hardware and the same results from each (scores, ends and paths bit for bit):

* :meth:`~Engine.scanner`: a :class:`Scanner` that scores queries against database chunks
  and returns each chunk's top candidates (:func:`swgpu_core.search.search` drives it);
* :meth:`~Engine.seeder`: the candidate stage of ``--mode fast`` (a
  :class:`~swgpu_core.seed.Seeder`), whose candidates the scanner's ``scan_subset`` scores;
* :meth:`~Engine.traceback`: the alignments of pairs whose score a search found
  (:class:`~swgpu_core.align.traceback.PairTask` objects in, or a search's hits packed as
  :class:`~swgpu_core.align.traceback.PairTasks`; their paths out as one
  :class:`~swgpu_core.align.traceback.TracedPaths`, same order);
* :meth:`~Engine.align_pairs`: the best alignment of pairs whose score is not known yet (as
  one :class:`~swgpu_core.align.traceback.AlignedPairs`: which pairs align, and their paths);
* :meth:`~Engine.scan_sections` and :meth:`~Engine.trace_end_points`: align-long's scan of
  target sections and the traceback of its end points;
* :meth:`~Engine.device_model`: what the threshold planner should assume about the device.

:func:`resolve` turns ``"auto" | "cpu" | "cuda"`` into an :class:`EngineChoice`, asking
CUDA whether a device exists once per process; the choice carries the reason when the GPU
is not used, which the commands print (the library never prints). :func:`get_engine`
returns the engine of a choice. Nothing here touches CuPy or a device at import: the GPU
code (:mod:`swgpu_core.gpu`) is imported when a CUDA engine first runs an operation.

A new backend is a class with the methods of :class:`Engine`, a name in :data:`KINDS`
and a branch in :func:`resolve` and :func:`get_engine`; its device code lives in a package
of its own, imported from the class's methods only.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np

from . import cuda_driver
from .errors import BackendUnavailable, InputError

if TYPE_CHECKING:
    from .align.traceback import AlignedPairs, PairTask, PairTasks, PairTrace, TracedPaths
    from .database import Chunk, Database
    from .fasta import EncodedSequence
    from .long.endpoints import BandRule, EndPoint
    from .long.sections import Section, SectionResult
    from .plan import DeviceModel
    from .score_stats import ScoreHistograms
    from .scoring import Scoring
    from .seed import Seeder, SeedParams

#: The names a user may give (``--backend``).
KINDS = ("cpu", "cuda", "auto")


@dataclass(frozen=True)
class EngineChoice:
    """What runs the work: ``kind`` ``"cpu"`` or ``"cuda"``; ``reason`` says why the GPU is
    not used when ``auto`` fell back to the CPU (None otherwise); ``devices`` counts the
    CUDA devices visible (0 when none was looked for or found)."""

    kind: str
    reason: str | None = None
    devices: int = 0


#: held while CuPy is imported and CUDA asked for its devices, so that :func:`warm_up`'s thread
#: and the operation that needs the answer never do it twice, even at once
_PROBE_LOCK = threading.Lock()
_PROBED: list[tuple[int, str | None]] = []  # the answer, once there is one
_WARM_UP: list[threading.Thread] = []  # the one warm-up thread of the process, once started
_WARM_UP_LOCK = threading.Lock()


def probe_gpu() -> tuple[int, str | None]:
    """(CUDA devices visible, why none is usable), asked once per process.

    Importing CuPy and counting devices is all it does: a machine whose GPU cannot compile
    or run the kernels fails later, loudly, in the operation that needs it.
    """
    with _PROBE_LOCK:
        if not _PROBED:
            _PROBED.append(_probe())
        return _PROBED[0]


def _probe() -> tuple[int, str | None]:
    try:
        import cupy
    except Exception as exc:  # ImportError, or a CUDA library that fails to load
        if isinstance(exc, ImportError) and exc.name == "cupy":
            return 0, "CuPy is not installed (pip install 'swgpu_core[cuda13]' or '[cuda12]')"
        return 0, f"CuPy cannot be imported ({exc.__class__.__name__}: {exc})"
    cuda_driver.initialise()  # without the GIL (CuPy's getDeviceCount would hold it meanwhile); then the count is at once
    try:
        count = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as exc:  # CUDARuntimeError: no driver, no device, a broken runtime
        return 0, f"no usable CUDA device ({exc})"
    if count < 1:
        return 0, "no CUDA device"
    return count, None


def warm_up(devices: Sequence[int] | None = None, *, scan: bool = True, seed_params: SeedParams | None = None) -> None:
    """Begin, in a background thread, what a process's first GPU operation would wait for.

    That is importing CuPy, CUDA's initialisation (``cuInit``: 0.44 s on an H200 host) and the
    context of each of ``devices`` (None: every visible one), or with ``scan`` (a
    database search) only the first device's context, scan kernels and the routines of the
    candidate selection (:func:`swgpu_core.gpu.search.warm_up_device`; the search sets up the
    others once the first one scans), and with ``seed_params`` (a fast search) its candidate
    stage's kernel and routines. The CUDA calls release the GIL, so they run
    while the command reads its database and queries (``cuInit`` and those contexts
    are made through :mod:`swgpu_core.cuda_driver`: CuPy's device count keeps the GIL,
    and its contexts wait for its import); the operation then finds them done (or
    waits for them, never doing them twice). Once per process; nothing is reported from the
    thread: a GPU that fails fails again, loudly, in the operation that needs it.
    """
    with _WARM_UP_LOCK:
        if _WARM_UP:
            return
        _WARM_UP.append(threading.Thread(target=_warm, args=(devices, scan, seed_params), name="swgpu-gpu-warm-up", daemon=True))
    _WARM_UP[0].start()


def _warm(devices: Sequence[int] | None, scan: bool, seed_params: SeedParams | None = None) -> None:
    # the contexts in threads of their own while CuPy is imported below. A search (scan)
    # opens only the first GPU's: it starts on it as soon as it is ready, and sets up the
    # others itself once its first queries are queued (CudaBackend), because while the driver
    # makes a context it does little else for the process (2 x H200: the first GPU's kernels
    # took 0.2 s instead of 0.08 s beside the second's context, bench/RESULTS.md). Other
    # commands (align-long) start every GPU at once, after reading their input: the driver
    # is idle meanwhile, and a context made after CuPy's import (0.10-0.14 s on an H200)
    # came too late for the second GPU's section.
    # A search's first context also gets its upload ring's page-locked buffers, pinned by the
    # driver while CuPy is imported (gpu.search's _pinned_ring takes them).
    cuda_driver.open_contexts(([devices[0]] if devices else [0]) if scan else devices, ring=scan)
    count, _why = probe_gpu()
    if not count:
        return
    from .gpu.device import open_context
    from .gpu.search import warm_up_device

    wanted = list(devices) if devices is not None else list(range(count))
    for d in wanted[:1] if scan else wanted:
        if 0 <= d < count:
            try:
                warm_up_device(d, seed_params) if scan else open_context(d)
            except Exception:  # noqa: BLE001 -- the operation that needs the GPU reports it
                return


def resolve(name: str = "auto") -> EngineChoice:
    """``"cpu"``, ``"cuda"`` (raises :class:`BackendUnavailable` without a usable GPU) or
    ``"auto"`` (CUDA when a device is visible, else the CPU with the reason)."""
    if name == "cpu":
        return EngineChoice("cpu")
    if name not in KINDS:
        raise InputError(f"unknown backend {name!r} (cpu, cuda or auto)")
    count, why = probe_gpu()
    if count:
        return EngineChoice("cuda", None, count)
    if name == "cuda":
        raise BackendUnavailable(f"--backend cuda: {why}")
    return EngineChoice("cpu", why, 0)


class Scanner(Protocol):
    """Scores queries against database chunks (one per engine kind, holding its caches)."""

    name: str

    def scan_chunk(
        self, db: Database, chunk: Chunk, queries: list[EncodedSequence], top: int, score_stats: ScoreHistograms | None = None
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per query: (sorted-numbering subject indices, int32 scores) of every subject whose
        score reaches the chunk's ``top``-th best (ties included), so that the shared
        selection in :mod:`swgpu_core.search` applies one tie rule whatever scored them.
        Every score also goes into ``score_stats`` (when given), for fitted statistics.

        A scanner may also offer ``scan(db, chunks, queries, top, on_chunk, score_stats)``
        (the chunks in its own order and batches, e.g. over several GPUs), one such list per batch."""
        ...

    def scan_subset(
        self, db: Database, chunk: Chunk, queries: list[EncodedSequence], subjects: list[np.ndarray], top: int
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """As :meth:`scan_chunk`, scoring only each query's ``subjects`` (its candidates:
        sorted, unique sorted-numbering indices in ``chunk``, as
        :meth:`swgpu_core.seed.Seeder.candidates` returns them): per query, those whose
        score reaches the ``top``-th best among them (ties included). No score histograms:
        a fit needs every score.

        A scanner may also offer ``scan_seeded(db, chunks, queries, seeder, top, on_chunk)``:
        per chunk the same lists for ``seeder``'s candidates, with the candidate stage's
        seconds, the two stages overlapped (the GPU's, which seeds one run while it scores
        the one before)."""
        ...


class Engine(Protocol):
    """The operations every product runs, on one kind of hardware (see the module doc)."""

    choice: EngineChoice

    @property
    def kind(self) -> str: ...

    def scanner(
        self, scoring: Scoring, *, threads: int = 0, devices: Sequence[int] | None = None,
        threshold: int | None = None, memory_budget: int | None = None,
    ) -> Scanner: ...  # fmt: skip

    def seeder(
        self, scoring: Scoring, queries: list[EncodedSequence], params: SeedParams, *, threads: int = 0,
        devices: Sequence[int] | None = None,
    ) -> Seeder: ...  # fmt: skip

    def traceback(
        self, tasks: Sequence[PairTask] | PairTasks, scoring: Scoring, *, threads: int = 0, device: int | None = None
    ) -> TracedPaths: ...

    def align_pairs(
        self, queries: Sequence[np.ndarray], subjects: Sequence[np.ndarray], scoring: Scoring, *, threads: int = 0
    ) -> AlignedPairs: ...

    def scan_sections(
        self, query: np.ndarray, target: np.ndarray, sections: Sequence[Section], rule: BandRule, scoring: Scoring,
        *, devices: Sequence[int] = (0,), parts: int | None = None,
    ) -> list[SectionResult]: ...  # fmt: skip

    def trace_end_points(
        self, query: np.ndarray, target: np.ndarray, ends: Sequence[EndPoint], scoring: Scoring, max_length: int, *,
        threads: int = 0, devices: Sequence[int] = (0,),
    ) -> list[PairTrace]: ...  # fmt: skip

    def device_model(self) -> DeviceModel: ...


@dataclass(frozen=True)
class CpuEngine:
    """Everything on the CPU: pyopal's SIMD scan, the numba traceback and align-long scan."""

    choice: EngineChoice = EngineChoice("cpu")

    @property
    def kind(self) -> str:
        return "cpu"

    def scanner(self, scoring: Scoring, *, threads: int = 0, devices=None, threshold=None, memory_budget=None) -> Scanner:
        """The CPU scan (``devices``, ``threshold`` and ``memory_budget`` concern the GPU only)."""
        from .backends.cpu import CpuBackend

        return CpuBackend(scoring, threads=threads)

    def seeder(self, scoring: Scoring, queries: list[EncodedSequence], params: SeedParams, *, threads: int = 0, devices=None) -> Seeder:
        """The numba candidate stage on ``threads`` cores (0: all this process may use)."""
        from .backends.cpu_seed import CpuSeeder

        return CpuSeeder(scoring, queries, params, threads=threads)

    def traceback(self, tasks: Sequence[PairTask] | PairTasks, scoring: Scoring, *, threads: int = 0, device=None) -> TracedPaths:
        """On ``threads`` cores (0: all this process may use; ``device`` concerns the GPU only)."""
        from .align.traceback import TracedPaths, traceback_pairs

        return TracedPaths.of(traceback_pairs(tasks, scoring, threads))

    def align_pairs(
        self, queries: Sequence[np.ndarray], subjects: Sequence[np.ndarray], scoring: Scoring, *, threads: int = 0
    ) -> AlignedPairs:
        from .align.traceback import align_pairs

        return align_pairs(queries, subjects, scoring, threads)

    def scan_sections(self, query, target, sections, rule, scoring, *, devices=(0,), parts=None) -> list[SectionResult]:
        """One section after the other (``devices`` and ``parts`` concern the GPU only)."""
        from .long.cpu_scan import scan_section
        from .long.sections import SectionResult

        m = int(query.size)
        return [SectionResult(s, *scan_section(query, target, s, rule, scoring), None, m * s.scanned, m * s.owned, 1) for s in sections]

    def trace_end_points(self, query, target, ends, scoring, max_length, *, threads: int = 0, devices=(0,)) -> list[PairTrace]:
        """On ``threads`` cores (``devices`` concern the GPU only)."""
        from .long.trace import trace_end_points

        return trace_end_points(query, target, ends, scoring, max_length, threads)

    def device_model(self) -> DeviceModel:
        """No GPU to measure: the planner's documented default, the H100's."""
        from .plan import H100_DEFAULT

        return H100_DEFAULT


@dataclass(frozen=True)
class CudaEngine:
    """Everything on NVIDIA GPUs through CuPy (:mod:`swgpu_core.gpu`). Matrices the
    traceback kernels cannot hold are traced on the CPU, with the same results."""

    choice: EngineChoice
    #: devices -> the last scanner made for them, whose device workers (and resident chunks) a
    #: seeder for the same devices shares, so that a fast search uploads each chunk once
    _scanners: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def kind(self) -> str:
        return "cuda"

    def devices(self, devices: Sequence[int] | None) -> list[int]:
        """The GPUs this engine's scanner or seeder runs on: ``devices``, or every visible one
        (one, where a slot of the workflow set ``CUDA_VISIBLE_DEVICES``). :func:`swgpu_core.api.search`
        names them: as many of these as its work pays for (:func:`swgpu_core.gpu_choice.device_count`)."""
        return list(devices) if devices else list(range(max(self.choice.devices, 1)))

    def scanner(self, scoring: Scoring, *, threads: int = 0, devices=None, threshold=None, memory_budget=None) -> Scanner:
        """The GPU scan on ``devices`` (default: every visible GPU); ``threshold``: the inter/intra-task
        split (default: the planner's per batch and query); ``memory_budget``: bytes of
        each GPU for database batches (default 60% of the free memory)."""
        from .gpu.search import CudaBackend

        backend = CudaBackend(scoring, self.devices(devices), threshold=threshold, memory_budget=memory_budget)
        self._scanners[tuple(backend.device_ids)] = backend  # not its workers: all of them are ready only later
        return backend

    def seeder(self, scoring: Scoring, queries: list[EncodedSequence], params: SeedParams, *, threads: int = 0, devices=None) -> Seeder:
        """The GPU candidate stage on ``devices`` (default: every visible GPU), sharing the device
        workers of this engine's last scanner for the same devices; its seed index is made on the
        host on ``threads`` cores (0: all this process may use)."""
        from .gpu.seed import CudaSeeder

        ids = tuple(self.devices(devices))
        backend = self._scanners.get(ids)
        return CudaSeeder(scoring, queries, params, list(ids), workers=backend.workers if backend is not None else None, threads=threads)

    def traceback(self, tasks: Sequence[PairTask] | PairTasks, scoring: Scoring, *, threads: int = 0, device=None) -> TracedPaths:
        """On GPU ``device`` (None: the current one; ``threads`` concerns the CPU engine)."""
        from .gpu.traceback import traceback_pairs

        return traceback_pairs(tasks, scoring, device)

    def align_pairs(
        self, queries: Sequence[np.ndarray], subjects: Sequence[np.ndarray], scoring: Scoring, *, threads: int = 0
    ) -> AlignedPairs:
        from .gpu.traceback import align_pairs

        return align_pairs(queries, subjects, scoring)

    def scan_sections(self, query, target, sections, rule, scoring, *, devices=(0,), parts=None) -> list[SectionResult]:
        """One thread per device, each cutting its sections into ``parts`` parts (None: as
        many as keep the GPU busy) scanned side by side."""
        from .gpu.long_scan import scan_sections

        return scan_sections(query, target, sections, rule, scoring, devices, parts)

    def trace_end_points(self, query, target, ends, scoring, max_length, *, threads: int = 0, devices=(0,)) -> list[PairTrace]:
        """On ``devices``, which share the end points (on the CPU where the kernels cannot hold the matrix)."""
        from .gpu import traceback as gpu
        from .long.trace import trace_end_points, trace_on_gpu

        if not gpu.kernels_fit(scoring):
            return trace_end_points(query, target, ends, scoring, max_length, threads)
        return trace_on_gpu(gpu, query, target, ends, scoring, max_length, devices)

    def device_model(self) -> DeviceModel:
        """GPU 0's calibrated model (measured once per GPU model and kernel build, then cached)."""
        from .gpu.search import DeviceWorker
        from .scoring import Scoring

        return DeviceWorker(0, Scoring.protein(), None, None, None).model


def get_engine(spec: str | Engine = "auto") -> Engine:
    """The engine for ``spec``: a name for :func:`resolve`, or an engine (returned as is)."""
    if not isinstance(spec, str):
        return spec
    choice = resolve(spec)
    return CudaEngine(choice) if choice.kind == "cuda" else CpuEngine(choice)
