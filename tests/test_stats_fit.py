"""Fitted statistics: each query's fit to the database's scores, against ssearch36's (FASTA36 -z 1)."""

from __future__ import annotations

import math
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from swgpu_core import score_stats
from swgpu_core.backends.cpu import CpuBackend
from swgpu_core.database import Database
from swgpu_core.fasta import read_sequences
from swgpu_core.hitlist import load_hits, merge_score_stats, save_hits
from swgpu_core.score_stats import FittedStatistics, ScoreHistograms, fit_regression, length_bins, score_cap
from swgpu_core.scoring import Scoring
from swgpu_core.search import SearchResult, search
from swgpu_core.stats import BlastStatistics, statistics

DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="module")
def bundled_search(bundled_db: Database, resources: Path) -> SearchResult:
    """All 3,000 scores of each bundled query, with its score histogram."""
    scoring = Scoring.protein()
    queries = read_sequences(resources / "queries.fasta", scoring.alphabet)
    return search(bundled_db, queries, scoring, CpuBackend(scoring, threads=2), top=bundled_db.n_sequences, show_progress=False)


def fitted(result: SearchResult) -> FittedStatistics:
    stats = statistics(
        result.scoring, result.db, mode="fit", histograms=result.score_stats, query_lengths=[len(q.query) for q in result.hits]
    )
    assert isinstance(stats, FittedStatistics)
    return stats


def ratios_to(result: SearchResult, stats: FittedStatistics, rows: list[tuple[str, str, float]]) -> np.ndarray:
    """Our E over the reference E for each (query id, subject id, E) row, from our score of the pair."""
    db = result.db
    index = {db.seq_id(i): i for i in range(db.n_sequences)}
    which = {qh.query.id: qi for qi, qh in enumerate(result.hits)}
    out = []
    for qid, sid, e in rows:
        qi, si = which[qid], index[sid]
        qh = result.hits[qi]
        score = int(qh.scores[np.flatnonzero(qh.subjects == si)[0]])
        out.append(float(stats.evalue(qi, len(qh.query), score, int(db.lengths[si]))) / e)
    return np.array(out)


def test_frozen_ssearch36_fit_and_evalues(bundled_search: SearchResult) -> None:
    """The fit equals ssearch36's printed parameters; E within 3x of ssearch36's for >= 90% of hits with 1e-3 <= E <= 10."""
    lines = [line.split("\t") for line in (DATA / "ssearch36_evalues.tsv").read_text().splitlines() if not line.startswith("#")]
    stats = fitted(bundled_search)
    which = {qh.query.id: qi for qi, qh in enumerate(bundled_search.hits)}
    for _, qid, rho, mu, mean_var in (r for r in lines if r[0] == "fit"):
        fit = stats.fits[which[qid]]
        assert fit.kind == "regression"
        assert fit.rho * 10 == pytest.approx(float(rho), abs=2e-3)
        assert fit.mu == pytest.approx(float(mu), abs=2e-3)
        assert fit.sd**2 == pytest.approx(float(mean_var), rel=1e-3)
    ratios = ratios_to(bundled_search, stats, [(r[1], r[2], float(r[3])) for r in lines if r[0] == "hit"])
    assert ratios.size > 50
    assert np.mean((ratios >= 1 / 3) & (ratios <= 3)) >= 0.9
    assert abs(np.median(ratios) - 1) < 0.05


