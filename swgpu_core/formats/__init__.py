"""The one output path: BLAST tabular, SAM, BAM, JSON lines and a pairwise text view.

Every command (search, merge, align, pairs, align-long) and the API hand a
:class:`Results` to :func:`write_results`. The format is ``format`` when given, else the
output file's extension (``.sam``, ``.bam``, ``.jsonl``/``.json``, ``.txt``/``.pairwise``),
else BLAST tabular per ``outfmt`` (:mod:`swgpu_core.outfmt`). Tables of scores and
E-values need only hits; every other format, and tabular alignment fields, need the
hits' alignments (:func:`needs_alignments` says so before any work starts).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from .. import collector
from ..atomic import atomic_output, check_output_path
from ..errors import InputError
from ..outfmt import DEFAULT_OUTFMT, OutFormat, parse_outfmt, write_table
from ..significance import NO_STATISTICS, Statistics, require_statistics

if TYPE_CHECKING:
    import numpy as np

    from ..align import Alignment
    from ..search import QueryHits

FORMATS = ("tsv", "sam", "bam", "jsonl", "pairwise")
_EXTENSIONS = {".sam": "sam", ".bam": "bam", ".jsonl": "jsonl", ".json": "jsonl", ".txt": "pairwise", ".pairwise": "pairwise"}


class Subjects(Protocol):
    """What the writers ask of the sequences hits point into: a :class:`~swgpu_core.database.Database`,
    the subjects of pairs (:class:`~swgpu_core.pairs.SubjectSet`) or align-long's target (:class:`~swgpu_core.long.run.TargetView`)."""

    path: object
    version_tag: str

    @property
    def lengths(self) -> np.ndarray: ...

    @property
    def order(self) -> np.ndarray: ...

    @property
    def n_residues(self) -> int: ...

    @property
    def n_sequences(self) -> int: ...

    def header(self, i: int) -> tuple[str, str]: ...

    def headers(self, indices: Sequence[int]) -> list[tuple[str, str]]: ...

    def seq_id(self, i: int) -> str: ...


@dataclass
class Results:
    """What the writers need: per query its hits (best first) and, when traced, their alignments.

    ``db`` is the database searched (or, for pairs and align-long, an object answering the
    same questions: ``header(i)``, ``headers(indices)``, ``seq_id(i)``, ``lengths``, ``order``, ``path``,
    ``version_tag``, ``alphabet``). ``alignments[q][k]`` is the alignment of
    ``hits[q]``'s k-th hit; ``statistics`` give the E-values of tables (for pairs, each
    pair its own search space: :func:`~swgpu_core.significance.statistics` with no database).
    """

    db: Subjects
    hits: Sequence[QueryHits]
    alignments: Sequence[Sequence[Alignment]] | None = None
    statistics: Statistics = NO_STATISTICS
    scoring: str = ""
    program: str = "swgpu"
    note: str = ""

    @property
    def queries(self) -> list:
        return [qh.query for qh in self.hits]


def choose_format(path: str | os.PathLike, explicit: str | None = None) -> str:
    """The output format: ``explicit``, else from the extension of ``path`` (default tsv)."""
    if explicit is not None:
        if explicit not in FORMATS:
            raise InputError(f"--format {explicit!r}: choose one of {', '.join(FORMATS)}")
        return explicit
    name = os.fspath(path).lower()
    if name.endswith(".gz"):
        raise InputError(f"{path}: compressed output is not supported; write plain files and compress them")
    return _EXTENSIONS.get(os.path.splitext(name)[1], "tsv")


@dataclass(frozen=True)
class Output:
    """One output file and its format (``table``: the parsed ``--outfmt``, tsv only)."""

    path: str
    kind: str
    table: OutFormat | None = None

    @property
    def needs_alignments(self) -> bool:
        return self.kind != "tsv" or self.table.needs_alignment

    @property
    def needs_statistics(self) -> bool:
        """A table with ``evalue`` or ``bitscore`` (other formats carry E-values when there are some)."""
        return self.kind == "tsv" and self.table.needs_statistics


def plan_output(path: str | os.PathLike, format: str | None = None, outfmt: str = DEFAULT_OUTFMT) -> Output:
    """Check an output request before any work: its format, for tables the fields, and that it can be written."""
    kind = choose_format(path, format)
    check_output_path(path)
    return Output(os.fspath(path), kind, parse_outfmt(outfmt) if kind == "tsv" else None)


def needs_alignments(outputs: Sequence[Output]) -> bool:
    return any(o.needs_alignments for o in outputs)


def check_statistics(outputs: Sequence[Output], stats: Statistics) -> None:
    """Refuse, before any traceback, tables whose E-value columns these statistics cannot fill."""
    if any(o.needs_statistics for o in outputs):
        require_statistics(stats, "--outfmt evalue/bitscore")


def write_results(
    path: str | os.PathLike, results: Results, *, format: str | None = None, outfmt: str | OutFormat = DEFAULT_OUTFMT
) -> None:
    """Write ``results`` to ``path`` (``-``: standard output) in the chosen format, atomically."""
    out = plan_output(path, format, outfmt) if isinstance(outfmt, str) else Output(os.fspath(path), choose_format(path, format), outfmt)
    write_output(out, results)


def write_output(out: Output, results: Results) -> None:
    """Write one planned :class:`Output`; the garbage collector paused meanwhile
    (:func:`swgpu_core.collector.paused`: the lines hold no cycles)."""
    with collector.paused():
        _write(out, results)


def _write(out: Output, results: Results) -> None:
    if out.needs_alignments and results.alignments is None:
        raise InputError(f"{out.path}: {out.kind} output needs alignments: align the hits first")
    if out.kind in ("sam", "bam"):
        from .sam import write_bam, write_sam

        (write_bam if out.kind == "bam" else write_sam)(out.path, results.db, results.queries, results.alignments, results.scoring)
        return
    with atomic_output(out.path) as fh:
        if out.kind == "tsv":
            write_table(
                fh, out.table, results.db, results.hits, results.statistics,
                alignments=results.alignments, program=results.program,
            )  # fmt: skip
        elif out.kind == "jsonl":
            from .text import write_jsonl

            write_jsonl(fh, results.alignments)
        else:
            from .text import write_pairwise

            write_pairwise(fh, results.db, results.queries, results.alignments, results.scoring, results.note)
