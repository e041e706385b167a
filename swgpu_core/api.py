"""The public Python API: what ``import swgpu_core as sw`` offers (see ``docs/api.md``).

Every function takes plain values (paths, numbers, strings, the objects returned here)
and returns typed results; the ``swgpu`` commands are thin clients of these functions.
The choice of compute backend (``"auto" | "cpu" | "cuda"``) is passed through to one call
per product: :func:`search` (database scan), :func:`align` (traceback of hits),
:func:`align_pairs` and :func:`align_long`.

A run reads top to bottom::

    db = sw.build_database("proteins.fasta.gz", "db")        # or sw.open_database("db")
    queries = sw.read_queries("queries.fasta")
    scoring = sw.Scoring.protein("BLOSUM62", 11, 1)
    result = sw.search(db, queries, scoring, top=50)          # SearchResult: hits per query
    stats = result.statistics                                 # E-values from scores (stats_mode="auto")
    hits = sw.select_hits(db, result.hits, stats, max_evalue=1e-3)
    aligned = sw.align(db, hits, scoring, statistics=stats)   # AlignedHits: Alignment records
    sw.write_results("hits.bam", sw.Results(db, hits, aligned.alignments, stats, scoring.describe()))
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .alphabet import DNA, PROTEIN, Alphabet
from .database import DEFAULT_CHUNK_RESIDUES, Database
from .device_batches import seeded_order
from .errors import InputError
from .fasta import EncodedSequence
from .formats import FORMATS, Results, choose_format, write_results
from .gpu_choice import device_count, long_device_count
from .outfmt import DEFAULT_OUTFMT, FIELDS, STANDARD_FIELDS, parse_outfmt
from .progress import load as load_progress
from .scoring import Scoring
from .search import QueryHits, SearchResult
from .seed import FAST_NO_FIT, SEARCH_MODES, SeedParams
from .significance import (
    DEFAULT_MAX_EVALUE,
    NO_STATISTICS,
    STATS_MODES,
    NoStatistics,
    Statistics,
    filter_hits,
    hit_significance,
    saved_statistics,
    statistics,
)  # fmt: skip

if TYPE_CHECKING:
    from .align import AlignedHits, Alignment
    from .engine import Engine
    from .pairs import PairSet

__all__ = [  # the package's __all__ (swgpu_core/__init__.py) is the same list: tests/test_api.py checks it
    "DEFAULT_CHUNK_RESIDUES", "DEFAULT_MAX_EVALUE", "DEFAULT_OUTFMT", "DNA", "FIELDS", "FORMATS", "NO_STATISTICS", "PROTEIN", "SEARCH_MODES",
    "STANDARD_FIELDS", "STATS_MODES", "AlignedHits", "Alignment", "Alphabet", "Database", "EncodedSequence", "LongResult", "LongScan", "PairSet", "QueryHits",
    "Results", "Scoring", "SearchResult", "SeedParams", "Statistics", "align", "align_long", "align_pairs", "build_database", "choose_format",
    "fasta_pairs", "filter_hits", "hit_significance", "open_database", "parse_outfmt", "read_queries", "read_sequence", "saved_statistics",
    "scan_long", "search", "select_hits", "statistics", "table_pairs", "trace_long", "write_results",
]  # fmt: skip


def build_database(
    fasta: str | os.PathLike, directory: str | os.PathLike, *, chunk_residues: int = DEFAULT_CHUNK_RESIDUES, show_progress: bool = False
) -> Database:
    """Build the length-sorted on-disk database of a FASTA[.gz] file; the directory appears only when complete."""
    from .database import build_database as build

    return build(fasta, directory, chunk_residues=chunk_residues, show_progress=show_progress)


def open_database(directory: str | os.PathLike) -> Database:
    """Open a database built by :func:`build_database` (or ``swgpu makedb``)."""
    return Database(directory)


def read_queries(path: str | os.PathLike, alphabet: Alphabet = PROTEIN) -> list[EncodedSequence]:
    """Every record of a FASTA[.gz] file, checked and encoded."""
    from .fasta import read_sequences

    return read_sequences(path, alphabet)


def check_ahead(db: Database, chunks: Sequence[int] | None = None, mode: str = "exact") -> list[int]:
    """Begin the background check of the residues a search of ``chunks`` (None: all) in
    ``mode`` will upload first, in the order its scan takes them
    (:meth:`~swgpu_core.database.Database.verify_ahead`; a fast search from the longest
    subjects down); the chunks it searches. :func:`search` calls it; a caller that opens the
    database well before (the command line, before it waits for CuPy) calls it as soon as it
    has, and the search finds it started.

    Why as soon as possible: the check is on a search's path wherever its first batch cannot
    be uploaded before it (about 0.1 s per 200 M residues; up to 1 G residues are checked
    ahead, VERIFY_AHEAD_RESIDUES). Started by the search, it began only once CuPy was
    imported; started here, it begins about 0.15-0.2 s sooner, while CUDA initialises, and
    on 2 x H200 no longer runs beside the making of the first GPU's context (0.09 s alone,
    0.12-0.19 s beside the check in the runs traced). For bench200M x 500 that gained no
    measurable time: 7.132 against 7.151 s on two GPUs, 13.111 against 13.109 s on one, in
    A/B runs whose order was balanced (bench/RESULTS.md, twenty-third session; the larger
    gains of the twenty-second session's fixed-order runs were the order's). It is kept
    because the check has to come before the first scan, and wherever the check takes
    longer than CUDA's start (larger first batches), starting it sooner shortens the wait."""
    searched = list(chunks) if chunks is not None else list(range(len(db.chunks)))
    db.verify_ahead(seeded_order(searched) if mode == "fast" else searched)
    return searched


