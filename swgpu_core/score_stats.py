"""Fitted statistics: each query's extreme-value parameters from the database's own scores.

An exact search scores every subject, so, like SSEARCH, it can fit the score distribution
of each query instead of relying on tabulated parameters. This is FASTA36's default
estimator for ssearch36 (``-z 1``, ``proc_hist_r`` in ``scaleswn.c``): scores are binned by
``int(10 ln(length) + 0.5)``, the bin means are regressed on the bin's log length (bins
weighted by their variance), scores below z = -3 or above the database-size dependent
``zstrim`` are removed, bins whose residual variance is over three times the mean are
dropped (``fit_llens``) and the regression is redone. A hit's z-score is
``(S - rho * 10 ln(n) - mu) / sqrt(mean_var)`` and its E-value ``N * P(Z >= z)`` under
the extreme-value law, ``N`` the number of database sequences.

The fit needs only a per-query 2-D histogram (length bin x score, scores above FASTA's
``max_hscore`` in one overflow cell), so it is computed where the scores are: numpy on the
CPU backend, CuPy (:mod:`swgpu_core.gpu.score_stats`) on the GPU; histograms of chunks add
up, so chunked searches and merged hit lists fit exactly as one search.

Where FASTA's estimator has too little data (fewer than about 90 sequences, a query of 10
residues or less, a failed regression) FASTA switches to tabulated or MLE parameters; here
the query gets BLAST's statistics where BLAST has parameters, else the mean and variance of
its scores (FASTA's ``proc_hist_n``, without its iterated trimming). Every hit gets a number.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .scoring import Scoring
from .stats import BlastStatistics, KarlinAltschul

LN_FACT = 10.0  # length bins per e-fold of length
MAX_LLEN = 200  # last length bin (FASTA's MAX_LLEN)
N_LBINS = MAX_LLEN + 1
LENGTH_CUTOFF = 10  # shorter subjects take no part in the fit (FASTA's LENGTH_CUTOFF)
SHORT_BINS = 23  # bins 0..22 hold exactly the lengths below LENGTH_CUTOFF
EULER_G = 0.57721566490153286060
PI_SQRT6 = 1.28254983016186409554
MAX_SCORE_AXIS = 4096  # at most this many score cells per length bin

#: Robinson and Robinson background frequencies (FASTA's ``karlin.c``, ``aa_f``), for FASTA's
#: ungapped lambda and K, which set the score cap ``max_hscore``.
ROBINSON = dict(
    zip("ARNDCQEGHILKMFPSTWYV", (
        0.0780474700897585, 0.0512953149316987, 0.0448725775979007, 0.0536397361638076, 0.0192460110427568,
        0.0426436013507063, 0.0629485981204668, 0.0737715654561964, 0.0219922696262025, 0.0514196403000682,
        0.090191394464413, 0.0574383201866657, 0.0224251883196316, 0.0385564048655621, 0.0520279465667327,
        0.0711984743501224, 0.0584129422708473, 0.013298374223799, 0.0321647488738564, 0.0644094211988074,
    ))
)  # fmt: skip


def ungapped_karlin(scoring: Scoring) -> tuple[float, float]:
    """FASTA36's ungapped lambda and K for ``scoring`` (``do_karlin_a`` and ``karlin_k``).

    They only set ``max_hscore``, so they are computed as ssearch36 computes them, quirks
    included: its matrix rows are in NCBIstdaa order (A B C D E ... W) while the Robinson
    frequencies are listed A R N D ..., and the k-th frequency goes with the k-th row; the
    subject side leaves out the 20th. For BLOSUM62 this gives ssearch36's printed
    0.298/0.131 (``-m B``) instead of the textbook 0.318/0.134.
    """
    if scoring.alphabet.name == "protein":
        rows, freq = "ABCDEFGHIKLMNPQRSTVW", np.array(list(ROBINSON.values()))  # NCBIstdaa codes 1..20
    else:
        rows, freq = "ACGT", np.full(4, 0.25)
    codes = [scoring.alphabet.letters.index(c) for c in rows]
    sub = scoring.matrix[np.ix_(codes, codes)].astype(np.int64)
    low, high = int(sub.min()), int(sub.max())
    pr = np.zeros(high - low + 1)
    p1 = freq / freq.sum()
    k = len(rows) - 1
    np.add.at(pr, (sub[:, :k] - low).ravel(), (freq[:, None] * p1[None, :k]).ravel())
    pr /= pr.sum()
    s = np.arange(low, high + 1)
    if (pr * s).sum() >= 0 or high <= 0:
        return 0.298, 0.131  # no positive lambda: ssearch36's BLOSUM62 values, only to size the score cap
    up = 1.0
    while (pr * np.exp(up * s)).sum() < 1.0:
        up *= 2.0
    lam = 0.0
    for _ in range(100):  # FASTA's bisection (MAXIT 100, TINY 1e-6)
        new = (lam + up) / 2.0
        if (pr * np.exp(new * s)).sum() > 1.0 + 1.0e-6:
            up = new
        else:
            if abs(lam - new) < 1.0e-6:
                break
            lam = new
    av = (pr * s * np.exp(lam * s)).sum()
    # K by Karlin's series (karlin_k): sum over j of P(S_j >= 0) + E[exp(lam S_j); S_j < 0] / j
    total, P, lo, hi = 0.0, np.array([1.0]), 0, 0
    ratio = oldsum = 1.0
    j = 1
    while j <= 100:
        P = np.convolve(P, pr)
        lo, hi = lo + low, hi + high
        sc = np.arange(lo, hi + 1)
        sm = (P[sc < 0] * np.exp(lam * sc[sc < 0])).sum() + P[sc >= 0].sum()
        ratio, oldsum = sm / oldsum, sm
        total += sm / j
        j += 1
        if sm <= 0.001:
            break
    while j <= 200:
        oldsum *= ratio
        total += oldsum / j
        j += 1
    g = 0
    for v in s[pr > 0]:
        g = math.gcd(g, int(v))
    g = g or 1
    K = g * math.exp(-2 * total) / (av * (1.0 - math.exp(-lam * g)))
    return float(lam), float(K)


def score_cap(scoring: Scoring, query_length: int, n_sequences: int, n_residues: int) -> int:
    """FASTA's ``max_hscore`` (``calc_thresh``): scores above it count as it in the regression."""
    return score_caps(scoring, [query_length], n_sequences, n_residues)[0]


