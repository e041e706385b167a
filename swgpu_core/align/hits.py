"""Align the top hits of a search: the API entry between search results and output formats.

:func:`align_query_hits` hands every (query, subject, score) pair of the given hits at
once to the traceback of an engine and turns the traced paths into
:class:`~swgpu_core.align.alignment.Alignment` records, with E-values and bit scores from
:func:`~swgpu_core.significance.hits_significance` (which hits to align, by E-value or
count, is decided before, from scores: :func:`~swgpu_core.significance.filter_hits`).
(:meth:`swgpu_core.engine.Engine.traceback`: a list of pairs in, a list of traced paths
out, same order; CPU or GPU alike).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..database import Database
from ..engine import Engine, get_engine
from ..errors import InputError
from ..fasta import EncodedSequence
from ..scoring import Scoring
from ..search import QueryHits
from ..significance import NO_STATISTICS, Statistics, filter_hits, hits_significance
from .alignment import Alignment, build_alignments
from .traceback import PairTask


@dataclass
class AlignedHits:
    """Each query's alignments (best first), and how long the traceback took."""

    alignments: list[list[Alignment]]
    seconds: float
    backend: str  # the engine kind that traced them: cpu or cuda

    @property
    def count(self) -> int:
        return sum(len(a) for a in self.alignments)


def align_query_hits(
    db: Database,
    hits: Sequence[QueryHits],
    scoring: Scoring,
    n: int | None = None,
    *,
    backend: str | Engine = "cpu",
    statistics: Statistics | None = None,
    max_evalue: float | None = None,
    threads: int = 0,
    device: int | None = None,
) -> AlignedHits:
    """Alignments of each query's best ``n`` hits (all when None), E-values from ``statistics``.

    ``max_evalue`` first drops the hits above the cutoff (from their scores). E-values
    count the whole database (``db.n_residues``), as blastp's do. ``device``: the GPU of a
    GPU engine's traceback (None: the current one).
    """
    if n is not None and n < 0:
        raise InputError(f"--align must be 0 or more (got {n})")
    stats = statistics if statistics is not None else NO_STATISTICS
    hits = filter_hits(hits, stats, db, max_evalue, n)
    started = time.perf_counter()
    indices = [i for qh in hits for i in qh.subjects.tolist()]
    unique = list(dict.fromkeys(indices))
    sequences = {i: EncodedSequence(ident, desc, np.asarray(db.codes(i))) for i, (ident, desc) in zip(unique, db.headers(unique))}
    queries = [qh.query for qh in hits for _ in range(len(qh))]
    subjects = [sequences[i] for i in indices]
    scores = [score for qh in hits for score in qh.scores.tolist()]
    tasks = [PairTask(q.codes, s.codes, score) for q, s, score in zip(queries, subjects, scores)]
    engine = get_engine(backend)
    traces = engine.traceback(tasks, scoring, threads=threads, device=device)
    ranks = [rank for qh in hits for rank in range(1, len(qh) + 1)]
    records = build_alignments(traces, queries, subjects, indices, ranks, scoring)
    significance = hits_significance(stats, hits, np.asarray(db.lengths))  # the hits' scores are the records' (checked above)
    if significance is not None:
        for aln, evalue, bitscore in zip(records, significance[0].tolist(), significance[1].tolist()):
            aln.evalue, aln.bitscore = evalue, bitscore
    bounds = np.cumsum([0, *(len(qh) for qh in hits)]).tolist()
    out = [records[a:b] for a, b in zip(bounds, bounds[1:])]
    return AlignedHits(out, time.perf_counter() - started, engine.kind)
