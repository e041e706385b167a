"""The candidate stage of ``--mode fast`` on NVIDIA GPUs: ``kernels/seed.cu`` through CuPy.

A :class:`CudaSeeder` is bound to one query batch. Its seed index (:func:`swgpu_core.seed.seed_index`,
built on the host: the keys and positions of every shape, a few MB for 500 queries) goes to
every device, where the key table is made: per shape, the offsets of each key's entries
(a ``searchsorted`` per shape: 270 MB for 14 shapes of 13 groups at weight 6, made on the device in
milliseconds where an upload would take tenths of a second) and a presence bit per key. For each chunk, one kernel per device runs over its share of the chunk's subjects. The
chunk's residues are the scanner's: with the workers of the engine's CUDA scanner
(:meth:`swgpu_core.engine.CudaEngine.seeder` passes them) a chunk is uploaded once for both
stages. The kernel sets a bit per (query, subject); the bits come back as each query's
sorted subjects.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Generator

import cupy as cp
import numpy as np

from .. import kernel_abi
from ..database import Chunk, Database
from ..device_batches import device_parts
from ..fasta import EncodedSequence
from ..kernel_abi import SEED_MATRIX_STRIDE, SEED_WARPS, SeedCounter
from ..scoring import Scoring
from ..seed import SeedIndex, SeedParams, seed_index, seed_segments
from ..steps import drive
from .device import checked_devices
from .search import HIGHEST_PRIORITY, DeviceWorker, _record, _to_host

#: Segments a warp of the seed kernel takes (its launch has as many blocks as that makes). Not
#: a grid of one resident wave whose warps loop until the chunk is done: such blocks hold every
#: SM to the end, so the scoring of the run before (CudaBackend.scan_seeded) could not start a
#: block beside them; blocks that end after a few segments let it in, and its streams' higher
#: priority puts its blocks first. Measured against the resident wave (2a3c056 against 98c94c0,
#: one call): 0.757 against 0.768 s, within the spread.
SEGMENTS_PER_WARP = 4


_KERNEL_LOCK = threading.Lock()  # the warm-up's thread and a search may ask for a kernel at once


@functools.cache
def _compiled(device_id: int, params: SeedParams) -> cp.RawKernel:
    with cp.cuda.Device(device_id):
        options = ("-std=c++17", *kernel_abi.compile_options(), *kernel_abi.seed_options(params))
        return cp.RawModule(code=kernel_abi.kernel_source("seed.cu"), options=options).get_function("seed_candidates")


def _kernel(device_id: int, params: SeedParams) -> cp.RawKernel:
    """The seed kernel for ``params`` on ``device_id``, compiled once per process (CuPy keeps the
    binary on disk, keyed by the source and the options); a second caller waits for the first's."""
    with _KERNEL_LOCK:
        return _compiled(device_id, params)


