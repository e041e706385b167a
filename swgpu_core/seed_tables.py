"""The inputs of the GPU seed kernel (``kernels/seed.cu``), built on the host: pure numpy.

The kernel runs a *group* of query segments per block: the group's lookup table (for each
of the 8000 subject words, the super-query positions whose word scores at least T against
it) and, per warp, one diagonal word per slot of a ring longer than the group's
*super-query* (its segments end to end, each followed by ``window`` spacer positions). The
table's row offsets (8001 uint32) and a byte per position (its segment) are in shared
memory; its entries (2 bytes each, about 18 per query residue at T = 11 for BLOSUM62 and
real proteins) either too (``lut="shared"``: no load latency, but they take most of the
room) or in global memory, where all groups' tables stay in L2 (``lut="global"``: the rings
get the room, so a group is about three times longer and each subject position brings a
warp three times the hits for the same fixed cost per position). A query longer than a
group holds is cut into *segments* that own consecutive word positions and also hold the
``window`` positions before them (so every partner of an owned hit is in the segment; a
segment triggers only for the words it owns).

:class:`SeedTables` is what the CUDA seeder uploads; the g++ harness of
``tests/test_seed_kernel.py`` runs the kernel's source on the CPU with the same tables.
:func:`smem_bytes` mirrors the kernel's ``Layout`` (the kernel checks the size it gets).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from .kernel_abi import SEED_EXT_FLUSH, SEED_MATRIX_STRIDE, SEED_MAX_SEGS, SEED_ROUNDS, SeedGroupField, SeedSegField
from .seed import N_WORDS, SeedParams, neighbourhoods, word_index

#: uint16 words of a blob's row offsets (8001 uint32, 16-byte aligned): its segment map follows.
OFFSET_WORDS = (2 * (N_WORDS + 1) + 7) // 8 * 8
#: Where the lookup table's entries live (see the module doc).
LUT_PLACES = ("global", "shared")
#: The kernel's queue of extensions per warp (``kExtQueue``), in entries of two uint32.
EXT_QUEUE = 32 * SEED_ROUNDS + SEED_EXT_FLUSH
#: Largest super-query position and ring slot (uint16 in the table, 16 bits in the kernel's slot word).
MAX_SPAN = 65535


def _up(n: int, k: int) -> int:
    return -(-n // k) * k


def warp_bytes(ring: int) -> int:
    """Shared memory of one warp: its ring of diagonal words, extension queue, segment flags, a
    batch's list of positions and the extension cursor."""
    return _up(4 * ring + 8 * EXT_QUEUE + SEED_MAX_SEGS // 8 + 32 + 4, 16)


def smem_bytes(copy_words: int, ring: int, warps: int) -> int:
    """Dynamic shared memory of a block: the blob's copied part, matrix, segment rows, the warps, a
    counter (``Layout`` in seed.cu)."""
    matrix = _up(2 * copy_words, 16)
    segs = matrix + SEED_MATRIX_STRIDE * SEED_MATRIX_STRIDE
    warps_at = _up(segs + 4 * SEED_MAX_SEGS * len(SeedSegField), 16)
    return warps_at + warps * warp_bytes(ring) + 16


@dataclass(frozen=True)
class SeedTables:
    """Everything of a query batch the seed kernel reads, in its layout (see the module doc)."""

    blobs: np.ndarray  # uint16: per group [row offsets | segment map bytes | entries], 16-byte aligned
    groups: np.ndarray  # int32 [n_groups, len(SeedGroupField)]
    segs: np.ndarray  # int32 [n_segments, len(SeedSegField)]
    qcodes: np.ndarray  # uint8: every query's codes, end to end
    matrix: np.ndarray  # int8 [SEED_MATRIX_STRIDE ** 2]
    copy_words: int  # the largest group's part of its blob in shared memory
    ring: int  # the largest group's ring
    lut: str  # where the entries live (LUT_PLACES)
    warps: int  # warps per block the tables were sized for
    n_queries: int
    entries: int  # lookup-table entries over all groups

    @property
    def n_groups(self) -> int:
        return int(self.groups.shape[0])

    @property
    def smem_bytes(self) -> int:
        return smem_bytes(self.copy_words, self.ring, self.warps)


def kernel_matrix(matrix: np.ndarray) -> np.ndarray:
    """The substitution matrix as the kernel's int8 rows of SEED_MATRIX_STRIDE (query code = row)."""
    m = np.asarray(matrix)
    if m.shape[0] > SEED_MATRIX_STRIDE or m.shape[1] > SEED_MATRIX_STRIDE:
        raise ValueError(f"the seed kernel holds {SEED_MATRIX_STRIDE} residue codes, the matrix has {m.shape[0]}")
    if m.min() < -128 or m.max() > 127:
        raise ValueError("the seed kernel holds substitution scores in -128..127")
    out = np.zeros((SEED_MATRIX_STRIDE, SEED_MATRIX_STRIDE), np.int8)
    out[: m.shape[0], : m.shape[1]] = m
    return out.ravel()


def group_limits(entries_per_position: float, params: SeedParams, smem_limit: int, warps: int, lut: str) -> tuple[int, int]:
    """(span, entries): the longest super-query and the table entries of a group whose block fits
    ``smem_limit`` bytes with ``warps`` warps. With the entries in shared memory the span is
    chosen so that a group bringing ``entries_per_position`` entries per position fills both
    limits together; in global memory only the rings and the segment map bound it."""
    shared = lut == "shared"

    def ring(span: int) -> int:
        return max(64, _up(span + params.window, 4))

    def need(span: int, entries: int) -> int:
        return smem_bytes(OFFSET_WORDS + _up(span, 16) // 2 + (_up(entries, 8) if shared else 0), ring(span), warps)

    lo, hi = 0, MAX_SPAN - params.window - 4
    while lo < hi:  # the longest span whose expected entries fit
        mid = (lo + hi + 1) // 2
        if need(mid, int(entries_per_position * mid)) <= smem_limit:
            lo = mid
        else:
            hi = mid - 1
    entries = (smem_limit - need(lo, 0)) // 2 // 8 * 8 if shared else 1 << 30
    if lo < 2 * params.window + 2 or entries <= 0:
        raise ValueError(f"{smem_limit} bytes of shared memory hold no seed group of {warps} warps (window {params.window})")
    return lo, entries


def _segments(counts: np.ndarray, window: int, span: int, entries: int) -> list[tuple[int, int, int]]:
    """(included start, owned start, owned end) word positions of one query's segments: each holds
    at most ``span - window`` positions and ``entries`` table entries (``counts``: per position)."""
    n = counts.size
    cum = np.concatenate(([0], np.cumsum(counts, dtype=np.int64)))
    out = []
    lo = 0
    while lo < n:
        inc = max(0, lo - window)
        by_span = inc + span - window
        by_entries = int(np.searchsorted(cum, cum[inc] + entries, side="right")) - 1
        hi = min(n, by_span, by_entries)
        if hi <= lo:
            raise ValueError(f"query words too rich for a seed group: {int(cum[lo + 1] - cum[inc])} entries")
        out.append((inc, lo, hi))
        lo = hi
    return out


@functools.lru_cache(maxsize=4)
def _neighbourhoods(matrix: bytes, n: int, threshold: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`swgpu_core.seed.neighbourhoods`, once per matrix and threshold in a process (a few
    tenths of a second, paid by every query batch otherwise)."""
    return neighbourhoods(np.frombuffer(matrix, np.int32).reshape(n, -1), threshold)


def build_tables(
    queries: list[np.ndarray],
    matrix: np.ndarray,
    params: SeedParams,
    *,
    smem_limit: int,
    warps: int,
    lut: str = "global",
    max_span: int | None = None,
) -> SeedTables:
    """The groups of a query batch (``queries``: residue codes) for blocks of ``warps`` warps in
    ``smem_limit`` bytes of shared memory, the entries in ``lut`` memory, segments packed in query
    order; ``max_span`` caps a group's super-query below what shared memory allows."""
    if lut not in LUT_PLACES:
        raise ValueError(f"seed lookup table in {lut!r} memory: one of {', '.join(LUT_PLACES)}")
    nb_off, nb_words = _neighbourhoods(np.ascontiguousarray(matrix, np.int32).tobytes(), np.shape(matrix)[0], params.threshold)
    nb_count = np.diff(nb_off)
    codes = [np.asarray(q, np.uint8) for q in queries]
    words = [word_index(c) for c in codes]
    counts = [np.where(w >= 0, nb_count[np.maximum(w, 0)], 0) for w in words]
    total = sum(int(c.sum()) for c in counts)
    positions = sum(c.size for c in counts)
    span, max_entries = group_limits(max(total / max(positions, 1), 1.0), params, smem_limit, warps, lut)
    if max_span is not None:
        span = max(min(span, max_span), 2 * params.window + 2)
    qstart = np.concatenate(([0], np.cumsum([c.size for c in codes]))).astype(np.int64)

    # segments, packed greedily into groups
    groups: list[list[tuple[int, int, int, int, int]]] = [[]]  # (query, inc, lo, hi, entries)
    g_span = g_entries = 0
    for qi, cnt in enumerate(counts):
        if cnt.sum() == 0:
            continue  # no word of this query has a neighbourhood: it hits nothing
        for inc, lo, hi in _segments(cnt, params.window, span, max_entries):
            s_span, s_entries = hi - inc + params.window, int(cnt[inc:hi].sum())
            if groups[-1] and (g_span + s_span > span or g_entries + s_entries > max_entries or len(groups[-1]) == SEED_MAX_SEGS):
                groups.append([])
                g_span = g_entries = 0
            groups[-1].append((qi, inc, lo, hi, s_entries))
            g_span += s_span
            g_entries += s_entries
    if not groups[-1]:
        groups.pop()

    blobs, g_rows, s_rows = [], [], []
    at = 0
    for members in groups:
        subject_words, positions_i, segmap = [], [], []
        base = 0
        for k, (qi, inc, lo, hi, _e) in enumerate(members):
            w = words[qi][inc:hi]
            pos = np.flatnonzero(w >= 0)
            n_nb = nb_count[w[pos]]
            first = np.repeat(nb_off[w[pos]] - np.concatenate(([0], np.cumsum(n_nb)[:-1])), n_nb)
            subject_words.append(nb_words[first + np.arange(first.size)])
            positions_i.append(np.repeat(base + pos, n_nb))
            s_rows.append((qi, qstart[qi], codes[qi].size, inc, base + lo - inc, base))
            segmap.append(np.full(hi - inc, k, np.uint8))
            segmap.append(np.full(params.window, 255, np.uint8))
            base += hi - inc + params.window
        sw = np.concatenate(subject_words).astype(np.uint16)
        order = np.argsort(sw, kind="stable")  # radix sort on 16-bit keys
        offsets = np.zeros(N_WORDS + 1, np.uint32)
        np.cumsum(np.bincount(sw, minlength=N_WORDS), out=offsets[1:])
        entries = np.concatenate(positions_i)[order].astype(np.uint16)
        smap = np.concatenate(segmap)
        smap = np.concatenate((smap, np.zeros(_up(smap.size, 16) - smap.size, np.uint8)))
        head = np.zeros(OFFSET_WORDS, np.uint16)
        head[: 2 * (N_WORDS + 1)] = offsets.view(np.uint16)
        blob = np.concatenate((head, smap.view(np.uint16), entries, np.zeros(_up(entries.size, 8) - entries.size, np.uint16)))
        at_entries = OFFSET_WORDS + smap.size // 2
        copy = blob.size if lut == "shared" else at_entries
        g_rows.append((at, copy, OFFSET_WORDS, at_entries, len(s_rows) - len(members), len(members),
                       max(64, _up(base + params.window, 4))))  # fmt: skip
        blobs.append(blob)
        at += blob.size
    n_g, n_s = len(g_rows), len(s_rows)
    g_arr = np.array(g_rows, np.int32).reshape(n_g, len(SeedGroupField))
    s_arr = np.array(s_rows, np.int32).reshape(n_s, len(SeedSegField))
    copy_words = int(g_arr[:, SeedGroupField.COPY].max()) if n_g else 8
    ring = int(g_arr[:, SeedGroupField.RING].max()) if n_g else 64
    return SeedTables(
        np.concatenate(blobs) if blobs else np.zeros(8, np.uint16), g_arr, s_arr,
        np.concatenate(codes) if codes else np.zeros(0, np.uint8), kernel_matrix(matrix),
        copy_words, ring, lut, warps, len(codes), total,
    )  # fmt: skip


def slices(offsets: np.ndarray, n_slices: int) -> np.ndarray:
    """int32 [k + 1] bounds of at most ``n_slices`` runs of subjects with about equal residues
    (``offsets``: the chunk's n + 1 residue offsets), every run non-empty."""
    n = offsets.size - 1
    if n <= 0:
        return np.zeros(1, np.int32)
    cuts = np.searchsorted(offsets, np.linspace(0, offsets[-1], n_slices + 1)[1:-1])
    return np.unique(np.concatenate(([0], np.clip(cuts, 0, n), [n]))).astype(np.int32)


def pairs_by_query(pairs: np.ndarray, n_queries: int) -> list[np.ndarray]:
    """Per query, the sorted unique subjects of the kernel's (query << 32 | subject) pairs
    (int64, in the kernel's chunk-relative numbering; duplicates come from segments of one query)."""
    keys = np.unique(np.asarray(pairs, np.uint64))
    query = (keys >> np.uint64(32)).astype(np.int64)
    subject = (keys & np.uint64(0xFFFFFFFF)).astype(np.int64)
    bounds = np.searchsorted(query, np.arange(n_queries + 1))
    return [subject[bounds[k] : bounds[k + 1]] for k in range(n_queries)]
