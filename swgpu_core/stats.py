"""E-values and bit scores from scores alone: BLAST's statistics, exactly as blastp computes them.

For the gapped scoring systems NCBI BLAST tabulates (``blast_stat.c``: lambda, K, H, the
length parameters alpha and beta of Altschul et al., NAR 2001, and Spouge's C, alpha_v and
sigma) blastp (``-comp_based_stats 0``, no composition rescaling) computes the E-value of
score ``S`` for a query of length ``m`` and a subject of length ``n`` in a database of ``D``
residues with Spouge's finite-size correction: ``BLAST_SpougeStoE`` (the expected area
``E[(m - L1)(n - L2)]`` over normal laws of the alignment's extent, times
``K exp(-lambda S)``) scaled by ``D / n`` (``Blast_HSPListGetEvalues``). ``D`` is always
the whole database's, never a chunk's, so E-values of chunked searches merge unchanged. The
bit score is ``(lambda*S - ln K) / ln 2``. With user-given lambda and K the E-value is
``K m D exp(-lambda S)``.

:func:`choose_statistics` decides, once, which statistics a run reports: BLAST's, the
user's, or each query's fit to the database's own scores (:mod:`swgpu_core.score_stats`),
the default where BLAST has no parameters, or none where no fit is possible (pairs);
:func:`statistics` builds them. All of them answer
:class:`~swgpu_core.significance.Statistics`, which every output asks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from .errors import InputError
from .scoring import Scoring
from .significance import STATS_MODES, NoStatistics, Statistics

if TYPE_CHECKING:
    from .database import Database
    from .score_stats import ScoreHistograms

#: BLAST's rows (``blast_stat.c``, ``blosum62_values`` etc., generated from ncbi-cxx-toolkit-public
#: acf8edf): matrix -> (gap_open, gap_extend) -> (lambda, K, H, alpha, beta, C, alpha_v, sigma).
BLAST_GAPPED_PARAMETERS: dict[str, dict[tuple[int, int], tuple[float, ...]]] = {
    "BLOSUM45": {
        (13, 3): (0.207, 0.049, 0.14, 1.5, -22, 0.671128, 35.855900, 35.963900),
        (12, 3): (0.199, 0.039, 0.11, 1.8, -34, 0.691530, 45.693600, 45.851700),
        (11, 3): (0.190, 0.031, 0.095, 2.0, -38, 0.691181, 62.874100, 63.103700),
        (10, 3): (0.179, 0.023, 0.075, 2.4, -51, 0.710529, 88.286800, 88.639100),
        (16, 2): (0.210, 0.051, 0.14, 1.5, -24, 0.666680, 36.279800, 36.452400),
        (15, 2): (0.203, 0.041, 0.12, 1.7, -31, 0.673871, 44.825700, 45.060400),
        (14, 2): (0.195, 0.032, 0.10, 1.9, -36, 0.685753, 60.736200, 61.102300),
        (13, 2): (0.185, 0.024, 0.084, 2.2, -45, 0.698480, 85.148100, 85.689400),
        (12, 2): (0.171, 0.016, 0.061, 2.8, -65, 0.713429, 127.758000, 128.582000),
        (19, 1): (0.205, 0.040, 0.11, 1.9, -43, 0.672302, 53.071400, 53.828200),
        (18, 1): (0.198, 0.032, 0.10, 2.0, -43, 0.682580, 72.342400, 73.403900),
        (17, 1): (0.189, 0.024, 0.079, 2.4, -57, 0.695035, 103.055000, 104.721000),
        (16, 1): (0.176, 0.016, 0.063, 2.8, -67, 0.712966, 170.100000, 173.003000),
    },
    "BLOSUM50": {
        (13, 3): (0.212, 0.063, 0.19, 1.1, -16, 0.639287, 18.113800, 18.202800),
        (12, 3): (0.206, 0.055, 0.17, 1.2, -18, 0.644715, 22.654600, 22.777700),
        (11, 3): (0.197, 0.042, 0.14, 1.4, -25, 0.656327, 29.861100, 30.045700),
        (10, 3): (0.186, 0.031, 0.11, 1.7, -34, 0.671150, 42.393800, 42.674000),
        (9, 3): (0.172, 0.022, 0.082, 2.1, -48, 0.694326, 66.069600, 66.516400),
        (16, 2): (0.215, 0.066, 0.20, 1.05, -15, 0.633899, 17.951800, 18.092100),
        (15, 2): (0.210, 0.058, 0.17, 1.2, -20, 0.641985, 21.940100, 22.141800),
        (14, 2): (0.202, 0.045, 0.14, 1.4, -27, 0.650682, 28.681200, 28.961900),
        (13, 2): (0.193, 0.035, 0.12, 1.6, -32, 0.660984, 42.059500, 42.471600),
        (12, 2): (0.181, 0.025, 0.095, 1.9, -41, 0.678090, 63.747600, 64.397300),
        (19, 1): (0.212, 0.057, 0.18, 1.2, -21, 0.635714, 26.311200, 26.923300),
        (18, 1): (0.207, 0.050, 0.15, 1.4, -28, 0.643523, 34.903700, 35.734800),
        (17, 1): (0.198, 0.037, 0.12, 1.6, -33, 0.654504, 48.895800, 50.148600),
        (16, 1): (0.186, 0.025, 0.10, 1.9, -42, 0.667750, 76.469100, 78.443000),
        (15, 1): (0.171, 0.015, 0.063, 2.7, -76, 0.694575, 140.053000, 144.160000),
    },
    "BLOSUM62": {
        (11, 2): (0.297, 0.082, 0.27, 1.1, -10, 0.641766, 12.673800, 12.757600),
        (10, 2): (0.291, 0.075, 0.23, 1.3, -15, 0.649362, 16.474000, 16.602600),
        (9, 2): (0.279, 0.058, 0.19, 1.5, -19, 0.659245, 22.751900, 22.950000),
        (8, 2): (0.264, 0.045, 0.15, 1.8, -26, 0.672692, 35.483800, 35.821300),
        (7, 2): (0.239, 0.027, 0.10, 2.5, -46, 0.702056, 61.238300, 61.886000),
        (6, 2): (0.201, 0.012, 0.061, 3.3, -58, 0.740802, 140.417000, 141.882000),
        (13, 1): (0.292, 0.071, 0.23, 1.2, -11, 0.647715, 19.506300, 19.893100),
        (12, 1): (0.283, 0.059, 0.19, 1.5, -19, 0.656391, 27.856200, 28.469900),
        (11, 1): (0.267, 0.041, 0.14, 1.9, -30, 0.669720, 42.602800, 43.636200),
        (10, 1): (0.243, 0.024, 0.10, 2.5, -44, 0.693267, 83.178700, 85.065600),
        (9, 1): (0.206, 0.010, 0.052, 4.0, -87, 0.731887, 210.333000, 214.842000),
    },
    "BLOSUM80": {
        (25, 2): (0.342, 0.17, 0.66, 0.52, -1.6, 0.563956, 1.731000, 1.731300),
        (13, 2): (0.336, 0.15, 0.57, 0.59, -3, 0.570979, 2.673470, 2.692300),
        (9, 2): (0.319, 0.11, 0.42, 0.76, -6, 0.587837, 5.576090, 5.667860),
        (8, 2): (0.308, 0.090, 0.35, 0.89, -9, 0.597556, 7.536950, 7.686230),
        (7, 2): (0.293, 0.070, 0.27, 1.1, -14, 0.615254, 11.586600, 11.840400),
        (6, 2): (0.268, 0.045, 0.19, 1.4, -19, 0.644054, 19.958100, 20.441200),
        (11, 1): (0.314, 0.095, 0.35, 0.90, -9, 0.590702, 8.808610, 9.223320),
        (10, 1): (0.299, 0.071, 0.27, 1.1, -14, 0.609620, 13.833800, 14.533400),
        (9, 1): (0.279, 0.048, 0.20, 1.4, -19, 0.623800, 24.252000, 25.490400),
    },
    "BLOSUM90": {
        (9, 2): (0.310, 0.12, 0.46, 0.67, -6, 0.570267, 4.232290, 4.334170),
        (8, 2): (0.300, 0.099, 0.39, 0.76, -7, 0.581580, 5.797020, 5.961420),
        (7, 2): (0.283, 0.072, 0.30, 0.93, -11, 0.600024, 9.040880, 9.321600),
        (6, 2): (0.259, 0.048, 0.22, 1.2, -16, 0.629344, 16.024400, 16.531600),
        (11, 1): (0.302, 0.093, 0.39, 0.78, -8, 0.576919, 7.143250, 7.619190),
        (10, 1): (0.290, 0.075, 0.28, 1.04, -15, 0.591366, 11.483900, 12.269800),
        (9, 1): (0.265, 0.044, 0.20, 1.3, -19, 0.613013, 21.408300, 22.840900),
    },
    "PAM30": {
        (7, 2): (0.305, 0.15, 0.87, 0.35, -3, 0.479087, 1.014010, 1.162730),
        (6, 2): (0.287, 0.11, 0.68, 0.42, -4, 0.499980, 1.688060, 1.951430),
        (5, 2): (0.264, 0.079, 0.45, 0.59, -7, 0.533009, 3.377010, 3.871950),
        (10, 1): (0.309, 0.15, 0.88, 0.35, -3, 0.474741, 1.372050, 1.788770),
        (9, 1): (0.294, 0.11, 0.61, 0.48, -6, 0.492716, 2.463920, 3.186150),
        (8, 1): (0.270, 0.072, 0.40, 0.68, -10, 0.521286, 5.368130, 6.763480),
        (15, 3): (0.339, 0.28, 1.70, 0.20, -0.5, 0.437688, 0.157089, 0.155299),
        (14, 2): (0.337, 0.27, 1.62, 0.21, -0.8, 0.440010, 0.206970, 0.198524),
        (14, 1): (0.333, 0.27, 1.43, 0.23, -1.4, 0.444817, 0.436301, 0.361947),
        (13, 3): (0.338, 0.27, 1.69, 0.20, -0.5, 0.439086, 0.178973, 0.175436),
    },
    "PAM70": {
        (8, 2): (0.301, 0.12, 0.54, 0.56, -5, 0.549019, 2.881650, 3.025710),
        (7, 2): (0.286, 0.093, 0.43, 0.67, -7, 0.565659, 4.534540, 4.785780),
        (6, 2): (0.264, 0.064, 0.29, 0.90, -12, 0.596330, 7.942630, 8.402720),
        (11, 1): (0.305, 0.12, 0.52, 0.59, -6, 0.543514, 3.681400, 4.108020),
        (10, 1): (0.291, 0.091, 0.41, 0.71, -9, 0.560723, 6.002970, 6.716570),
        (9, 1): (0.270, 0.060, 0.28, 0.97, -14, 0.585186, 11.360800, 12.636700),
        (11, 2): (0.323, 0.186, 0.80, 1.32, -27, 0.524062, 1.321301, 1.281671),
        (12, 3): (0.330, 0.219, 0.93, 0.82, -16, 0.516845, 0.818768, 0.811240),
    },
    "PAM250": {
        (15, 3): (0.205, 0.049, 0.13, 1.6, -23, 0.687656, 34.578400, 34.928000),
        (14, 3): (0.200, 0.043, 0.12, 1.7, -26, 0.689768, 43.353000, 43.443800),
        (13, 3): (0.194, 0.036, 0.10, 1.9, -31, 0.697431, 50.948500, 51.081700),
        (12, 3): (0.186, 0.029, 0.085, 2.2, -41, 0.704565, 69.606500, 69.793600),
        (11, 3): (0.174, 0.020, 0.070, 2.5, -48, 0.722438, 98.653500, 98.927100),
        (17, 2): (0.204, 0.047, 0.12, 1.7, -28, 0.684799, 41.583800, 41.735800),
        (16, 2): (0.198, 0.038, 0.11, 1.8, -29, 0.691098, 51.635200, 51.843900),
        (15, 2): (0.191, 0.031, 0.087, 2.2, -44, 0.699051, 67.256700, 67.558500),
        (14, 2): (0.182, 0.024, 0.073, 2.5, -53, 0.714103, 96.315100, 96.756800),
        (13, 2): (0.171, 0.017, 0.059, 2.9, -64, 0.728738, 135.653000, 136.339000),
        (21, 1): (0.205, 0.045, 0.11, 1.8, -34, 0.683265, 48.728200, 49.218800),
        (20, 1): (0.199, 0.037, 0.10, 1.9, -35, 0.689380, 60.832000, 61.514100),
        (19, 1): (0.192, 0.029, 0.083, 2.3, -52, 0.696344, 84.019700, 84.985600),
        (18, 1): (0.183, 0.021, 0.070, 2.6, -60, 0.710525, 113.829000, 115.184000),
        (17, 1): (0.171, 0.014, 0.052, 3.3, -86, 0.727000, 175.071000, 177.196000),
    },
}
#: The ungapped row of each table (Spouge's ``a_un``, ``Alpha_un`` come from it), same columns.
BLAST_UNGAPPED_PARAMETERS: dict[str, tuple[float, ...]] = {
    "BLOSUM45": (0.2291, 0.0924, 0.2514, 0.9113, -5.7, 0.641318, 9.611060, 9.611060),
    "BLOSUM50": (0.2318, 0.112, 0.3362, 0.6895, -4.0, 0.609639, 5.388310, 5.388310),
    "BLOSUM62": (0.3176, 0.134, 0.4012, 0.7916, -3.2, 0.623757, 4.964660, 4.964660),
    "BLOSUM80": (0.3430, 0.177, 0.6568, 0.5222, -1.6, 0.564057, 1.918130, 1.918130),
    "BLOSUM90": (0.3346, 0.190, 0.7547, 0.4434, -1.4, 0.544178, 1.377760, 1.377760),
    "PAM30": (0.3400, 0.283, 1.754, 0.1938, -0.3, 0.436164, 0.161818, 0.161818),
    "PAM70": (0.3345, 0.229, 1.029, 0.3250, -0.7, 0.511296, 0.633439, 0.633439),
    "PAM250": (0.2252, 0.0868, 0.2223, 0.98, -5.0, 0.660059, 11.754300, 11.754300),
}


@dataclass(frozen=True)
class Spouge:
    """BLAST's Gumbel block for one gapped scoring system (``Blast_GumbelBlkLoadFromTables``).

    ``a``/``b`` give the mean and ``alpha``/``beta`` the variance of the alignment length
    for a score ``y`` (``a*y + b``, ``alpha*y + beta``), ``sigma``/``tau`` their
    covariance; ``b``, ``beta`` and ``tau`` follow from the ungapped row and the gap costs.
    """

    a: float
    b: float
    alpha: float
    beta: float
    sigma: float
    tau: float

    @classmethod
    def from_rows(cls, gapped: tuple[float, ...], ungapped: tuple[float, ...], gap_open: int, gap_extend: int) -> Spouge:
        g = gap_open + gap_extend
        a, alpha, sigma = gapped[3], gapped[6], gapped[7]
        a_un, alpha_un = ungapped[3], ungapped[6]
        return cls(a, 2.0 * g * (a_un - a), alpha, 2.0 * g * (alpha_un - alpha), sigma, 2.0 * g * (alpha_un - sigma))


_erfc = np.frompyfunc(math.erfc, 1, 1)
_INV_SQRT_2PI = 0.39894228040143267793994605993438


@dataclass(frozen=True)
class KarlinAltschul:
    """Parameters of one scoring system: lambda, K, H and, for BLAST's rows, Spouge's correction."""

    lam: float
    K: float
    H: float | None = None
    spouge: Spouge | None = None
    source: str = "BLAST"

    def bitscore(self, score: ArrayLike) -> np.ndarray | float:
        """``(lambda*S - ln K) / ln 2`` (``Blast_HSPListGetBitScores``)."""
        bits = (self.lam * np.asarray(score, dtype=np.float64) - math.log(self.K)) / math.log(2)
        return bits if bits.ndim else float(bits)

    def evalue(self, score: ArrayLike, query_length: ArrayLike, subject_length: ArrayLike, db_residues: ArrayLike) -> np.ndarray | float:
        """E-value of ``score`` for a query and a subject of these lengths in a database of ``db_residues``.

        With Spouge's parameters this is ``BLAST_SpougeStoE`` times ``db_residues /
        subject_length``, as ``Blast_HSPListGetEvalues`` scales the pairwise value to the
        database; blastp -comp_based_stats 0 prints exactly this. Without (user lambda and
        K), ``K * m * n * exp(-lambda*S)`` over the whole database. Arrays broadcast.
        """
        y = np.asarray(score, dtype=np.float64)
        m = np.asarray(query_length, dtype=np.float64)
        n = np.asarray(subject_length, dtype=np.float64)
        db = np.asarray(db_residues, dtype=np.float64)
        if self.spouge is None:
            e = self.K * m * db * np.exp(-self.lam * y)
        else:
            e = spouge_evalue(y, m, n, self.lam, self.K, self.spouge) * (db / n)
        return e if e.ndim else float(e)


def spouge_evalue(y: np.ndarray, m: np.ndarray, n: np.ndarray, lam: float, K: float, g: Spouge) -> np.ndarray:
    """Pairwise E-value with Spouge's finite-size correction: ``BLAST_SpougeStoE`` for unscaled scores.

    The expected area ``E[(m - L1)(n - L2)]`` over the normal laws of the alignment's
    extent in query and subject replaces BLAST's old fixed length adjustment.
    """

    def side(length: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        mean = length - (g.a * y + g.b)
        var = np.maximum(2.0 * g.alpha / lam, g.alpha * y + g.beta)
        sd = np.sqrt(var)
        f = mean / sd
        p = np.asarray(_erfc(-f / math.sqrt(2.0)), dtype=np.float64) / 2.0
        return mean * p + sd * _INV_SQRT_2PI * np.exp(-0.5 * f * f), p

    p1, pm = side(m)
    p2, pn = side(n)
    c = np.maximum(2.0 * g.sigma / lam, g.sigma * y + g.tau)
    area = p1 * p2 + c * pm * pn
    return area * K * np.exp(-lam * y)


def blast_parameters(scoring: Scoring) -> KarlinAltschul | None:
    """BLAST's gapped parameters for ``scoring`` (with Spouge's), or None where BLAST has none."""
    row = BLAST_GAPPED_PARAMETERS.get(scoring.matrix_name, {}).get((scoring.gap_open, scoring.gap_extend))
    if row is None:
        return None
    spouge = Spouge.from_rows(row, BLAST_UNGAPPED_PARAMETERS[scoring.matrix_name], scoring.gap_open, scoring.gap_extend)
    return KarlinAltschul(row[0], row[1], row[2], spouge)


def karlin_altschul(scoring: Scoring, lam: float | None = None, kappa: float | None = None) -> tuple[KarlinAltschul | None, str]:
    """Parameters for ``scoring`` and a sentence saying where they come from (or why none).

    User-given ``lam`` and ``kappa`` win over the table; giving only one is an error.
    """
    if (lam is None) != (kappa is None):
        raise InputError("--lambda and --kappa go together: give both or neither")
    if lam is not None:
        if lam <= 0 or kappa <= 0:
            raise InputError(f"--lambda and --kappa must be positive (got {lam}, {kappa})")
        return KarlinAltschul(lam, kappa, source="user"), f"E-values from the given lambda={lam} K={kappa}, no length correction"
    params = blast_parameters(scoring)
    if params is None:
        return None, (
            f"no BLAST parameters: BLAST tabulates no Karlin-Altschul parameters for {scoring.describe()} "
            "(E-values come from the fit to each query's scores, or give --lambda and --kappa)"
        )
    return params, (
        f"E-values as blastp -comp_based_stats 0 computes them for {scoring.describe()}: "
        f"lambda={params.lam} K={params.K} H={params.H}, Spouge's finite-size correction"
    )


class BlastStatistics:
    """BLAST's statistics bound to a database of ``db_residues`` (None: each subject is its own database, as bl2seq)."""

    def __init__(self, params: KarlinAltschul, db_residues: int | None, description: str = ""):
        self.params = params
        self.db_residues = db_residues
        self.kind = "blast" if params.spouge is not None else "user"
        self.description = description

    def evalue(self, query: int, query_length: int, score: ArrayLike, subject_length: ArrayLike) -> np.ndarray:
        db = subject_length if self.db_residues is None else self.db_residues
        return np.asarray(self.params.evalue(score, query_length, subject_length, db), dtype=np.float64)

    def bitscore(self, query: int, query_length: int, score: ArrayLike, subject_length: ArrayLike) -> np.ndarray:
        return np.asarray(self.params.bitscore(score), dtype=np.float64)