def score_caps(scoring: Scoring, query_lengths: Sequence[int], n_sequences: int, n_residues: int) -> list[int]:
    """:func:`score_cap` of each of ``query_lengths``, with lambda and K computed once: they
    take 2-4 ms, and a search of 125 queries spent 0.25-0.35 s recomputing them per query
    before its scan (bench/RESULTS.md)."""
    lam, K = ungapped_karlin(scoring)
    ave_n1 = n_residues / max(n_sequences, 1)
    l_fact = 0.7 if scoring.alphabet.name == "protein" else 1.0  # FASTA: ungapped to gapped lambda
    caps = []
    for m in query_lengths:
        tmp = 0.01 / (max(n_sequences, 1) * K * max(m, 1) * max(ave_n1, 1.0))
        cap = int(-math.log(tmp) / (lam * l_fact) + 0.5)
        caps.append(int(min(max(cap, 1), MAX_SCORE_AXIS - 2)))
    return caps


def length_bins(lengths: ArrayLike) -> np.ndarray:
    """FASTA's length bin ``int(10 ln(n) + 0.5)``, at most :data:`MAX_LLEN`."""
    n = np.maximum(np.asarray(lengths, dtype=np.float64), 1.0)
    return np.minimum((LN_FACT * np.log(n) + 0.5).astype(np.int64), MAX_LLEN)


