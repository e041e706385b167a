"""BLAST's statistics: Spouge's finite-size corrected E-values and bit scores, against blastp itself."""

from __future__ import annotations

import math
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from swgpu_core.backends.cpu import CpuBackend
from swgpu_core.database import Database
from swgpu_core.errors import InputError
from swgpu_core.fasta import read_sequences
from swgpu_core.scoring import Scoring
from swgpu_core.search import search
from swgpu_core.stats import BlastStatistics, blast_parameters, format_bitscore, format_evalue, karlin_altschul, statistics

DATA = Path(__file__).resolve().parent / "data"


def test_frozen_blastp_evalues_and_bitscores() -> None:
    """427 rows of blastp 2.12 output (E from 1e-180 to 1000) print exactly as blastp printed them."""
    params = blast_parameters(Scoring.protein())
    rows = [line.split("\t") for line in (DATA / "blastp_evalues.tsv").read_text().splitlines() if not line.startswith("#")]
    m, n, score = (np.array([int(r[k]) for r in rows]) for k in range(3))
    evalues = params.evalue(score, m, n, 9_055_569)
    bits = params.bitscore(score)
    assert [format_evalue(e) for e in evalues] == [r[3] for r in rows]
    assert [format_bitscore(b) for b in bits] == [r[4] for r in rows]
    printed = np.array([float(r[3]) for r in rows])
    exact = (printed > 0) & (printed < 9e-4)  # printed with three digits: the ratio is within their rounding
    assert np.all(np.abs(evalues[exact] / printed[exact] - 1) < 0.006)


def spouge_by_hand(y: float, m: float, n: float) -> float:
    """BLAST_SpougeStoE written out for BLOSUM62 11/1 from the table row, one scalar at a time."""
    lam, K = 0.267, 0.041
    a, alpha, sigma, a_un, alpha_un, G = 1.9, 42.6028, 43.6362, 0.7916, 4.96466, 12
    b, beta, tau = 2 * G * (a_un - a), 2 * G * (alpha_un - alpha), 2 * G * (alpha_un - sigma)

    def side(ell: float) -> tuple[float, float]:
        mean = ell - (a * y + b)
        sd = math.sqrt(max(2 * alpha / lam, alpha * y + beta))
        p = math.erfc(-mean / sd / math.sqrt(2)) / 2
        return mean * p + sd / math.sqrt(2 * math.pi) * math.exp(-0.5 * (mean / sd) ** 2), p

    (p1, pm), (p2, pn) = side(m), side(n)
    c = max(2 * sigma / lam, sigma * y + tau)
    return (p1 * p2 + c * pm * pn) * K * math.exp(-lam * y)


@pytest.mark.parametrize("score,m,n", [(30, 50, 60), (120, 350, 400), (533, 375, 380), (80, 1500, 30), (45, 10, 5000)])
def test_spouge_by_hand_and_scaled_to_the_database(score: int, m: int, n: int) -> None:
    params, why = karlin_altschul(Scoring.protein())
    assert "blastp -comp_based_stats 0" in why and params.spouge is not None
    db = 1_000_000
    assert params.evalue(score, m, n, db) == pytest.approx(spouge_by_hand(score, m, n) * db / n, rel=1e-12)
    assert params.bitscore(score) == pytest.approx((0.267 * score - math.log(0.041)) / math.log(2))


def test_vectorised_and_bound_to_the_database() -> None:
    stats = statistics(Scoring.protein(), SimpleNamespace(n_residues=2_000_000, n_sequences=9000, max_length=5000))
    assert isinstance(stats, BlastStatistics) and stats.kind == "blast"
    scores, lengths = np.array([40, 80, 200]), np.array([100, 300, 900])
    e = stats.evalue(0, 250, scores, lengths)
    assert e.shape == (3,) and np.all(np.diff(e) < 0)
    assert e[1] == pytest.approx(stats.params.evalue(80, 250, 300, 2_000_000))
    pairwise = statistics(Scoring.protein(), None)  # bl2seq: each subject is its own database
    assert pairwise.evalue(0, 250, 80, 300)[()] == pytest.approx(spouge_by_hand(80, 250, 300), rel=1e-12)


def test_pairs_as_blastp_subject() -> None:
    """blastp -query q -subject s (one subject, the pair is its own database): LGB1_VICFA vs IFNA6_HUMAN, 144 x 189."""
    params = blast_parameters(Scoring.protein())
    assert [format_evalue(params.evalue(s, 144, 189, 189)) for s in (26, 24, 22, 15)] == ["0.81", "1.5", "2.6", "20"]