def search(
    db: Database,
    queries: Sequence[EncodedSequence] | str | os.PathLike,
    scoring: Scoring | None = None,
    *,
    backend: str | Engine = "auto",
    top: int = 50,
    chunks: Sequence[int] | None = None,
    threads: int = 0,
    devices: Sequence[int] | None = None,
    threshold: int | None = None,
    memory_budget: int | None = None,
    show_progress: bool = False,
    stats_mode: str = "auto",
    lam: float | None = None,
    kappa: float | None = None,
    keep_score_stats: bool | None = None,
    mode: str = "exact",
    seed_params: SeedParams | None = None,
) -> SearchResult:
    """Exact Smith-Waterman scores of ``queries`` (records, or a FASTA path) against ``db``; the ``top`` hits per query.

    ``mode``: ``"exact"`` scores every subject; ``"fast"`` scores only the subjects a
    seeding stage finds (spaced seeds in a reduced alphabet, ungapped X-drop
    extension; ``seed_params``, default :class:`~swgpu_core.seed.SeedParams`), so each hit has
    the exact mode's score, alignment and E-value (E-values for the whole database) and the
    hits are the exact top ``top`` among the candidates: the fast mode can only miss hits
    (``docs/seeded.md`` has its measured recall). It keeps no score histograms, so its
    E-values come from BLAST's parameters or ``lam``/``kappa`` (a fit is impossible:
    ``result.statistics`` says so).

    ``result.statistics`` are the hits' E-values (:func:`statistics`): ``stats_mode``
    ``"auto"`` (BLAST's parameters, or ``lam``/``kappa``, where there are any, else each
    query's fit to this search's scores), ``"blast"`` or ``"fit"``. A search of some
    ``chunks`` has no fit (its scores are not the database's): merge the saved hit lists
    and ask :func:`saved_statistics`.

    ``backend``: ``"cpu"``, ``"cuda"``, ``"auto"`` (CUDA when usable, else CPU; why not is
    ``swgpu_core.engine.resolve(...).reason``) or an engine. ``chunks``: scan only these chunks (for hit lists merged
    later). ``threads`` (CPU, 0 = all cores), ``devices``, ``threshold`` and
    ``memory_budget`` (bytes of GPU memory per device) tune the backends. ``devices`` None:
    as many of the visible GPUs as the search's work pays for
    (:func:`~swgpu_core.gpu_choice.device_count`).

    ``keep_score_stats``: count every score into its query's histogram (what a fit needs;
    ``result.score_stats``, saved with the hit lists). None: when this search fits, or when
    it scans some ``chunks`` (their hit lists may be merged and fitted later); the counting
    costs time that BLAST's statistics do not need.
    """
    from .engine import CudaEngine, get_engine
    from .search import check_search_options
    from .search import search as run_search
    from .stats import choose_statistics

    check_search_options(top, threads, threshold, mode)
    scoring = scoring if scoring is not None else Scoring.protein()
    no_fit = FAST_NO_FIT if mode == "fast" else None
    kind, _, _ = choose_statistics(scoring, stats_mode, lam, kappa, no_fit=no_fit)  # an impossible choice fails before the scan
    if keep_score_stats is None:
        keep_score_stats = kind == "fit" or chunks is not None
    ahead = check_ahead(db, chunks, mode)
    if isinstance(queries, (str, os.PathLike)):
        queries = read_queries(queries, db.alphabet)
    queries = list(queries)
    engine = get_engine(backend)
    device_list = list(devices) if devices is not None else None
    if device_list is None and isinstance(engine, CudaEngine):  # as many GPUs as the work pays for
        visible = engine.devices(None)
        cells = sum(len(q) for q in queries) * sum(db.chunks[c].n_residues for c in ahead)
        device_list = visible[: device_count(mode, cells, len(visible))]
    if show_progress:
        load_progress()  # while the GPU is still being set up (the scanner waits for it), not after
    scanner = engine.scanner(scoring, threads=threads, devices=device_list, threshold=threshold, memory_budget=memory_budget)
    seeder = (
        engine.seeder(scoring, queries, seed_params if seed_params is not None else SeedParams(), threads=threads, devices=device_list)
        if mode == "fast"
        else None
    )
    result = run_search(
        db, queries, scoring, scanner, top=top, chunks=list(chunks) if chunks is not None else None, show_progress=show_progress,
        score_stats=keep_score_stats, seeder=seeder,
    )  # fmt: skip
    result.statistics = statistics(
        scoring, db, stats_mode=stats_mode, lam=lam, kappa=kappa, histograms=result.score_stats, query_lengths=[len(q) for q in queries],
        no_fit=no_fit,
    )  # fmt: skip
    return result


