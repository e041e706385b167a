"""Compute backends: each scores one query against one database chunk.

A backend returns, for a chunk, every subject whose score reaches the ``top``-th best
score of that chunk (ties included), so that the shared selection in
:mod:`swgpu_core.search` applies one tie rule whatever computed the scores.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from ..database import Chunk, Database
from ..fasta import EncodedSequence
from ..score_stats import ScoreHistograms
from ..scoring import Scoring


class Backend(Protocol):
    name: str

    def scan_chunk(
        self, db: Database, chunk: Chunk, queries: list[EncodedSequence], top: int, score_stats: ScoreHistograms | None = None
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per query: (sorted-numbering subject indices, int32 scores) of the chunk's best.

        Every score also goes into ``score_stats`` (when given), for fitted statistics."""


def candidates(scores: np.ndarray, first: int, top: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices (offset by ``first``) and scores of every entry >= the ``top``-th largest."""
    if top >= scores.size:
        keep = np.arange(scores.size)
    else:
        kth = np.partition(scores, scores.size - top)[scores.size - top]
        keep = np.flatnonzero(scores >= kth)
    return keep.astype(np.int64) + first, scores[keep].astype(np.int32)


def get_backend(
    name: str,
    scoring: Scoring,
    *,
    threads: int = 0,
    devices: list[int] | None = None,
    threshold: int | None = None,
    memory_budget: int | None = None,
    quiet: bool = False,
) -> Backend:
    """``cpu``, ``cuda``, or ``auto`` (CUDA when CuPy sees a GPU, else CPU, said once).

    ``threshold`` (inter/intra-task split, default: the planner's) and ``memory_budget``
    (bytes of GPU memory for database batches, default 60% of free) concern the GPU only."""
    from .cpu import CpuBackend

    if name == "cpu":
        return CpuBackend(scoring, threads=threads)
    if name in ("cuda", "auto"):
        try:
            from ..gpu.search import CudaBackend

            return CudaBackend(scoring, devices=devices, threshold=threshold, memory_budget=memory_budget)
        except ImportError as exc:
            if name == "cuda":
                from ..errors import BackendUnavailable

                raise BackendUnavailable(f"--backend cuda: {exc}") from None
            if not quiet:
                import sys

                print(f"swgpu: no usable GPU ({exc}); searching on the CPU", file=sys.stderr)
            return CpuBackend(scoring, threads=threads)
    from ..errors import InputError

    raise InputError(f"unknown backend {name!r} (cpu, cuda or auto)")
