"""Traceback of search hits into full local alignments (see ``docs/traceback.md``)."""

from .alignment import Alignment, btops, build_alignment, build_alignments
from .hits import AlignedHits, align_query_hits
from .traceback import PairTask, PairTrace, TracebackError, trace_pair, traceback_pairs

__all__ = [
    "AlignedHits",
    "Alignment",
    "PairTask",
    "PairTrace",
    "TracebackError",
    "align_query_hits",
    "btops",
    "build_alignment",
    "build_alignments",
    "trace_pair",
    "traceback_pairs",
]
