"""What ``intra_probe.py`` and ``intra_sweep.py`` share: the database's longest subjects as one
device batch, and one query's intra-task scan of it timed with a forced block shape.

Imported by those scripts (from their own directory) after ``swgpu_core`` is importable; the
tree on ``PYTHONPATH`` is the one measured (device_check.sh's A/B runs an older one).
"""

from __future__ import annotations

import numpy as np

from swgpu_core.database import Chunk, Database
from swgpu_core.device_batches import Batch
from swgpu_core.gpu import kernels
from swgpu_core.gpu import search as gpu_search


def longest_batch(worker: gpu_search.DeviceWorker, db: Database, longest: int, max_length: int | None = None) -> gpu_search.DeviceChunk:
    """The ``longest`` longest subjects (of at most ``max_length`` residues) uploaded as one batch."""
    n = db.n_sequences if max_length is None else int(np.searchsorted(db.lengths, max_length, side="right"))
    first = n - longest
    return worker.upload(db, Batch.of(Chunk(0, first, n, int(db.offsets[first]), int(db.offsets[n]))))


def time_intra(
    worker: gpu_search.DeviceWorker, dev: gpu_search.DeviceChunk, query, shape: kernels.Shape, reps: int
) -> tuple[float, np.ndarray]:
    """The median over ``reps`` timed scans (after one warm-up) of the intra-task kernel's seconds
    (CUDA events, ``DeviceWorker.last_timing``) for ``query`` over ``dev`` in blocks of ``shape``
    (the worker's backend made with threshold 1, so every subject is on the intra-task kernel),
    and the scores of the last scan."""
    default_pick = gpu_search.pick_shapes
    gpu_search.pick_shapes = lambda ql, ns, bt, ic: (default_pick(ql, ns, bt, 256)[0], shape)
    try:
        times = []
        for rep in range(reps + 1):
            scores = worker.scores(dev, query).get()
            if rep:
                times.append(worker.last_timing["intra_seconds"])
    finally:
        gpu_search.pick_shapes = default_pick
    return float(np.median(times)), scores
