"""Measure the planner's device constants on the running GPU; cache them per GPU model.

Four short runs on random subjects (about a second in all): the inter- and intra-task
kernels with the GPU full (cells per second), and one pair of long subjects alone in
each kernel (seconds per row: the critical path of the longest subject). The cache
lives in ``$SWGPU_CACHE`` or ``~/.cache/swgpu`` and is keyed by GPU name and a hash of
the kernel source, so a changed kernel is measured again.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

import cupy as cp
import numpy as np

from ..plan import DeviceModel
from ..scoring import Scoring
from .cuda_kernels import INTER_SHAPES, INTRA_SHAPES, build_profile, kernel_source


def cache_path() -> Path:
    return Path(os.environ.get("SWGPU_CACHE", Path.home() / ".cache" / "swgpu")) / "calibration.json"


def _key(name: str, arith: str) -> str:
    digest = hashlib.sha256(kernel_source().encode()).hexdigest()[:12]
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
        return DeviceModel(**cached[key])
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


def _time_scan(worker, shape, lengths: np.ndarray, query_length: int, reps: int = 3) -> float:
    """Median seconds of one kernel over random subjects of the given lengths."""
    rng = np.random.default_rng(5)
    scoring: Scoring = worker.scoring
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    residues = cp.asarray(rng.integers(0, 20, int(offsets[-1]), dtype=np.uint8))
    query = rng.integers(0, 20, query_length).astype(np.uint8)
    prof = cp.asarray(build_profile(query, scoring, shape.cols))
    n = lengths.size
    d_off = cp.asarray(offsets)
    subjects = cp.arange(n, dtype=np.int32)
    scores = cp.empty(n, dtype=np.int32)
    overflow = cp.zeros(n + 1, dtype=np.int32)
    boundary = cp.empty(2 * int(offsets[-1]) + 2, dtype=np.uint32)
    args = (residues, d_off, subjects, np.int32(n), prof, np.int32(prof.shape[1]), np.int32(prof.shape[1] // shape.cols),
            np.int32(scoring.first_gap_cost), np.int32(scoring.gap_extend), np.int32(32767 - scoring.max_score),
            boundary, scores, overflow)  # fmt: skip
    times = []
    stream = worker.compute
    for _ in range(reps + 1):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record(stream)
        worker.kernels.launch(shape, False, args, n, stream)
        stop.record(stream)
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
    return float(np.median(times[1:]))


def calibrate(worker) -> DeviceModel:
    with cp.cuda.Device(worker.device_id):
        inter_full = next(s for s in INTER_SHAPES if s.r == 16 and s.lanes == 8)
        inter_alone = next(s for s in INTER_SHAPES if s.r == 16 and s.lanes == 32)
        intra = INTRA_SHAPES[0]
        bulk = np.full(200_000, 300, dtype=np.int64)
        q = 512
        inter_rate = q * bulk.sum() / _time_scan(worker, inter_full, bulk, q)
        many_long = np.full(2_000, 6_000, dtype=np.int64)
        intra_rate = intra.cols * many_long.sum() / _time_scan(worker, intra, many_long, intra.cols)
        pair = np.full(2, 40_000, dtype=np.int64)
        inter_step = _time_scan(worker, inter_alone, pair, inter_alone.cols) / (40_000 + inter_alone.lanes)
        intra_step = _time_scan(worker, intra, pair, intra.cols) / (40_000 + 32)
    return DeviceModel(worker.name, float(inter_rate), float(intra_rate), float(inter_step), float(intra_step), measured=True)