class ScoreHistograms:
    """Per query: counts of (length bin, score) over every subject scanned; they add up over chunks.

    ``counts[q]`` has ``rows`` length bins (up to the database's longest subject) and
    ``caps[q] + 1`` columns (scores 0..cap): about 40 kB of int32 per query for proteins.
    Scores above the cap are few (the query's relatives) but FASTA trims them by their
    real value, so they are kept exactly: ``high[q]`` maps ``score * N_LBINS + bin`` to a count.
    """

    def __init__(self, caps: ArrayLike, rows: int = N_LBINS, counts: list[np.ndarray] | None = None, high: list[Counter] | None = None):
        self.caps = np.asarray(caps, dtype=np.int64)
        self.rows = int(rows)
        self.counts = counts if counts is not None else [np.zeros((self.rows, int(c) + 1), np.int32) for c in self.caps]
        self.high = high if high is not None else [Counter() for _ in self.caps]
        self._lock = threading.Lock()

    @classmethod
    def for_search(cls, scoring: Scoring, query_lengths: list[int], n_sequences: int, n_residues: int, max_length: int) -> ScoreHistograms:
        """Empty histograms for these queries against a database of this size (the whole database's)."""
        return cls(score_caps(scoring, query_lengths, n_sequences, n_residues), int(length_bins(max_length)) + 1)

    def add(self, query: int, scores: np.ndarray, lengths: np.ndarray) -> None:
        """Count one chunk's scores of ``query`` (``lengths``: the subjects' lengths)."""
        cap = int(self.caps[query])
        s = np.maximum(np.asarray(scores, dtype=np.int64), 0)
        lb = length_bins(lengths)
        over = s > cap
        dense = np.bincount((lb * (cap + 1) + s)[~over], minlength=self.counts[query].size)
        self.add_counts(query, dense, s[over] * N_LBINS + lb[over])

    def add_counts(self, query: int, dense: np.ndarray, high_keys: np.ndarray) -> None:
        """Add flattened counts of scores up to the cap and the keys of those above (from the CPU or the GPU)."""
        keys, n = np.unique(np.asarray(high_keys, dtype=np.int64), return_counts=True)
        with self._lock:
            self.counts[query] += dense.reshape(self.counts[query].shape)
            self.high[query].update(dict(zip(keys.tolist(), n.tolist())))

    def merge(self, other: ScoreHistograms) -> None:
        """Add another part's histograms (disjoint chunks of the same database and queries)."""
        if not np.array_equal(self.caps, other.caps) or self.rows != other.rows:
            raise ValueError("score histograms of different queries or databases")
        for mine, theirs in zip(self.counts, other.counts):
            mine += theirs
        for mine, theirs in zip(self.high, other.high):
            mine.update(theirs)

    def subjects(self) -> int:
        """How many subjects' scores each query's histogram holds (the database's size once every chunk is in)."""
        if not len(self.caps):
            return 0
        return int(self.counts[0].sum()) + sum(self.high[0].values())

    @classmethod
    def concatenate(cls, parts: list[ScoreHistograms]) -> ScoreHistograms:
        """The histograms of several query batches against the same database, queries in batch order."""
        if len({p.rows for p in parts}) > 1:
            raise ValueError("score histograms of different databases")
        return cls(
            np.concatenate([np.zeros(0, np.int64)] + [p.caps for p in parts]), parts[0].rows if parts else N_LBINS,
            [c for p in parts for c in p.counts], [h for p in parts for h in p.high],
        )  # fmt: skip

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Sparse arrays for a hit list: caps, and per query the non-zero cells and the high scores."""
        cells = [np.flatnonzero(c) for c in self.counts]
        highs = [np.array(sorted(h.items()), dtype=np.int64).reshape(-1, 2) for h in self.high]
        return {
            "hist_caps": self.caps,
            "hist_rows": np.array(self.rows),
            "hist_offsets": np.cumsum([0] + [c.size for c in cells]).astype(np.int64),
            "hist_cells": np.concatenate([np.zeros(0, np.int64)] + cells).astype(np.int32),
            "hist_counts": np.concatenate([np.zeros(0, np.int32)] + [c.ravel()[k] for c, k in zip(self.counts, cells)]).astype(np.int32),
            "hist_high_offsets": np.cumsum([0] + [len(h) for h in highs]).astype(np.int64),
            "hist_high": np.concatenate([np.zeros((0, 2), np.int64)] + highs),
        }

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> ScoreHistograms | None:
        """Inverse of :meth:`to_arrays` (None for hit lists written without histograms)."""
        if "hist_caps" not in arrays:
            return None
        out = cls(arrays["hist_caps"], int(arrays["hist_rows"]))
        off, hoff = arrays["hist_offsets"], arrays["hist_high_offsets"]
        for q, c in enumerate(out.counts):
            c.ravel()[arrays["hist_cells"][off[q] : off[q + 1]]] = arrays["hist_counts"][off[q] : off[q + 1]]
            out.high[q].update(dict(map(tuple, arrays["hist_high"][hoff[q] : hoff[q + 1]].tolist())))
        return out

    def fit(self, query_lengths: list[int], n_sequences: int, max_length: int, blast: KarlinAltschul | None,
            db_residues: int) -> FittedStatistics:  # fmt: skip
        """FASTA's regression fit of every query; the statistics the output path uses."""
        fits = [
            fit_regression(np.pad(c, ((0, N_LBINS - self.rows), (0, 0))).astype(np.int64), h, int(cap), m, max_length)
            for c, h, cap, m in zip(self.counts, self.high, self.caps, query_lengths)
        ]
        if blast is None:  # nothing to fall back on: every query gets at least the mean and sd of its scores
            fits = [f if f is not None else _normal_fit(c, min_sd=1.0) for f, c in zip(fits, self.counts)]
        return FittedStatistics(fits, n_sequences, BlastStatistics(blast, db_residues) if blast is not None else None)


