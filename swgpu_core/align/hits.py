"""Align the top hits of a search: the API entry between search results and output formats.

:func:`align_query_hits` gathers each query's best ``n`` (query, subject, score) pairs,
drops those whose E-value misses the cutoff (it depends only on the score, so before any
traceback), hands all pairs at once to the traceback of an engine
(:meth:`swgpu_core.engine.Engine.traceback`: a list of pairs in, a list of traced paths
out, same order) and turns the traced paths into
:class:`~swgpu_core.align.alignment.Alignment` records with E-values and bit scores.
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
from ..stats import KarlinAltschul
from .alignment import Alignment, build_alignment
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


def _subject(db: Database, index: int) -> EncodedSequence:
    ident, desc = db.header(index)
    return EncodedSequence(ident, desc, np.asarray(db.codes(index)))


def align_query_hits(
    db: Database,
    hits: Sequence[QueryHits],
    scoring: Scoring,
    n: int | None = None,
    *,
    backend: str | Engine = "cpu",
    params: KarlinAltschul | None = None,
    max_evalue: float | None = None,
) -> AlignedHits:
    """Alignments of each query's best ``n`` hits (all when None) with E-values from ``params``.

    E-values count the whole database (``db.n_residues``), as blastp's do. With
    ``max_evalue`` and ``params``, hits above the cutoff are left out.
    """
    if n is not None and n < 0:
        raise InputError(f"--align must be 0 or more (got {n})")
    if max_evalue is not None and params is None:
        raise InputError("--evalue needs E-values, which this scoring system does not have (give --lambda and --kappa)")
    started = time.perf_counter()
    tasks: list[PairTask] = []
    where: list[tuple[int, int, int]] = []  # (query number, rank, subject index)
    evalues: list[float | None] = []
    subjects: dict[int, EncodedSequence] = {}
    for qi, qh in enumerate(hits):
        for rank, (subject, score) in enumerate(zip(qh.subjects[:n].tolist(), qh.scores[:n].tolist()), start=1):
            evalue = params.evalue(score, len(qh.query), int(db.lengths[subject]), db.n_residues) if params else None
            if max_evalue is not None and evalue > max_evalue:
                continue
            if subject not in subjects:
                subjects[subject] = _subject(db, subject)
            tasks.append(PairTask(qh.query.codes, subjects[subject].codes, int(score)))
            where.append((qi, rank, subject))
            evalues.append(evalue)
    engine = get_engine(backend)
    traces = engine.traceback(tasks, scoring)
    out: list[list[Alignment]] = [[] for _ in hits]
    for (qi, rank, subject), trace, evalue in zip(where, traces, evalues):
        aln = build_alignment(trace, hits[qi].query, subjects[subject], subject, rank, scoring)
        if params is not None:
            aln.evalue = evalue
            aln.bitscore = params.bitscore(aln.score)
        out[qi].append(aln)
    return AlignedHits(out, time.perf_counter() - started, engine.kind)
