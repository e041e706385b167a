"""The candidate stage of ``--mode fast`` on NVIDIA GPUs: ``kernels/seed.cu`` through CuPy.

A :class:`CudaSeeder` is bound to one query batch: it builds the batch's groups and lookup
tables once (:mod:`swgpu_core.seed_tables`, on the host), uploads them to every device, and
for each chunk launches one kernel per device over its share of the chunk's subjects (one
block per query group and slice of subjects). The chunk's residues are the scanner's: with
the workers of the engine's CUDA scanner (:meth:`swgpu_core.engine.CudaEngine.seeder` passes
them) a chunk is uploaded once for both stages. The kernel appends (query, subject) pairs
to a device buffer; duplicates (segments of one query) are removed on the device and the
pairs come back as each query's sorted subjects.
"""

from __future__ import annotations

import functools
from collections.abc import Generator

import cupy as cp
import numpy as np

from .. import kernel_abi
from ..database import Chunk, Database
from ..device_batches import pieces
from ..fasta import EncodedSequence
from ..kernel_abi import SEED_MAX_WARPS, SeedCounter
from ..scoring import Scoring
from ..seed import SeedParams
from ..seed_tables import SeedTables, build_tables, pairs_by_query, slices
from ..steps import drive
from .device import device_count
from .search import DeviceWorker, _record, _to_host

#: Warps per block: more warps hide more latency, fewer leave each warp a longer ring (a
#: larger group: fewer passes over the database, more hits per subject position).
DEFAULT_WARPS = 8
#: Where the lookup tables' entries live (``swgpu_core.seed_tables``): in global memory (L2)
#: the groups are about three times longer than with the entries in shared memory.
DEFAULT_LUT = "global"
#: Blocks per SM a launch aims at (slices per group): many waves keep the last one's tail short.
BLOCKS_PER_SM = 16
#: Subjects a warp should find in its slice at least.
SUBJECTS_PER_WARP = 8
#: Longest two-hit window the kernel's diagonal words hold (7 bits of distance, 127 meaning none).
MAX_WINDOW = 126
#: Initial room for (query, subject) pairs per query; a launch that finds more is run again.
PAIRS_PER_QUERY = 4096


def smem_limit(device_id: int) -> int:
    """Shared memory a block of the seed kernel may use on ``device_id`` (the opt-in maximum)."""
    props = cp.cuda.runtime.getDeviceProperties(device_id)
    if "sharedMemPerBlockOptin" in props:
        return int(props["sharedMemPerBlockOptin"])
    return int(cp.cuda.Device(device_id).attributes["MaxSharedMemoryPerBlockOptin"])


@functools.cache
def _kernel(device_id: int, params: SeedParams) -> cp.RawKernel:
    """The seed kernel for ``params`` on ``device_id``, compiled once per process (CuPy keeps the
    binary on disk, keyed by the source and the options)."""
    with cp.cuda.Device(device_id):
        options = ("-std=c++17", *kernel_abi.compile_options(), *kernel_abi.seed_options(params))
        return cp.RawModule(code=kernel_abi.kernel_source("seed.cu"), options=options).get_function("seed_candidates")