def choose_statistics(
    scoring: Scoring, mode: str = "auto", lam: float | None = None, kappa: float | None = None, *, no_fit: str | None = None
) -> tuple[str, KarlinAltschul | None, str]:
    """Which statistics a run reports, decided here once: ``(kind, parameters, why)``.

    ``auto``: BLAST's (or the given ``lam``/``kappa``) where there are parameters, else the
    fit. ``blast``: BLAST's or the given ones, an error without. ``fit``: each query's fit.
    ``no_fit`` says why a fit is impossible in this run (no score histograms, a part of the
    database): then a fit is ``"none"`` (no E-values, ``why`` says so). For ``"fit"`` the
    parameters are BLAST's, for queries whose scores are too few to fit, or None.
    Commands ask this before any work (``no_fit`` from their options), :func:`statistics` after.
    """
    if mode not in STATS_MODES:
        raise InputError(f"unknown --stats {mode!r} (auto, blast or fit)")
    params, why = karlin_altschul(scoring, lam, kappa)
    if mode == "blast" or (mode == "auto" and params is not None):
        if params is None:
            raise InputError(f"--stats blast: {why}")
        return ("blast" if params.spouge is not None else "user"), params, why
    if no_fit is not None:
        return (
            "none",
            None,
            (f"--stats fit, but {no_fit}" if mode == "fit" else f"BLAST tabulates no parameters for {scoring.describe()} and {no_fit}"),
        )
    return (
        "fit",
        (params if params is not None and params.spouge is not None else None),
        "E-values from each query's fit to the database's scores",
    )


