"""E-values and bit scores of hits: the one place outputs and filters ask for significance.

Both numbers depend only on the raw score, the query, the subject's length and the
database, never on the alignment, so they are known as soon as the search ends: E-value
columns and the ``max_evalue`` cutoff cost no traceback. Which statistics a run reports
(BLAST's, the user's lambda and K, or each query's fit to the database's own scores) is
decided once, by :func:`swgpu_core.stats.statistics`; :func:`statistics` here is that
decision with the plain values of the API, :func:`saved_statistics` the same for saved
hit lists (their score histograms summed over chunks, so merged lists give exactly the
E-values of one search). Every output (tabular fields, SAM tags, JSON lines, the
pairwise view) and every filter then asks the :class:`Statistics` object, a query's hits
at once (:func:`query_significance`), or many queries' hits at once (:func:`hits_significance`).

Where no statistics are possible (pairs of a scoring system BLAST has no parameters for,
without ``lam``/``kappa``; hit lists without score histograms; a search of some chunks
only, whose scores are not the database's) the statistics are :class:`NoStatistics`:
hits have no E-value, tables refuse the ``evalue`` and ``bitscore`` columns with the
reason (:func:`require_statistics`) rather than print ``*``, and nothing is cut by E-value.

A pair aligned on its own (``swgpu pairs``, ``db=None``) is its own search space, the
query against a one-sequence database of the subject (as ``blastp -subject`` does).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # kept light: the tabular writer and the command modules import this module
    import numpy as np
    from numpy.typing import ArrayLike

    from .database import Database
    from .fasta import EncodedSequence
    from .hitlist import HitList
    from .score_stats import ScoreHistograms
    from .scoring import Scoring
    from .search import QueryHits

#: BLAST's default E-value cutoff (``-evalue 10``): hits above it are not reported.
DEFAULT_MAX_EVALUE = 10.0

#: ``--stats``: ``auto`` (BLAST's parameters, or ``lam``/``kappa``, where there are any, else the fit),
#: ``blast`` (those only: an error without), ``fit`` (each query's fit to the database's scores).
STATS_MODES = ("auto", "blast", "fit")


class Statistics(Protocol):
    """E-values and bit scores of one run, from scores alone (no traceback).

    ``query`` is the query's number in the run (fitted statistics differ per query) and
    ``query_length`` its length; ``score`` and ``subject_length`` may be arrays (one entry
    per hit), and so may ``query`` and ``query_length``, so that the hits of many queries
    take one call (:func:`hits_significance`). ``kind`` is ``"blast"``, ``"user"`` (given
    lambda and K), ``"fit"`` or ``"none"``.
    """

    kind: str
    description: str

    def evalue(self, query: ArrayLike, query_length: ArrayLike, score: ArrayLike, subject_length: ArrayLike) -> np.ndarray: ...

    def bitscore(self, query: ArrayLike, query_length: ArrayLike, score: ArrayLike, subject_length: ArrayLike) -> np.ndarray: ...


@dataclass(frozen=True)
class NoStatistics:
    """No E-values, and why (the sentence every refusal quotes)."""

    description: str
    kind: str = "none"

    def evalue(self, query: ArrayLike, query_length: ArrayLike, score: ArrayLike, subject_length: ArrayLike) -> np.ndarray:
        from .errors import InputError

        raise InputError(self.description)

    bitscore = evalue


#: No statistics (align-long, and what functions assume when given none): hits have no E-values.
NO_STATISTICS = NoStatistics("no E-values")


def has_evalues(stats: Statistics) -> bool:
    return stats.kind != "none"


def statistics(
    scoring: Scoring,
    db: Database | None = None,
    *,
    stats_mode: str = "auto",
    lam: float | None = None,
    kappa: float | None = None,
    histograms: ScoreHistograms | None = None,
    query_lengths: Sequence[int] = (),
    no_fit: str | None = None,
) -> Statistics:
    """The statistics of a run against ``db`` (None: each subject is its own database, as pairs).

    ``stats_mode`` is one of :data:`STATS_MODES`; the fit needs the search's score
    ``histograms`` (``SearchResult.score_stats``, or :func:`saved_statistics` for hit
    lists) and ``query_lengths`` in their order. Impossible requests (``blast`` where
    BLAST has no parameters, ``fit`` for pairs, half of ``lam``/``kappa``) are an
    :class:`~swgpu_core.errors.InputError`; a fit without the scores it needs is
    :class:`NoStatistics` saying why (``no_fit``: why this run cannot fit, e.g. a fast-mode
    search). :func:`swgpu_core.stats.statistics` decides.
    """
    from .stats import statistics as decide

    return decide(scoring, db, mode=stats_mode, lam=lam, kappa=kappa, histograms=histograms, query_lengths=query_lengths, no_fit=no_fit)


def saved_statistics(
    scoring: Scoring,
    db: Database,
    batches: Sequence[Sequence[HitList]],
    *,
    stats_mode: str = "auto",
    lam: float | None = None,
    kappa: float | None = None,
) -> Statistics:
    """The statistics of saved hit lists: ``batches`` are groups of lists of the same queries
    (one list per chunk or group of chunks), their queries numbered in batch order.

    Each batch's score histograms are summed over its lists (all chunks: the database's
    scores, so merged lists fit exactly as one search); lists saved without histograms,
    or batches that miss chunks, or lists of a fast-mode search, leave the fit impossible.
    """
    from .hitlist import merge_score_stats
    from .score_stats import ScoreHistograms
    from .seed import FAST_NO_FIT

    parts = [merge_score_stats(list(batch)) for batch in batches]
    histograms = None if any(p is None for p in parts) else ScoreHistograms.concatenate(parts)
    lengths = [len(qh.query) for batch in batches for qh in batch[0].hits]
    fast = any(hl.mode == "fast" for batch in batches for hl in batch)
    return statistics(
        scoring, db, stats_mode=stats_mode, lam=lam, kappa=kappa, histograms=histograms, query_lengths=lengths,
        no_fit=FAST_NO_FIT if fast else None,
    )  # fmt: skip


def query_significance(
    stats: Statistics, query_index: ArrayLike, query_length: ArrayLike, scores: ArrayLike, subject_lengths: ArrayLike
) -> tuple[np.ndarray, np.ndarray] | None:
    """(E-values, bit scores) of a query's hits, one entry per score (or of many queries' hits,
    ``query_index`` and ``query_length`` then one entry per score too); None without statistics."""
    import numpy as np

    if not has_evalues(stats):
        return None
    scores, lengths = np.asarray(scores), np.asarray(subject_lengths)
    e = np.broadcast_to(stats.evalue(query_index, query_length, scores, lengths), scores.shape)
    b = np.broadcast_to(stats.bitscore(query_index, query_length, scores, lengths), scores.shape)
    return np.asarray(e, dtype=np.float64), np.asarray(b, dtype=np.float64)


def hits_significance(
    stats: Statistics, hits: Sequence[QueryHits], subject_lengths: np.ndarray, numbers: Sequence[int] | None = None
) -> tuple[np.ndarray, np.ndarray] | None:
    """(E-values, bit scores) of every hit of ``hits``, the queries' hits one after another;
    None without statistics.

    ``numbers`` are the queries' numbers in the run (default 0, 1, ...) and
    ``subject_lengths`` the database's lengths. The statistics take all the hits in one
    call: a call per query cost NumPy's overhead per query (about 0.05 ms with Spouge's
    correction), and a search of 500 queries paid it twice, in its E-value cutoff and its
    table (bench/RESULTS.md, twenty-fourth session).
    """
    import numpy as np

    if not has_evalues(stats):
        return None
    counts = np.fromiter((len(qh) for qh in hits), np.int64, len(hits))
    if not counts.sum():
        return np.zeros(0), np.zeros(0)
    numbers = np.arange(len(hits)) if numbers is None else np.asarray(numbers, np.int64)
    query_lengths = np.fromiter((len(qh.query) for qh in hits), np.int64, len(hits))
    subjects = np.concatenate([qh.subjects for qh in hits])
    scores = np.concatenate([qh.scores for qh in hits])
    return query_significance(stats, np.repeat(numbers, counts), np.repeat(query_lengths, counts), scores, subject_lengths[subjects])


def hit_significance(
    stats: Statistics, query_index: int, query: EncodedSequence, score: int, subject_length: int
) -> tuple[float | None, float | None]:
    """(E-value, bit score) of one hit: ``query`` (number ``query_index`` of the run) scoring
    ``score`` against a subject of ``subject_length`` residues; (None, None) without statistics."""
    both = query_significance(stats, query_index, len(query), [int(score)], [int(subject_length)])
    return (None, None) if both is None else (float(both[0][0]), float(both[1][0]))


def require_statistics(stats: Statistics, what: str) -> None:
    """Refuse ``what`` (E-value columns, an E-value cutoff) when there are no E-values: one line saying why."""
    if not has_evalues(stats):
        from .errors import InputError

        raise InputError(f"{what}: {stats.description}")


def filter_hits(
    hits: Sequence[QueryHits],
    stats: Statistics,
    db: Database,
    max_evalue: float | None = DEFAULT_MAX_EVALUE,
    limit: int | None = None,
    *,
    subject_lengths: np.ndarray | None = None,
) -> list[QueryHits]:
    """Each query's hits with an E-value of at most ``max_evalue``, at most ``limit`` of them, best first.

    No traceback: the E-values come from the scores, all the hits' at once. Without
    statistics nothing is cut by E-value (there is none to compare). ``subject_lengths``
    defaults to ``db.lengths``.
    """
    import numpy as np

    from .search import QueryHits

    lengths = np.asarray(db.lengths if subject_lengths is None else subject_lengths)
    significance = hits_significance(stats, hits, lengths) if max_evalue is not None else None
    keep = np.split(significance[0] <= max_evalue, np.cumsum([len(qh) for qh in hits])[:-1]) if significance is not None else None
    out = []
    for qi, qh in enumerate(hits):
        subjects, scores = qh.subjects, qh.scores
        if keep is not None:
            subjects, scores = subjects[keep[qi]], scores[keep[qi]]
        out.append(QueryHits(qh.query, subjects[:limit], scores[:limit]))
    return out