def select_hits(
    db: Database, hits: Sequence[QueryHits], stats: Statistics, *, max_evalue: float | None = DEFAULT_MAX_EVALUE, limit: int | None = None
) -> list[QueryHits]:
    """Each query's hits with E-value <= ``max_evalue`` (BLAST's default 10), at most ``limit``; no traceback.

    ``stats``: ``result.statistics`` of :func:`search`, or :func:`statistics`/:func:`saved_statistics`.
    """
    return filter_hits(hits, stats, db, max_evalue, limit)


def align(
    db: Database,
    hits: Sequence[QueryHits],
    scoring: Scoring,
    *,
    backend: str = "auto",
    statistics: Statistics = NO_STATISTICS,
    limit: int | None = None,
    max_evalue: float | None = None,
    threads: int = 0,
    device: int | None = None,
) -> AlignedHits:
    """Full alignments (traceback) of the given hits: per query, one :class:`Alignment` per hit, in order.

    ``limit`` and ``max_evalue`` first select the hits (as :func:`select_hits`); E-values
    and bit scores of the alignments come from ``statistics``. ``threads``: CPU cores of
    the CPU engine's traceback and of the records (0: all this process may use). ``device``:
    the GPU of the GPU engine's traceback (None: the current one); a search's
    ``result.devices[0]`` traces its hits on a GPU it was allowed to use. One GPU, even after
    a search on several: the
    GPU traces a search's hits in about 6 us each (H200), the records take several times
    that on the CPU after it, and a second GPU gained nothing (bench/RESULTS.md, twenty-sixth session).
    After the search, not during it: tracing each query's hits while the other queries
    scanned (eed5f3d) slowed the scan by more than it hid, 2.7 s for 1.6 s on bench200M x 500,
    as any GPU work beside the scan's kernels does, and Python work beside the thread that
    drives them too (twenty-seventh session).
    """
    from .align.hits import align_query_hits

    return align_query_hits(
        db, hits, scoring, limit, backend=backend, statistics=statistics, max_evalue=max_evalue, threads=threads, device=device
    )


def fasta_pairs(query_path: str | os.PathLike, subject_path: str | os.PathLike, alphabet: Alphabet = PROTEIN) -> PairSet:
    """Pairs from two FASTA files read in step: record k of one with record k of the other."""
    from .pairs import fasta_pairs as pairs_of

    return pairs_of(os.fspath(query_path), os.fspath(subject_path), alphabet)