@dataclass(frozen=True)
class QueryFit:
    """One query's fit: ``kind`` "regression" (z from rho, mu over ln length) or "normal" (mean and sd only)."""

    kind: str
    rho: float  # per length bin (multiply by 10 for FASTA's rho(ln(x)))
    mu: float
    sd: float

    def z(self, score: np.ndarray, subject_length: np.ndarray) -> np.ndarray:
        if self.kind == "normal":
            return (score - self.mu) / self.sd
        log_len = LN_FACT * np.log(np.maximum(subject_length, 1))
        return np.where(subject_length < LENGTH_CUTOFF, -5.0, (score - self.rho * log_len - self.mu) / self.sd)


class FittedStatistics:
    """E-values ``N * P(Z >= z)`` and FASTA's bit scores from each query's fit."""

    kind = "fit"

    def __init__(self, fits: list[QueryFit | None], entries: int, fallback: BlastStatistics | None):
        self.fits = fits
        self.entries = entries
        self.fallback = fallback
        n_fit = sum(f is not None and f.kind == "regression" for f in fits)
        self.description = (
            f"E-values from each query's fit to the database's scores (FASTA's regression on ln length, {n_fit} of {len(fits)} queries)"
        )

    def _z(self, query: int, score: ArrayLike, subject_length: ArrayLike) -> np.ndarray | None:
        f = self.fits[query]
        if f is None:
            return None
        return f.z(np.asarray(score, dtype=np.float64), np.asarray(subject_length, dtype=np.float64))

    def evalue(self, query: ArrayLike, query_length: ArrayLike, score: ArrayLike, subject_length: ArrayLike) -> np.ndarray:
        return self._each_query(self._evalue, query, query_length, score, subject_length)

    def bitscore(self, query: ArrayLike, query_length: ArrayLike, score: ArrayLike, subject_length: ArrayLike) -> np.ndarray:
        return self._each_query(self._bitscore, query, query_length, score, subject_length)

    @staticmethod
    def _each_query(one: Callable, query: ArrayLike, query_length: ArrayLike, score: ArrayLike, subject_length: ArrayLike) -> np.ndarray:
        """``one`` (a query's E-values or bit scores) for hits of one query, or of many
        (``query`` one number per hit): each query's fit is its own."""
        numbers = np.asarray(query)
        if numbers.ndim == 0:
            return one(int(numbers), query_length, score, subject_length)
        score, subject_length, query_length = np.broadcast_arrays(
            np.asarray(score, dtype=np.float64), np.asarray(subject_length, dtype=np.float64), np.asarray(query_length)
        )
        out = np.empty(numbers.shape, dtype=np.float64)
        order = np.argsort(numbers, kind="stable")
        ordered = numbers[order]
        for at in np.split(order, np.flatnonzero(ordered[1:] != ordered[:-1]) + 1):
            out[at] = one(int(numbers[at[0]]), int(query_length[at[0]]), score[at], subject_length[at])
        return out

    def _evalue(self, query: int, query_length: int, score: ArrayLike, subject_length: ArrayLike) -> np.ndarray:
        z = self._z(query, score, subject_length)
        if z is None:
            return self.fallback.evalue(query, query_length, score, subject_length)
        e = np.exp(-PI_SQRT6 * z - EULER_G)
        p = np.where(e > 0.01, -np.expm1(-e), e)  # z_to_E: 1 - exp(-e), e itself where small
        return np.asarray(max(self.entries, 1) * p, dtype=np.float64)

    def _bitscore(self, query: int, query_length: int, score: ArrayLike, subject_length: ArrayLike) -> np.ndarray:
        z = self._z(query, score, subject_length)
        if z is None:
            return self.fallback.bitscore(query, query_length, score, subject_length)
        n = np.maximum(np.asarray(subject_length, dtype=np.float64), 1.0)
        return np.asarray((PI_SQRT6 * z + EULER_G + np.log(float(query_length) * n)) / math.log(2), dtype=np.float64)


