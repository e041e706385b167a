"""The fitted statistics' score histograms counted on the GPU, where the scores are.

Per query and device batch, one elementwise pass bins the subjects by length and one
``bincount`` counts (length bin, score) cells; only the counts (a few hundred kB) and the
few scores above the cap leave the device. The cells are those of :class:`swgpu_core.score_stats.ScoreHistograms`, so GPU and
CPU histograms are equal for the same scores.
"""

from __future__ import annotations

import cupy as cp

from ..score_stats import LN_FACT, MAX_LLEN, N_LBINS, ScoreHistograms


def add_device_scores(hist: ScoreHistograms, query: int, scores: cp.ndarray, offsets: cp.ndarray) -> None:
    """Count ``scores`` (device int32, one per subject) of ``query``; ``offsets``: the batch's n+1 residue offsets."""
    lengths = cp.maximum(offsets[1:] - offsets[:-1], 1).astype(cp.float64)
    lbins = cp.minimum((LN_FACT * cp.log(lengths) + 0.5).astype(cp.int64), MAX_LLEN)
    cap = int(hist.caps[query])
    size = hist.counts[query].size
    s = cp.maximum(scores.astype(cp.int64), 0)
    over = s > cap
    flat = cp.where(over, size, lbins * (cap + 1) + s)  # scores above the cap go to a discarded cell
    dense = cp.bincount(flat, minlength=size + 1)[:size]
    high = cp.flatnonzero(over)
    hist.add_counts(query, dense.get(), (s[high] * N_LBINS + lbins[high]).get())