@pytest.mark.skipif(shutil.which("ssearch36") is None, reason="FASTA36 (ssearch36) is not installed")
def test_evalues_near_ssearch36_on_the_bundled_database(bundled_search: SearchResult, resources: Path, tmp_path: Path) -> None:
    fasta = tmp_path / "db.fasta"
    subprocess.run(f"gzip -dc {resources / 'db.fasta.gz'} > {fasta}", shell=True, check=True)
    out = subprocess.run(
        ["ssearch36", "-m", "8", "-f", "-11", "-g", "-1", "-s", "BL62", "-E", "20", "-b", "3000", "-d", "0", str(resources / "queries.fasta"), str(fasta)],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    rows, seen = [], set()
    for line in out.splitlines():
        c = line.split("\t")
        if (c[0], c[1]) not in seen and 1e-3 <= float(c[10]) <= 10:
            rows.append((c[0], c[1], float(c[10])))
        seen.add((c[0], c[1]))
    ratios = ratios_to(bundled_search, fitted(bundled_search), rows)
    assert ratios.size > 50 and np.mean((ratios >= 1 / 3) & (ratios <= 3)) >= 0.9


def test_histograms_add_up_over_chunks_and_through_hit_lists(bundled_db: Database, bundled_search: SearchResult, tmp_path: Path) -> None:
    scoring = bundled_search.scoring
    queries = [qh.query for qh in bundled_search.hits]
    backend = CpuBackend(scoring, threads=2)
    n = len(bundled_db.chunks)
    assert n >= 2
    paths = []
    for k, part in enumerate((list(range(n // 2)), list(range(n // 2, n)))):
        res = search(bundled_db, queries, scoring, backend, top=20, chunks=part, show_progress=False)
        paths.append(tmp_path / f"part{k}.npz")
        save_hits(paths[-1], res, 20, part)
    merged = merge_score_stats([load_hits(p) for p in paths])
    whole = bundled_search.score_stats
    assert np.array_equal(merged.caps, whole.caps)
    for q in range(len(queries)):
        assert np.array_equal(merged.counts[q], whole.counts[q]) and merged.high[q] == whole.high[q]
        assert merged.counts[q].sum() + sum(merged.high[q].values()) == bundled_db.n_sequences
    assert merge_score_stats([load_hits(paths[0])]) is not None


def test_cells_are_fasta_bins() -> None:
    assert length_bins([9, 10, 100, 1000, 10**9]).tolist() == [22, 23, 46, 69, 200]  # int(10 ln n + 0.5), at most 200
    hist = ScoreHistograms([50])
    hist.add(0, np.array([3, 50, 51, 400, 7]), np.array([100, 100, 100, 1000, 9]))
    assert hist.counts[0][46, 3] == 1 and hist.counts[0][46, 50] == 1 and hist.counts[0][22, 7] == 1
    assert dict(hist.high[0]) == {51 * 201 + 46: 1, 400 * 201 + 69: 1}
    again = ScoreHistograms.from_arrays(hist.to_arrays())
    assert np.array_equal(again.counts[0], hist.counts[0]) and again.high[0] == hist.high[0]


def test_score_caps_need_karlin_once_per_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """A search's histograms get each query's cap (FASTA's max_hscore; values as of 2026-11-27,
    bench200M and uniprot20k sizes) from one computation of lambda and K, not one per query."""
    protein = Scoring.protein()
    assert [score_cap(protein, m, 407_808, 200_000_287) for m in (1, 50, 300, 5478, 36000)] == [104, 123, 131, 145, 154]
    assert [score_cap(protein, m, 20_000, 9_060_000) for m in (144, 1000)] == [113, 122]
    calls = []
    karlin = score_stats.ungapped_karlin
    monkeypatch.setattr(score_stats, "ungapped_karlin", lambda scoring: calls.append(1) or karlin(scoring))
    hist = ScoreHistograms.for_search(protein, [1, 50, 300, 5478, 36000], 407_808, 200_000_287, 36000)
    assert hist.caps.tolist() == [104, 123, 131, 145, 154]
    assert len(calls) == 1


def test_fit_recovers_a_known_extreme_value_law() -> None:
    """Scores drawn from a Gumbel law whose location grows with ln(length): the fit finds rho, mu and sd."""
    rng = np.random.default_rng(1)
    n = 40_000
    lengths = np.exp(rng.uniform(math.log(30), math.log(3000), n)).astype(int)
    rho, mu, sd = 0.45, 6.0, 5.0  # per length bin, i.e. 4.5 per e-fold of length
    beta = sd * math.sqrt(6) / math.pi
    loc = rho * 10 * np.log(lengths) + mu - 0.5772 * beta
    scores = np.round(rng.gumbel(loc, beta)).astype(int)
    scoring = Scoring.protein()
    hist = ScoreHistograms([score_cap(scoring, 300, n, int(lengths.sum()))])
    hist.add(0, scores, lengths)
    fit = fit_regression(hist.counts[0], hist.high[0], int(hist.caps[0]), 300, int(lengths.max()))
    assert fit.kind == "regression"
    assert fit.rho == pytest.approx(rho, abs=0.02) and fit.mu == pytest.approx(mu, abs=1.0) and fit.sd == pytest.approx(sd, rel=0.08)
    stats = FittedStatistics([fit], n, None)
    # E of the score exceeded by about 1 in n subjects of median length is about 1
    m = float(np.median(lengths))
    s = np.arange(40, 120)
    e = stats.evalue(0, 300, s, np.full(s.size, m))
    assert np.all(np.diff(e) < 0)
    observed = np.array([(scores[np.abs(np.log(lengths / m)) < 0.2] >= x).mean() for x in s])
    near = (observed > 1e-3) & (observed < 0.1)
    assert near.sum() > 5
    assert np.all(np.abs(np.log(e[near] / (n * observed[near]))) < math.log(2))


def test_scoring_without_blast_parameters_gets_the_fit(bundled_db: Database, resources: Path) -> None:
    """BLOSUM62 with gap 5/5 has no BLAST row: auto gives each query its fit, every E-value a number."""
    scoring = Scoring.protein("BLOSUM62", 5, 5)
    queries = read_sequences(resources / "queries.fasta", scoring.alphabet)
    res = search(bundled_db, queries, scoring, CpuBackend(scoring, threads=2), top=50, show_progress=False)
    stats = statistics(scoring, bundled_db, histograms=res.score_stats, query_lengths=[len(q) for q in queries])
    assert stats.kind == "fit" and all(f is not None and f.kind == "regression" for f in stats.fits)
    best = []
    for qi, qh in enumerate(res.hits):
        lengths = np.asarray(bundled_db.lengths)[qh.subjects]
        e = stats.evalue(qi, len(qh.query), qh.scores, lengths)
        b = stats.bitscore(qi, len(qh.query), qh.scores, lengths)
        assert np.all(np.isfinite(e)) and np.all(np.isfinite(b)) and np.all(e > 0)
        best.append(e.min())
    assert min(best) < 1e-10 and max(best) > 1e-3  # relatives found for some queries, none for others


def test_too_few_sequences_fall_back() -> None:
    """Under ~90 scores FASTA does not z-trim; such a query takes BLAST's statistics where there are any, else mean and sd."""
    hist = ScoreHistograms([60])
    hist.add(0, np.arange(20, 60), np.full(40, 300))
    fit = fit_regression(hist.counts[0], hist.high[0], 60, 200, 300)
    assert fit is None
    params = statistics(Scoring.protein(), None)
    assert isinstance(params, BlastStatistics)
    stats = FittedStatistics([fit], 40, params)
    assert stats.evalue(0, 200, 50, 300)[()] == pytest.approx(params.evalue(0, 200, 50, 300)[()])


@pytest.mark.parametrize("mode", ["fit", "blast"])
def test_all_queries_hits_in_one_call_equal_each_query_alone(bundled_search: SearchResult, mode: str) -> None:
    """hits_significance (one call for many queries' hits, the tables' and the cutoff's way)
    gives bit for bit each query's own E-values and bit scores, whatever the queries' order;
    the fit's parameters differ per query, so a hit given another query's would show."""
    from swgpu_core.significance import filter_hits, hits_significance, query_significance

    result = bundled_search
    stats = statistics(
        result.scoring, result.db, mode=mode, histograms=result.score_stats, query_lengths=[len(q.query) for q in result.hits]
    )
    lengths = np.asarray(result.db.lengths)
    hits = list(result.hits)
    order = list(reversed(range(len(hits))))  # numbers not in order: the grouping by query is what is tested
    e, b = hits_significance(stats, [hits[qi] for qi in order], lengths, order)
    alone = [query_significance(stats, qi, len(hits[qi].query), hits[qi].scores, lengths[hits[qi].subjects]) for qi in order]
    assert np.array_equal(e, np.concatenate([a[0] for a in alone]))
    assert np.array_equal(b, np.concatenate([a[1] for a in alone]))
    assert len(e) == sum(len(qh) for qh in hits) > 1000
    cutoff = float(np.median(e))
    kept = filter_hits(hits, stats, result.db, cutoff)
    for qi, (qh, k) in enumerate(zip(hits, kept)):
        assert np.array_equal(k.subjects, qh.subjects[alone[order.index(qi)][0] <= cutoff])