def table_pairs(table: str | os.PathLike, db: Database, query_path: str | os.PathLike | None = None) -> PairSet:
    """Pairs named by a ``query_id subject_id`` table; subjects (and, without ``query_path``, queries) from ``db``."""
    from .pairs import table_pairs as pairs_of

    return pairs_of(os.fspath(table), db, os.fspath(query_path) if query_path is not None else None)


def align_pairs(pairs: PairSet, scoring: Scoring, *, backend: str = "auto", statistics: Statistics = NO_STATISTICS) -> tuple[Results, str]:
    """Align each pair on its own; the results and the backend used.

    E-values: each pair its own search space, ``statistics(scoring)`` (no database: BLAST's
    parameters or the given ``lam``/``kappa``; no fit).
    """
    from .pairs import align_pair_set

    hits, alignments, used = align_pair_set(pairs, scoring, backend, statistics)
    return Results(pairs.subjects, hits, alignments, statistics, scoring.describe(), "swgpu pairs", statistics.description), used


@dataclass
class LongScan:
    """The band end points of an align-long scan (one :class:`~swgpu_core.long.endpoints.BandKeys` per section) and its numbers."""

    found: list
    backend: str
    seconds: float  # the slowest section's
    cells: int  # cells the sections own (each cell once)
    extra_cells: int  # cells scanned twice where sections overlap
    parts: int  # GPU parts per section (1 on the CPU)
    sections: list
    devices: list[int]  # the GPUs that scanned, one section each (none on the CPU); the traceback takes them too


@dataclass
class LongResult:
    """The alignments of :func:`align_long`, best first, and the scan that found them."""

    results: Results
    scan: LongScan

    @property
    def alignments(self) -> list[Alignment]:
        return list(self.results.alignments[0])


def read_sequence(path: str | os.PathLike, alphabet: Alphabet, what: str = "sequence") -> EncodedSequence:
    """The single record of a FASTA file (``what`` names it in errors: a second record is refused)."""
    from .long.run import read_single

    return read_single(path, alphabet, what)


def scan_long(
    query: EncodedSequence,
    target: EncodedSequence,
    scoring: Scoring,
    *,
    band_width: int | None = None,
    max_alignment_length: int | None = None,
    backend: str | Engine = "auto",
    devices: Sequence[int] | None = None,
    gpu_sections: int | None = None,
    section: tuple[int, int] | None = None,
) -> LongScan:
    """The exact scan of align-long: the best end point of every diagonal band.

    The target is cut into sections overlapping by ``max_alignment_length``: one per device
    on the GPU (one on the CPU), or, with ``section=(i, n)``, only section ``i`` of ``n``
    (for scans spread over processes and merged by :func:`trace_long`). Default: the
    longest a positive-scoring alignment of the query can be (:func:`~.long.sections.max_alignment_span`).
    ``devices`` None: as many of the visible GPUs as the scan's size pays for
    (:func:`~swgpu_core.gpu_choice.long_device_count`), the first one for a ``section``.
    """
    from .engine import CudaEngine, get_engine
    from .long.endpoints import DEFAULT_BAND_WIDTH, BandRule
    from .long.run import check_inputs, scan_sections
    from .long.sections import layout, max_alignment_span

    if max_alignment_length is None:
        max_alignment_length = max_alignment_span(len(query), scoring)

    rule = BandRule(len(query), DEFAULT_BAND_WIDTH if band_width is None else band_width)
    check_inputs(query, target, scoring, rule)
    engine = get_engine(backend)
    used = engine.kind
    if not isinstance(engine, CudaEngine):
        device_list = []
    elif devices is not None:
        device_list = list(devices)
    else:  # as many GPUs as the work pays for
        visible = engine.devices(None)
        device_list = visible[: 1 if section is not None else long_device_count(len(query) * len(target), len(visible))]
    if section is not None:
        index, count = section
        sections = [layout(len(target), count, max_alignment_length)[index]]
    else:
        sections = layout(len(target), max(len(device_list), 1), max_alignment_length)
    scanned = scan_sections(query.codes, target.codes, sections, rule, scoring, engine, device_list or [0], gpu_sections)
    cells = sum(r.owned_cells for r in scanned)
    return LongScan(
        [r.found for r in scanned], used, max(r.seconds for r in scanned), cells, sum(r.cells for r in scanned) - cells,
        max(r.parts for r in scanned), sections, device_list[: len(sections)],
    )  # fmt: skip


