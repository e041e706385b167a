"""The align-long pipeline as functions: read, scan sections, select end points, trace back.

The command (:mod:`swgpu_core.commands.align_long`) and the tests call these; the output
writers of :mod:`swgpu_core.formats` take the single target through :class:`TargetView`,
which answers the few questions they ask a database. The scan and the traceback run on
an engine (:mod:`swgpu_core.engine`), given as one or by name (``cpu``, ``cuda``, ``auto``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..align.alignment import Alignment, build_alignments
from ..alphabet import Alphabet
from ..engine import Engine, get_engine
from ..errors import InputError
from ..fasta import EncodedSequence, encode_single, read_single_record
from ..scoring import Scoring
from .endpoints import BandKeys, BandRule, EndPoint, check_limits, merge, select
from .sections import Section, SectionResult


def read_single(path: str | os.PathLike, alphabet: Alphabet, what: str) -> EncodedSequence:
    """The one record of ``path``; more than one is refused (one alignment, one target)."""
    path = os.fspath(path)
    record = read_single_record(path)  # the file in one piece: targets of 10^8 residues and more
    if record.second is not None:
        raise InputError(f"{path}: the {what} must be a single FASTA record (record 2 is {record.second}); align-long aligns one pair")
    return EncodedSequence(record.id, record.description, encode_single(path, record, alphabet))


@dataclass(frozen=True)
class TargetView:
    """The target seen as a one-sequence database by the output writers."""

    path: str
    target: EncodedSequence
    alphabet: Alphabet

    version_tag = "single-target"
    n_sequences = 1

    @property
    def n_residues(self) -> int:
        return len(self.target)

    @property
    def lengths(self) -> np.ndarray:
        return np.array([len(self.target)], np.int32)

    @property
    def order(self) -> np.ndarray:
        return np.zeros(1, np.int64)

    def header(self, i: int) -> tuple[str, str]:
        return self.target.id, self.target.description

    def headers(self, indices: Sequence[int]) -> list[tuple[str, str]]:
        return [self.header(i) for i in indices]

    def seq_id(self, i: int) -> str:
        return self.target.id


def check_inputs(query: EncodedSequence, target: EncodedSequence, scoring: Scoring, rule: BandRule) -> None:
    check_limits(len(query), len(target), rule.width, scoring.max_score, scoring.first_gap_cost)


def scan_sections(
    query: np.ndarray,
    target: np.ndarray,
    sections: Sequence[Section],
    rule: BandRule,
    scoring: Scoring,
    engine: str | Engine = "cpu",
    devices: Sequence[int] = (0,),
    gpu_sections: int | None = None,
) -> list[SectionResult]:
    """Scan each section: on the CPU one after the other, on GPUs one thread per device.

    On a GPU each section is cut into ``gpu_sections`` parts overlapping as the sections do
    (None: as many as keep the GPU busy, :func:`.gpu_plan.auto_parts`) that run side by
    side; a short query's scan would leave most of the GPU idle otherwise.
    """
    return get_engine(engine).scan_sections(query, target, sections, rule, scoring, devices=devices, parts=gpu_sections)


def end_points(results: Sequence[BandKeys], rule: BandRule, top: int) -> list[EndPoint]:
    """The ``top`` distinct end points of the merged section results."""
    return select(merge(list(results)), rule, top)


def alignments(
    query: EncodedSequence,
    target: EncodedSequence,
    ends: Sequence[EndPoint],
    scoring: Scoring,
    max_length: int,
    threads: int = 0,
    engine: str | Engine = "cpu",
    devices: Sequence[int] = (0,),
) -> list[Alignment]:
    """Full alignments of ``ends``, ranked as given (rank 1 = best), traced on ``engine`` (its GPUs: ``devices``)."""
    traces = get_engine(engine).trace_end_points(query.codes, target.codes, ends, scoring, max_length, threads=threads, devices=devices)
    n = len(traces)
    return build_alignments(traces, [query] * n, [target] * n, [0] * n, range(1, n + 1), scoring, threads=threads)
