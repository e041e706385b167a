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
from .endpoints import GROUP


@dataclass(frozen=True)
class Section:
    """0-based target columns: scanned ``[scan_lo, own_hi)``, owned ``[own_lo, own_hi)``."""

    index: int
    count: int
    scan_lo: int
    own_lo: int
    own_hi: int


def layout(n: int, count: int, overlap: int) -> list[Section]:
    """``count`` sections of a target of ``n`` columns with (at least) ``overlap`` columns of overlap."""
    if count < 1:
        raise InputError(f"section count must be >= 1 (got {count})")
    if overlap < 0:
        raise InputError(f"--max-alignment-length must be >= 0 (got {overlap})")
    pad = -(-overlap // GROUP) * GROUP
    cuts = [min(n, (n * k // count) // GROUP * GROUP) for k in range(count)] + [n]
    return [Section(k, count, max(0, cuts[k] - pad), cuts[k], cuts[k + 1]) for k in range(count)]


def parse_section(text: str) -> tuple[int, int]:
    """``"i/n"`` (0-based ``i``) as ``(i, n)``; a one-line error otherwise."""
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise InputError(f"--section {text!r}: expected i/n, e.g. 0/4") from None
    if n < 1 or not 0 <= i < n:
        raise InputError(f"--section {text!r}: need 0 <= i < n")
    return i, n
