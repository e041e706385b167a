"""Cutting the target into sections that are scanned independently (GPUs, processes, jobs).

Section ``k`` of ``n`` *owns* target columns ``[own_lo, own_hi)`` and scans from
``scan_lo = own_lo - overlap``: the left part of every section starts from zeros, which
is wrong only for alignments that began before ``scan_lo``, so with an overlap at least
as long as any alignment, every owned cell has its exact value (Khajeh-Saeed & Perot's
overlapping search). Cells in the overlap are taken from the section on the left, so
each cell is counted by exactly one section. Boundaries are multiples of
:data:`~swgpu_core.long.endpoints.GROUP`, so the segments that define the bands never
straddle two sections.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from ..scoring import Scoring
from .endpoints import GROUP, BandKeys


def max_alignment_span(query_length: int, scoring: Scoring) -> int:
    """The most target (or query) residues a local alignment of positive score can span.

    The default ``--max-alignment-length``: with it no alignment is too long for the
    section overlap or the traceback window, so a default run never stops with "raise it".

    Why it is a bound: let the alignment pair ``k`` query residues with target residues,
    leave ``d`` query residues and ``i`` target residues against gaps, and let ``M`` be the
    largest substitution score. Each substitution scores at most ``M``; the gaps cost at
    least ``open`` (there is one when ``i + d > 0``) plus ``extend`` per gapped residue (BLAST
    convention, a gap of length ``L`` costs ``open + L * extend``). So a score ``S >= 1`` needs
    ``1 <= S <= k*M - open - extend*(i + d)`` when ``i > 0``, that is
    ``i <= (k*M - 1 - open) / extend``. The target span is ``k + i`` and ``k <= m``, the query
    length, so it is at most ``m + floor((m*M - 1 - open) / extend)``; the query span
    ``k + d <= m`` is smaller. Over 10^8 target columns, the overlap this costs per section
    (or GPU part) is below 1% for queries up to 10^5 (DNA 5/-3, gaps 8/1: six times the
    query length).
    """
    top = int(scoring.matrix.max())
    if top <= 0:
        return query_length  # no alignment scores above 0
    return query_length + max(0, (query_length * top - 1 - scoring.gap_open) // scoring.gap_extend)


@dataclass(frozen=True)
class Section:
    """0-based target columns: scanned ``[scan_lo, own_hi)``, owned ``[own_lo, own_hi)``.

    ``overlap`` is the ``--max-alignment-length`` the sections were laid out with: cutting
    a section further (:func:`split`) must keep that promise, so the section carries it.
    """

    index: int
    count: int
    scan_lo: int
    own_lo: int
    own_hi: int
    overlap: int

    @property
    def scanned(self) -> int:
        """Columns scanned, the overlap included."""
        return self.own_hi - self.scan_lo

    @property
    def owned(self) -> int:
        """Columns owned: the cells this section reports."""
        return self.own_hi - self.own_lo


@dataclass(frozen=True)
class SectionResult:
    """One section's band keys and scan: time, cells scanned (overlaps included) and owned,
    the device (None on the CPU) and the parts a GPU cut it into."""

    section: Section
    found: BandKeys
    seconds: float
    device: int | None
    cells: int
    owned_cells: int
    parts: int


def layout(n: int, count: int, overlap: int) -> list[Section]:
    """``count`` sections of a target of ``n`` columns with (at least) ``overlap`` columns of overlap."""
    if overlap < 0:
        raise InputError(f"--max-alignment-length must be >= 0 (got {overlap})")
    return split(Section(0, 1, 0, 0, n, overlap), count)


def split(section: Section, count: int) -> list[Section]:
    """``section``'s owned columns cut into ``count`` sections, each scanning its overlap more on its left.

    The same cut as across GPUs, applied inside one (:mod:`.gpu_plan`): the first part
    scans from ``section.scan_lo`` as the whole section would, the others from
    ``section.overlap`` (rounded up to a segment) before their own columns but never
    before ``section.scan_lo``, so together they own exactly ``section``'s cells and scan
    nothing it does not.
    """
    if count < 1:
        raise InputError(f"section count must be >= 1 (got {count})")
    pad = -(-section.overlap // GROUP) * GROUP
    cuts = [section.own_lo + (section.owned * k // count) // GROUP * GROUP for k in range(count)] + [section.own_hi]
    scan_lo = [section.scan_lo] + [max(section.scan_lo, cut - pad) for cut in cuts[1:-1]]
    return [Section(k, count, scan_lo[k], cuts[k], cuts[k + 1], section.overlap) for k in range(count)]


def parse_section(text: str) -> tuple[int, int]:
    """``"i/n"`` (0-based ``i``) as ``(i, n)``; a one-line error otherwise."""
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise InputError(f"--section {text!r}: expected i/n, e.g. 0/4") from None
    if n < 1 or not 0 <= i < n:
        raise InputError(f"--section {text!r}: need 0 <= i < n")
    return i, n
