"""Bit scores and E-values from Karlin-Altschul statistics, as BLAST computes them.

For the gapped scoring systems NCBI BLAST tabulates (``blast_stat.c``: lambda, K, H and the
length-correction parameters alpha and beta of Altschul et al., NAR 2001) the E-value of
score ``S`` for a query of length ``m`` against a database of ``n`` residues in ``N``
sequences is ``K * (m - A) * (n - N*A) * exp(-lambda*S)``, where ``A`` is BLAST's length
adjustment (``BLAST_ComputeLengthAdjustment``: the fixed point of
``A = alpha/lambda * ln(K * (m - A) * (n - N*A)) + beta``). ``n`` and ``N`` are always the
whole database's, never a chunk's, so E-values of chunked searches merge unchanged. This
is ``blastp -comp_based_stats 0``: no composition-based rescaling. The bit score is
``(lambda*S - ln K) / ln 2``.

Other matrices or gap costs have no tabulated parameters: with user-given lambda and K the
E-value uses them with no length adjustment (alpha and beta are unknown); without, there
are no E-values, and :func:`karlin_altschul` says why, once, to whoever reports it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .errors import InputError
from .scoring import Scoring

#: (gap_open, gap_extend) -> (lambda, K, H, alpha, beta), per matrix: BLAST's gapped rows.
BLAST_GAPPED_PARAMETERS: dict[str, dict[tuple[int, int], tuple[float, float, float, float, float]]] = {
    "BLOSUM45": {
        (13, 3): (0.207, 0.049, 0.14, 1.5, -22), (12, 3): (0.199, 0.039, 0.11, 1.8, -34),
        (11, 3): (0.190, 0.031, 0.095, 2.0, -38), (10, 3): (0.179, 0.023, 0.075, 2.4, -51),
        (16, 2): (0.210, 0.051, 0.14, 1.5, -24), (15, 2): (0.203, 0.041, 0.12, 1.7, -31),
        (14, 2): (0.195, 0.032, 0.10, 1.9, -36), (13, 2): (0.185, 0.024, 0.084, 2.2, -45),
        (12, 2): (0.171, 0.016, 0.061, 2.8, -65), (19, 1): (0.205, 0.040, 0.11, 1.9, -43),
        (18, 1): (0.198, 0.032, 0.10, 2.0, -43), (17, 1): (0.189, 0.024, 0.079, 2.4, -57),
        (16, 1): (0.176, 0.016, 0.063, 2.8, -67),
    },
    "BLOSUM50": {
        (13, 3): (0.212, 0.063, 0.19, 1.1, -16), (12, 3): (0.206, 0.055, 0.17, 1.2, -18),
        (11, 3): (0.197, 0.042, 0.14, 1.4, -25), (10, 3): (0.186, 0.031, 0.11, 1.7, -34),
        (9, 3): (0.172, 0.022, 0.082, 2.1, -48), (16, 2): (0.215, 0.066, 0.20, 1.05, -15),
        (15, 2): (0.210, 0.058, 0.17, 1.2, -20), (14, 2): (0.202, 0.045, 0.14, 1.4, -27),
        (13, 2): (0.193, 0.035, 0.12, 1.6, -32), (12, 2): (0.181, 0.025, 0.095, 1.9, -41),
        (19, 1): (0.212, 0.057, 0.18, 1.2, -21), (18, 1): (0.207, 0.050, 0.15, 1.4, -28),
        (17, 1): (0.198, 0.037, 0.12, 1.6, -33), (16, 1): (0.186, 0.025, 0.10, 1.9, -42),
        (15, 1): (0.171, 0.015, 0.063, 2.7, -76),
    },
    "BLOSUM62": {
        (11, 2): (0.297, 0.082, 0.27, 1.1, -10), (10, 2): (0.291, 0.075, 0.23, 1.3, -15),
        (9, 2): (0.279, 0.058, 0.19, 1.5, -19), (8, 2): (0.264, 0.045, 0.15, 1.8, -26),
        (7, 2): (0.239, 0.027, 0.10, 2.5, -46), (6, 2): (0.201, 0.012, 0.061, 3.3, -58),
        (13, 1): (0.292, 0.071, 0.23, 1.2, -11), (12, 1): (0.283, 0.059, 0.19, 1.5, -19),
        (11, 1): (0.267, 0.041, 0.14, 1.9, -30), (10, 1): (0.243, 0.024, 0.10, 2.5, -44),
        (9, 1): (0.206, 0.010, 0.052, 4.0, -87),
    },
    "BLOSUM80": {
        (25, 2): (0.342, 0.17, 0.66, 0.52, -1.6), (13, 2): (0.336, 0.15, 0.57, 0.59, -3),
        (9, 2): (0.319, 0.11, 0.42, 0.76, -6), (8, 2): (0.308, 0.090, 0.35, 0.89, -9),
        (7, 2): (0.293, 0.070, 0.27, 1.1, -14), (6, 2): (0.268, 0.045, 0.19, 1.4, -19),
        (11, 1): (0.314, 0.095, 0.35, 0.90, -9), (10, 1): (0.299, 0.071, 0.27, 1.1, -14),
        (9, 1): (0.279, 0.048, 0.20, 1.4, -19),
    },
    "BLOSUM90": {
        (9, 2): (0.310, 0.12, 0.46, 0.67, -6), (8, 2): (0.300, 0.099, 0.39, 0.76, -7),
        (7, 2): (0.283, 0.072, 0.30, 0.93, -11), (6, 2): (0.259, 0.048, 0.22, 1.2, -16),
        (11, 1): (0.302, 0.093, 0.39, 0.78, -8), (10, 1): (0.290, 0.075, 0.28, 1.04, -15),
        (9, 1): (0.265, 0.044, 0.20, 1.3, -19),
    },
    "PAM30": {
        (7, 2): (0.305, 0.15, 0.87, 0.35, -3), (6, 2): (0.287, 0.11, 0.68, 0.42, -4),
        (5, 2): (0.264, 0.079, 0.45, 0.59, -7), (10, 1): (0.309, 0.15, 0.88, 0.35, -3),
        (9, 1): (0.294, 0.11, 0.61, 0.48, -6), (8, 1): (0.270, 0.072, 0.40, 0.68, -10),
    },
    "PAM70": {
        (8, 2): (0.301, 0.12, 0.54, 0.56, -5), (7, 2): (0.286, 0.093, 0.43, 0.67, -7),
        (6, 2): (0.264, 0.064, 0.29, 0.90, -12), (11, 1): (0.305, 0.12, 0.52, 0.59, -6),
        (10, 1): (0.291, 0.091, 0.41, 0.71, -9), (9, 1): (0.270, 0.060, 0.28, 0.97, -14),
    },
    "PAM250": {
        (15, 3): (0.205, 0.049, 0.13, 1.6, -23), (14, 3): (0.200, 0.043, 0.12, 1.7, -26),
        (13, 3): (0.194, 0.036, 0.10, 1.9, -31), (12, 3): (0.186, 0.029, 0.085, 2.2, -41),
        (11, 3): (0.174, 0.020, 0.070, 2.5, -48), (17, 2): (0.204, 0.047, 0.12, 1.7, -28),
        (16, 2): (0.198, 0.038, 0.11, 1.8, -29), (15, 2): (0.191, 0.031, 0.087, 2.2, -44),
        (14, 2): (0.182, 0.024, 0.073, 2.5, -53), (13, 2): (0.171, 0.017, 0.059, 2.9, -64),
        (21, 1): (0.205, 0.045, 0.11, 1.8, -34), (20, 1): (0.199, 0.037, 0.10, 1.9, -35),
        (19, 1): (0.192, 0.029, 0.083, 2.3, -52), (18, 1): (0.183, 0.021, 0.070, 2.6, -60),
        (17, 1): (0.171, 0.014, 0.052, 3.3, -86),
    },
}


@dataclass(frozen=True)
class KarlinAltschul:
    """Parameters of one scoring system; ``alpha``/``beta`` None: no length adjustment."""

    lam: float
    K: float
    H: float | None = None
    alpha: float | None = None
    beta: float | None = None
    source: str = "BLAST"

    def bitscore(self, score: int) -> float:
        return (self.lam * score - math.log(self.K)) / math.log(2)

    def length_adjustment(self, query_length: int, db_residues: int, db_sequences: int) -> int:
        """BLAST's length adjustment ``A`` (0 without alpha and beta)."""
        if self.alpha is None or self.beta is None:
            return 0
        return compute_length_adjustment(self.K, self.alpha / self.lam, self.beta, query_length, db_residues, db_sequences)

    def search_space(self, query_length: int, db_residues: int, db_sequences: int) -> float:
        """Effective search space ``(m - A) * max(1, n - N*A)``."""
        adj = self.length_adjustment(query_length, db_residues, db_sequences)
        return max(1, query_length - adj) * max(1, db_residues - db_sequences * adj)

    def evalue(self, score: int, query_length: int, db_residues: int, db_sequences: int) -> float:
        return self.K * self.search_space(query_length, db_residues, db_sequences) * math.exp(-self.lam * score)


