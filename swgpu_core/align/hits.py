"""Align the top hits of a search: the API entry between search results and output formats.

:func:`align_query_hits` hands every (query, subject, score) pair of the given hits at
once to the traceback of an engine and turns the traced paths into
:class:`~swgpu_core.align.alignment.Alignment` records, with E-values and bit scores from
:func:`~swgpu_core.significance.hits_significance` (which hits to align, by E-value or
count, is decided before, from scores: :func:`~swgpu_core.significance.filter_hits`).
(:meth:`swgpu_core.engine.Engine.traceback`: a list of pairs in, a list of traced paths
out, same order; CPU or GPU alike).

:class:`HitAligner` does the same query by query while a search still scans: the search
hands it each query's final hits (``api.search``'s ``align``), and it traces them in a
thread of its own. Every query's alignments depend on that query's hits alone (the
cutoff, the paths, the records and their E-values are computed per pair, the queries'
numbers in the run given), so tracing the queries in groups gives what one call over all
of them gives; ``tests/test_hit_aligner.py`` checks it record by record.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..database import Database
from ..engine import Engine, get_engine
from ..errors import InputError
from ..fasta import EncodedSequence
from ..scoring import Scoring
from ..search import AlignOptions, QueryHits
from ..significance import NO_STATISTICS, Statistics, filter_hits, hits_significance
from .alignment import Alignment, build_alignments
from .traceback import PairTask

#: the pairs :class:`HitAligner` gathers before it traces them while the scan goes on: a
#: traceback call has a fixed cost (its launches and copies; the GPU traced 19,091 pairs in
#: 0.11 s, one query's 50 in about 2 ms), so a few dozen queries go in one call
GROUP_PAIRS = 2048


@dataclass
class AlignedHits:
    """Each query's alignments (best first), and how long the traceback took."""

    alignments: list[list[Alignment]]
    seconds: float  # the traceback's and the records' own time (with a search's align: also while it scanned)
    backend: str  # the engine kind that traced them: cpu or cuda
    waited: float | None = None  # with a search's align: the part the search waited for once its scan was done

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
    engine = get_engine(backend)
    out = _alignments(db, hits, np.arange(len(hits)), scoring, engine, stats, threads, device)
    return AlignedHits(out, time.perf_counter() - started, engine.kind)


def _alignments(
    db: Database, hits: Sequence[QueryHits], numbers: np.ndarray, scoring: Scoring, engine: Engine, stats: Statistics, threads: int,
    device: int | None,
) -> list[list[Alignment]]:  # fmt: skip
    """Per query of ``hits`` (the queries numbered ``numbers`` in their run), the alignments of all its hits."""
    indices = [i for qh in hits for i in qh.subjects.tolist()]
    unique = list(dict.fromkeys(indices))
    sequences = {i: EncodedSequence(ident, desc, np.asarray(db.codes(i))) for i, (ident, desc) in zip(unique, db.headers(unique))}
    queries = [qh.query for qh in hits for _ in range(len(qh))]
    subjects = [sequences[i] for i in indices]
    scores = [score for qh in hits for score in qh.scores.tolist()]
    tasks = [PairTask(q.codes, s.codes, score) for q, s, score in zip(queries, subjects, scores)]
    traces = engine.traceback(tasks, scoring, threads=threads, device=device)
    ranks = [rank for qh in hits for rank in range(1, len(qh) + 1)]
    records = build_alignments(traces, queries, subjects, indices, ranks, scoring)
    significance = hits_significance(stats, hits, np.asarray(db.lengths), numbers)  # the hits' scores are the records' (checked above)
    if significance is not None:
        for aln, evalue, bitscore in zip(records, significance[0].tolist(), significance[1].tolist()):
            aln.evalue, aln.bitscore = evalue, bitscore
    bounds = np.cumsum([0, *(len(qh) for qh in hits)]).tolist()
    return [records[a:b] for a, b in zip(bounds, bounds[1:])]


