"""The GPU counts the fitted statistics' score histograms exactly as the CPU does (marked ``gpu``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from swgpu_core.backends.cpu import CpuBackend
from swgpu_core.database import Database
from swgpu_core.fasta import read_sequences
from swgpu_core.score_stats import ScoreHistograms
from swgpu_core.scoring import Scoring
from swgpu_core.search import search

pytestmark = pytest.mark.gpu


def test_device_counts_equal_host_counts() -> None:
    import cupy as cp

    from swgpu_core.gpu.score_stats import add_device_scores

    rng = np.random.default_rng(3)
    lengths = np.concatenate([[1, 5, 9, 10, 11, 8081, 40000], rng.integers(1, 5000, 20000)])
    scores = np.concatenate([[0, 3, 200, 61, 60, 59, 1000], rng.integers(0, 90, 20000)]).astype(np.int32)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    host, device = ScoreHistograms([60, 60]), ScoreHistograms([60, 60])
    host.add(1, scores, lengths)
    add_device_scores(device, 1, cp.asarray(scores), cp.asarray(offsets))
    assert np.array_equal(host.counts[1], device.counts[1]) and host.high[1] == device.high[1]
    assert device.counts[0].sum() == 0


def test_gpu_search_histograms_equal_cpu(bundled_db: Database, resources: Path) -> None:
    from swgpu_core.gpu.search import CudaBackend

    scoring = Scoring.protein()
    queries = read_sequences(resources / "queries.fasta", scoring.alphabet)
    gpu = search(bundled_db, queries, scoring, CudaBackend(scoring), top=10, show_progress=False).score_stats
    cpu = search(bundled_db, queries, scoring, CpuBackend(scoring), top=10, show_progress=False).score_stats
    for q in range(len(queries)):
        assert np.array_equal(gpu.counts[q], cpu.counts[q]) and gpu.high[q] == cpu.high[q]
        assert gpu.counts[q].sum() + sum(gpu.high[q].values()) == bundled_db.n_sequences