def compute_length_adjustment(K: float, alpha_d_lambda: float, beta: float, m: int, n: int, N: int) -> int:
    """The largest integer ``A`` below the fixed point of ``alpha/lambda * ln(K (m-A)(n-N A)) + beta``.

    The same bracketing iteration as BLAST's ``BLAST_ComputeLengthAdjustment`` (at most 20
    steps, then the integer check on ``ceil``), so the adjustment, and with it every
    E-value, equals BLAST's for the same lengths.
    """
    m_f, n_f, N_f = float(m), float(n), float(N)
    log_k = math.log(K)
    c = n_f * m_f - max(m_f, n_f) / K
    if c < 0:
        return 0
    a, mb = N_f, m_f * N_f + n_f
    ell_max = 2 * c / (mb + math.sqrt(mb * mb - 4 * a * c))
    ell_min, ell_next, converged = 0.0, 0.0, False
    for i in range(1, 21):
        ell = ell_next
        ell_bar = alpha_d_lambda * (log_k + math.log((m_f - ell) * (n_f - N_f * ell))) + beta
        if ell_bar >= ell:
            ell_min = ell
            if ell_bar - ell_min <= 1.0:
                converged = True
                break
            if ell_min == ell_max:
                break
        else:
            ell_max = ell
        if ell_min <= ell_bar <= ell_max:
            ell_next = ell_bar
        else:
            ell_next = ell_max if i == 1 else (ell_min + ell_max) / 2
    adjustment = int(ell_min)
    if converged:
        ell = math.ceil(ell_min)
        if ell <= ell_max and alpha_d_lambda * (log_k + math.log((m_f - ell) * (n_f - N_f * ell))) + beta >= ell:
            adjustment = int(ell)
    return adjustment


