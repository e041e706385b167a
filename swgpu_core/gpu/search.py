"""CUDA backend: the scan kernels over a length-sorted chunk, exact scores, top hits.

Per chunk, subjects up to the length threshold go to the inter-task kernel (a few lanes
of a warp per pair of subjects) and longer ones to the intra-task kernel (a block per
pair), launched on two streams so the long tail overlaps the bulk. Both run in packed
16-bit arithmetic; subjects whose score may have overflowed are rescored in 32 bits, so
every score is exact. Only the candidates that can enter a query's top list leave the GPU.

Chunks are uploaded once and kept while they fit the memory budget; otherwise each chunk
is staged through pinned host memory and copied on a separate stream while the previous
chunk is being scanned.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import cupy as cp
import numpy as np

from ..database import Chunk, Database
from ..device_batches import device_batches
from ..fasta import EncodedSequence
from ..plan import DeviceModel, LengthProfile, Plan, choose_threshold, evaluate
from ..scoring import Scoring
from .device import device_count, geometry
from .kernels import ScanKernels, Shape, build_profile, pick_shapes
from .score_stats import add_device_scores

#: device bytes per residue of a resident batch: the residue and its boundary-buffer slot
BYTES_PER_RESIDUE = 9


@dataclass
class DeviceChunk:
    """A chunk's residues and offsets in device memory."""

    chunk: Chunk
    residues: cp.ndarray
    offsets: cp.ndarray
    lengths: LengthProfile  # host copy, for the threshold split
    subjects: cp.ndarray  # 0..n-1, the kernels' subject list for a whole-chunk scan
    ready: cp.cuda.Event
    pinned: object  # the staging buffer, alive until the copy is done

    @property
    def nbytes(self) -> int:
        return int(self.residues.nbytes + self.offsets.nbytes)