def _candidate_pairs(flags: cp.ndarray, row_words: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The set bits of ``flags`` (a row of ``row_words`` words per query, bit ``s`` of a row for
    subject ``s`` < ``n``) as (queries, subjects), int64 on the host, sorted by query, then subject.

    The words with a bit set (a few hundred thousand of a run's millions) are picked first, then
    only their bits unpacked and scanned, all on the device: unpacking every bit (a byte per
    (query, subject), 50 MB a run of bench200M x 500 queries) and scanning those had
    temporaries of an int64 per byte, which grew CuPy's pool in a cold process at every larger
    run; expanding the picked words on the host instead cost it 18 ms a run (bench/RESULTS.md)."""
    words = flags.ravel()
    at = cp.flatnonzero(words)
    bit = cp.flatnonzero(cp.unpackbits(words[at].view(cp.uint8), bitorder="little"))
    word = at[bit >> 5]
    subjects = (word % row_words) * 32 + (bit & 31)
    keep = subjects < n
    pairs = cp.stack((word[keep] // row_words, subjects[keep])).get()
    return pairs[0], pairs[1]


class _DeviceSeed:
    """One device's kernel, key table and buffers."""

    def __init__(self, worker: DeviceWorker, index: SeedIndex, params: SeedParams, scoring: Scoring):
        self.worker = worker
        self.params = params
        self.n_queries = index.n_queries
        self.function = _kernel(worker.device_id, params)
        n_shapes, n_keys = len(params.shapes), params.n_keys
        matrix = np.zeros((SEED_MATRIX_STRIDE, SEED_MATRIX_STRIDE), np.int32)
        m = np.asarray(scoring.matrix)
        matrix[: m.shape[0], : m.shape[1]] = m
        with cp.cuda.Device(worker.device_id):
            # a stream of its own, at the lowest priority: the next part's seeding runs beside the
            # scoring of the part before (CudaBackend.scan_seeded), whose blocks go first
            self.stream = cp.cuda.Stream(non_blocking=True, priority=0)
            self.collect = cp.cuda.Stream(non_blocking=True, priority=HIGHEST_PRIORITY)
            with self.stream:
                # each shape's keys are sorted: one searchsorted per shape gives its key offsets,
                # with no host round trip (bincount would read the keys' maximum back first)
                keys = cp.asarray(index.keys if index.keys.size else np.zeros(1, np.int32))
                every = cp.arange(n_keys + 1, dtype=cp.int32)
                self.key_offsets = cp.empty((n_shapes, n_keys + 1), cp.int32)
                for k in range(n_shapes):
                    a, b = int(index.shape_starts[k]), int(index.shape_starts[k + 1])
                    self.key_offsets[k] = cp.searchsorted(keys[a:b], every) + a
                del keys, every
                words = -(-n_keys // 32)
                present = cp.zeros((n_shapes, words * 32), cp.uint8)
                present[:, :n_keys] = self.key_offsets[:, 1:] > self.key_offsets[:, :-1]
                # CuPy's packbits has no axis: rows of words * 32 bits pack into whole words
                self.bitmap = cp.packbits(present.ravel(), bitorder="little").view(cp.uint32).reshape(n_shapes, words)
                del present
                self.positions = cp.asarray(index.positions if index.positions.size else np.zeros(1, np.int32))
                self.query_of = cp.asarray(index.query_of() if index.codes.size else np.zeros(1, np.int32))
                self.qstart = cp.asarray(index.starts.astype(np.int32))
                self.qcodes = cp.asarray(index.codes if index.codes.size else np.zeros(1, np.uint8))
                self.reduction = cp.asarray(params.reduction())
                self.shape_offsets = cp.asarray(params.shape_offsets())
                self.shape_lengths = cp.asarray(params.shape_lengths())
                self.matrix = cp.asarray(matrix)
                self.counters = cp.zeros(len(SeedCounter), np.uint64)
            self._host_counters = np.frombuffer(cp.cuda.alloc_pinned_memory(8 * len(SeedCounter)), np.uint64, len(SeedCounter))
        self.kernel_seconds = 0.0
        self.last_timing: dict = {}

    def steps(
        self, db: Database, chunk: Chunk, keep: Chunk | None = None
    ) -> Generator[cp.cuda.Event, None, tuple[list[np.ndarray], np.ndarray]]:
        """Per query, its candidates in ``chunk`` (chunk-relative, sorted), and the kernel's counters,
        as steps for :func:`~swgpu_core.steps.drive` (it yields the event it waits for; the kernel is
        queued by the first step). ``keep``: a chunk the upload must not drop to make room (one
        still being scored)."""
        kept = self.worker.upload(db, keep) if keep is not None else None
        dev = self.worker.upload(db, chunk, keep=kept)
        n = chunk.n_sequences
        row_words = -(-n // 32)
        segments = seed_segments(dev.rows)
        blocks = max(1, -(-len(segments) // (SEED_WARPS * SEGMENTS_PER_WARP)))
        with cp.cuda.Device(self.worker.device_id), self.stream:
            self.stream.wait_event(dev.ready)
            on_device = cp.asarray(segments)
            flags = cp.zeros((self.n_queries, row_words), cp.uint32)
            self.counters.fill(0)
            start = _record(self.stream, timing=True)
            args = (
                dev.residues, dev.offsets, on_device, np.int32(len(segments)), self.reduction, self.shape_offsets, self.shape_lengths, self.bitmap,
                self.key_offsets, self.positions, self.query_of, self.qstart, self.qcodes, self.matrix, flags, np.int32(row_words),
                self.counters,
            )  # fmt: skip
            self.function((blocks,), (32 * SEED_WARPS,), args)
            end = _record(self.stream, timing=True)
            dev.last_use = end
            _to_host(self._host_counters, self.counters, self.stream)
            counted = _record(self.stream)
        yield counted
        counted.synchronize()
        # the kernel is done; the bits become pairs on a stream of the highest priority, whose
        # small kernels take the next free SM before pending blocks of the scoring queued beside
        # them: on the seeder's own stream, of the lowest, they would queue behind those, and the
        # host thread, which waits for them here, with them
        with cp.cuda.Device(self.worker.device_id), self.collect:
            queries, subjects = _candidate_pairs(flags, row_words, n)
        split = np.searchsorted(queries, np.arange(self.n_queries + 1))
        seconds = cp.cuda.get_elapsed_time(start, end) / 1e3
        self.kernel_seconds += seconds
        self.last_timing = {"seconds": seconds, "blocks": blocks, "pairs": int(subjects.size)}
        return [subjects[split[q] : split[q + 1]] for q in range(self.n_queries)], self._host_counters.copy()


def warm_up(worker: DeviceWorker, params: SeedParams, scoring: Scoring) -> None:
    """Load, ahead of a fast search (from :func:`swgpu_core.engine.warm_up`'s thread), what its
    candidate stage loads on first use in a process: the seed kernel for ``params``, and the
    CuPy routines of the key table and of the candidates' collection, by making the tables of an
    empty query batch and collecting a few set bits on ``worker``'s device. (A cold process's
    first search spent 0.4 s more than a warm one making its tables, and its collections 0.1 s
    more within its scan, bench/RESULTS.md.) The tables' memory stays in CuPy's pool, in the
    part of this seeder's own streams, which the search's seeder does not use."""
    seed = _DeviceSeed(worker, seed_index([], params), params, scoring)
    with cp.cuda.Device(worker.device_id), seed.collect:
        # bits set, one past the subjects: every routine runs (CuPy loads none for an empty array)
        _candidate_pairs(cp.asarray(np.array([[5, 0], [0, 1 << 31]], np.uint32)), 2, 40)
        seed.collect.synchronize()


class CudaSeeder:
    """The candidate stage of one query batch on one or more GPUs (see :class:`swgpu_core.seed.Seeder`):
    each chunk's subjects are cut into one run per device, seeded side by side, all devices
    driven from this thread (:func:`~swgpu_core.steps.drive`). ``threads``: the host cores its
    seed index is made on (:func:`~swgpu_core.seed.seed_index`; 0: all this process may use)."""

    name = "cuda"

    def __init__(
        self,
        scoring: Scoring,
        queries: list[EncodedSequence],
        params: SeedParams,
        devices: list[int] | None = None,
        *,
        workers: list[DeviceWorker] | None = None,
        threads: int = 0,
    ):
        ids = checked_devices([w.device_id for w in workers] if workers else devices)
        self.params = params
        self.n_queries = len(queries)
        self.counts = {"hits": 0, "extensions": 0, "candidates": 0}
        workers = workers or [DeviceWorker(d, scoring, None, None, None) for d in ids]
        self.index = seed_index([q.codes for q in queries], params, threads)  # on the host
        self.devices = [_DeviceSeed(w, self.index, params, scoring) for w in workers]

    @property
    def kernel_seconds(self) -> float:
        """Seconds of seed kernels, the slowest device's."""
        return max(d.kernel_seconds for d in self.devices)

    @property
    def workers(self) -> list[DeviceWorker]:
        """The device workers it seeds on, one per device (a scanner's, when the engine made both)."""
        return [d.worker for d in self.devices]

    def part_steps(
        self, device: int, db: Database, part: Chunk, keep: Chunk | None = None
    ) -> Generator[cp.cuda.Event, None, list[np.ndarray]]:
        """Per query, its candidates in ``part`` (a run of a chunk, database numbering, sorted) on
        the ``device``-th device, as steps (the first queues the kernel; ``keep``: see
        :meth:`_DeviceSeed.steps`); the counts are added as it ends."""
        found, counters = yield from self.devices[device].steps(db, part, keep)
        self.counts["hits"] += int(counters[SeedCounter.HITS])
        self.counts["extensions"] += int(counters[SeedCounter.EXTENSIONS])
        self.counts["candidates"] += sum(int(f.size) for f in found)
        return [f + part.first for f in found]

    def candidates(self, db: Database, chunk: Chunk) -> list[np.ndarray]:
        if self.n_queries == 0 or chunk.n_sequences == 0:
            return [np.zeros(0, np.int64) for _ in range(self.n_queries)]
        mine = device_parts(db, [chunk], len(self.devices))

        def run(d: int) -> Generator[cp.cuda.Event, None, list[tuple[Chunk, list[np.ndarray]]]]:
            done = []
            for _c, p in mine[d]:
                done.append((p, (yield from self.part_steps(d, db, p))))
            return done

        results = sorted(
            (r for per_device in drive([run(d) for d in range(len(self.devices))]) for r in per_device), key=lambda r: r[0].first
        )
        return [np.concatenate([found[q] for _part, found in results]) for q in range(self.n_queries)]
