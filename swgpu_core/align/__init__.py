"""Traceback of search hits into full local alignments (see ``docs/traceback.md``)."""

from .alignment import Alignment, build_alignment
from .hits import AlignedHits, align_query_hits
from .traceback import PairTask, PairTrace, TracebackError, trace_pair, traceback_pairs

__all__ = [
    "AlignedHits",
    "Alignment",
    "PairTask",
    "PairTrace",
    "TracebackError",
    "align_query_hits",
    "build_alignment",
    "trace_pair",
    "traceback_pairs",
]