def trace_long(
    query: EncodedSequence,
    target: EncodedSequence,
    found: Sequence,
    scoring: Scoring,
    *,
    top: int = 10,
    band_width: int | None = None,
    max_alignment_length: int | None = None,
    backend: str | Engine = "auto",
    threads: int = 0,
    target_path: str = "-",
    devices: Sequence[int] | None = None,
) -> Results:
    """The ``top`` best distinct end points of scanned sections (``found``, every section once), traced into alignments.

    The target is the writers' one-sequence database (``target_path`` names it in headers).
    ``devices``: the GPUs of a GPU traceback, which share the end points (None: the first
    visible one; :func:`align_long` passes those of its scan).
    """
    from .engine import get_engine
    from .long.endpoints import DEFAULT_BAND_WIDTH, BandRule
    from .long.run import end_points
    from .long.sections import max_alignment_span

    if max_alignment_length is None:
        max_alignment_length = max_alignment_span(len(query), scoring)
    if top < 1:
        raise InputError(f"--top must be >= 1 (got {top})")
    rule = BandRule(len(query), DEFAULT_BAND_WIDTH if band_width is None else band_width)
    ends = end_points(list(found), rule, top)
    return long_results(query, target, target_path, ends, scoring, max_alignment_length, threads, get_engine(backend), devices or (0,))


def align_long(
    query: EncodedSequence | str | os.PathLike,
    target: EncodedSequence | str | os.PathLike,
    scoring: Scoring,
    *,
    top: int = 10,
    band_width: int | None = None,
    max_alignment_length: int | None = None,
    backend: str | Engine = "auto",
    devices: Sequence[int] | None = None,
    gpu_sections: int | None = None,
    threads: int = 0,
) -> LongResult:
    """One long query against one long target: the ``top`` best distinct local alignments.

    ``query``/``target`` are records or one-record FASTA paths (alphabet of ``scoring``);
    :func:`scan_long` then :func:`trace_long`, on the GPUs the scan took (``devices``, or
    None: as many as its size pays for). See ``docs/align_long.md`` for the end-point rule
    and ``band_width``.
    """
    from .engine import get_engine

    target_path = os.fspath(target) if isinstance(target, (str, os.PathLike)) else "-"
    if isinstance(query, (str, os.PathLike)):
        query = read_sequence(query, scoring.alphabet, "query")
    if isinstance(target, (str, os.PathLike)):
        target = read_sequence(target, scoring.alphabet, "target")
    engine = get_engine(backend)  # resolved once: the traceback runs where the scan ran
    scan = scan_long(
        query, target, scoring, band_width=band_width, max_alignment_length=max_alignment_length, backend=engine, devices=devices,
        gpu_sections=gpu_sections,
    )  # fmt: skip
    results = trace_long(
        query, target, scan.found, scoring, top=top, band_width=band_width, max_alignment_length=max_alignment_length,
        backend=engine, threads=threads, target_path=target_path, devices=scan.devices,
    )  # fmt: skip
    return LongResult(results, scan)


def long_results(
    query: EncodedSequence, target: EncodedSequence, target_path: str, ends: Sequence, scoring: Scoring, max_alignment_length: int,
    threads: int = 0, backend: str | Engine = "cpu", devices: Sequence[int] = (0,),
) -> Results:  # fmt: skip
    """Trace the chosen end points of an align-long scan into :class:`Results` (the target as a one-sequence database)."""
    from .long.run import TargetView, alignments

    alns = alignments(query, target, ends, scoring, max_alignment_length, threads, backend, devices)
    hits = [QueryHits(query, np.zeros(len(alns), np.int64), np.array([a.score for a in alns], np.int32))]
    view = TargetView(target_path, target, scoring.alphabet)
    none = NoStatistics("no E-values: align-long reports raw scores of one query against one target (no database statistics)")
    return Results(view, hits, [alns], none, scoring.describe(), "swgpu align-long")


def __getattr__(name: str) -> object:
    """The result types of modules that import numba (alignments) load when first asked for."""
    if name in ("Alignment", "AlignedHits"):
        import importlib

        return getattr(importlib.import_module("swgpu_core.align"), name)
    if name == "PairSet":
        from .pairs import PairSet

        return PairSet
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
