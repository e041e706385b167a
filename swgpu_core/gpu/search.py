"""CUDA backend: the scan kernels over a length-sorted chunk, exact scores, top hits.

Per chunk, subjects up to the length threshold go to the inter-task kernel (a few lanes
of a warp per pair of subjects) and longer ones to the intra-task kernel (a block per
pair), launched on their own streams so the long tail overlaps the bulk (a streamed
batch's bulk is cut in two parts on two more streams, so that consecutive queries' scans
overlap). Both run in packed 16-bit arithmetic; subjects whose score may have overflowed
are rescored in 32 bits, so every score is exact. Only the candidates that can enter a query's top list leave the GPU.

Chunks are uploaded once and kept while they fit the memory budget; otherwise each chunk
is copied on a separate stream while the previous chunk is being scanned. Uploads go
through a small ring of pinned buffers, so host memory stays bounded. The queries of a
batch are pipelined (:meth:`DeviceWorker.scan_chunk`): the host queues a query's scans
before it waits for anything of the previous one.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Generator, Iterator
from concurrent.futures import Future, wait
from dataclasses import dataclass, field, replace

import cupy as cp
import numpy as np

from .. import cuda_driver, kernel_abi
from ..database import Chunk, Database
from ..device_batches import Batch, device_batches, device_parts, pipeline_runs, streamed_query_order
from ..fasta import EncodedSequence
from ..kernel_abi import SELECT_PICK_THREADS, boundary_rows, even_cuts, scan_rows, select_passes
from ..per_device import PerDevice
from ..plan import DeviceModel, LengthProfile, Plan, choose_threshold, evaluate
from ..score_stats import ScoreHistograms
from ..scoring import Scoring
from ..seed import Seeder, SeedParams
from ..steps import drive
from ..subset_tasks import TASK_LANES, TaskList, pair_kernels, scores_by_query, task_list
from .device import checked_devices, geometry
from .kernels import INTRA_TASK_SHAPES, Shape, build_profile, pick_shapes, scan_kernels
from .score_stats import length_bins, queue_histogram

#: device bytes per residue of a batch: the residue, kept while the batch is resident, and
#: its share of the boundary buffer, which is scratch (one per worker, the largest batch's
#: size): half a row of BOUNDARY_ROW_BYTES (kernel_abi.boundary_rows), plus a row per residue
#: of the longest subject (:func:`_device_bytes`)
RESIDUE_BYTES, BOUNDARY_BYTES, BOUNDARY_ROW_BYTES = 1, 4, 8
#: bytes per residue of a database kept whole on the device
BYTES_PER_RESIDUE = RESIDUE_BYTES + BOUNDARY_BYTES
#: bytes per residue of a streamed batch: two resident (one scanned, the next being copied), one boundary buffer
STREAMED_BYTES_PER_RESIDUE = 2 * RESIDUE_BYTES + BOUNDARY_BYTES
#: rescored subjects whose list comes back with their count (more: one more copy, awaited)
RESCORE_LISTED = 256
#: the upload ring: pinned staging buffers and their size (a batch is copied in pieces)
STAGING_BUFFERS, STAGING_BYTES = cuda_driver.UPLOAD_RING
#: per GPU: the selection routines loaded (:meth:`DeviceWorker.prepare`), and the upload ring the
#: warm-up pins for the search's first worker (:func:`warm_up_device`), each done by whichever
#: thread comes first while the other waits (:mod:`swgpu_core.per_device` says why)
_ROUTINES: PerDevice[None] = PerDevice()
_RINGS: PerDevice[list] = PerDevice()
#: steps after its launch at which a query's overflow count is awaited (then its rescoring and
#: selection queued), and its selection (then the copies of its candidates). Four, not two:
#: five queries' long subjects in flight fill the GPU better where a streamed batch holds
#: only long subjects (H100, bench200M x 20, three runs each: budget 1/32 2.428 against
#: 2.493 s, 1/8 2.079 against 2.106 s, resident 1.91 s either way; commit 8e072d9)
SELECT_LAG = 4
FETCH_LAG = SELECT_LAG + 1
#: queries of a batch in flight on one worker (see DeviceWorker.scan_steps): up to
#: SELECT_LAG + 1 being scanned (their long subjects each on its own stream), one whose
#: candidates are being selected and copied back
PIPELINE_DEPTH = FETCH_LAG + 1
#: streams for the long subjects' scans, one per query whose scans may be running at once
LONG_STREAMS = SELECT_LAG + 1
#: streams for the bulk's (inter-task) scans: a query's bulk is cut in this many parts of about
#: equal residues, each on its own stream, so that the next query's first part starts while
#: this query's last part finishes (see DeviceWorker._launch)
INTER_STREAMS = 2
#: the boundary rows a rescoring claims: all of them (it may rescore any subject)
ALL_ROWS = 1 << 62
#: the query of a batch at whose launch the next batch is uploaded (or the batch's last): the
#: batch before has been selected SELECT_LAG queries after its last launch, so its last use is
#: recorded, and the upload's wait for it (to make room) leaves a few queries' scans queued
UPLOAD_AT = SELECT_LAG + 2
assert PIPELINE_DEPTH > FETCH_LAG >= SELECT_LAG, "a slot is taken again only after its last query's candidates were copied"
#: the scratch buffers of each ring slot for a batch of n subjects: name -> (n times, plus, dtype):
#: a query's scores and overflow list (count first), its candidates' indices and scores and their
#: count, and the keys of its scores above the score histogram's cap
SLOT_BUFFERS = {"scores": (1, 0, np.int32), "overflow": (1, 1, np.int32), "index": (1, 0, np.int32), "value": (1, 0, np.int32),
                "count": (0, 1, np.int32), "keys": (1, 0, np.int64)}  # fmt: skip
#: the intra-task task kernel's shape for a block of so many warps (the fast mode's long pairs)
_INTRA_TASK_SHAPE = {s.warps: s for s in INTRA_TASK_SHAPES}
#: device bytes of query profiles kept between the batches of a search
PROFILE_CACHE_BYTES = 256 << 20
#: a stream priority above every device's range: CUDA clamps it to the device's greatest
#: (cudaStreamCreateWithPriority), and CuPy does not expose cudaDeviceGetStreamPriorityRange
HIGHEST_PRIORITY = -1000
#: bytes each profile of one copy (DeviceWorker._profiles_for) starts at a multiple of: the
#: kernels read a profile's rows in 16-byte loads, and this keeps each one's first row on a line
PROFILE_ALIGN = 256


@dataclass
class DeviceChunk:
    """A batch's residues and offsets in device memory."""

    batch: Batch
    residues: cp.ndarray
    offsets: cp.ndarray
    lengths: LengthProfile  # host copy, for the threshold split
    rows: np.ndarray  # host copy of the offsets (the scans' boundary rows, DeviceWorker._claim; rescoring windows)
    subjects: cp.ndarray  # 0..n-1, the kernels' subject list for a whole-chunk scan
    ready: cp.cuda.Event  # the copy to the device is done
    plans: dict = field(default_factory=dict)  # (query length, fixed threshold) -> Plan
    last_use: cp.cuda.Event | None = None  # recorded on the compute stream after the last kernel reading it
    lbins: cp.ndarray | None = None  # the subjects' length bins, for score histograms (made on first use)

    @property
    def nbytes(self) -> int:
        return int(self.residues.nbytes + self.offsets.nbytes)

    @property
    def longest(self) -> int:
        """Its longest subject's length (the last: subjects sorted by length)."""
        return int(self.rows[-1] - self.rows[-2]) if self.rows.size > 1 else 0


