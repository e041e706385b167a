"""Measure the planner's device constants on the running GPU; cache them per GPU model.

Short runs on random subjects (about a second in all): the inter- and intra-task
kernels with the GPU full (cells per second), one pair of long subjects alone in each
kernel (seconds per row: the critical path of the longest subject) and the same pair
beside a full GPU (how much the bulk slows it down). The cache
lives in ``$SWGPU_CACHE`` or ``~/.cache/swgpu`` and is keyed by GPU name and a hash of
the kernel source and its compile options, so a changed kernel is measured again.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

import cupy as cp
import numpy as np

from ..kernel_abi import compile_options
from ..plan import DeviceModel
from ..scoring import Scoring
from .kernels import INTER_SHAPES, INTRA_SHAPES, build_profile, kernel_source

#: bumped when the model's constants change meaning, so cached calibrations are redone
MODEL_VERSION = "2"


def cache_path() -> Path:
    return Path(os.environ.get("SWGPU_CACHE", Path.home() / ".cache" / "swgpu")) / "calibration.json"


def _key(name: str, arith: str) -> str:
    digest = hashlib.sha256((kernel_source() + " ".join(compile_options()) + MODEL_VERSION).encode()).hexdigest()[:12]
    return f"{name}|{arith}|{digest}"


def load_or_calibrate(worker) -> DeviceModel:
    """The cached model for this GPU and kernel build, measuring it on first use."""
    path = cache_path()
    key = _key(worker.name, worker.kernels.arith)
    try:
        cached = json.loads(path.read_text())
    except (OSError, ValueError):
        cached = {}
    if key in cached:
        return DeviceModel.from_json(cached[key])
    model = calibrate(worker)
    cached[key] = model.to_json()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".calibration-")
        with os.fdopen(fd, "w") as fh:
            json.dump(cached, fh, indent=1)
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only home still gets the measured model for this run
    return model


class _Bench:
    """Random subjects of given lengths (sorted, as in a database) resident on the device."""

    def __init__(self, worker, lengths: np.ndarray, query_length: int):
        rng = np.random.default_rng(5)
        self.worker = worker
        self.lengths = np.sort(np.asarray(lengths, dtype=np.int64))
        offsets = np.concatenate(([0], np.cumsum(self.lengths)))
        self.residues = cp.asarray(rng.integers(0, 20, int(offsets[-1]), dtype=np.uint8))
        self.offsets = cp.asarray(offsets)
        self.query = rng.integers(0, 20, query_length).astype(np.uint8)
        n = self.lengths.size
        self.scores = cp.empty(n, dtype=np.int32)
        self.overflow = cp.zeros(n + 1, dtype=np.int32)
        self.boundary = cp.empty(2 * int(offsets[-1]) + 2, dtype=np.uint32)

    def time(self, launches: list[tuple], reps: int = 3) -> float:
        """Median seconds from the first launch to the last kernel's end, after a warm-up.

        ``launches`` are ``(shape, first, stop, stream)``: scan subjects ``first..stop-1``.
        Later streams wait for the first, and the first waits for all, so concurrent
        launches are timed together. Profiles and subject lists are made before timing.
        """
        sc: Scoring = self.worker.scoring
        inputs = [(cp.asarray(build_profile(self.query, sc, shape)), cp.arange(first, stop, dtype=np.int32))
                  for shape, first, stop, _ in launches]  # fmt: skip
        cp.cuda.Device().synchronize()  # the copies above ran on the default stream
        main = launches[0][3]
        times = []
        for _ in range(reps + 1):
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            start.record(main)
            for (shape, first, end, stream), (prof, subjects) in zip(launches, inputs):
                stream.wait_event(start)
                self.worker.launch_scan(shape, False, stream, self, prof, subjects, end - first, 32767 - sc.max_score,
                                        self.boundary, self.scores, self.overflow)  # fmt: skip
                ev = cp.cuda.Event()
                ev.record(stream)
                main.wait_event(ev)
            stop.record(main)
            stop.synchronize()
            times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
        return float(np.median(times[1:]))


def _loaded_step(bulk: float, mixed: float, rows: int, step: float) -> float:
    """Seconds per row of a long subject beside the bulk.

    It ran ``bulk / loaded`` rows while the bulk ran, the rest alone after it:
    ``mixed = bulk + (rows - bulk / loaded) * step``. Clamped to the lone step from below
    (noise must not make the loaded subject faster than an idle GPU would).
    """
    alone_rows = (mixed - bulk) / step
    if alone_rows >= rows or mixed <= bulk:  # no measurable overlap: assume no slowdown
        return step
    return max(step, bulk / (rows - alone_rows))


def calibrate(worker) -> DeviceModel:
    """Rates on a full GPU; lone and loaded row steps of one long pair (about a second).

    The bulk imitates a protein database: lengths around 350 with a long right tail, a
    1024-residue query. The long pair (40,000 residues) is placed last in the sorted
    list, so the kernels start it first, as they do the longest subjects of a real batch.
    """
    rng = np.random.default_rng(11)
    with cp.cuda.Device(worker.device_id):
        inter = next(s for s in INTER_SHAPES if s.r == 16 and s.lanes == 8)
        intra = INTRA_SHAPES[0]
        main, side = worker.compute, worker.long
        bulk_lengths = np.clip(rng.gamma(2.0, 175.0, 300_000), 30, 2_000).astype(np.int64)
        long_pair = np.full(2, 40_000, dtype=np.int64)
        q = 1024
        bench = _Bench(worker, bulk_lengths, q)
        inter_rate = q * bench.lengths.sum() / bench.time([(inter, 0, bench.lengths.size, main)])
        many_long = _Bench(worker, np.full(2_000, 6_000, dtype=np.int64), intra.cols)
        intra_rate = intra.cols * many_long.lengths.sum() / many_long.time([(intra, 0, 2_000, main)])
        # the long pair alone, then beside the bulk (q = 256: inter 2 passes, intra 1 pass)
        mix = _Bench(worker, np.concatenate((bulk_lengths, long_pair)), 256)
        n = mix.lengths.size
        inter_rows, intra_rows = 2 * (40_000 + inter.lanes), 40_000 + intra.cols // 8
        inter_step = mix.time([(inter, n - 2, n, main)]) / inter_rows
        intra_step = mix.time([(intra, n - 2, n, side)]) / intra_rows
        bulk = mix.time([(inter, 0, n - 2, main)])
        inter_loaded = _loaded_step(bulk, mix.time([(inter, 0, n, main)]), inter_rows, inter_step)
        intra_loaded = _loaded_step(bulk, mix.time([(intra, n - 2, n, side), (inter, 0, n - 2, main)]), intra_rows, intra_step)
    return DeviceModel(worker.name, float(inter_rate), float(intra_rate), float(inter_step), float(intra_step),
                       float(inter_loaded), float(intra_loaded), measured=True, geometry=worker.geometry)  # fmt: skip
