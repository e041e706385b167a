"""Distinct end points of one huge alignment table: the diagonal-band rule.

A huge table has millions of cells with a positive score around every good alignment
(its prefixes, its extensions, and "shadows": the alignment followed by a long gap), so
"the 200 best cells" would be 200 copies of one alignment. The rule, identical on every
backend (``docs/align_long.md``):

1. **Bands.** The target columns are cut into segments of :data:`GROUP` columns (the
   columns one GPU lane holds). At query row ``i`` a segment starting at 1-based column
   ``c`` lies on diagonal ``c - i + m`` and in band ``b = (c - i + m) // w``. All cells of
   an alignment without long net indels share a band or two.
2. **Band best.** Each band keeps its best cell with a positive score ``H``: highest
   ``H``, then smallest query row ``i``, then smallest target column ``j``, encoded as one
   64-bit key ``H << 32 | (2^32 - 1 - lin)`` with ``lin = i * (w + GROUP) + (j - first
   column of band b in row i)``, so the best cell is the largest key (what ``atomicMax``
   keeps on the GPU).
3. **Local maxima.** A band is an end point only if its score is higher than the band on
   its left and at least that on its right. The gap shadows of a strong alignment fall by
   about ``w * extend`` per band, so they never qualify; of two alignments in
   neighbouring bands only the stronger is reported.
4. **Top.** End points are ranked by score, then query row, then target column; the
   first ``top`` are reported.

Each section scan returns the keys of the bands its owned cells touch; the keys of a
band from different sections merge by ``max``, so a sectioned scan gives exactly the
unsectioned result.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from ..atomic import atomic_output
from ..errors import InputError
from ..kernel_abi import LONG_SLOT_BITS

#: Target columns per segment (a GPU lane's columns, ``R`` of ``sw_long<R>``).
GROUP = 16
DEFAULT_BAND_WIDTH = 64
DEFAULT_TOP = 200
#: Scores must stay below this: the GPU packs boundary values into LONG_SLOT_BITS (28) bits.
SCORE_LIMIT = 1 << LONG_SLOT_BITS


@dataclass(frozen=True)
class BandRule:
    """Band geometry for a query of ``m`` residues and bands ``width`` diagonals wide."""

    m: int
    width: int

    def n_bands(self, n: int) -> int:
        """Bands of a table with ``n`` target columns (diagonals up to ``n - 1 + m``)."""
        return (n + self.m - 1) // self.width + 1

    def decode(self, bands: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(score, i, j)`` (1-based) of band keys."""
        keys = keys.astype(np.uint64)
        score = (keys >> np.uint64(32)).astype(np.int64)
        lin = (np.uint64(0xFFFFFFFF) - (keys & np.uint64(0xFFFFFFFF))).astype(np.int64)
        wr = self.width + GROUP
        i = lin // wr
        j = bands.astype(np.int64) * self.width + i - self.m + lin % wr
        return score, i, j


def check_limits(m: int, n: int, width: int, max_score: int, oe: int) -> None:
    """Refuse inputs whose keys or packed scores would not fit (one-line errors)."""
    if width < GROUP:
        raise InputError(f"--band-width must be >= {GROUP}, the segment width (got {width})")
    if (m + 1) * (width + GROUP) >= 1 << 32:
        raise InputError(f"query of {m:,} residues is too long for --band-width {width} (query x (width + {GROUP}) must be < 2^32)")
    if min(m, n) * max(max_score, 0) + oe >= SCORE_LIMIT:
        raise InputError(f"scores of a {m:,} x {n:,} table could reach 2^28; not supported")


@dataclass
class BandKeys:
    """The nonzero band keys of a scan (or of merged scans): band indices ascending."""

    bands: np.ndarray  # int64
    keys: np.ndarray  # uint64

    @classmethod
    def from_dense(cls, dense: np.ndarray) -> BandKeys:
        idx = np.flatnonzero(dense)
        return cls(idx.astype(np.int64), dense[idx].astype(np.uint64))


def merge(parts: list[BandKeys]) -> BandKeys:
    """Per band, the largest key of any part (the sections' owned cells are disjoint).

    Each part's bands ascend, and the sections' parts follow each other along the target,
    overlapping at their ends: then only where a part overlaps the one before it do two
    parts meet, and the rest of each is taken as it is (:func:`_merge_in_order`). Otherwise
    a stable sort of the concatenation merges the runs (numpy's timsort, linear in them) and
    the largest key of each band is a ``reduceat``; a lexsort of bands and keys took 0.33 s
    for the 1.6 million bands of a 10^8-column target. For two sections of that target the
    sort took 0.02-0.20 s as a process's first merge (its temporaries fresh memory), the
    in-order merge 0.004 s (the CPU machine, thirty-fourth session). A single part whose
    bands strictly ascend is already merged."""
    if len(parts) == 1 and _ascends(parts[0].bands):
        return parts[0]
    in_order = _merge_in_order(parts)
    if in_order is not None:
        return in_order
    bands = np.concatenate([p.bands for p in parts]) if parts else np.empty(0, np.int64)
    keys = np.concatenate([p.keys for p in parts]) if parts else np.empty(0, np.uint64)
    return _sorted_merge(bands, keys)