def statistics(
    scoring: Scoring,
    db: Database | None,
    *,
    mode: str = "auto",
    lam: float | None = None,
    kappa: float | None = None,
    histograms: ScoreHistograms | None = None,
    query_lengths: Sequence[int] = (),
    no_fit: str | None = None,
) -> Statistics:
    """The statistics a run reports (:func:`choose_statistics`), bound to its database.

    The fit uses the search's score ``histograms`` (:mod:`swgpu_core.score_stats`;
    ``query_lengths`` in the histograms' order), which must hold every subject's score.
    ``db`` None: each subject is its own database (pairs, bl2seq), which has no scores to
    fit: ``fit`` is an error there, ``auto`` without parameters gives no E-values.
    ``no_fit``: why this run cannot fit whatever its histograms (a fast-mode search).
    """
    if no_fit is not None:
        pass  # the caller knows why (a fast-mode search scored only candidates)
    elif db is None:
        if mode == "fit":
            raise InputError(
                "--stats fit: fitted statistics need the scores of a database search; pairs have none (use --stats blast, or --lambda and --kappa)"
            )
        no_fit = "pairs have no database scores to fit: give --lambda and --kappa"
    elif histograms is None:
        no_fit = "the search kept no score histograms to fit (hit lists of an older swgpu): search again, or give --lambda and --kappa"
    elif len(query_lengths) and histograms.subjects() != db.n_sequences:
        no_fit = (f"the score histograms hold {histograms.subjects():,} of the database's {db.n_sequences:,} subjects (a search of some chunks): "
                  "merge the hit lists of every chunk (swgpu merge), or give --lambda and --kappa")  # fmt: skip
    kind, params, why = choose_statistics(scoring, mode, lam, kappa, no_fit=no_fit)
    if kind == "none":
        return NoStatistics(f"no E-values: {why}")
    if kind == "fit":
        return histograms.fit(list(query_lengths), db.n_sequences, db.max_length, params, db.n_residues)
    return BlastStatistics(params, None if db is None else db.n_residues, why)


def format_evalue(evalue: float, pairwise: bool = False) -> str:
    """E-value text as BLAST prints it: tabular (``CBlastTabularInfo::SetScores``) or, with
    ``pairwise``, as its pairwise report does (``CAlignFormatUtil::GetScoreString``)."""
    if evalue < 1.0e-180:
        return "0.0"
    if evalue < 0.0009:
        if not pairwise:
            return f"{evalue:.2e}"
        return f"{evalue:.0e}"
    if evalue < 0.1:
        return f"{evalue:.3f}"
    if evalue < 1.0:
        return f"{evalue:.2f}"
    if evalue < 10.0:
        return f"{evalue:.1f}"
    return f"{evalue:.0f}"


def format_bitscore(bits: float) -> str:
    """Bit score text as BLAST's tabular output prints it."""
    if bits > 99999:
        return f"{bits:.3e}"
    if bits > 99.9:
        return f"{int(bits)}"
    return f"{bits:.1f}"