def _fit_llen(h: np.ndarray, s1: np.ndarray, s2: np.ndarray, var_floor: float) -> tuple[bool, float, float, float]:
    """FASTA's ``fit_llen``: weighted regression of bin means on the bin's log length.

    Returns (fit_flag, rho, mu, mean_var).
    """
    use = h > 1
    var = np.zeros(N_LBINS)
    var[use] = (s2[use] / h[use] - (s1[use] / h[use]) ** 2) / (h[use] - 1)
    var[use & (var <= var_floor)] = var_floor
    use_r = use.copy()
    use_r[MAX_LLEN] = False  # FASTA's regression loops stop before the last bin
    x = np.arange(N_LBINS) + 0.5
    w = np.where(use_r, 1.0 / np.where(use_r, var, 1.0), 0.0)
    n_w, sum_x, sum_y = (h * w).sum(), (h * x * w).sum(), (s1 * w).sum()
    sum_x2, sum_xy = (h * x * x * w).sum(), (x * s1 * w).sum()
    if use_r.sum() < 5:
        return False, 0.0, sum_y / n_w if n_w else 0.0, 0.0
    det = n_w * sum_x2 - sum_x * sum_x
    if det <= 0.001:
        return False, 0.0, sum_y / n_w, 0.0
    rho = (n_w * sum_xy - sum_x * sum_y) / det
    mu = (sum_x2 * sum_y - sum_x * sum_xy) / det
    n = h[use].sum()
    u = rho * x[use] + mu
    mean_var = (s2[use] - 2.0 * s1[use] * u + h[use] * u * u).sum() / n
    if mean_var <= 0.01:
        return False, rho, mu, max(mu, 1.0)
    return True, rho, mu, mean_var


def _trim_bins(h: np.ndarray, s1: np.ndarray, s2: np.ndarray, max_length: int) -> np.ndarray:
    """FASTA's ``fit_llens``: drop the bins whose residual variance is far from the length trend."""
    ok, rho, mu, _ = _fit_llen(h, s1, s2, 1.0)
    if not ok:
        return h
    use = h > 1
    x = np.arange(N_LBINS) + 0.5
    n = h[use].sum()
    mean_x = (h[use] * x[use]).sum() / n
    var_x = (h[use] * x[use] ** 2).sum() / n - mean_x**2
    u = rho * x + mu
    y2 = s2 - 2.0 * s1 * u + h * u * u
    mean_y2 = y2[use].sum() / n
    covar_xy2 = (x[use] * y2[use]).sum() / n - mean_x * mean_y2
    rho2 = covar_xy2 / var_x
    mu2 = mean_y2 - rho2 * mean_x
    if rho2 < 0.0:
        z = max_length if rho2 * LN_FACT * math.log(max_length) + mu2 > 0.0 else math.exp((-1.0 - mu2 / rho2) / LN_FACT)
    else:
        z = math.exp((1.0 - mu2 / rho2) / LN_FACT) if rho2 else LENGTH_CUTOFF
    z = max(z, 2 * LENGTH_CUTOFF)
    var_cutoff = rho2 * LN_FACT * math.log(z) + mu2
    inner = use.copy()
    inner[MAX_LLEN] = False
    v = np.maximum(rho2 * x + mu2, var_cutoff)
    u2 = (s2 - 2.0 * u * s1 + h * u * u) - v * h
    dev = np.where(inner, u2 * u2 / np.where(inner, h - 1, 1), 0.0)
    if not inner.any():
        return h
    mean_3u2 = 3.0 * math.sqrt(dev[inner].sum() / inner.sum())
    out = h.copy()
    out[inner & (np.sqrt(dev) > mean_3u2)] = 0
    return out