def _ascends(bands: np.ndarray) -> bool:
    return bands.size < 2 or bool(np.all(bands[1:] > bands[:-1]))


def _sorted_merge(bands: np.ndarray, keys: np.ndarray) -> BandKeys:
    """Per band of ``bands`` (any order), the largest of its ``keys``; bands ascending."""
    if bands.size == 0:
        return BandKeys(bands, keys)
    order = np.argsort(bands, kind="stable")
    bands, keys = bands[order], keys[order]
    starts = np.flatnonzero(np.concatenate(([True], bands[1:] != bands[:-1])))
    return BandKeys(bands[starts], np.maximum.reduceat(keys, starts))


def _merge_in_order(parts: list[BandKeys]) -> BandKeys | None:
    """:func:`merge` of parts that each ascend and that each start after every part but the
    one before it has ended (sections in target order); None for any other parts.

    Going along the parts: of the part before, what lies before the next part's first band
    is final and taken as it is; the zone where the two overlap (the part before from that
    band on, the next part up to the last band of the part before) is merged by the sort;
    the next part's rest waits for the part after it."""
    parts = [p for p in parts if p.bands.size]
    if len(parts) < 2 or not all(_ascends(p.bands) for p in parts):
        return None
    out_bands: list[np.ndarray] = []
    out_keys: list[np.ndarray] = []
    before, rest = parts[0], 0  # the part before, and where its bands not yet taken start
    done = -1  # the last band taken
    for part in parts[1:]:
        first = int(part.bands[0])
        if first <= done:  # it reaches into bands already taken: an older part's
            return None
        cut = rest + int(np.searchsorted(before.bands[rest:], first))
        out_bands.append(before.bands[rest:cut])
        out_keys.append(before.keys[rest:cut])
        if cut > rest:
            done = int(before.bands[cut - 1])
        inside = int(np.searchsorted(part.bands, before.bands[-1], side="right")) if cut < before.bands.size else 0
        zone = _sorted_merge(
            np.concatenate([before.bands[cut:], part.bands[:inside]]), np.concatenate([before.keys[cut:], part.keys[:inside]])
        )
        out_bands.append(zone.bands)
        out_keys.append(zone.keys)
        if zone.bands.size:
            done = int(zone.bands[-1])
        before, rest = part, inside
    out_bands.append(before.bands[rest:])
    out_keys.append(before.keys[rest:])
    return BandKeys(np.concatenate(out_bands), np.concatenate(out_keys))


@dataclass(frozen=True)
class EndPoint:
    """A reported end point: score and 1-based query row / target column of its last cell."""

    score: int
    qend: int
    send: int


def select(found: BandKeys, rule: BandRule, top: int) -> list[EndPoint]:
    """The ``top`` best band maxima (rules 3 and 4 of the module docstring).

    The local maxima are found on the scores alone (the keys' high words), and only the
    best of them, down to the ``top``-th score with its ties, are decoded and ranked."""
    if found.bands.size == 0:
        return []
    score = (found.keys >> np.uint64(32)).astype(np.int64)
    b = found.bands
    left = np.zeros_like(score)
    right = np.zeros_like(score)
    adj = b[1:] == b[:-1] + 1  # neighbours missing from the list have no positive cell
    left[1:][adj] = score[:-1][adj]
    right[:-1][adj] = score[1:][adj]
    keep = np.flatnonzero((score > left) & (score >= right))
    if keep.size > top:
        kth = np.partition(score[keep], keep.size - top)[keep.size - top]
        keep = keep[score[keep] >= kth]
    s, i, j = rule.decode(b[keep], found.keys[keep])
    order = np.lexsort((j, i, -s))[:top]
    return [EndPoint(int(s[k]), int(i[k]), int(j[k])) for k in order]


def save(path: str | os.PathLike, found: BandKeys, meta: dict) -> None:
    """A section's band keys with what identifies the scan (checked by :func:`load`)."""
    with atomic_output(path, "wb") as fh:
        np.savez(fh, bands=found.bands, keys=found.keys, **{k: np.asarray(v) for k, v in meta.items()})


def load(path: str | os.PathLike) -> tuple[BandKeys, dict]:
    try:
        with np.load(path) as z:
            found = BandKeys(z["bands"].astype(np.int64), z["keys"].astype(np.uint64))
            meta = {k: z[k].item() for k in z.files if k not in ("bands", "keys")}
    except (OSError, ValueError, KeyError) as exc:
        raise InputError(f"{path}: not an align-long section file ({exc})") from None
    return found, meta