class DeviceWorker:
    """Everything one GPU needs: kernels, streams, resident chunks, scratch buffers."""

    def __init__(self, device_id: int, scoring: Scoring, threshold: int | None, budget: int | None, arith: str | None):
        self.device_id = device_id
        self.scoring = scoring
        self.threshold = threshold
        self.geometry = geometry(device_id)
        self.name = self.geometry.name
        with cp.cuda.Device(device_id):
            self.kernels = ScanKernels(arith)
            self.compute = cp.cuda.Stream(non_blocking=True)
            self.long = cp.cuda.Stream(non_blocking=True)
            self.copy = cp.cuda.Stream(non_blocking=True)
            free, _total = cp.cuda.runtime.memGetInfo()
        self.budget = budget if budget is not None else int(free * 0.6)
        self.resident: dict[tuple[str, int], DeviceChunk] = {}
        self.kernel_seconds = 0.0
        self.cells = 0
        self.last_timing: dict = {}
        self._scratch: dict[str, cp.ndarray] = {}
        self._model: DeviceModel | None = None

    @property
    def model(self) -> DeviceModel:
        """The planner's constants for this GPU (measured once, then cached on disk) and its geometry."""
        if self._model is None:
            from .calibration import load_or_calibrate

            self._model = replace(load_or_calibrate(self), geometry=self.geometry)
        return self._model

    # -- memory ------------------------------------------------------------------------
    def _buffer(self, name: str, size: int, dtype) -> cp.ndarray:
        buf = self._scratch.get(name)
        if buf is None or buf.size < size:
            self._scratch.pop(name, None)
            buf = cp.empty(max(size, 1), dtype=dtype)
            self._scratch[name] = buf
        return buf[:size]

    def upload(self, db: Database, chunk: Chunk) -> DeviceChunk:
        """Copy a chunk to the device on the copy stream (pinned staging), or reuse it."""
        key = (str(db.path), chunk.first, chunk.stop)
        if key in self.resident:
            return self.resident[key]
        with cp.cuda.Device(self.device_id):
            size = chunk.n_residues
            used = sum(BYTES_PER_RESIDUE * d.chunk.n_residues for d in self.resident.values())
            if self.resident and used + BYTES_PER_RESIDUE * size > self.budget:
                for stream in (self.copy, self.compute, self.long):
                    stream.synchronize()
                while self.resident and used + BYTES_PER_RESIDUE * size > self.budget:  # oldest batches first
                    used -= BYTES_PER_RESIDUE * self.resident.pop(next(iter(self.resident))).chunk.n_residues
            host_res = db.residues[chunk.residue_start : chunk.residue_stop]
            host_off = np.asarray(db.offsets[chunk.first : chunk.stop + 1]) - chunk.residue_start
            size_aligned = -(-size // 8) * 8
            pinned = cp.cuda.alloc_pinned_memory(size_aligned + host_off.nbytes)
            staging = np.frombuffer(pinned, dtype=np.uint8, count=size)
            staging[:] = host_res
            off_staging = np.frombuffer(pinned, dtype=np.int64, count=host_off.size, offset=size_aligned)
            off_staging[:] = host_off
            residues = cp.empty(size, dtype=np.uint8)
            offsets = cp.empty(host_off.size, dtype=np.int64)
            residues.set(staging, stream=self.copy)
            offsets.set(off_staging, stream=self.copy)
            with self.copy:
                subjects = cp.arange(chunk.n_sequences, dtype=np.int32)
            lengths = LengthProfile(db.lengths[chunk.first : chunk.stop])
            ready = cp.cuda.Event()
            ready.record(self.copy)
            dev = DeviceChunk(chunk, residues, offsets, lengths, subjects, ready, pinned)
            self.resident[key] = dev
            return dev

    # -- scan ----------------------------------------------------------------------------
    def plan(self, dev: DeviceChunk, query_length: int) -> Plan:
        """Threshold for this batch and query: fixed by the user, or the planner's choice."""
        if self.threshold is not None:
            return evaluate(dev.lengths, query_length, self.threshold, self.model)
        return choose_threshold(dev.lengths, query_length, self.model)

    def scores(self, dev: DeviceChunk, query: EncodedSequence) -> cp.ndarray:
        """Exact scores of ``query`` against every subject of the chunk (device int32)."""
        sc = self.scoring
        n = dev.chunk.n_sequences
        with cp.cuda.Device(self.device_id), self.compute:
            self.compute.wait_event(dev.ready)
            self.long.wait_event(dev.ready)
            plan = self.plan(dev, len(query))
            n_short = dev.lengths.split(plan.threshold)
            scores = self._buffer("scores", n, np.int32)
            overflow = self._buffer("overflow", n + 1, np.int32)
            boundary = self._buffer("boundary", 2 * (dev.chunk.n_residues + 1), np.uint32)
            subjects = dev.subjects
            overflow_at = 32767 - sc.max_score
            start, done = cp.cuda.Event(), cp.cuda.Event()
            start.record(self.compute)
            overflow[:1].fill(0)
            inter, intra = pick_shapes(len(query), n_short, self.geometry.busy_threads)
            prof_inter = cp.asarray(build_profile(query.codes, sc, inter))
            prof_intra = cp.asarray(build_profile(query.codes, sc, intra))
            self.long.wait_event(_record(self.compute))
            jobs = [  # the long subjects first, so their blocks start before the bulk fills the GPU
                (intra, self.long, prof_intra, subjects[n_short:], n - n_short),
                (inter, self.compute, prof_inter, subjects[:n_short], n_short),
            ]
            marks = []
            for shape, stream, prof, subj, count in jobs:
                marks.append(_record(stream, timing=True))
                self.launch_scan(shape, False, stream, dev, prof, subj, count, overflow_at, boundary, scores, overflow)
                marks.append(_record(stream, timing=True))
            self.compute.wait_event(marks[1])
            n_over = int(overflow[:1].get(stream=self.compute)[0])
            if n_over:  # rescore in 32 bits the subjects whose 16-bit lanes may have wrapped
                redo = cp.sort(overflow[1 : 1 + n_over])
                is_long = redo >= n_short
                for shape, prof, sel in ((inter, prof_inter, redo[~is_long]), (intra, prof_intra, redo[is_long])):
                    sel = cp.ascontiguousarray(sel)
                    self.launch_scan(shape, True, self.compute, dev, prof, sel, int(sel.size), 0, boundary, scores, overflow)
            done.record(self.compute)
            done.synchronize()
            seconds = cp.cuda.get_elapsed_time(start, done) / 1e3
            self.last_timing = {
                "seconds": seconds,
                "intra_seconds": cp.cuda.get_elapsed_time(marks[0], marks[1]) / 1e3,
                "inter_seconds": cp.cuda.get_elapsed_time(marks[2], marks[3]) / 1e3,
                "n_short": n_short,
                "threshold": plan.threshold,
                "predicted_seconds": plan.predicted_seconds,
                "rescored": n_over,
                "shapes": (inter.template("16"), intra.template("16")),
            }
            self.kernel_seconds += seconds
            self.cells += len(query) * dev.chunk.n_residues
            return scores

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

    def scan_chunk(self, db: Database, chunk: Chunk, queries: list[EncodedSequence], top: int, next_chunk: Chunk | None, score_stats=None):
        dev = self.upload(db, chunk)
        if next_chunk is not None:
            self.upload(db, next_chunk)  # overlaps the copy with this chunk's scan
        out = []
        for qi, q in enumerate(queries):
            s = self.scores(dev, q)
            with cp.cuda.Device(self.device_id), self.compute:
                if score_stats is not None:
                    add_device_scores(score_stats, qi, s, dev.offsets)
                if s.size > top:
                    kth = cp.partition(s, s.size - top)[s.size - top]
                    keep = cp.flatnonzero(s >= kth)
                    idx, val = keep.get(), s[keep].get()
                else:
                    idx, val = np.arange(s.size), s.get()
            out.append((idx.astype(np.int64) + chunk.first, val.astype(np.int32)))
        return out


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
        ids = devices if devices else [0]
        n_devices = device_count()
        bad = [d for d in ids if d < 0 or d >= n_devices]
        if bad:
            from ..errors import BackendUnavailable

            raise BackendUnavailable(f"no CUDA device {bad[0]} (this machine has {n_devices})")
        self.scoring = scoring
        self.workers = [DeviceWorker(d, scoring, threshold, memory_budget, arith) for d in ids]
        self._lock = threading.Lock()

    @property
    def device_names(self) -> list[str]:
        return [w.name for w in self.workers]

    @property
    def kernel_seconds(self) -> float:
        return max(w.kernel_seconds for w in self.workers)

    def batches(self, db: Database, chunks: list[Chunk]) -> list[tuple[list[Chunk], Chunk]]:
        """The device batches of ``chunks`` under the smallest device budget."""
        budget = min(w.budget for w in self.workers) // BYTES_PER_RESIDUE
        return device_batches(db, chunks, budget, len(self.workers))

    def scan(self, db: Database, chunks: list[Chunk], queries: list[EncodedSequence], top: int, on_chunk=None, score_stats=None):
        """Per device batch, per query candidates; devices scan their batches in parallel."""
        n = len(self.workers)
        batches = self.batches(db, chunks)
        results: list = [None] * len(batches)

        def run(w: int) -> None:
            mine = list(range(w, len(batches), n))
            for k, b in enumerate(mine):
                nxt = batches[mine[k + 1]][1] if k + 1 < len(mine) else None
                results[b] = self.workers[w].scan_chunk(db, batches[b][1], queries, top, nxt, score_stats)
                if on_chunk is not None:
                    with self._lock:
                        for c in batches[b][0]:
                            on_chunk(c)

        if n == 1:
            run(0)
        else:
            with ThreadPoolExecutor(n) as pool:
                list(pool.map(run, range(n)))
        return results

    def scan_chunk(self, db: Database, chunk: Chunk, queries: list[EncodedSequence], top: int, score_stats=None):
        return self.workers[0].scan_chunk(db, chunk, queries, top, None, score_stats)