def fit_regression(counts: np.ndarray, high: Counter, cap: int, query_length: int, max_length: int) -> QueryFit | None:
    """FASTA's ``proc_hist_r`` on one query's histogram; None where FASTA would not fit."""
    keys = np.array(sorted(high), dtype=np.int64)
    hi_n = np.array([high[k] for k in keys.tolist()], dtype=np.int64)
    hi_s, hi_j = keys // N_LBINS, keys % N_LBINS
    total = int(counts.sum() + hi_n.sum())
    if total < 10 or query_length <= LENGTH_CUTOFF:
        return None
    z = (math.log(total) - EULER_G) / PI_SQRT6  # calc_thresh with every score kept
    if z < 3.0:
        return None  # FASTA: too few scores for a z-trim, tabulated parameters
    zstrim = 10.0 * z + 50.0
    value = np.arange(cap + 1, dtype=np.float64)
    is_long = np.arange(N_LBINS) >= SHORT_BINS
    long = np.where(is_long[:, None], counts, 0)
    hi_long = np.where(is_long[hi_j], hi_n, 0)
    hi_h = np.bincount(hi_j, hi_long, N_LBINS)  # scores above the cap count as the cap
    h = long.sum(1) + hi_h
    s1, s2 = (long * value).sum(1) + cap * hi_h, (long * value * value).sum(1) + cap * cap * hi_h
    seen = np.flatnonzero(long.sum(0))
    min_score = 0 if counts[~is_long].any() or not seen.size else int(seen[0])
    max_score = int(hi_s[hi_long > 0].max()) if (hi_long > 0).any() else (int(seen[-1]) if seen.size else 0)
    if max_score - min_score < 10:
        return _normal_fit(counts)
    ok, rho, mu, mean_var = _fit_llen(h, s1, s2, 0.1)
    if not ok:
        return _normal_fit(counts)
    sd = math.sqrt(mean_var)

    def trimmed(score: np.ndarray, j: np.ndarray) -> np.ndarray:  # find_zr with 10 ln(n) ~ the bin; no trim of 0 scores
        zs = 50.0 + 10.0 * (score - rho * j - mu) / sd
        return ((zs < 20.0) | (zs > zstrim)) & (score > 0) & is_long[j]

    trim = trimmed(value[None, :], np.arange(N_LBINS)[:, None])
    hi_trim = trimmed(hi_s.astype(np.float64), hi_j)
    n_trimmed = int(counts[trim].sum() + hi_n[hi_trim].sum() + counts[~is_long].sum() + hi_n[~is_long[hi_j]].sum() + long[:, 0].sum())
    if total - n_trimmed < 50:
        return _normal_fit(counts)
    gone = np.where(trim, long, 0)
    gone_hi = np.bincount(hi_j, np.where(hi_trim, hi_n, 0), N_LBINS)
    h = h - gone.sum(1) - gone_hi
    s1 = s1 - (gone * value).sum(1) - cap * gone_hi
    s2 = s2 - (gone * value * value).sum(1) - cap * cap * gone_hi
    h = _trim_bins(h, s1, s2, max_length)
    ok, rho, mu, mean_var = _fit_llen(h, s1, s2, 0.1)
    if not ok:
        return _normal_fit(counts)
    return QueryFit("regression", rho, mu, math.sqrt(mean_var))


def _normal_fit(counts: np.ndarray, min_sd: float | None = None) -> QueryFit | None:
    """Mean and standard deviation of the scores up to the cap (FASTA's ``proc_hist_n``, untrimmed).

    None where they say nothing (under two scores, no spread), unless ``min_sd`` floors the
    standard deviation: the last resort of a query with no other statistics.
    """
    per_score = counts.sum(0).astype(np.float64)
    n = per_score.sum()
    s = np.arange(counts.shape[1])
    mean = (per_score * s).sum() / n if n else 0.0
    var = (per_score * (s - mean) ** 2).sum() / (n - 1) if n >= 2 else 0.0
    if min_sd is not None:
        return QueryFit("normal", 0.0, mean, max(math.sqrt(var), min_sd))
    return QueryFit("normal", 0.0, mean, math.sqrt(var)) if n >= 2 and var >= 0.01 else None
