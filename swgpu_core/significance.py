"""E-values and bit scores of hits: the one place that turns a score into significance.

Both numbers depend only on the raw score, the query, the subject's length and the search
space (the database's residues and sequences), never on the alignment, so they are known
as soon as the search ends: E-value columns and the ``max_evalue`` cutoff cost no
traceback. Every output (tabular fields, SAM tags, JSON lines, the pairwise view, the
report) and every filter asks :func:`hit_significance`; a change of statistics (BLAST's
finite-size correction, which needs the subject length; per-query fitted parameters,
which need the query) changes this module only.

A pair aligned on its own (``swgpu pairs``) is its own search space, the query against a
one-sequence database of the subject (as ``blastp -subject`` does): :func:`pair_space`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # kept light: the tabular writer and the command modules import this module
    import numpy as np

    from .fasta import EncodedSequence
    from .scoring import Scoring
    from .search import QueryHits
    from .stats import KarlinAltschul

#: BLAST's default E-value cutoff (``-evalue 10``): hits above it are not reported.
DEFAULT_MAX_EVALUE = 10.0


class SearchSpace(Protocol):
    """What an E-value needs to know of a database: its size (a :class:`~swgpu_core.database.Database` is one)."""

    @property
    def n_residues(self) -> int: ...

    @property
    def n_sequences(self) -> int: ...


@dataclass(frozen=True)
class PairSpace:
    """A one-sequence database: the search space of a pair aligned on its own."""

    n_residues: int
    n_sequences: int = 1


def pair_space(subject_length: int) -> PairSpace:
    return PairSpace(int(subject_length))


@dataclass(frozen=True)
class Statistics:
    """The statistics of one run: parameters (None: no E-values) and a sentence saying where they come from."""

    params: KarlinAltschul | None
    description: str

    @property
    def available(self) -> bool:
        return self.params is not None


#: No statistics: hits have no E-values (what :func:`hit_significance` answers then).
NO_STATISTICS = Statistics(None, "no E-values")


def statistics(scoring: Scoring, lam: float | None = None, kappa: float | None = None) -> Statistics:
    """The statistics for ``scoring``: BLAST's tabulated parameters, or the given ``lam`` and ``kappa``."""
    from .stats import karlin_altschul

    params, why = karlin_altschul(scoring, lam, kappa)
    return Statistics(params, why)


def hit_significance(
    stats: Statistics, query_index: int, query: EncodedSequence, score: int, subject_length: int, space: SearchSpace
) -> tuple[float | None, float | None]:
    """(E-value, bit score) of one hit: ``query`` (number ``query_index`` of the run) scoring
    ``score`` against a subject of ``subject_length`` residues in ``space``.

    (None, None) when the scoring system has no statistics: the writers print ``*`` then
    (until fitted statistics give every scoring system E-values).
    """
    params = stats.params
    if params is None:
        return None, None
    return float(params.evalue(int(score), len(query), int(subject_length), space.n_residues)), float(params.bitscore(int(score)))


def filter_hits(
    hits: Sequence[QueryHits],
    stats: Statistics,
    db: SearchSpace,
    max_evalue: float | None = DEFAULT_MAX_EVALUE,
    limit: int | None = None,
    *,
    subject_lengths: np.ndarray | None = None,
) -> list[QueryHits]:
    """Each query's hits with an E-value of at most ``max_evalue``, at most ``limit`` of them, best first.

    No traceback: the E-value comes from the score. Without statistics nothing is cut by
    E-value (there is none to compare). ``subject_lengths`` defaults to ``db.lengths``.
    """
    import numpy as np

    from .search import QueryHits

    lengths = np.asarray(db.lengths if subject_lengths is None else subject_lengths)
    out = []
    for qi, qh in enumerate(hits):
        subjects, scores = qh.subjects, qh.scores
        if max_evalue is not None and stats.available:
            keep = np.array(
                [hit_significance(stats, qi, qh.query, sc, lengths[s], db)[0] <= max_evalue for s, sc in zip(subjects.tolist(), scores.tolist())],
                dtype=bool,
            )
            subjects, scores = subjects[keep], scores[keep]
        out.append(QueryHits(qh.query, subjects[:limit], scores[:limit]))
    return out