class DeviceWorker:
    """Everything one GPU needs: kernels, streams, resident chunks, scratch buffers."""

    def __init__(self, device_id: int, scoring: Scoring, threshold: int | None, budget: int | None, arith: str | None):
        self.device_id = device_id
        self.scoring = scoring
        self.threshold = threshold
        self.geometry = geometry(device_id)
        self.name = self.geometry.name
        with cp.cuda.Device(device_id):
            self.kernels = scan_kernels(device_id, arith)
            self.compute = cp.cuda.Stream(non_blocking=True)
            self.inters = [cp.cuda.Stream(non_blocking=True) for _ in range(INTER_STREAMS)]
            # the long subjects' streams at the highest priority: their blocks are each query's
            # critical path (see _launch), so they take an SM before any pending block of the bulk
            self.longs = [cp.cuda.Stream(non_blocking=True, priority=HIGHEST_PRIORITY) for _ in range(LONG_STREAMS)]
            self.long = self.longs[0]
            self.copy = cp.cuda.Stream(non_blocking=True)
            free, _total = cp.cuda.runtime.memGetInfo()
            self._counts_memory = cp.cuda.alloc_pinned_memory(16 * PIPELINE_DEPTH)
            self._listed_memory = cp.cuda.alloc_pinned_memory(4 * RESCORE_LISTED * PIPELINE_DEPTH)
            # the selection's radix select (_kth_largest): its histogram (zero between passes),
            # its state (prefix, rank) and the k-th largest score; made and used in order on the compute stream
            with self.compute:
                self._select_scratch = (cp.zeros(1 << kernel_abi.SELECT_BITS, np.uint32), cp.zeros(2, np.uint32), cp.zeros(1, np.int32))
        self._counts = [np.frombuffer(self._counts_memory, np.int32, 4, offset=16 * k) for k in range(PIPELINE_DEPTH)]
        # per slot, the first RESCORE_LISTED entries of a query's overflow list, copied with its count
        self._listed = [
            np.frombuffer(self._listed_memory, np.int32, RESCORE_LISTED, offset=4 * RESCORE_LISTED * k) for k in range(PIPELINE_DEPTH)
        ]
        # (device profile, its pinned staging, the end of its copy) per shape and query
        self._profiles: dict[tuple[Shape, bytes], tuple[cp.ndarray, object, cp.cuda.Event]] = {}
        self._staging: list = []  # the upload ring of pinned buffers (made on first upload)
        self._staged: list[cp.cuda.Event | None] = []  # per buffer, the end of the copy out of it
        self._next_staging = 0
        self._profile_bytes = 0
        self.budget = budget if budget is not None else int(free * 0.6)
        self.resident: dict[tuple[str, int], DeviceChunk] = {}
        self.kernel_seconds = 0.0
        self.cells = 0
        self.long_pairs = 0  # the fast mode's pairs scored by the intra-task kernel's lists (subset_steps)
        self.last_timing: dict = {}
        self._scratch: dict[str, cp.ndarray] = {}
        self._model: DeviceModel | None = None
        self._launches = 0  # scans launched, which picks each query's long stream
        self._boundary_users: list[tuple[int, int, cp.cuda.Stream, cp.cuda.Event]] = []  # recent scans' rows: (first, stop, stream, end)

    @property
    def model(self) -> DeviceModel:
        """The planner's constants for this GPU (measured once, then cached on disk) and its geometry."""
        if self._model is None:
            from .calibration import load_or_calibrate

            self._model = replace(load_or_calibrate(self), geometry=self.geometry)
        return self._model

    # -- memory ------------------------------------------------------------------------
    @property
    def resident_bytes(self) -> int:
        """What the memory budget counts: the resident batches and a boundary buffer for the largest."""
        return _device_bytes([(d.batch.n_residues, d.longest) for d in self.resident.values()])

    def _buffer(self, name: str, size: int, dtype) -> cp.ndarray:
        """A scratch buffer of at least ``size``, kept for later batches.

        Scratch buffers are written by the inter and long streams as well as the compute stream, while
        CuPy's pool is stream-ordered: memory freed on the current stream (say, a selection's
        temporaries) is handed out again at once, with kernels still queued that use it. So
        before a buffer is dropped or made, the worker's streams are drained; that happens only
        when a batch needs more than any before it, at its first launches."""
        buf = self._scratch.get(name)
        if buf is None or buf.size < size:
            self._drain()
            self._scratch.pop(name, None)
            buf = cp.empty(max(size, 1), dtype=dtype)
            self._scratch[name] = buf
        return buf[:size]

    def _slot_buffer(self, name: str, slot: int, n: int) -> cp.ndarray:
        """Ring slot ``slot``'s scratch buffer ``name`` (SLOT_BUFFERS) for a batch of ``n`` subjects."""
        times, plus, dtype = SLOT_BUFFERS[name]
        return self._buffer(f"{name}{slot}", times * n + plus, dtype)

    def _boundary(self, dev: DeviceChunk) -> cp.ndarray:
        """The boundary buffer for ``dev``: (H, E) rows as the packed scans place them (half a row
        per residue, kernel_abi.boundary_rows), shared by the scans (:meth:`_claim`)."""
        return self._buffer("boundary", 2 * boundary_rows(dev.batch.n_residues, dev.longest, 2), np.uint32)

    def _reserve(self, db: Database, batches: list[Batch], histograms: bool) -> None:
        """Make the scratch buffers of every ring slot for the largest of ``batches`` before the
        first launch, while the streams are idle: a buffer made larger later would drain them
        (:meth:`_buffer`) and leave the queries in flight with the old one."""
        self._buffer("boundary", 2 * max(boundary_rows(b.n_residues, b.longest(db), 2) for b in batches), np.uint32)
        for slot in range(PIPELINE_DEPTH):
            for name in SLOT_BUFFERS:
                if histograms or name != "keys":
                    self._slot_buffer(name, slot, max(b.n_sequences for b in batches))

    def _drain(self) -> None:
        """Wait for everything queued on the compute, inter and long streams (not the copy stream,
        whose upload of the next batch may go on)."""
        with cp.cuda.Device(self.device_id):
            for stream in (self.compute, *self.inters, *self.longs):
                stream.synchronize()

    def staging_ring(self) -> None:
        """Get the ring of pinned buffers of :meth:`_copy_in`: the one the warm-up pinned for
        this GPU (:func:`warm_up_device`; waiting while it does), else a new one. Once per
        worker: the first GPU's worker at its set-up (:class:`CudaBackend`), another on its
        first upload (a worker that copies its batches from another GPU needs none)."""
        if not self._staging:
            self._staging = _RINGS.take(self.device_id, functools.partial(_pinned_ring, self.device_id))
            self._staged = [None] * STAGING_BUFFERS

    def _copy_in(self, dst: cp.ndarray, src: np.ndarray) -> None:
        """Queue the copy of ``src`` (host, contiguous) into ``dst`` on the copy stream, in pieces
        staged through the ring of pinned buffers: a piece is staged while the previous one is
        copied. Race-free: a staging buffer is refilled only after the event recorded behind the
        copy out of it has completed. Host memory stays bounded by the ring, whatever the database.
        """
        data = np.ascontiguousarray(src).reshape(-1).view(np.uint8)
        self.staging_ring()
        for start in range(0, data.size, STAGING_BYTES):
            piece = data[start : start + STAGING_BYTES]
            k = self._next_staging
            self._next_staging = (k + 1) % STAGING_BUFFERS
            if self._staged[k] is not None:
                self._staged[k].synchronize()
            staged = np.frombuffer(self._staging[k], np.uint8, piece.size)
            staged[:] = piece
            cp.cuda.runtime.memcpyAsync(
                dst.data.ptr + start, staged.ctypes.data, piece.size, cp.cuda.runtime.memcpyHostToDevice, self.copy.ptr
            )
            self._staged[k] = _record(self.copy)

    def upload(
        self, db: Database, batch: Batch | Chunk, keep: DeviceChunk | None = None, peer: tuple[int, DeviceChunk] | None = None
    ) -> DeviceChunk:
        """Copy a batch (or a chunk) to the device on the copy stream (through the pinned ring),
        or reuse it.

        ``peer``: (device, its copy of the same batch, whose residues were verified as they
        went there), to copy from GPU to GPU instead: over NVLink a 200 M-residue database
        takes milliseconds, where the host's staging ring takes about 0.1 s and the host
        thread that drives the other GPUs. Through the host where the two GPUs cannot
        reach each other's memory.

        Under the budget, the oldest resident batches (never ``keep``) are dropped first.
        Race-free without synchronising the streams: a dropped batch's device memory goes back
        to CuPy's pool only after its ``ready`` event (its copy is done) and its ``last_use``
        event (every kernel reading it is done; :meth:`scan_steps` records it before it
        uploads the batch that may take its place) have completed.
        """
        if isinstance(batch, Chunk):
            batch = Batch.of(batch)
        key = (str(db.path), batch.key)
        if key in self.resident:
            return self.resident[key]
        with cp.cuda.Device(self.device_id):
            size = batch.n_residues
            for old in list(self.resident):  # oldest batches first
                if (
                    _device_bytes([*((d.batch.n_residues, d.longest) for d in self.resident.values()), (size, batch.longest(db))])
                    <= self.budget
                ):
                    break
                if self.resident[old] is keep:
                    continue
                victim = self.resident.pop(old)
                victim.ready.synchronize()
                if victim.last_use is not None:
                    victim.last_use.synchronize()
            if peer is not None and self._reaches(peer[0]):
                dev = self._copy_from(*peer)
                self.resident[key] = dev
                return dev
            host_off = batch.offsets(db)
            with self.copy:  # from the copy stream's part of CuPy's pool, which its copies use in order
                residues = cp.empty(size, dtype=np.uint8)
                offsets = cp.empty(host_off.size, dtype=np.int64)
                subjects = cp.arange(batch.n_sequences, dtype=np.int32)
            at = 0
            for run in batch.runs:
                self._copy_in(residues[at : at + run.n_residues], db.chunk_residues(run, verify=False))
                at += run.n_residues
            self._copy_in(offsets, host_off)
            for run in batch.runs:
                db.verify_residues(run)  # checked (or awaited) while its copy runs, before any kernel reads it
            lengths = LengthProfile(batch.lengths(db))
            ready = cp.cuda.Event()
            ready.record(self.copy)
            dev = DeviceChunk(batch, residues, offsets, lengths, host_off, subjects, ready)
            self.resident[key] = dev
            return dev

    def _reaches(self, device: int) -> bool:
        """Whether this GPU can copy from ``device``'s memory directly (peer access enabled
        here if needed; the same GPU always can)."""
        if device == self.device_id:
            return True
        if not cp.cuda.runtime.deviceCanAccessPeer(self.device_id, device):
            return False
        with cp.cuda.Device(self.device_id):
            try:
                cp.cuda.runtime.deviceEnablePeerAccess(device)
            except cp.cuda.runtime.CUDARuntimeError as exc:  # enabled before, in this process
                if "PeerAccessAlreadyEnabled" not in str(exc):
                    raise
        return True

    def _copy_from(self, device: int, peer: DeviceChunk) -> DeviceChunk:
        """A copy of ``peer`` (resident on ``device``) made on this GPU's copy stream, GPU to GPU.
        The host waits for the peer's own copy first (this runs in a thread of its own)."""
        peer.ready.synchronize()
        with self.copy:
            residues, offsets = cp.empty(peer.residues.size, np.uint8), cp.empty(peer.offsets.size, np.int64)
            subjects = cp.arange(peer.batch.n_sequences, dtype=np.int32)
        for dst, src in ((residues, peer.residues), (offsets, peer.offsets)):
            if device == self.device_id:
                kind = cp.cuda.runtime.memcpyDeviceToDevice
                cp.cuda.runtime.memcpyAsync(dst.data.ptr, src.data.ptr, src.nbytes, kind, self.copy.ptr)
            else:
                cp.cuda.runtime.memcpyPeerAsync(dst.data.ptr, self.device_id, src.data.ptr, device, src.nbytes, self.copy.ptr)
        ready = cp.cuda.Event()
        ready.record(self.copy)
        return DeviceChunk(peer.batch, residues, offsets, peer.lengths, peer.rows, subjects, ready)

    # -- scan ----------------------------------------------------------------------------
    def plan(self, dev: DeviceChunk, query_length: int, streamed: bool = False) -> Plan:
        """Threshold for this batch and query: fixed by the user, or the planner's choice
        (pure, so computed once per batch and query length; ``streamed``: the batch is one of
        several, see :func:`~swgpu_core.plan.choose_threshold`)."""
        key = (query_length, self.threshold)
        found = dev.plans.get(key)
        if found is None:
            if self.threshold is not None:
                found = evaluate(dev.lengths, query_length, self.threshold, self.model)
            else:
                found = choose_threshold(dev.lengths, query_length, self.model, streamed=streamed)
            dev.plans[key] = found
        return found

    def _profile(self, query: EncodedSequence, shape: Shape, stream: cp.cuda.Stream) -> cp.ndarray:
        """The query's profile for ``shape`` on the device, ready for kernels queued next on
        ``stream``; kept for the batches of a search (:meth:`_profiles_for`)."""
        return self._profiles_for([query], shape, stream)[0]

    def _profiles_for(self, queries: list[EncodedSequence], shape: Shape, stream: cp.cuda.Stream) -> list[cp.ndarray]:
        """Each query's profile for ``shape`` on the device, ready for kernels queued next on
        ``stream``; kept for the batches of a search.

        The missing ones are built on the host (while the GPU scans what was queued before)
        into one pinned buffer, kept with them, and go up by one copy queued on ``stream``, so
        the host never waits for the kernels queued before it: a pinned buffer per profile
        cost a cold process (the command line) a call to the driver each, 86 us, 907 of
        them in a fast search of 500 queries (bench/RESULTS.md). A kept profile may have
        been copied on another stream (a repeated query), so ``stream`` waits for that copy.

        The profiles' memory comes from ``stream``'s part of CuPy's pool, which is
        stream-ordered: taken from the compute stream's part, a long stream's profile could be
        memory that a selection still queued there has just freed (its temporaries).
        """
        keys = [(shape, q.codes.tobytes()) for q in queries]
        built: dict[tuple[Shape, bytes], np.ndarray] = {}
        for key, query in zip(keys, queries):
            if key not in self._profiles and key not in built:
                built[key] = build_profile(query.codes, self.scoring, shape)
        if built:
            starts, size = _layout(list(built.values()), PROFILE_ALIGN)
            pinned = cp.cuda.alloc_pinned_memory(size)
            host = np.frombuffer(pinned, np.uint8, size)
            for prof, at in zip(built.values(), starts):
                host[at : at + prof.nbytes] = prof.view(np.uint8).ravel()
            with stream:
                device = cp.empty(size, np.uint8)
            cp.cuda.runtime.memcpyAsync(device.data.ptr, host.ctypes.data, size, cp.cuda.runtime.memcpyHostToDevice, stream.ptr)
            copied = _record(stream)
            for (key, prof), at in zip(built.items(), starts):
                self._profiles[key] = (device[at : at + prof.nbytes].view(prof.dtype).reshape(prof.shape), pinned, copied)
                self._profile_bytes += prof.nbytes
        waited: set[int] = set()
        for key in keys:
            copied = self._profiles[key][2]
            if key not in built and id(copied) not in waited:
                stream.wait_event(copied)
                waited.add(id(copied))
        return [self._profiles[key][0] for key in keys]

    def _forget_profiles(self) -> None:
        """Drop the kept profiles once they pass PROFILE_CACHE_BYTES (many queries), after the
        streams have drained: kernels queued before may still read them (the flights in
        flight keep their own references, for their rescoring)."""
        if self._profile_bytes > PROFILE_CACHE_BYTES:
            self._drain()
            self._profiles.clear()
            self._profile_bytes = 0

    def _launch(self, dev: DeviceChunk, query: EncodedSequence, slot: int, index: int = 0, cut: bool = False) -> _Flight:
        """Queue the packed 16-bit scans of ``query`` over ``dev`` (no host wait) and the copy of
        its count of overflowed subjects into pinned memory.

        The long subjects (above the plan's threshold) go to the intra-task kernel on one of
        the long streams, which have the highest priority, so the blocks of each query's
        critical path take an SM before any pending block of the bulk; the other subjects go
        to the inter-task kernel, on the compute stream or, with ``cut``, cut into
        INTER_STREAMS parts of about equal residues, part ``j`` of every query on inter stream
        ``j``. The scans join on the long stream, which then copies the count. Nothing waits
        for a query's longest subjects but its own selection, so the next queries' scans fill
        the GPU beside them, and on a batch of only long subjects several queries' scans run
        at once.

        Why a streamed batch's bulk is cut: consecutive queries' scans of a batch write the
        same boundary rows, so one kernel over the whole bulk would have to end, its last wave
        draining the GPU, before the next query's could start, and a streamed batch is only a
        wave or two of the kernel. Cut, the next query's first part waits only for this
        query's first part (the same stream) and runs while its second part drains (bench200M
        x 20 on an H100, budget 1/8: 2.25 -> 2.20 s; 1/32: 2.77 -> 2.68 s). A resident
        database is not cut: its scans are many waves long, and cut it ran 0.5% slower with
        500 queries (bench/RESULTS.md). Two boundary buffers, consecutive queries alternating
        between them and between two sets of inter streams so that their scans need not wait
        for each other, were slower: at the same budget a batch holds 40% fewer residues (H100,
        bench200M x 20, three runs each, 2ced053: 1/32 2.61-2.65 s in 36 batches against
        2.39-2.44 s in 22; 1/8 2.11-2.15 against 2.10-2.13 s). Putting one-pass scans (which
        write no boundary rows) on inter streams of their own changed nothing (2.37-2.39
        against 2.39-2.41 s at 1/32).

        What the scans of different queries (of this batch or the one before) share is the
        boundary buffer: a scan with more than one pass writes its subjects' rows (the
        inter-task scans those below ``n_short``, the intra-task scan the others; where, says
        kernel_abi.scan_rows), and waits for any scan on another stream still running over rows
        it writes (:meth:`_claim`). ``n_short`` and the cuts are made even (one more subject for
        the inter-task kernel at most), as the packed scans' row placement asks: a pair's rows
        then depend on the pair alone, and the parts' rows are disjoint. Their slots' buffers
        are free when they start (:meth:`scan_steps`).
        """
        n = dev.batch.n_sequences
        plan = self.plan(dev, len(query), streamed=cut)
        n_short = dev.lengths.split(plan.threshold)
        n_short += n_short % 2 if n_short < n else 0
        inter, intra = pick_shapes(len(query), n_short, self.geometry.busy_threads, plan.intra_cols, plan.inter.max_length)
        long = self.longs[self._launches % LONG_STREAMS]
        self._launches += 1
        streams = self.inters if cut else [self.compute]
        cuts = even_cuts(dev.rows, n_short, len(streams))
        with cp.cuda.Device(self.device_id), self.compute:
            long.wait_event(dev.ready)
            scores = self._slot_buffer("scores", slot, n)
            overflow = self._slot_buffer("overflow", slot, n)
            boundary = self._boundary(dev)
            counts = self._counts[slot]
            start = _record(long, timing=True)
            with long:
                overflow[:1].fill(0)
            prof_intra = self._profile(query, intra, long)
            reset = _record(long)  # the overflow list is reset
            jobs = [(intra, long, prof_intra, n_short, n)]  # the long subjects first, so their blocks start before the bulk fills the GPU
            for stream, first, stop in zip(streams, cuts, cuts[1:]):
                stream.wait_event(dev.ready)
                stream.wait_event(reset)
                jobs.append((inter, stream, self._profile(query, inter, stream), first, stop))
            marks = []
            for shape, stream, prof, first, stop in jobs:
                multipass = prof.shape[1] // shape.cols > 1 and stop > first
                rows = scan_rows(dev.rows, first, stop, 2)
                if multipass:
                    self._claim(*rows, stream)
                marks.append(_record(stream, timing=True))
                self.launch_scan(shape, False, stream, dev, prof, dev.subjects[first:stop], stop - first,
                                 32767 - self.scoring.max_score, boundary, scores, overflow)  # fmt: skip
                marks.append(_record(stream, timing=True))
                if multipass:
                    self._boundary_users.append((*rows, stream, marks[-1]))
            for end in marks[3::2]:  # the join: everything after this on the long stream sees every scan done
                long.wait_event(end)
            scanned = _record(long, timing=True)
            _to_host(counts[:1], overflow[:1], long)
            listed = self._listed[slot][: min(RESCORE_LISTED, n)]
            _to_host(listed, overflow[1 : 1 + listed.size], long)
            counted = _record(long)
        return _Flight(index, len(query), slot, scores, overflow, n_short, plan, (inter, intra), (jobs[1][2], prof_intra),
                       [start, *marks, scanned], counts, counted, listed)  # fmt: skip

    def _claim(self, first: int, stop: int, stream: cp.cuda.Stream) -> None:
        """Make ``stream`` wait for every recent scan on another stream that writes boundary rows
        ``first..stop`` (the same stream runs them in order). Only the claims of the last
        LONG_STREAMS + 1 queries are kept (an intra-task scan, a part per inter stream and a
        rescoring each): older ones are done, since at a launch the host has seen the overflow
        count (copied after all its scans) of every query but the last SELECT_LAG, of this batch
        or the one before, and a rescoring is awaited with its query's selection."""
        self._boundary_users = self._boundary_users[-(len(self.inters) + 2) * (LONG_STREAMS + 1) :]
        for lo, hi, other, end in self._boundary_users:
            if other is not stream and lo < stop and first < hi:
                stream.wait_event(end)

    def _rescore(self, dev: DeviceChunk, f: _Flight) -> None:
        """Wait for ``f``'s overflow count, then queue the 32-bit rescoring of the subjects
        whose 16-bit lanes may have wrapped (rare: scores near 32,767)."""
        f.counted.synchronize()  # from here on, work queued on the compute stream runs after all its scans
        f.rescored = int(f.counts[0])
        if not f.rescored:
            return
        if f.rescored <= f.listed.size:
            redo = np.sort(f.listed[: f.rescored])
        else:  # more than came back with the count: the whole list, awaited (on the copy stream, not behind the scans)
            redo = np.sort(f.overflow[1 : 1 + f.rescored].get(stream=self.copy))
        (inter, intra), (prof_inter, prof_intra) = f.shapes, f.profiles
        with cp.cuda.Device(self.device_id), self.compute:
            # later queries' scans may be running on the inter and long streams, over boundary
            # rows that the rescored subjects may share
            for stream in (*self.inters, *self.longs):
                self.compute.wait_event(_record(stream))
            boundary = self._boundary(dev)
            begin = _record(self.compute, timing=True)
            # the 32-bit scans place a subject's rows at its residue offset (kernel_abi.scan_rows),
            # which the buffer, made for packed pairs, holds only within about half a batch: so
            # windows of the subjects whose residues fit it, each scanned with offsets counted
            # from the window's first residue
            for window in _windows(dev.rows, redo, boundary.size // 2):
                base = int(dev.rows[window[0]])
                shifted = _Shifted(dev.residues[base:], cp.subtract(dev.offsets, base))
                for shape, prof, sel in ((inter, prof_inter, window[window < f.n_short]), (intra, prof_intra, window[window >= f.n_short])):
                    if sel.size:
                        self.launch_scan(shape, True, self.compute, shifted, prof, cp.asarray(sel.astype(np.int32)), int(sel.size), 0,
                                         boundary, f.scores, f.overflow)  # fmt: skip
            f.rescore_marks = (begin, _record(self.compute, timing=True))
            self._boundary_users.append((0, ALL_ROWS, self.compute, f.rescore_marks[1]))

    def _select(self, dev: DeviceChunk | _Subjects, f: _Flight, top: int, hist: ScoreHistograms | None) -> None:
        """Queue the selection of ``f``'s candidates on the GPU: every subject scoring at least
        the ``top``-th best (ties included, as the CPU's ``candidates``; all subjects when there
        are at most ``top``), compacted into the slot's buffers in any order (put in subject
        order on the host, :meth:`scan_steps`); with
        ``hist``, the counting of its score histogram; and the copies of the counts to pinned
        memory (``counts[1]`` candidates, ``counts[2]`` scores above the histogram's cap)."""
        n = f.scores.size
        with cp.cuda.Device(self.device_id), self.compute:
            if n > top:
                kth = self._kth_largest(f.scores, top)
            else:
                kth = cp.full(1, np.iinfo(np.int32).min, np.int32)
            index, value, count = (self._slot_buffer(name, f.slot, n) for name in ("index", "value", "count"))
            count.fill(0)
            _compact_kernel()(f.scores, kth, index, value, count)
            _to_host(f.counts[1:2], count, self.compute)
            if hist is not None:
                if dev.lbins is None:
                    dev.lbins = length_bins(dev.offsets)
                dense = self._buffer(f"dense{f.slot}", hist.counts[f.index].size, np.int32)
                keys = self._slot_buffer("keys", f.slot, n)
                n_high = queue_histogram(hist, f.index, f.scores, dev.lbins, dense, keys)
                f.dense_pinned = cp.cuda.alloc_pinned_memory(max(dense.nbytes, 4))
                f.dense = np.frombuffer(f.dense_pinned, np.int32, dense.size)
                _to_host(f.dense, dense, self.compute)
                _to_host(f.counts[2:3], n_high, self.compute)
            f.selected = _record(self.compute)

    def _kth_largest(self, scores: cp.ndarray, k: int) -> cp.ndarray:
        """The ``k``-th largest of ``scores`` (device int32, more than ``k`` of them), as a
        one-element device array, queued on the current stream (the compute stream) without a
        host wait: ``kernels/select.cu``'s radix select, a counting pass and a one-block pick
        per digit. Why not ``cupy.partition``: for the k-th largest it sorts every score (a
        radix sort through Thrust), and the call cost the host 0.08-0.4 ms per query and batch
        (bench/select_probe.py, two H100s), time the host needs to queue the next scans of a
        streamed batch (bench200M x 20 at a budget of 1/32: 2.409 -> 2.398 s, medians of three,
        commit d74f07c). The scratch is the worker's, used in order on the compute stream."""
        count, pick = _select_kernels(self.device_id)
        hist, state, kth = self._select_scratch
        n = int(scores.size)
        blocks = max(1, min(-(-n // (SELECT_COUNT_BLOCK * SELECT_KEYS_PER_THREAD)), 4 * self.geometry.sms))
        for p, (shift, bits) in enumerate(select_passes()):
            count((blocks,), (SELECT_COUNT_BLOCK,), (scores, np.int64(n), state, hist, np.int32(shift), np.int32(bits)))
            pick((1,), (SELECT_PICK_THREADS,), (hist, state, np.int32(shift), np.int32(bits), np.int32(p == 0), np.uint32(k), kth))
        return kth

    def prepare(self) -> None:
        """Do before any timed scan what the first query's scan would otherwise do on first use:
        read the planner's model (cached on disk; measured once per GPU and kernel build), and
        load the kernels of every query's selection and score histogram (:meth:`_select`,
        :meth:`_fetch`): CuPy loads each routine's kernel on its first use in a process (from
        its disk cache, a few milliseconds each, some twenty of them). The same calls, on 64
        made-up scores of a made-up batch, then one synchronisation; once per GPU and process,
        by the warm-up's worker or the search's, whichever comes first (the other waits)."""
        _ = self.model
        _ROUTINES.once(self.device_id, self._load_routines)

    def _load_routines(self) -> None:
        """:meth:`prepare`'s made-up selection, once per GPU and process (:data:`_ROUTINES`)."""
        n, top = 64, 8
        hist = ScoreHistograms([100], 4)
        with cp.cuda.Device(self.device_id), self.compute:
            batch = _Subjects(cp.arange(0, 10 * (n + 1), 10, dtype=np.int64))
            scores = cp.arange(n, dtype=np.int32)
            flight = _Flight(0, 1, 0, scores, scores, n, None, None, None, [], self._counts[0], None)
            self._select(batch, flight, top, hist)
            self._fetch(flight, hist)
            self.compute.synchronize()

    def _fetch(self, f: _Flight, hist: ScoreHistograms | None) -> None:
        """Wait for ``f``'s counts, then queue the copies of its candidates (and histogram keys)
        to pinned host memory; they are read once the batch synchronises."""
        f.selected.synchronize()
        k = int(f.counts[1])
        n_high = int(f.counts[2]) if hist is not None else 0
        pinned = cp.cuda.alloc_pinned_memory(max(8 * k + 8 * n_high, 8))
        f.host = (np.frombuffer(pinned, np.int32, k), np.frombuffer(pinned, np.int32, k, offset=4 * k),
                  np.frombuffer(pinned, np.int64, n_high, offset=8 * k), pinned)  # fmt: skip
        with cp.cuda.Device(self.device_id):
            n = f.scores.size
            _to_host(f.host[0], self._slot_buffer("index", f.slot, n)[:k], self.compute)
            _to_host(f.host[1], self._slot_buffer("value", f.slot, n)[:k], self.compute)
            if n_high:
                _to_host(f.host[2], self._slot_buffer("keys", f.slot, n)[:n_high], self.compute)

    def _account(self, dev: DeviceChunk, f: _Flight, busy_until: cp.cuda.Event | None = None) -> None:
        """Kernel seconds of a finished flight (its events have all completed): from its start to
        the end of all its scans, less the part before ``busy_until`` (the latest end of the
        flights launched before it on this worker, which it may overlap), so that the
        flights' seconds add up to the time the GPU was scanning."""
        start, intra0, intra1, *inters, scanned = f.marks
        inter0 = functools.reduce(lambda a, b: b if cp.cuda.get_elapsed_time(a, b) < 0 else a, inters[0::2])
        inter1 = functools.reduce(lambda a, b: b if cp.cuda.get_elapsed_time(a, b) > 0 else a, inters[1::2])
        seconds = cp.cuda.get_elapsed_time(start, scanned) / 1e3
        if busy_until is not None:
            seconds = max(0.0, seconds - max(0.0, cp.cuda.get_elapsed_time(start, busy_until) / 1e3))
        if f.rescore_marks is not None:
            seconds += cp.cuda.get_elapsed_time(*f.rescore_marks) / 1e3
        self.last_timing = {
            "seconds": seconds,
            "intra_seconds": cp.cuda.get_elapsed_time(intra0, intra1) / 1e3,
            "inter_seconds": cp.cuda.get_elapsed_time(inter0, inter1) / 1e3,  # from the first part's start to the last's end
            "n_short": f.n_short,
            "threshold": f.plan.threshold,
            "predicted_seconds": f.plan.predicted_seconds,
            "rescored": f.rescored,
            "shapes": (f.shapes[0].template("16"), f.shapes[1].template("16")),
        }
        self.kernel_seconds += seconds
        self.cells += f.query_length * dev.batch.n_residues

    def scores(self, dev: DeviceChunk, query: EncodedSequence) -> cp.ndarray:
        """Exact scores of ``query`` against every subject of the chunk (device int32), synchronously
        (the benchmark's and the tests' path; a search goes through :meth:`scan_chunk`)."""
        f = self._launch(dev, query, 0)
        self._rescore(dev, f)
        with cp.cuda.Device(self.device_id):
            dev.last_use = _record(self.compute)
            self.compute.synchronize()
        self._account(dev, f)
        return f.scores

    def launch_scan(self, shape: Shape, wide: bool, stream, dev, prof, subj, count, overflow_at, boundary, scores, overflow) -> None:
        """One scan kernel over ``subj`` of ``dev`` (anything with device ``residues`` and ``offsets``)."""
        if count == 0:
            return
        n_passes = prof.shape[1] // shape.cols
        args = (
            dev.residues, dev.offsets, subj, np.int32(count), prof, np.int32(prof.shape[1]), np.int32(n_passes),
            np.int32(self.scoring.first_gap_cost), np.int32(self.scoring.gap_extend), np.int32(overflow_at),
            boundary, scores, overflow,
        )  # fmt: skip
        self.kernels.launch(shape, wide, args, count, stream)

    def _task_boundary(self, stream: cp.cuda.Stream, rows: int) -> cp.ndarray:
        """The boundary buffer of the task-list scans queued on ``stream`` (one of the long streams:
        the scans of one stream run in order and share it)."""
        return self._buffer(f"task_boundary{self.longs.index(stream)}", 2 * max(rows, 1), np.uint32)

    def _launch_tasks(self, dev: DeviceChunk, shape: Shape, wide: bool, tasks: TaskList, profiles: list[cp.ndarray], stream) -> tuple:
        """Queue one task-list scan (:mod:`swgpu_core.subset_tasks`) on ``stream``: (the pinned
        staging of its list, to keep until the event; the overflow list; the pinned copies of its
        count and of the scores per list entry; the event after those copies). The list goes up
        and the scores come back by copies queued in the kernel's stream order, so no call here
        or in the host's reading of the scores waits for the GPU: a copy from or to pageable
        memory (``cupy.asarray``, ``get``) blocks the host thread until the stream's queued
        work is done, the previous run's scoring too, and with it the launches of this run."""
        n = tasks.n_slots
        boundary = self._task_boundary(stream, tasks.boundary_rows)
        # everything the kernel reads or writes is made and copied on its own stream, from that
        # stream's part of CuPy's pool: copied on another, the list could still be on its way when
        # the kernel starts, and freed there, handed out again while the kernel reads it
        with stream:
            scores = cp.empty(max(n, 1), np.int32)
            overflow = cp.zeros(n + 1, np.int32)
        pointers = np.array([p.data.ptr for p in profiles], np.uint64)
        qpads = np.array([p.shape[1] for p in profiles], np.int32)
        (subjects, pointers, qpads, group_query, bnd_rows), staging = _staged(
            [tasks.subjects, pointers, qpads, tasks.group_query, tasks.bnd_rows], stream
        )
        args = (
            dev.residues, dev.offsets, subjects, np.int32(n), pointers, qpads, group_query, bnd_rows, np.int32(self.scoring.first_gap_cost),
            np.int32(self.scoring.gap_extend), np.int32(0 if wide else 32767 - self.scoring.max_score), boundary, scores, overflow,
        )  # fmt: skip
        self.kernels.launch_tasks(shape, wide, args, n, stream)
        count = np.frombuffer(cp.cuda.alloc_pinned_memory(4), np.int32, 1)
        host_scores = np.frombuffer(cp.cuda.alloc_pinned_memory(4 * max(n, 1)), np.int32, max(n, 1))
        _to_host(count, overflow[:1], stream)
        _to_host(host_scores, scores, stream)
        return staging, overflow, count, host_scores, _record(stream)

    def _joined(self, *streams: cp.cuda.Stream) -> cp.cuda.Event:
        """A timed event on the compute stream after the work queued so far on ``streams``."""
        with cp.cuda.Device(self.device_id):
            for stream in streams:
                self.compute.wait_event(_record(stream))
            return _record(self.compute, timing=True)

    def subset_steps(
        self, db: Database, chunk: Chunk, queries: list[EncodedSequence], subjects: list[np.ndarray]
    ) -> Generator[cp.cuda.Event, None, list[np.ndarray]]:
        """Each query's exact scores against its ``subjects`` (sorted unique sorted-numbering indices in
        ``chunk``), in their order, as steps for :func:`~swgpu_core.steps.drive` (it yields each event
        it is about to wait for): the pairs of one kernel shape in one task-list launch (packed
        16-bit; entries that may have overflowed rescored in 32 bits in a second, small one).

        The long pairs (:func:`~swgpu_core.subset_tasks.pair_kernels`) go to the intra-task kernel on
        one long stream, queued first, so that their blocks, the critical path, start before the
        inter-task warps of the other pairs fill the GPU; the others on a second long stream. Both
        have the highest priority, so that the seeding of the next run (on the seeder's stream,
        the lowest; :meth:`CudaBackend.scan_seeded`) takes what they leave of the GPU (2a3c056:
        no change beyond the spread, bench/RESULTS.md). Each stream's scans have a boundary
        buffer of their own, made before the first launch.

        The first step queues every launch and the copies of their scores into pinned memory, so
        a caller may queue another run's work before it collects this one's (the steps after it
        only read what those copies brought back)."""
        dev = self.upload(db, chunk)
        lengths = np.asarray(db.lengths[chunk.first : chunk.stop], np.int64)
        # every pair of the run at once: flat[k] (chunk-relative subject) of query owner[k]
        sizes = np.array([np.size(s) for s in subjects], np.int64)
        flat = np.concatenate([np.asarray(s, np.int64) for s in subjects]) - chunk.first if sizes.sum() else np.zeros(0, np.int64)
        owner = np.repeat(np.arange(sizes.size), sizes)
        qlens = np.array([len(q) for q in queries], np.int64)
        long, width = pair_kernels(qlens, owner, lengths[flat])
        # per kernel shape, its members: (query, the indices into flat of its pairs there, in order);
        # the intra-task shapes first, each after the query that first has it
        key = np.where(long, -width, width)
        kinds = np.unique(key)
        firsts = [int(owner[np.argmax(key == k)]) for k in kinds]
        buckets: list[tuple[Shape, list[tuple[int, np.ndarray]]]] = []
        for k, _first in sorted(zip(kinds.tolist(), firsts), key=lambda kf: (kf[0] > 0, kf[1])):
            picked = np.flatnonzero(key == k)
            cuts = np.flatnonzero(np.diff(owner[picked])) + 1
            members = list(zip(owner[picked[np.concatenate(([0], cuts))]].tolist(), np.split(picked, cuts)))
            buckets.append((_INTRA_TASK_SHAPE[-k] if k < 0 else Shape("inter", k, TASK_LANES), members))
        planned = []
        intra_stream, inter_stream = self.longs[:2]
        with cp.cuda.Device(self.device_id), self.compute:
            for shape, members in buckets:
                stream = intra_stream if shape.kind == "intra" else inter_stream
                profiles = self._profiles_for([queries[q] for q, _ in members], shape, stream)
                tasks = task_list([flat[ids] for _, ids in members], lengths, shape.lanes, 2, [p.shape[1] // shape.cols for p in profiles])
                planned.append((members, shape, stream, profiles, tasks))
            for stream in (intra_stream, inter_stream):
                self._task_boundary(stream, max((tasks.boundary_rows for _, _, on, _, tasks in planned if on is stream), default=0))
            # the kernels' time from here: the lists are built, the launches follow
            self.compute.wait_event(dev.ready)
            start = _record(self.compute, timing=True)
            intra_stream.wait_event(start)
            inter_stream.wait_event(start)
            flights = []
            for members, shape, stream, profiles, tasks in planned:
                launched = self._launch_tasks(dev, shape, False, tasks, profiles, stream)
                flights.append((members, shape, stream, profiles, tasks, *launched))
            dev.last_use = self._joined(intra_stream, inter_stream)
        scores = np.zeros(flat.size, np.int32)  # per pair of flat
        for members, shape, stream, profiles, tasks, _staging, overflow, count, host_scores, counted in flights:
            yield counted
            host = host_scores[: tasks.n_slots].copy()
            if int(count[0]):  # rare: scores near 32,767, rescored in 32 bits
                with cp.cuda.Device(self.device_id), stream:
                    redo = overflow[1 : 1 + int(count[0])].get()
                    mine = [redo[tasks.slot_query[redo] == k] for k in range(len(members))]  # each query's entries
                    per_query = [tasks.subjects[m] for m in mine]
                    wide = task_list(per_query, lengths, shape.lanes, 1, [p.shape[1] // shape.cols for p in profiles])
                    w_staging, _, _, w_scores, w_counted = self._launch_tasks(dev, shape, True, wide, profiles, stream)
                    dev.last_use = self._joined(intra_stream, inter_stream)
                w_counted.synchronize()
                del w_staging  # its copy is done
                for m, got in zip(mine, scores_by_query(wide, w_scores[: wide.n_slots], per_query)):
                    host[m] = got
            # scores_by_query reads only how many subjects each query gave, which its ids in flat tell
            pair_ids = [ids for _, ids in members]
            scores[np.concatenate(pair_ids)] = np.concatenate(scores_by_query(tasks, host, pair_ids))
        yield dev.last_use
        dev.last_use.synchronize()
        seconds = cp.cuda.get_elapsed_time(start, dev.last_use) / 1e3
        self.kernel_seconds += seconds
        cells = int(np.dot(qlens[owner], lengths[flat]))
        self.cells += cells
        self.long_pairs += int(long.sum())
        self.last_timing = {
            "seconds": seconds,
            "launches": len(flights),
            "pairs": int(flat.size),
            "long_pairs": int(long.sum()),
            "cells": cells,
        }
        return np.split(scores, np.cumsum(sizes)[:-1]) if sizes.size else []

    def scan_chunk(self, db: Database, chunk: Chunk, queries: list[EncodedSequence], top: int, score_stats: ScoreHistograms | None = None):
        """Per query, the candidates of ``chunk`` (see :meth:`swgpu_core.engine.Scanner.scan_chunk`)."""
        per_batch = drive([self.scan_steps(db, [Batch.of(chunk)], queries, top, score_stats)])[0]
        return [found for _, found in per_batch[0]]

    def scan_steps(
        self,
        db: Database,
        batches: list[Batch],
        queries: list[EncodedSequence],
        top: int,
        score_stats: ScoreHistograms | None = None,
        order: Iterator[int] | None = None,
        on_batch: Callable[[int], None] | None = None,
    ) -> Generator[cp.cuda.Event, None, list[list[tuple[int, tuple[np.ndarray, np.ndarray]]]]]:
        """Every query over every batch, as steps: it yields each event it is about to wait
        for and returns, per batch, (query index, candidates) pairs, so that one host thread
        can drive several GPUs (:func:`~swgpu_core.steps.drive`). ``order`` (one batch only)
        hands out the indices of the queries to scan, all of them by default (in their order
        over one batch; over several, streamed, alternately long and short, see
        :func:`~swgpu_core.device_batches.streamed_query_order`); when several workers share
        one ``order``, each takes the next query whenever its pipeline has room, so a faster
        GPU takes more. ``on_batch(b)`` is called once the copies of
        batch ``b``'s last candidates are queued (for progress).

        The (batch, query) scans are one pipeline, PIPELINE_DEPTH in flight, each in a slot
        of device buffers and pinned counts: step ``i`` queues scan ``i``, then (its scans
        already queued behind, so the GPU never waits for the host) waits for scan
        ``i - SELECT_LAG``'s overflow count and queues its rescoring, candidate selection and
        score histogram (with ``score_stats``), then waits for scan ``i - FETCH_LAG``'s counts
        and queues the copies of its candidates and histogram keys. The host waits only for
        small counts, never for a query's results, and the pipeline runs on from one batch
        into the next: the GPU never empties between batches (streamed, a batch of 1/32 of
        bench200M would otherwise pay a tail in each of its 38 batches). Everything
        synchronises once, at the end. As a query's count is awaited SELECT_LAG steps after its
        launch, SELECT_LAG + 1 queries' long subjects may be scanned at once, each on its own
        long stream (:meth:`_launch`).

        Race-free because everything of a scan after its kernels is queued on the compute
        stream once the host has seen its overflow count, which its long stream copies after
        all its kernels; so by step ``i`` the scans of every step up to ``i - SELECT_LAG - 1``
        are done, and the selection and copies of step ``i - PIPELINE_DEPTH``, whose slot step
        ``i`` takes, were awaited (its selection, at step ``i - PIPELINE_DEPTH + FETCH_LAG =
        i - 1``) or queued before (the copies, on the compute
        stream, ahead of step ``i``'s selection; its scans write only the slot's scores and
        overflow list, which the copies do not read). Scans that overlap write disjoint rows of the
        shared boundary buffer (:meth:`_claim`, whatever their batch; a rescoring claims every
        row), and the pinned counts are read after the event of their copy. A batch's last
        use is recorded on the compute stream behind its last scan's rescoring, once the host
        has seen that scan's count (so after every kernel that reads its residues); the next batch is uploaded at the launch of the batch's
        query number UPLOAD_AT (in its order), when that record exists for every batch before, which the upload may drop
        to make room (it waits for the record; selections are taken early if a batch has too
        few queries). Yielding changes none of this order: a yield only lets the host queue
        another GPU's work before it waits.
        """
        if not batches:
            return []
        assert order is None or len(batches) == 1, "queries are handed out over one batch only"
        self._forget_profiles()
        devs = [self.upload(db, batches[0])]
        with cp.cuda.Device(self.device_id), self.compute:
            self._reserve(db, batches, score_stats is not None)
        if order is None:
            per_batch = streamed_query_order([len(q) for q in queries]) if len(batches) > 1 else range(len(queries))
            todo = ((b, at, k) for b in range(len(batches)) for at, k in enumerate(per_batch))
        else:
            todo = ((0, at, k) for at, k in enumerate(order))
        upload_at = min(UPLOAD_AT, len(queries) - 1)
        flights: list[_Flight] = []
        owner: list[int] = []  # each flight's batch
        n_selected = n_fetched = 0  # flights whose selection, and whose copies, are queued
        i = 0  # step i launches this worker's i-th scan (ring slot i % PIPELINE_DEPTH)

        def select(t: int) -> Generator[cp.cuda.Event, None, None]:
            f, b = flights[t], owner[t]
            yield f.counted
            self._rescore(devs[b], f)
            self._select(devs[b], f, top, score_stats)
            if t + 1 == len(flights) and (order is not None or b == len(batches) - 1) or t + 1 < len(flights) and owner[t + 1] != b:
                with cp.cuda.Device(self.device_id):
                    devs[b].last_use = _record(self.compute)

        while True:
            step = next(todo, None)
            if step is not None:
                b, at, k = step  # batch, place in the batch's order, query
                flights.append(self._launch(devs[b], queries[k], i % PIPELINE_DEPTH, k, cut=len(batches) > 1))
                owner.append(b)
                nxt = b + 1
                if order is None and nxt < len(batches) and len(devs) == nxt and at == upload_at:
                    while n_selected < len(flights) and owner[n_selected] < b:  # the batches before have their last use
                        yield from select(n_selected)
                        n_selected += 1
                    self._forget_profiles()
                    devs.append(self.upload(db, batches[nxt], keep=devs[b]))  # host staging overlaps the queued scans
            while n_selected < len(flights) and (step is None or n_selected <= i - SELECT_LAG):
                yield from select(n_selected)
                n_selected += 1
                if step is None:
                    break
            if n_fetched < n_selected and (step is None or n_fetched <= i - FETCH_LAG):
                yield flights[n_fetched].selected
                self._fetch(flights[n_fetched], score_stats)
                n_fetched += 1
                if on_batch is not None and (n_fetched == len(flights) or owner[n_fetched] != owner[n_fetched - 1]):
                    on_batch(owner[n_fetched - 1])  # fetches lag the launches: every flight of a batch before is launched
            if step is None and n_fetched == len(flights):
                break
            i += 1
        with cp.cuda.Device(self.device_id):
            done = _record(self.compute)
        yield done
        with cp.cuda.Device(self.device_id):
            self.compute.synchronize()
        out: list[list[tuple[int, tuple[np.ndarray, np.ndarray]]]] = [[] for _ in batches]
        busy_until = None  # the latest end of the scans accounted so far
        for f, b in zip(flights, owner):
            self._account(devs[b], f, busy_until)
            if busy_until is None or cp.cuda.get_elapsed_time(busy_until, f.marks[-1]) > 0:
                busy_until = f.marks[-1]
            idx, val, keys, _pinned = f.host
            if score_stats is not None:
                score_stats.add_counts(f.index, f.dense, keys)
            rank = np.argsort(idx)  # the compaction's order is the threads'; the candidates' is the subjects'
            out[b].append((f.index, (devs[b].batch.to_database(idx[rank]), val[rank])))  # fancy indexing copies out of pinned memory
        return out


def _top_per_query(scored: list[tuple[Chunk, list[np.ndarray]]], wanted: list[np.ndarray], top: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per query, the subjects of ``wanted`` (database numbering) whose score reaches the ``top``-th
    best among them, from ``scored``: each run's scores of the wanted subjects inside it, in order."""
    from ..backends.cpu import candidates

    scores = [np.zeros(s.size, np.int32) for s in wanted]
    for p, per_query in scored:
        for q, s in enumerate(wanted):
            scores[q][(s >= p.first) & (s < p.stop)] = per_query[q]
    out = []
    for s, sc in zip(wanted, scores):
        keep, kept = candidates(sc, 0, top)
        out.append((s[keep], kept))
    return out


def _started(steps: Generator) -> tuple[Generator, object]:
    """``steps`` run to its first yield (a seeder's kernel is then queued), and that event."""
    return steps, next(steps)


def _finish(steps: Generator, event) -> Generator:
    """The rest of a generator :func:`_started` ran to ``event``, as steps: its result."""
    while True:
        yield event
        try:
            event = steps.send(None)
        except StopIteration as stop:
            return stop.value


def _pinned_ring(device_id: int) -> list:
    """A ring of :data:`STAGING_BUFFERS` pinned buffers of :data:`STAGING_BYTES` for ``device_id``:
    those the driver pinned ahead beside its context (:func:`swgpu_core.cuda_driver.take_pinned`),
    else new ones from CuPy's pool."""
    ahead = cuda_driver.take_pinned(device_id, STAGING_BUFFERS, STAGING_BYTES)
    if ahead is not None:
        return ahead
    with cp.cuda.Device(device_id):
        return [cp.cuda.alloc_pinned_memory(STAGING_BYTES) for _ in range(STAGING_BUFFERS)]


def warm_up_device(device_id: int, seed_params: SeedParams | None = None) -> None:
    """Load what every search on ``device_id`` needs once per process, ahead of it (from
    :func:`swgpu_core.engine.warm_up`'s thread): the context, the scan kernels (shared by
    every worker, :func:`~swgpu_core.gpu.kernels.scan_kernels`), the planner's model and the
    selection routines CuPy loads on first use (:meth:`DeviceWorker.prepare`; CuPy keeps
    them per device for the process), so that the search's own workers find them loaded; and
    the pinned buffers of the upload ring, offered to the search's first worker on this GPU
    (:data:`_RINGS`: those the driver pinned beside the context while CuPy was imported,
    :func:`_pinned_ring`, else pinned here, which takes the driver 0.03 s for 64 MB). Where the search's thread comes
    to a step first, the warm-up waits for it and does not repeat it. With
    ``seed_params`` (``--mode fast``), the candidate stage's too (:func:`swgpu_core.gpu.seed.warm_up`)."""
    scoring = Scoring.protein()
    worker = DeviceWorker(device_id, scoring, None, None, None)
    worker.prepare()
    _RINGS.offer(device_id, functools.partial(_pinned_ring, device_id))
    if seed_params is not None:
        from .seed import warm_up

        warm_up(worker, seed_params, scoring)


@dataclass
class _Flight:
    """One query's work on one batch, from its scans being queued to its candidates on the host."""

    index: int  # the query's place in the search
    query_length: int
    slot: int  # its ring slot of device buffers and pinned counts
    scores: cp.ndarray
    overflow: cp.ndarray
    n_short: int
    plan: Plan
    shapes: tuple[Shape, Shape]  # (inter, intra)
    profiles: tuple[cp.ndarray, cp.ndarray]
    marks: list  # timing events: start, intra start/end, each inter part's start/end, scans done
    counts: np.ndarray  # pinned int32[4]: overflowed subjects, candidates, scores above the histogram's cap
    counted: cp.cuda.Event  # the overflow count has reached ``counts[0]`` (and the list's first entries ``listed``)
    listed: np.ndarray | None = None  # pinned: the overflow list's first entries (up to RESCORE_LISTED)
    rescored: int = 0
    rescore_marks: tuple | None = None
    selected: cp.cuda.Event | None = None  # counts[1] and counts[2] have arrived
    dense: np.ndarray | None = None  # the histogram's cells (pinned), valid once the batch synchronised
    dense_pinned: object = None
    host: tuple | None = None  # (indices, scores, histogram keys, their pinned memory), valid once the batch synchronised


@dataclass
class _Shifted:
    """What a scan kernel reads of a batch, its residues and offsets counted from a later residue."""

    residues: cp.ndarray
    offsets: cp.ndarray


def _windows(rows: np.ndarray, subjects: np.ndarray, room: int) -> list[np.ndarray]:
    """``subjects`` (sorted) in consecutive runs whose residues (``rows``: the batch's offsets)
    span at most ``room`` (a subject longer than that, never the case here, alone)."""
    out, start = [], 0
    for k in range(1, subjects.size + 1):
        if k == subjects.size or rows[subjects[k] + 1] - rows[subjects[start]] > room:
            out.append(subjects[start:k])
            start = k
    return out


@dataclass
class _Subjects:
    """What :meth:`DeviceWorker._select` reads of a batch: its residue offsets and their length bins."""

    offsets: cp.ndarray
    lbins: cp.ndarray | None = None


def _device_bytes(batches: list[tuple[int, int]]) -> int:
    """Device bytes of resident batches of these (residues, longest subject) and a boundary buffer for the largest."""
    rows = max((boundary_rows(n, longest, 2) for n, longest in batches), default=0)
    return RESIDUE_BYTES * sum(n for n, _ in batches) + BOUNDARY_ROW_BYTES * rows


def _usable(db: Database, budget: int) -> int:
    """The part of a memory budget that scales with the batches' residues: less the boundary
    rows a batch's longest subject adds (:func:`_device_bytes`)."""
    return max(0, budget - BOUNDARY_ROW_BYTES * (db.max_length + 1))


def _layout(arrays: list[np.ndarray], align: int) -> tuple[list[int], int]:
    """Where each of ``arrays`` goes in one buffer (each at a multiple of ``align`` bytes), and the
    buffer's size (at least ``align``)."""
    starts, size = [], 0
    for a in arrays:
        size = -(-size // align) * align
        starts.append(size)
        size += a.nbytes
    return starts, max(size, align)


def _staged(arrays: list[np.ndarray], stream: cp.cuda.Stream) -> tuple[list[cp.ndarray], object]:
    """Device copies of host ``arrays``, made by one copy queued on ``stream`` out of one pinned
    buffer (each array at a multiple of 8 bytes), and that buffer, to keep until the copy is done.
    The device memory comes from ``stream``'s part of CuPy's pool, as the kernels reading it run there."""
    starts, size = _layout(arrays, 8)
    pinned = cp.cuda.alloc_pinned_memory(size)
    host = np.frombuffer(pinned, np.uint8, size)
    for a, at in zip(arrays, starts):
        host[at : at + a.nbytes] = np.ascontiguousarray(a).view(np.uint8).ravel()
    with stream:
        device = cp.empty(size, np.uint8)
    cp.cuda.runtime.memcpyAsync(device.data.ptr, host.ctypes.data, size, cp.cuda.runtime.memcpyHostToDevice, stream.ptr)
    return [device[at : at + a.nbytes].view(a.dtype) for a, at in zip(arrays, starts)], pinned


def _to_host(dst: np.ndarray, src: cp.ndarray, stream: cp.cuda.Stream) -> None:
    """Queue a copy of contiguous ``src`` into ``dst`` (pinned host memory) on ``stream``."""
    if src.nbytes:
        cp.cuda.runtime.memcpyAsync(dst.ctypes.data, src.data.ptr, src.nbytes, cp.cuda.runtime.memcpyDeviceToHost, stream.ptr)


#: threads per block of the selection's counting passes, and the keys each counts at least
#: (so a short batch takes few blocks: each clears and flushes a histogram of 2,048 bins)
SELECT_COUNT_BLOCK, SELECT_KEYS_PER_THREAD = 256, 8


@functools.cache
def _select_kernels(device_id: int) -> tuple[cp.RawKernel, cp.RawKernel]:
    """``select_count`` and ``select_pick`` of ``kernels/select.cu`` on ``device_id``, compiled
    once per process (CuPy keeps the binary on disk, keyed by the source and the options)."""
    with cp.cuda.Device(device_id):
        module = cp.RawModule(code=kernel_abi.kernel_source("select.cu"), options=("-std=c++17", *kernel_abi.compile_options()))
        return module.get_function("select_count"), module.get_function("select_pick")


@functools.cache
def _compact_kernel() -> cp.ElementwiseKernel:
    """index[k], value[k] = i, score for every score >= kth, k taken from ``count`` (any order).

    An atomic counter rather than a prefix sum: ``cupy.cumsum`` imports cupyx and with it
    SciPy's sparse matrices on its first use in a process (0.2-0.7 s of every search's
    start-up on the H100), and the few candidates per query are put in order on the host.
    For the same reason the search path calls ufuncs (``cp.subtract``, ``cp.maximum``)
    where an operator would do: CuPy's arithmetic and comparison operators import cupyx on
    first use too (measured on the H100 with CuPy 13; the ufuncs, sorting and partitioning
    do not). ``tests/test_gpu_pipeline.py`` checks that a search imports no cupyx."""
    return cp.ElementwiseKernel(
        "int32 score, raw int32 kth", "raw int32 index, raw int32 value, raw int32 count",
        "if (score >= kth[0]) { int k = atomicAdd(&count[0], 1); index[k] = (int)i; value[k] = score; }", "swgpu_candidates",
    )  # fmt: skip


class _Pending:
    """Host work running in a thread, as an event :func:`~swgpu_core.steps.drive` can wait for."""

    def __init__(self, future: Future) -> None:
        self.future = future

    @property
    def done(self) -> bool:
        return self.future.done()

    def synchronize(self) -> None:
        wait([self.future])


def _one_after_another(name: str, fn: Callable, items: list, after: threading.Event | None = None) -> list[Future]:
    """``fn(item)`` for each of ``items`` in turn (once ``after`` is set), in a daemon thread:
    per item a future of what it returns or raises. A daemon thread, not a pool: a pool's
    threads are joined at the process's exit, so one still waiting for ``after`` (a backend
    that never scanned) would keep the process from ending."""
    futures: list[Future] = [Future() for _ in items]

    def run() -> None:
        if after is not None:
            after.wait()
        for item, future in zip(items, futures):
            try:
                future.set_result(fn(item))
            except BaseException as exc:  # noqa: BLE001 -- handed to whoever waits for the future
                future.set_exception(exc)

    threading.Thread(target=run, name=name, daemon=True).start()
    return futures


def _record(stream: cp.cuda.Stream, timing: bool = False) -> cp.cuda.Event:
    ev = cp.cuda.Event(disable_timing=not timing)
    ev.record(stream)
    return ev


class CudaBackend:
    """Scores on one or more GPUs; chunks are dealt to devices round robin."""

    name = "cuda"

    def __init__(
        self,
        scoring: Scoring,
        devices: list[int] | None = None,
        *,
        threshold: int | None = None,
        memory_budget: int | None = None,
        arith: str | None = None,
    ):
        ids = checked_devices(devices)
        self.scoring = scoring
        self.device_ids = ids

        def ready(d: int) -> DeviceWorker:  # set-up, not scan time
            worker = DeviceWorker(d, scoring, threshold, memory_budget, arith)
            worker.prepare()
            return worker

        # the first GPU here; the others one after another in a daemon thread, once the first one scans
        # (_shared_steps) or all are needed (workers): while the driver makes a context it runs
        # nothing else of the process's, and the first GPU's set-up took 0.15 s longer beside it
        # (2 x H100, bench/RESULTS.md)
        self._first = ready(ids[0])
        # its upload ring too (the first GPU's uploads come from the host): set-up, which comes
        # before a search's clock, whether the warm-up pinned it (then, if it is still pinning,
        # this waits) or not (bench/RESULTS.md, twenty-first session)
        self._first.staging_ring()
        self._others = threading.Event()
        self._later: list[Future[DeviceWorker]] = (
            _one_after_another("swgpu-workers", ready, ids[1:], after=self._others) if len(ids) > 1 else []
        )
        self._workers: list[DeviceWorker] | None = None

    @property
    def workers(self) -> list[DeviceWorker]:
        """Every device's worker, once all of them are ready (a set-up error is raised here)."""
        if self._workers is None:
            self._others.set()
            self._workers = [self._first, *(f.result() for f in self._later)]
        return self._workers

    @property
    def device_names(self) -> list[str]:
        return [w.name for w in self.workers]

    @property
    def kernel_seconds(self) -> float:
        return max(w.kernel_seconds for w in self.workers)

    def batches(self, db: Database, chunks: list[Chunk]) -> list[Batch]:
        """The device batches of ``chunks`` under the smallest device budget: all resident if
        they fit, else streamed in batches of which two fit beside one boundary buffer."""
        usable = _usable(db, min(w.budget for w in self.workers))
        return device_batches(db, chunks, usable // BYTES_PER_RESIDUE, len(self.workers), usable // STREAMED_BYTES_PER_RESIDUE)

    def scan(self, db: Database, chunks: list[Chunk], queries: list[EncodedSequence], top: int, on_chunk=None, score_stats=None):
        """Per device batch, per query candidates, all devices driven from this thread.

        With several GPUs, a selection that fits the first GPU and at least as many queries
        as GPUs, every GPU that it fits holds the whole selection and they share the
        queries, longest first, each taking the next when it has room (:meth:`_shared_steps`):
        the work stays in the one large batch a single GPU scans best, and the GPUs finish
        together (splitting the database instead gives batches whose subjects differ in
        length, so in speed: on two H200s it reached 1.19x of one, bench/RESULTS.md).
        Otherwise the database batches are dealt to the GPUs round robin, once all are
        ready, and each GPU scans its batches in one pipeline
        (:meth:`DeviceWorker.scan_steps`). ``on_chunk`` is called with each run of the
        selection once its batch is scanned."""
        n = len(self.device_ids)
        if n > 1 and len(queries) >= n:

            def whole_on(worker: DeviceWorker) -> list[Batch]:
                return device_batches(db, chunks, _usable(db, worker.budget) // BYTES_PER_RESIDUE)

            whole = whole_on(self._first)
            if len(whole) == 1:
                found: list = [None] * len(queries)
                for part in drive(self._shared_steps(db, whole, whole_on, queries, top, score_stats)):
                    for q, candidates in part[0] if part else ():
                        found[q] = candidates
                if on_chunk is not None:
                    for run in whole[0].runs:
                        on_chunk(run)
                return [found]
        batches = self.batches(db, chunks)
        mine = [list(range(w, len(batches), n)) for w in range(n)]
        results: list = [None] * len(batches)

        def scanned(w: int, k: int) -> None:
            if on_chunk is not None:
                for run in batches[mine[w][k]].runs:
                    on_chunk(run)

        steps = [self.workers[w].scan_steps(db, [batches[b] for b in mine[w]], queries, top, score_stats,
                                            on_batch=functools.partial(scanned, w)) for w in range(n)]  # fmt: skip
        for w, per_batch in enumerate(drive(steps)):
            for b, pairs in zip(mine[w], per_batch):
                results[b] = [candidates for _, candidates in sorted(pairs, key=lambda p: p[0])]
        return results

    def _shared_steps(self, db: Database, whole: list[Batch], whole_on: Callable[[DeviceWorker], list[Batch]],
                      queries: list[EncodedSequence], top: int, score_stats) -> list[Generator]:  # fmt: skip
        """The step generators of a search whose one batch every GPU holds whole, sharing the
        queries longest first (see :meth:`scan`).

        The first GPU starts at once. Only once its first queries are queued do the other
        GPUs' contexts and set-up begin (a thread of the constructor's); each joins as soon as
        it is ready and holds its copy, which it takes from the first GPU's
        (:meth:`DeviceWorker.upload`'s ``peer``), not from the host again. The order matters
        on the driver's side: while it makes one GPU's context it does little else for the
        process, so making every context first (until 2026-11-26) held the first GPU back by
        0.1-0.2 s on 2 x H200 (bench/RESULTS.md), and so did letting a GPU join early while
        the contexts were still made together (72e7051), or making the second context while
        the first GPU was still being set up (2ba4a39). Measured against starting together
        (A/B in one call each, bench200M x 500): 4 x H100 4.83-4.86 s against 5.09-5.35 s;
        2 x H100 within the runs' spread, since the second GPU's start moves as much later
        as the first one's moves earlier. A GPU too small for the batch (the batch is cut
        for the first GPU) takes no query: the others scan them all."""
        first = self._first
        held = first.upload(db, whole[0])  # queued from here before any GPU's scan, as a lone GPU does
        longest_first = iter(sorted(range(len(queries)), key=lambda q: -len(queries[q])))

        def holding(starting: Future[DeviceWorker]) -> DeviceWorker | None:
            worker = starting.result()
            if whole_on(worker) != whole:
                return None
            worker.upload(db, whole[0], peer=(first.device_id, held))
            return worker

        joining = _one_after_another("swgpu-join", holding, self._later)

        def joined(join: Future[DeviceWorker | None]) -> Generator:
            self._others.set()  # drive() runs this after the first GPU's first step: its first queries are queued
            yield _Pending(join)
            worker = join.result()
            if worker is None:
                return []
            return (yield from worker.scan_steps(db, whole, queries, top, score_stats, longest_first))

        return [first.scan_steps(db, whole, queries, top, score_stats, longest_first), *(joined(j) for j in joining)]

    def scan_chunk(self, db: Database, chunk: Chunk, queries: list[EncodedSequence], top: int, score_stats=None):
        return self._first.scan_chunk(db, chunk, queries, top, score_stats)  # the first GPU's, never waiting for the others

    def scan_subset(
        self, db: Database, chunk: Chunk, queries: list[EncodedSequence], subjects: list[np.ndarray], top: int
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per query, its ``subjects`` whose score reaches the ``top``-th best among them (see
        :meth:`swgpu_core.engine.Scanner.scan_subset`). The chunk is cut into one run per device, as
        the CUDA seeder cuts it (:func:`~swgpu_core.device_batches.device_parts`), so each device
        scores the candidates of the run it holds; all devices driven from this thread."""
        mine = device_parts(db, [chunk], len(self.workers))
        wanted = [np.asarray(s, np.int64) for s in subjects]

        def run(d: int) -> Generator[cp.cuda.Event, None, list[tuple[Chunk, list[np.ndarray]]]]:
            done = []
            for _c, p in mine[d]:
                inside = [s[(s >= p.first) & (s < p.stop)] for s in wanted]
                done.append((p, (yield from self.workers[d].subset_steps(db, p, queries, inside))))
            return done

        return _top_per_query([r for per_device in drive([run(d) for d in range(len(self.workers))]) for r in per_device], wanted, top)

    def scan_seeded(
        self,
        db: Database,
        chunks: list[Chunk],
        queries: list[EncodedSequence],
        seeder: Seeder,
        top: int,
        on_chunk: Callable[[Chunk], None] | None = None,
    ) -> tuple[list[list[tuple[np.ndarray, np.ndarray]]], float]:
        """The fast mode's two stages over ``chunks``: per chunk, per query, the candidates that
        ``seeder`` finds whose score reaches the ``top``-th best among them (what
        :meth:`scan_subset` of ``seeder.candidates`` gives, chunk by chunk); and the candidate
        stage's seconds (see below). ``on_chunk(chunk)`` once a chunk is scored.

        With a :class:`~swgpu_core.gpu.seed.CudaSeeder` on this scanner's workers, each device's
        runs (:func:`~swgpu_core.device_batches.device_parts`, the first and the last cut short by
        :func:`~swgpu_core.device_batches.pipeline_runs`) are one pipeline: the next run's seed
        kernel is queued, on the seeder's stream, before the host builds this run's task lists
        and queues their scoring, so the GPU seeds one run beside scoring the other and the host's
        work hides behind both (bench200M x 500 on an H100: 0.76 s against 0.90 s one stage after
        the other, ``bench/seeded_overlap.py``); and the scores of the run before are collected
        only after that, while the GPU seeds and scores. With that and no host call that waits
        for the GPU (:meth:`DeviceWorker._launch_tasks`), the host's turns in a search of
        bench200M x 500 went from 0.38-0.53 s to 0.25 s (``bench/fast_timeline.py``), and two
        GPUs from 0.85x of one in scan time (2 x H200, before) to 1.28x (2 x H100); one GPU's
        scan stayed as it was, its kernels being the bound (bench/RESULTS.md, twelfth session).
        A run's upload keeps the run being scored resident; one still being collected holds its
        own, and its end event (recorded as its kernels are queued) keeps an upload from taking
        its memory before they are done. The candidate stage's seconds
        are then its kernels' (the slowest device's), which overlap the scoring. Any other
        seeder: one chunk after the other, as the search's own loop does, and the stage's
        seconds are its wall time."""
        from .seed import CudaSeeder

        if not isinstance(seeder, CudaSeeder) or seeder.workers != self.workers or not queries or any(c.n_sequences == 0 for c in chunks):
            out, seconds = [], 0.0
            for chunk in chunks:
                began = time.perf_counter()
                found = seeder.candidates(db, chunk)
                seconds += time.perf_counter() - began
                out.append(self.scan_subset(db, chunk, queries, found, top))
                if on_chunk is not None:
                    on_chunk(chunk)
            return out, seconds
        kernels = seeder.kernel_seconds
        # each device's runs from the longest subjects down (device_batches.seeded_order)
        mine = [pipeline_runs(db, per_device) for per_device in device_parts(db, chunks, len(self.workers))]
        left = [sum(1 for per_device in mine for c, _p in per_device if c == k) for k in range(len(chunks))]  # runs to score, per chunk

        def run(d: int) -> Generator[cp.cuda.Event, None, list[tuple[int, Chunk, list[np.ndarray], list[np.ndarray]]]]:
            done = []

            def collect(c: int, part: Chunk, found: list[np.ndarray], scoring: tuple[Generator, object]) -> Generator:
                done.append((c, part, found, (yield from _finish(*scoring))))
                left[c] -= 1
                if on_chunk is not None and left[c] == 0:
                    on_chunk(chunks[c])

            ahead = _started(seeder.part_steps(d, db, mine[d][0][1])) if mine[d] else None
            scoring = None
            for k, (c, part) in enumerate(mine[d]):
                found = yield from _finish(*ahead)
                if k + 1 < len(mine[d]):
                    ahead = _started(seeder.part_steps(d, db, mine[d][k + 1][1], keep=part))
                launched = (c, part, found, _started(self.workers[d].subset_steps(db, part, queries, found)))
                if scoring is not None:
                    yield from collect(*scoring)
                scoring = launched
            if scoring is not None:
                yield from collect(*scoring)
            return done

        results = [r for per_device in drive([run(d) for d in range(len(self.workers))]) for r in per_device]
        out = []
        for c in range(len(chunks)):
            mine_c = sorted((r for r in results if r[0] == c), key=lambda r: r[1].first)
            wanted = [np.concatenate([found[q] for _c, _p, found, _s in mine_c]) for q in range(len(queries))]
            out.append(_top_per_query([(p, scores) for _c, p, _f, scores in mine_c], wanted, top))
        return out, seeder.kernel_seconds - kernels
