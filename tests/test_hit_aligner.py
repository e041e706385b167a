"""``api.search``'s ``align``: the hits traced query by query, as a search finds them, equal
:func:`~swgpu_core.api.select_hits` and :func:`~swgpu_core.api.align` after the search,
record by record (:class:`~swgpu_core.align.hits.HitAligner`).

The stand-in scanner below hands each query over before its scan returns, in a shuffled
order, as a GPU that holds the whole database does (``on_query``); the aligner is made to
trace every few queries on their own, so that a query's number in its group differs from
its number in the run. Its GPU twin is in ``tests/test_gpu_engine.py``.
"""

from __future__ import annotations

import threading
import time
from dataclasses import fields

import numpy as np
import pytest

from swgpu_core import api
from swgpu_core.align import Alignment, TracebackError, hits
from swgpu_core.database import Database
from swgpu_core.engine import CpuEngine, get_engine
from swgpu_core.fasta import EncodedSequence
from swgpu_core.scoring import Scoring
from swgpu_core.search import AlignOptions, QueryHits

PROTEIN = Scoring.protein()


def records(alignments: list[list[Alignment]]) -> list[list[tuple]]:
    """Every compared field of every record, the path too."""
    return [
        [(*(getattr(a, f.name) for f in fields(Alignment) if f.compare), a.ops.tolist() if a.ops is not None else None) for a in q]
        for q in alignments
    ]


@pytest.fixture(scope="module")
def queries(bundled_db: Database) -> list[EncodedSequence]:
    """30 of the database's own sequences, of every length (strong hits, and weak ones around the cutoff)."""
    picked = np.linspace(0, bundled_db.n_sequences - 1, 30).astype(int).tolist()
    return [EncodedSequence(*bundled_db.header(i), np.asarray(bundled_db.codes(i))) for i in picked]


class EarlyScanner:
    """The CPU's scanner, handing each query's candidates over the whole selection to
    ``on_query`` before it returns, in a shuffled order (as CudaBackend.scan does)."""

    name = "cpu"

    def __init__(self, seed: int) -> None:
        self.inner = CpuEngine().scanner(PROTEIN, threads=1)
        self.rng = np.random.default_rng(seed)
        self.handed: list[int] = []

    def scan(self, db, chunks, queries, top, on_chunk=None, score_stats=None, on_query=None):
        per_chunk = [self.inner.scan_chunk(db, c, queries, top, score_stats=score_stats) for c in chunks]
        if on_query is not None:
            for q in self.rng.permutation(len(queries)).tolist():
                on_query(q, (np.concatenate([p[q][0] for p in per_chunk]), np.concatenate([p[q][1] for p in per_chunk])))
                self.handed.append(q)
        return per_chunk


class Engine(CpuEngine):
    def __init__(self, scanner) -> None:
        self._scanner = scanner

    def scanner(self, scoring, *, threads=0, devices=None, threshold=None, memory_budget=None):
        return self._scanner


@pytest.mark.parametrize(
    ("stats_mode", "options"),
    [("auto", AlignOptions()), ("auto", AlignOptions(1e-3, 7)), ("auto", AlignOptions(None)), ("fit", AlignOptions())],
)
def test_aligned_as_found_equals_aligned_after(bundled_db: Database, queries, monkeypatch, stats_mode, options) -> None:
    monkeypatch.setattr(hits, "GROUP_PAIRS", 60)  # groups of a few queries
    scanner = EarlyScanner(seed=len(repr(options)))
    result = api.search(bundled_db, queries, PROTEIN, backend=Engine(scanner), top=40, stats_mode=stats_mode, align=options)
    # the reference: the same hits and statistics, selected and aligned after the search
    selected = api.select_hits(bundled_db, result.hits, result.statistics, max_evalue=options.max_evalue, limit=options.limit)
    want = api.align(bundled_db, selected, PROTEIN, backend="cpu", statistics=result.statistics)
    assert result.aligned is not None and result.selected is not None
    assert [(q.subjects.tolist(), q.scores.tolist()) for q in result.selected] == [
        (q.subjects.tolist(), q.scores.tolist()) for q in selected
    ]
    assert records(result.aligned.alignments) == records(want.alignments)
    assert 0 < result.aligned.count < 30 * 40 or options.max_evalue is None
    if stats_mode == "fit":  # its E-values come from the scan's scores: nothing handed over before the end
        assert result.statistics.kind == "fit" and not scanner.handed
        assert len({a.evalue for q in result.aligned.alignments for a in q}) > 1
    else:
        assert sorted(scanner.handed) == list(range(30))
    plain = api.search(bundled_db, queries, PROTEIN, backend="cpu", top=40, stats_mode=stats_mode)
    assert [(q.subjects.tolist(), q.scores.tolist()) for q in plain.hits] == [(q.subjects.tolist(), q.scores.tolist()) for q in result.hits]


