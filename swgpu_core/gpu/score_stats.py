"""The fitted statistics' score histograms counted on the GPU, where the scores are.

Per query and device batch, one pass counts (length bin, score) cells with atomic adds and
one compacts the keys of the few scores above the cap; only the counts (a few tens of kB)
and those keys leave the device. :func:`queue_histogram` queues this without waiting, so
the scan's query pipeline (:meth:`swgpu_core.gpu.search.DeviceWorker.scan_chunk`) keeps
the GPU busy. The cells are those of :class:`swgpu_core.score_stats.ScoreHistograms`, so
GPU and CPU histograms are equal for the same scores.
"""

from __future__ import annotations

import functools

import cupy as cp
import numpy as np

from ..score_stats import LN_FACT, MAX_LLEN, N_LBINS, ScoreHistograms


def length_bins(offsets: cp.ndarray) -> cp.ndarray:
    """Each subject's length bin (device int64); ``offsets``: the batch's n+1 residue offsets."""
    # ufuncs, not operators, which import cupyx on first use (see gpu.search._compact_kernel); the
    # same arithmetic as LN_FACT * log(length) + 0.5 (products and sums are commutative in IEEE)
    lengths = cp.maximum(cp.subtract(offsets[1:], offsets[:-1]), 1).astype(cp.float64)
    return cp.minimum(cp.add(cp.multiply(cp.log(lengths), LN_FACT), 0.5).astype(cp.int64), MAX_LLEN)


@functools.cache
def _count_kernel() -> cp.ElementwiseKernel:
    """dense[lbin * (cap + 1) + s] += 1 for every score up to the cap (cells past ``n_cells`` dropped)."""
    return cp.ElementwiseKernel(
        "int64 s, int64 lbin, int64 cap, int64 n_cells", "raw int32 dense",
        "if (s <= cap) { long long cell = lbin * (cap + 1) + s; if (cell < n_cells) atomicAdd(&dense[cell], 1); }",
        "swgpu_score_cells",
    )  # fmt: skip


@functools.cache
def _high_kernel() -> cp.ElementwiseKernel:
    """keys[k] = s * N_LBINS + lbin for every score above the cap, k taken from ``n_high`` (any order)."""
    return cp.ElementwiseKernel(
        "int64 s, int64 lbin, int64 cap", "raw int64 keys, raw int32 n_high",
        f"if (s > cap) keys[atomicAdd(&n_high[0], 1)] = s * {N_LBINS} + lbin;",
        "swgpu_score_high",
    )  # fmt: skip


def queue_histogram(
    hist: ScoreHistograms, query: int, scores: cp.ndarray, lbins: cp.ndarray, dense: cp.ndarray, keys: cp.ndarray
) -> cp.ndarray:
    """Queue on the current stream, without waiting, the counting of ``scores`` (device int32,
    one per subject; ``lbins`` from :func:`length_bins`) for ``query``: the cells into ``dense``
    (int32, ``hist.counts[query].size``), the keys of the scores above the cap into the front
    of ``keys`` (int64, one slot per subject). Returns their number (device int32, one element)."""
    cap = np.int64(hist.caps[query])
    s = cp.maximum(scores.astype(cp.int64), 0)
    dense.fill(0)
    _count_kernel()(s, lbins, cap, np.int64(dense.size), dense)
    n_high = cp.zeros(1, cp.int32)
    _high_kernel()(s, lbins, cap, keys, n_high)  # in any order: they are counted (no prefix sum, see gpu.search._compact_kernel)
    return n_high


def add_device_scores(hist: ScoreHistograms, query: int, scores: cp.ndarray, offsets: cp.ndarray) -> None:
    """Count ``scores`` (device int32, one per subject) of ``query``, waiting for the result;
    ``offsets``: the batch's n+1 residue offsets."""
    if scores.size == 0:
        return
    dense = cp.empty(hist.counts[query].size, cp.int32)
    keys = cp.empty(max(int(scores.size), 1), cp.int64)
    n_high = int(queue_histogram(hist, query, scores, length_bins(offsets), dense, keys).get()[0])
    hist.add_counts(query, dense.get(), keys[:n_high].get())