class HitAligner:
    """Selects and traces a search's hits query by query, in a thread, as the search finds them.

    A search that writes alignments used to trace all its hits after its scan: 0.8-1.9 s
    of the command's wall for 500 queries (bench/RESULTS.md), most of it the records on
    the CPU, while the GPU sat idle. A query's hits are final once the search has scanned
    it against the whole database, which on a GPU that holds the database happens while
    the other queries still scan; the search then calls this object (``aligner(i, hits)``,
    cheap: it only queues them), and the thread selects, traces and builds the records of
    every :data:`GROUP_PAIRS` pairs or so, beside the scan. The GPU's traceback runs on
    CuPy's default stream of this thread, which the scan's streams (non-blocking) do not
    wait for. :meth:`finish` traces what is left and returns what :func:`align_query_hits`
    would return for the same selection. A search that can tell no query's end before its
    own (the CPU's, streamed batches) hands every query over at its end: then it is one
    traceback, as before.

    ``statistics`` must be the run's own (its E-values decide the selection), so they must
    be known before the scan: not a fit to the search's scores.
    """

    def __init__(
        self, db: Database, scoring: Scoring, statistics: Statistics, options: AlignOptions, n_queries: int, *,
        backend: str | Engine = "cpu", threads: int = 0, device: int | None = None,
    ) -> None:  # fmt: skip
        self.db, self.scoring, self.stats, self.options = db, scoring, statistics, options
        self.engine = get_engine(backend)
        self.threads, self.device = threads, device
        self.selected: list[QueryHits | None] = [None] * n_queries
        self.alignments: list[list[Alignment] | None] = [None] * n_queries
        self.seconds = 0.0
        self._queue: queue.SimpleQueue[tuple[int, QueryHits] | None] = queue.SimpleQueue()
        self._error: BaseException | None = None
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="swgpu-align", daemon=True)
        self._thread.start()

    def __call__(self, index: int, hits: QueryHits) -> None:
        """Query ``index``'s final hits (each query once)."""
        self._queue.put((index, hits))

    def finish(self) -> tuple[list[QueryHits], AlignedHits]:
        """Once every query was handed over: each query's selected hits and the alignments of
        all (a traceback error of any query is raised here)."""
        waiting = time.perf_counter()
        self._queue.put(None)
        self._thread.join()
        waited = time.perf_counter() - waiting
        if self._error is not None:
            raise self._error
        missing = [i for i, a in enumerate(self.alignments) if a is None]
        if missing:
            raise RuntimeError(f"query {missing[0]} was never handed to the aligner")
        selected = [s for s in self.selected if s is not None]
        alignments = [a for a in self.alignments if a is not None]
        return selected, AlignedHits(alignments, self.seconds, self.engine.kind, waited)

    def close(self) -> None:
        """Stop without tracing what is queued (the search failed); idempotent."""
        self._stop = True
        self._queue.put(None)

    def _run(self) -> None:
        group: list[tuple[int, QueryHits]] = []
        pairs = 0
        while True:
            item = self._queue.get()
            closed = item is None
            if item is not None:
                group.append(item)
                pairs += len(item[1])
            while not closed:  # whatever else is queued joins the group
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                closed = item is None
                if item is not None:
                    group.append(item)
                    pairs += len(item[1])
            if self._stop:
                return
            if group and (closed or pairs >= GROUP_PAIRS) and self._error is None:
                try:
                    self._trace(group)
                except BaseException as error:  # noqa: BLE001 - raised again by finish(), in the caller's thread
                    self._error = error
                group, pairs = [], 0
            if closed:
                return

    def _trace(self, group: list[tuple[int, QueryHits]]) -> None:
        started = time.perf_counter()
        numbers = np.fromiter((i for i, _ in group), np.int64, len(group))
        hits = [qh for _, qh in group]
        selected = filter_hits(hits, self.stats, self.db, self.options.max_evalue, self.options.limit, numbers=numbers)
        traced = _alignments(self.db, selected, numbers, self.scoring, self.engine, self.stats, self.threads, self.device)
        for i, qh, records in zip(numbers.tolist(), selected, traced):
            self.selected[i], self.alignments[i] = qh, records
        self.seconds += time.perf_counter() - started