def test_every_query_is_handed_over_once(bundled_db: Database, queries) -> None:
    """``on_hits`` sees each query once, with the hits the result holds, handed early or at the end."""
    seen: dict[int, QueryHits] = {}

    def on_hits(i: int, qh: QueryHits) -> None:
        assert i not in seen
        seen[i] = qh

    from swgpu_core.search import search

    for scanner in (EarlyScanner(seed=1), CpuEngine().scanner(PROTEIN, threads=1)):
        seen.clear()
        result = search(bundled_db, queries, PROTEIN, scanner, top=10, show_progress=False, on_hits=on_hits)
        assert sorted(seen) == list(range(30))
        assert all(seen[i] is qh for i, qh in enumerate(result.hits))


def test_a_traceback_error_reaches_the_caller(bundled_db: Database, queries, monkeypatch) -> None:
    """A query whose traceback fails fails the search, in the caller's thread, with that error."""
    cpu = get_engine("cpu")

    class Failing(Engine):
        def traceback(self, tasks, scoring, *, threads=0, device=None):
            if any(len(t.query) == len(queries[7].codes) for t in tasks):
                raise TracebackError("query 7's traceback and its search disagree")
            return cpu.traceback(tasks, scoring, threads=threads)

    monkeypatch.setattr(hits, "GROUP_PAIRS", 1)
    with pytest.raises(TracebackError, match="query 7's"):
        api.search(bundled_db, queries, PROTEIN, backend=Failing(EarlyScanner(seed=2)), top=5, align=AlignOptions())


def test_the_aligner_stops_when_the_search_fails(bundled_db: Database, queries) -> None:
    class Broken(EarlyScanner):
        def scan(self, db, chunks, queries, top, on_chunk=None, score_stats=None, on_query=None):
            on_query(0, (np.zeros(0, np.int64), np.zeros(0, np.int32)))
            raise RuntimeError("the GPU fell off the bus")

    started = {t.ident for t in threading.enumerate()}
    with pytest.raises(RuntimeError, match="fell off"):
        api.search(bundled_db, queries, PROTEIN, backend=Engine(Broken(seed=3)), top=5, align=AlignOptions())
    deadline = time.monotonic() + 10
    while any(t.name == "swgpu-align" and t.ident not in started for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not any(t.name == "swgpu-align" and t.ident not in started for t in threading.enumerate())


def test_a_negative_limit_is_refused() -> None:
    from swgpu_core.errors import InputError

    with pytest.raises(InputError, match="--align must be 0 or more"):
        AlignOptions(limit=-1)


def test_queries_traced_one_by_one_keep_their_numbers(bundled_db: Database, queries, monkeypatch) -> None:
    """Fitted E-values differ per query: each query traced alone, in a shuffled order, gets its own."""
    monkeypatch.setattr(hits, "GROUP_PAIRS", 1)
    result = api.search(bundled_db, queries, PROTEIN, backend="cpu", top=20, stats_mode="fit")
    want = api.align(bundled_db, api.select_hits(bundled_db, result.hits, result.statistics), PROTEIN, statistics=result.statistics)
    aligner = hits.HitAligner(bundled_db, PROTEIN, result.statistics, AlignOptions(), len(queries))
    for i in np.random.default_rng(4).permutation(len(queries)).tolist():
        aligner(i, result.hits[i])
        deadline = time.monotonic() + 30
        while aligner.alignments[i] is None and time.monotonic() < deadline:  # traced alone
            time.sleep(0.002)
    _, got = aligner.finish()
    assert records(got.alignments) == records(want.alignments)