def karlin_altschul(scoring: Scoring, lam: float | None = None, kappa: float | None = None) -> tuple[KarlinAltschul | None, str]:
    """Parameters for ``scoring`` and a sentence saying where they come from (or why none).

    User-given ``lam`` and ``kappa`` win over the table; giving only one is an error.
    """
    if (lam is None) != (kappa is None):
        raise InputError("--lambda and --kappa go together: give both or neither")
    if lam is not None:
        if lam <= 0 or kappa <= 0:
            raise InputError(f"--lambda and --kappa must be positive (got {lam}, {kappa})")
        return KarlinAltschul(lam, kappa, source="user"), f"E-values from the given lambda={lam} K={kappa}, no length adjustment"
    row = BLAST_GAPPED_PARAMETERS.get(scoring.matrix_name, {}).get((scoring.gap_open, scoring.gap_extend))
    if row is None:
        return None, (
            f"no E-values: BLAST tabulates no Karlin-Altschul parameters for {scoring.describe()} "
            "(give --lambda and --kappa to compute them)"
        )
    params = KarlinAltschul(*row)
    return params, f"E-values from BLAST's parameters for {scoring.describe()}: lambda={params.lam} K={params.K} H={params.H}"


def format_evalue(evalue: float) -> str:
    """E-value text as BLAST's tabular output prints it."""
    if evalue < 1.0e-180:
        return "0.0"
    if evalue < 1.0e-99:
        return f"{evalue:.0e}"
    if evalue < 0.0009:
        return f"{evalue:.2e}"
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