class _DeviceSeed:
    """One device's kernel, tables and buffers."""

    def __init__(self, worker: DeviceWorker, tables: SeedTables, params: SeedParams):
        self.worker = worker
        self.tables = tables
        self.function = _kernel(worker.device_id, params)
        with cp.cuda.Device(worker.device_id):
            self.stream = worker.compute
            with self.stream:
                self.blobs = cp.asarray(tables.blobs)
                self.groups = cp.asarray(tables.groups)
                self.segs = cp.asarray(tables.segs)
                self.qcodes = cp.asarray(tables.qcodes if tables.qcodes.size else np.zeros(1, np.uint8))
                self.matrix = cp.asarray(tables.matrix)
                self.counters = cp.zeros(len(SeedCounter), np.uint64)
                self.pairs = cp.empty(max(1, PAIRS_PER_QUERY * tables.n_queries), np.uint64)
            self._host_counters = np.frombuffer(cp.cuda.alloc_pinned_memory(8 * len(SeedCounter)), np.uint64, len(SeedCounter))
        self.kernel_seconds = 0.0
        self.last_timing: dict = {}

    def n_slices(self, n_subjects: int) -> int:
        """Slices per group: BLOCKS_PER_SM blocks per SM over all groups, each slice with enough subjects."""
        want = -(-BLOCKS_PER_SM * self.worker.geometry.sms // max(self.tables.n_groups, 1))
        return max(1, min(want, n_subjects // (SUBJECTS_PER_WARP * self.tables.warps)))

    def steps(self, db: Database, chunk: Chunk) -> Generator[cp.cuda.Event, None, tuple[list[np.ndarray], np.ndarray]]:
        """Per query, its candidates in ``chunk`` (chunk-relative, sorted), and the kernel's counters,
        as steps for :func:`~swgpu_core.steps.drive` (it yields the event it waits for)."""
        t = self.tables
        dev = self.worker.upload(db, chunk)
        offsets = np.asarray(db.offsets[chunk.first : chunk.stop + 1], np.int64) - chunk.residue_start
        bounds = slices(offsets, self.n_slices(chunk.n_sequences))
        n_blocks = t.n_groups * (bounds.size - 1)
        with cp.cuda.Device(self.worker.device_id), self.stream:
            self.stream.wait_event(dev.ready)
            d_bounds = cp.asarray(bounds)
        while True:
            with cp.cuda.Device(self.worker.device_id), self.stream:
                self.counters.fill(0)
                start = _record(self.stream, timing=True)
                args = (
                    dev.residues, dev.offsets, d_bounds, np.int32(bounds.size - 1), self.blobs, self.groups, self.segs, self.qcodes,
                    self.matrix, np.int32(t.copy_words), np.int32(t.ring), np.int32(t.smem_bytes), self.pairs, np.int32(self.pairs.size),
                    self.counters,
                )  # fmt: skip
                self.function.max_dynamic_shared_size_bytes = t.smem_bytes  # the kernel is shared by seeders of other sizes
                self.function((n_blocks,), (32 * t.warps,), args, shared_mem=t.smem_bytes)
                end = _record(self.stream, timing=True)
                _to_host(self._host_counters, self.counters, self.stream)
                counted = _record(self.stream)
            yield counted
            counted.synchronize()
            counters = self._host_counters.copy()
            if counters[SeedCounter.ERROR]:
                raise RuntimeError(f"seed kernel: {t.smem_bytes} bytes of shared memory are less than its layout needs")
            found = int(counters[SeedCounter.PAIRS])
            if found <= self.pairs.size:
                break
            with cp.cuda.Device(self.worker.device_id):
                self.pairs = cp.empty(2 * found, np.uint64)  # rare: more pairs than room, run again with enough
        with cp.cuda.Device(self.worker.device_id), self.stream:
            keys = cp.unique(self.pairs[:found]).get() if found else np.zeros(0, np.uint64)
            dev.last_use = _record(self.stream)
        seconds = cp.cuda.get_elapsed_time(start, end) / 1e3
        self.kernel_seconds += seconds
        self.last_timing = {"seconds": seconds, "blocks": n_blocks, "slices": int(bounds.size - 1), "groups": t.n_groups,
                            "warps": t.warps, "smem_bytes": t.smem_bytes, "pairs": found}  # fmt: skip
        return pairs_by_query(keys, t.n_queries), counters


class CudaSeeder:
    """The candidate stage of one query batch on one or more GPUs (see :class:`swgpu_core.seed.Seeder`):
    each chunk's subjects are cut into one run per device, seeded side by side, all devices
    driven from this thread (:func:`~swgpu_core.steps.drive`)."""

    name = "cuda"

    def __init__(
        self,
        scoring: Scoring,
        queries: list[EncodedSequence],
        params: SeedParams,
        devices: list[int] | None = None,
        *,
        workers: list[DeviceWorker] | None = None,
        warps: int = DEFAULT_WARPS,
        lut: str = DEFAULT_LUT,
    ):
        ids = [w.device_id for w in workers] if workers else (devices or [0])
        n_devices = device_count()
        bad = [d for d in ids if d < 0 or d >= n_devices]
        if bad:
            from ..errors import BackendUnavailable

            raise BackendUnavailable(f"no CUDA device {bad[0]} (this machine has {n_devices})")
        if not 1 <= warps <= SEED_MAX_WARPS:
            raise ValueError(f"seed kernel warps must be 1..{SEED_MAX_WARPS} (got {warps})")
        if params.window > MAX_WINDOW:
            from ..errors import InputError

            raise InputError(f"seed window {params.window}: the GPU seeder holds windows up to {MAX_WINDOW} (use --backend cpu)")
        self.params = params
        self.n_queries = len(queries)
        self.counts = {"hits": 0, "triggers": 0, "extensions": 0, "candidates": 0}
        workers = workers or [DeviceWorker(d, scoring, None, None, None) for d in ids]
        limit = min(smem_limit(w.device_id) for w in workers)
        self.tables = build_tables([q.codes for q in queries], scoring.matrix, params, smem_limit=limit, warps=warps, lut=lut)
        self.devices = [_DeviceSeed(w, self.tables, params) for w in workers]

    @property
    def kernel_seconds(self) -> float:
        """Seconds of seed kernels, the slowest device's."""
        return max(d.kernel_seconds for d in self.devices)

    def candidates(self, db: Database, chunk: Chunk) -> list[np.ndarray]:
        if self.n_queries == 0 or self.tables.n_groups == 0 or chunk.n_sequences == 0:
            return [np.zeros(0, np.int64) for _ in range(self.n_queries)]
        n = len(self.devices)
        parts = pieces(db, chunk, -(-chunk.n_residues // n)) if n > 1 else [chunk]
        mine = [[p for k, p in enumerate(parts) if k % n == d] for d in range(n)]

        def run(d: int) -> Generator[cp.cuda.Event, None, list[tuple[Chunk, list[np.ndarray], np.ndarray]]]:
            done = []
            for p in mine[d]:
                done.append((p, *(yield from self.devices[d].steps(db, p))))
            return done

        results = sorted((r for per_device in drive([run(d) for d in range(n)]) for r in per_device), key=lambda r: r[0].first)
        out = [np.concatenate([found[q] + part.first for part, found, _c in results]) for q in range(self.n_queries)]
        for _part, _found, counters in results:
            self.counts["hits"] += int(counters[SeedCounter.HITS])
            self.counts["triggers"] += int(counters[SeedCounter.TRIGGERS])
            self.counts["extensions"] += int(counters[SeedCounter.EXTENSIONS])
        self.counts["candidates"] += sum(int(c.size) for c in out)
        return out