@pytest.mark.parametrize(
    "matrix,go,ge,lam,K",
    [("BLOSUM45", 14, 2, 0.195, 0.032), ("BLOSUM50", 13, 2, 0.193, 0.035), ("BLOSUM80", 10, 1, 0.299, 0.071),
     ("BLOSUM90", 10, 1, 0.290, 0.075), ("PAM30", 9, 1, 0.294, 0.11), ("PAM70", 10, 1, 0.291, 0.091), ("PAM250", 14, 2, 0.182, 0.024)],
)  # fmt: skip
def test_blast_defaults_of_other_matrices(matrix: str, go: int, ge: int, lam: float, K: float) -> None:
    params, _ = karlin_altschul(Scoring.protein(matrix, go, ge))
    assert (params.lam, params.K) == (lam, K) and params.spouge is not None


def test_unsupported_scoring_says_why_and_user_parameters() -> None:
    scoring = Scoring.protein("BLOSUM62", 5, 5)
    params, why = karlin_altschul(scoring)
    assert params is None and "no BLAST parameters" in why and "--lambda" in why
    params, why = karlin_altschul(scoring, 0.3, 0.1)
    assert params.spouge is None
    assert params.evalue(50, 100, 400, 10_000) == pytest.approx(0.1 * 100 * 10_000 * math.exp(-15))
    with pytest.raises(InputError, match="go together"):
        karlin_altschul(scoring, 0.3, None)
    db = SimpleNamespace(n_residues=10_000, n_sequences=40, max_length=900)
    with pytest.raises(InputError, match="--stats blast"):
        statistics(scoring, db, mode="blast")
    none = statistics(scoring, db)  # auto falls to the fit, which needs the search's score histograms
    assert none.kind == "none" and "no score histograms" in none.description
    with pytest.raises(InputError, match="no score histograms"):
        none.evalue(0, 100, 50, 400)
    assert statistics(scoring, db, mode="fit").kind == "none"  # the fit without histograms: no E-values, said why
    with pytest.raises(InputError, match="pairs have none"):
        statistics(scoring, None, mode="fit")  # pairs can never fit
    assert "--lambda" in statistics(scoring, None).description


def test_blast_number_formats() -> None:
    assert [format_evalue(e) for e in (1e-200, 3e-120, 2.5e-10, 0.05, 0.5, 5.0, 123.0)] == [
        "0.0",
        "3.00e-120",
        "2.50e-10",
        "0.050",
        "0.50",
        "5.0",
        "123",
    ]
    assert [format_evalue(e, pairwise=True) for e in (3e-120, 2.4e-10, 0.05)] == ["3e-120", "2e-10", "0.050"]
    assert [format_bitscore(b) for b in (50.84, 250.7, 123456.0)] == ["50.8", "250", "1.235e+05"]


@pytest.mark.skipif(shutil.which("blastp") is None or shutil.which("makeblastdb") is None, reason="NCBI BLAST+ is not installed")
def test_evalues_equal_blastp_on_the_bundled_database(bundled_db: Database, resources: Path, tmp_path: Path) -> None:
    """Every pair blastp reports with the same raw score: E within 2x and the same bit score text (>= 98%)."""
    fasta = tmp_path / "db.fasta"
    subprocess.run(f"gzip -dc {resources / 'db.fasta.gz'} > {fasta}", shell=True, check=True)
    subprocess.run(["makeblastdb", "-in", str(fasta), "-dbtype", "prot", "-out", str(tmp_path / "db")], check=True, capture_output=True)
    out = subprocess.run(
        ["blastp", "-query", str(resources / "queries.fasta"), "-db", str(tmp_path / "db"), "-comp_based_stats", "0", "-seg", "no",
         "-outfmt", "6 qseqid sseqid score evalue bitscore", "-max_target_seqs", "500", "-evalue", "1000"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    scoring = Scoring.protein()
    queries = read_sequences(resources / "queries.fasta", scoring.alphabet)
    result = search(bundled_db, queries, scoring, CpuBackend(scoring, threads=2), top=3000, show_progress=False)
    stats = statistics(scoring, bundled_db)
    ours = {}
    for qi, qh in enumerate(result.hits):
        lengths = np.asarray(bundled_db.lengths)[qh.subjects]
        e = stats.evalue(qi, len(qh.query), qh.scores, lengths)
        b = stats.bitscore(qi, len(qh.query), qh.scores, lengths)
        for k, s in enumerate(qh.subjects.tolist()):
            ours[qh.query.id, bundled_db.seq_id(s)] = (int(qh.scores[k]), e[k], format_bitscore(b[k]))
    same = agree = 0
    for line in out.splitlines():
        qid, sid, score, evalue, bits = line.split("\t")
        mine = ours.get((qid, sid))
        if mine is None or mine[0] != int(score):
            continue
        same += 1
        e = float(evalue)
        agree += (e == 0 and mine[1] < 1e-180 or e > 0 and 0.5 <= mine[1] / e <= 2) and mine[2] == bits
    assert same > 500 and agree >= 0.98 * same, (same, agree)
