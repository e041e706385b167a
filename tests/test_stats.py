"""Karlin-Altschul statistics: BLAST's parameters, length adjustment and E-values by hand."""

from __future__ import annotations

import math

import pytest

from swgpu_core.errors import InputError
from swgpu_core.scoring import Scoring
from swgpu_core.stats import compute_length_adjustment, format_bitscore, format_evalue, karlin_altschul


def fixed_point_floor(K: float, alpha_d_lambda: float, beta: float, m: int, n: int, N: int) -> int:
    """The largest integer A with alpha/lambda * ln(K (m-A)(n-N A)) + beta >= A, by search.

    Like BLAST, A also keeps the effective search space above max(m, n): K (m-A)(n-N A) > max(m, n).
    """

    def ok(a: int) -> bool:
        space = K * (m - a) * (n - N * a)
        return space > max(m, n) and alpha_d_lambda * math.log(space) + beta >= a

    a = 0
    while ok(a + 1):
        a += 1
    return a


@pytest.mark.parametrize("m,n,N", [(100, 1_000_000, 3000), (500, 1_260_000, 3000), (30, 50_000, 400), (2000, 200_000_000, 550_000)])
def test_length_adjustment_is_the_floor_of_the_fixed_point(m: int, n: int, N: int) -> None:
    lam, K, alpha, beta = 0.267, 0.041, 1.9, -30
    assert compute_length_adjustment(K, alpha / lam, beta, m, n, N) == fixed_point_floor(K, alpha / lam, beta, m, n, N)


def test_evalue_and_bitscore_by_hand() -> None:
    params, why = karlin_altschul(Scoring.protein())
    assert (params.lam, params.K, params.H, params.alpha, params.beta) == (0.267, 0.041, 0.14, 1.9, -30)
    assert "BLOSUM62 gap 11/1" in why
    m, n, N, score = 350, 1_000_000, 3000, 120
    adj = fixed_point_floor(0.041, 1.9 / 0.267, -30, m, n, N)
    expected = 0.041 * (m - adj) * (n - N * adj) * math.exp(-0.267 * score)
    assert params.evalue(score, m, n, N) == pytest.approx(expected, rel=1e-12)
    assert params.bitscore(score) == pytest.approx((0.267 * 120 - math.log(0.041)) / math.log(2))
    assert format_bitscore(params.bitscore(score)) == "50.8"


@pytest.mark.parametrize(
    "matrix,go,ge,lam,K",
    [("BLOSUM45", 14, 2, 0.195, 0.032), ("BLOSUM50", 13, 2, 0.193, 0.035), ("BLOSUM80", 10, 1, 0.299, 0.071),
     ("BLOSUM90", 10, 1, 0.290, 0.075), ("PAM30", 9, 1, 0.294, 0.11), ("PAM70", 10, 1, 0.291, 0.091), ("PAM250", 14, 2, 0.182, 0.024)],
)
def test_blast_defaults_of_other_matrices(matrix: str, go: int, ge: int, lam: float, K: float) -> None:
    params, _ = karlin_altschul(Scoring.protein(matrix, go, ge))
    assert (params.lam, params.K) == (lam, K)


def test_unsupported_scoring_says_why_and_user_parameters() -> None:
    scoring = Scoring.protein("BLOSUM62", 5, 5)
    params, why = karlin_altschul(scoring)
    assert params is None and "no E-values" in why and "--lambda" in why
    params, why = karlin_altschul(scoring, 0.3, 0.1)
    assert params.length_adjustment(100, 10_000, 10) == 0
    assert params.evalue(50, 100, 10_000, 10) == pytest.approx(0.1 * 100 * 10_000 * math.exp(-15))
    with pytest.raises(InputError, match="go together"):
        karlin_altschul(scoring, 0.3, None)


def test_blast_number_formats() -> None:
    assert [format_evalue(e) for e in (1e-200, 3e-120, 2.5e-10, 0.05, 0.5, 5.0, 123.0)] == ["0.0", "3e-120", "2.50e-10", "0.050", "0.50", "5.0", "123"]
    assert [format_bitscore(b) for b in (50.84, 250.7, 123456.0)] == ["50.8", "250", "1.235e+05"]
