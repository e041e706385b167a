"""Database search: scan every chunk with a backend, keep each query's top hits.

Ties are broken by one rule on every backend: higher score first, then the subject that
comes first in the source FASTA. With a seeder (``--mode fast``), each chunk's candidates
are found first and only they are scored, with the same scanner and the same selection:
the hits are the exact top hits among the candidates.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .database import Database
from .engine import Scanner
from .fasta import EncodedSequence
from .progress import progress_bar
from .score_stats import ScoreHistograms
from .scoring import Scoring

if TYPE_CHECKING:
    from .seed import Seeder, SeedRun
    from .significance import Statistics


@dataclass(slots=True)
class QueryHits:
    """The best subjects for one query, best first."""

    query: EncodedSequence
    subjects: np.ndarray  # sorted-numbering database indices, int64
    scores: np.ndarray  # int32

    def __len__(self) -> int:
        return int(self.subjects.size)


@dataclass
class SearchResult:
    db: Database
    scoring: Scoring
    backend: str
    hits: list[QueryHits]
    seconds: float
    cells: int = field(default=0)  # the search space, query x database residues (in fast mode too: GCUPS is then effective)
    score_stats: ScoreHistograms | None = field(default=None)  # per query, for fitted statistics
    statistics: Statistics | None = field(default=None)  # E-values of these hits (api.search decides them)
    seed: SeedRun | None = field(default=None)  # fast mode: the candidate stage's parameters, counts and time
    devices: tuple[int, ...] = field(default=())  # the GPUs it ran on, in this process's numbering (none: the CPU)

    @property
    def gpus(self) -> int:
        """How many GPUs it ran on (0: the CPU)."""
        return len(self.devices)

    @property
    def mode(self) -> str:
        """``"exact"`` (every subject scored) or ``"fast"`` (only the seeded candidates)."""
        return "exact" if self.seed is None else "fast"

    @property
    def gcups(self) -> float:
        return self.cells / self.seconds / 1e9 if self.seconds > 0 else 0.0


def check_search_options(top: int, threads: int = 0, threshold: int | None = None, mode: str = "exact") -> None:
    """Refuse a bad ``top``, ``threads``, ``threshold`` or ``mode`` before any work (the API and the command ask here)."""
    from .errors import InputError
    from .seed import SEARCH_MODES

    if mode not in SEARCH_MODES:
        raise InputError(f"unknown --mode {mode!r} ({' or '.join(SEARCH_MODES)})")

    if top < 1:
        raise InputError(f"--top must be at least 1 (got {top})")
    if threads < 0:
        raise InputError(f"--threads must be 0 (all cores) or more (got {threads})")
    if threshold is not None and threshold < 1:
        raise InputError(f"--threshold must be at least 1 (got {threshold})")


def select_top(db: Database, subjects: np.ndarray, scores: np.ndarray, top: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``top`` best by score, ties to the earlier subject of the source FASTA."""
    order = np.lexsort((db.order[subjects], -scores.astype(np.int64)))[:top]
    return subjects[order], scores[order]


def search(
    db: Database,
    queries: list[EncodedSequence],
    scoring: Scoring,
    backend: Scanner,
    *,
    top: int = 50,
    chunks: list[int] | None = None,
    show_progress: bool = True,
    score_stats: bool = True,
    seeder: Seeder | None = None,
) -> SearchResult:
    """Scan ``queries`` against ``db`` (or the listed chunks of it) and keep the top hits.

    With ``score_stats``, every score also goes into its query's (length, score) histogram,
    from which :mod:`swgpu_core.score_stats` fits the query's statistics. With ``seeder``
    (the same queries' candidate stage), only each query's candidates are scored, chunk by
    chunk, and there are no histograms (``score_stats`` is ignored): a fit needs every score.
    """
    selected = [db.chunks[i] for i in chunks] if chunks is not None else db.chunks
    found: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in queries]
    total = sum(c.n_residues for c in selected) * len(queries)
    # before the clock starts: the bar's first use in a process imports tqdm (40 ms)
    bar = progress_bar(total=total, desc=f"search ({backend.name})", unit="res", unit_scale=True, disable=not show_progress)
    started = time.perf_counter()
    hist = (
        ScoreHistograms.for_search(scoring, [len(q) for q in queries], db.n_sequences, db.n_residues, db.max_length)
        if score_stats and seeder is None
        else None
    )
    scan = getattr(backend, "scan", None)
    seed_seconds = 0.0
    if seeder is not None and hasattr(backend, "scan_seeded"):  # the backend overlaps the two stages (the GPU's)
        per_chunk, seed_seconds = backend.scan_seeded(
            db, selected, queries, seeder, top, on_chunk=lambda c: bar.update(c.n_residues * len(queries))
        )
    elif seeder is not None:
        per_chunk = []
        for chunk in selected:
            began = time.perf_counter()
            subjects = seeder.candidates(db, chunk)
            seed_seconds += time.perf_counter() - began
            per_chunk.append(backend.scan_subset(db, chunk, queries, subjects, top))
            bar.update(chunk.n_residues * len(queries))
    elif scan is not None:  # the backend schedules chunks itself (several GPUs, prefetch)
        per_chunk = scan(db, selected, queries, top, on_chunk=lambda c: bar.update(c.n_residues * len(queries)), score_stats=hist)
    else:
        per_chunk = []
        for chunk in selected:
            per_chunk.append(backend.scan_chunk(db, chunk, queries, top, score_stats=hist))
            bar.update(chunk.n_residues * len(queries))
    for per_query in per_chunk:
        for lst, cand in zip(found, per_query):
            lst.append(cand)
    bar.close()
    seconds = time.perf_counter() - started
    hits = []
    for query, lst in zip(queries, found):
        subjects = np.concatenate([c[0] for c in lst]) if lst else np.zeros(0, np.int64)
        scores = np.concatenate([c[1] for c in lst]) if lst else np.zeros(0, np.int32)
        subjects, scores = select_top(db, subjects, scores, top)
        hits.append(QueryHits(query, subjects, scores))
    cells = sum(len(q) for q in queries) * sum(c.n_residues for c in selected)
    devices = tuple(getattr(backend, "device_ids", ()))
    if seeder is None:
        return SearchResult(db, scoring, backend.name, hits, seconds, cells, hist, devices=devices)
    from .seed import SeedRun

    seed = SeedRun(seeder.params, dict(seeder.counts), seed_seconds)
    return SearchResult(db, scoring, backend.name, hits, seconds, cells, None, seed=seed, devices=devices)
