"""Align the top hits of a search: the API entry between search results and output formats.

:func:`align_query_hits` hands every (query, subject, score) pair of the given hits at
once to the traceback of an engine and turns the traced paths into
:class:`~swgpu_core.align.alignment.Alignment` records, with E-values and bit scores from
:func:`~swgpu_core.significance.hits_significance` (which hits to align, by E-value or
count, is decided before, from scores: :func:`~swgpu_core.significance.filter_hits`).
(:meth:`swgpu_core.engine.Engine.traceback`: a list of pairs in, their traced paths out as
arrays, same order; CPU or GPU alike).
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
from .traceback import PairTasks


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
    GPU engine's traceback (None: the current one). ``threads``: the CPU cores of the CPU
    engine's traceback and of the records (0: all this process may use).
    """
    if n is not None and n < 0:
        raise InputError(f"--align must be 0 or more (got {n})")
    stats = statistics if statistics is not None else NO_STATISTICS
    hits = filter_hits(hits, stats, db, max_evalue, n)
    started = time.perf_counter()
    counts = [len(qh) for qh in hits]
    indices = np.concatenate([qh.subjects for qh in hits]).astype(np.int64) if hits else np.zeros(0, np.int64)
    unique, where = np.unique(indices, return_inverse=True)  # each subject read once
    distinct = [EncodedSequence(ident, desc, codes) for (ident, desc), codes in zip(db.headers(unique), db.codes_of(unique))]
    query_of = np.repeat(np.arange(len(hits)), counts)  # each hit's query
    scores = np.concatenate([qh.scores for qh in hits]) if hits else np.zeros(0, np.int64)
    # the queries, then the distinct subjects: the pairs as the GPU takes them
    tasks = PairTasks.of([*(qh.query.codes for qh in hits), *(s.codes for s in distinct)], query_of, len(hits) + where, scores)
    engine = get_engine(backend)
    traces = engine.traceback(tasks, scoring, threads=threads, device=device)
    queries = [hits[k].query for k in query_of.tolist()]
    subjects = [distinct[k] for k in where.tolist()]
    ranks = [rank for n in counts for rank in range(1, n + 1)]
    records = build_alignments(traces, queries, subjects, indices.tolist(), ranks, scoring, threads=threads)
    significance = hits_significance(stats, hits, np.asarray(db.lengths))  # the hits' scores are the records' (checked above)
    if significance is not None:
        for aln, evalue, bitscore in zip(records, significance[0].tolist(), significance[1].tolist()):
            aln.evalue, aln.bitscore = evalue, bitscore
    bounds = np.cumsum([0, *(len(qh) for qh in hits)]).tolist()
    out = [records[a:b] for a, b in zip(bounds, bounds[1:])]
    return AlignedHits(out, time.perf_counter() - started, engine.kind)
