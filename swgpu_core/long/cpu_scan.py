"""The align-long scan on the CPU (``--backend cpu``): anti-diagonal int32 SIMD tiles on all cores.

:func:`scan_section` reports the band key of every band its section's owned cells touch,
the rule of :mod:`.endpoints`, exactly as ``kernels/sw_long.cu`` does and as
:func:`reference_scan_section` (plain row-by-row Gotoh, the specification the tests
compare with) does, bit for bit, ties included: the band keys are a function of the
table's ``H`` values alone, which every order of computing the cells gives exactly.

**Tiles.** The query rows are cut into blocks of at most :data:`ROWS` rows, the section's
columns into chunks of :data:`COLS` columns (a multiple of ``GROUP``, so no segment of 16
columns straddles two chunks). A tile, one block x one chunk, is swept along its
anti-diagonals: the cells of one anti-diagonal depend only on the two before it, so the
inner loop over them has no loop-carried dependency and LLVM turns it into 16-lane int32
vector code (AVX-512; 8 lanes with AVX2). For that the loop has to look simple to it:

* the state of a block's rows (``H`` of the last two anti-diagonals, ``E``, ``F``, the
  segment maxima, the query codes) lives in one array, one field every :data:`_LS`
  elements, indexed by ``x = rows - r`` with unsigned integers. Constant field offsets
  let LLVM prove that the fields do not overlap, unsigned indices drop numba's
  negative-index handling, and the reversed row order makes the only dependency (row
  ``r`` reads row ``r - 1`` of the previous anti-diagonal, still in place) a read
  *ahead* of the writes, which vectorises without reversing lanes;
* the substitution scores are a gather from the matrix, which LLVM vectorises only from
  memory it knows is never written: the matrix is a compile-time constant of the kernel
  (:func:`_kernel`, one compiled kernel per matrix, cached on disk by numba like any
  other).

A block's state (about 6 x 4 x 256 bytes) stays in L1 while the tile streams the target;
blocks pass their last row (``H``, ``F``) to the next block, chunk by chunk, and a
block's rows carry their last column (``H``, ``E``) from chunk to chunk.

**Segments and band keys.** Each row keeps its segment's best cell packed as
``16 H + 15 - offset`` (the first of equal cells wins, as in the reference); when a row
leaves a segment the packed value becomes a band key (a scalar step, one per 16 cells).
The packing needs ``16 H < 2^31``: tables whose scores could reach ``2^27`` use the
reference scan instead.

**Threads.** The rows are cut into one contiguous part per thread; thread ``k`` sweeps
its blocks chunk by chunk, and starts chunk ``c`` of its first block once thread ``k - 1``
has finished chunk ``c`` of its last block: a pipeline over the target, exact because
every tile starts from the exact boundary values of its neighbours above and left.
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from numba import njit

from ..scoring import Scoring
from .endpoints import GROUP, BandKeys, BandRule
from .sections import Section

NEG = -(1 << 28)

#: Query rows per tile (at most ``_LS - 1``): the block's state stays in L1.
ROWS = 512
#: Target columns per tile: a multiple of GROUP; the unit of hand-over between threads.
COLS = 16 * 1024
#: Tables whose best score could reach this use the reference (the packed segment maxima are 16 H + 4 bits in int32).
PACK_LIMIT = 1 << 27

_LS = 1024  # stride of the state fields in a block's state array
_U = np.uint64
_I = np.int32
_H, _P, _E, _F, _S, _Q = (
    _U(k * _LS) for k in range(6)
)  # H at the last anti-diagonal, H before it, E, F, segment best, query code * matrix row


@njit(cache=True, nogil=True)
def _scan(q, t, mat, gap_open, gap_extend, width, group, scan_lo, own_lo, own_hi, keys):
    """The reference: row-by-row Gotoh over the section, one band key update per row segment."""
    m = q.size
    n = t.size
    oe = gap_open + gap_extend
    hrow = np.zeros(n + 1, np.int32)
    frow = np.full(n + 1, NEG, np.int32)
    wr = width + group
    low = np.uint64(0xFFFFFFFF)
    for i in range(1, m + 1):
        sub = mat[q[i - 1]]
        diag = 0
        e = NEG
        hleft = 0
        for c0 in range(0, n, group):  # one segment: c0 is 0-based in the slice (scan_lo is aligned)
            sbest = 0
            sj = 0
            for jj in range(c0 + 1, min(c0 + group, n) + 1):
                up = hrow[jj]
                f = max(up - oe, frow[jj] - gap_extend)
                frow[jj] = f
                e = max(hleft - oe, e - gap_extend)
                h = max(diag + sub[t[jj - 1]], e, f, 0)
                diag = up
                hrow[jj] = h
                hleft = h
                if h > sbest:
                    sbest = h
                    sj = jj
            g0 = scan_lo + c0
            if sbest > 0 and own_lo <= g0 < own_hi:
                dd = g0 + 1 - i + m
                band = dd // width
                lin = i * wr + (dd - band * width) + (sj - 1 - c0)
                key = (np.uint64(sbest) << np.uint64(32)) | (low - np.uint64(lin))
                if key > keys[band]:
                    keys[band] = key


def _make_kernel(table: np.ndarray, match: int | None, mismatch: int | None) -> Any:
    """The tile kernel with the scores compiled in as constants.

    ``match``/``mismatch`` given (a match/mismatch matrix, the DNA scorings): the score is a
    comparison of codes, no table. Otherwise ``table`` (the flat int32 matrix) is read by a
    gather, which vectorises because numba freezes the closure's array as a constant.
    """
    TAB = table  # noqa: N806
    COMPARE = match is not None  # noqa: N806
    MATCH = _I(match or 0)  # noqa: N806
    MISMATCH = _I(mismatch or 0)  # noqa: N806

    @njit(cache=True, nogil=True)
    def tile(W, t, n, m, i0, R, c0, c1, top_h, top_f, bot_h, bot_f, left_h, left_e, gap_open, gap_extend, width, scan_lo, own_lo, keys):
        """Rows i0..i0+R-1 x local columns c0..c1-1 (1-based) of the section, by anti-diagonals.

        ``top_*[k]`` / ``bot_*[k]``: the row above the block / the block's last row at column
        c0 - 1 + k; ``left_*[r]``: row r's column c0 - 1 on entry, c1 - 1 on return.
        """
        oe = _I(gap_open + gap_extend)
        ge = _I(gap_extend)
        zero = _I(0)
        one = _U(1)
        wr = width + GROUP
        low = np.uint64(0xFFFFFFFF)
        u_r = _U(R)
        W[_H + u_r] = top_h[0]  # row 0 of the block (x = R) is the row above it
        for d in range(i0 + c0, i0 + R + c1 - 1):
            jt = d - i0  # column of the block's first row on this anti-diagonal
            rlo = max(1, jt + 2 - c1)
            rhi = min(R, jt + 1 - c0)
            if jt <= c1 - 1:
                W[_P + u_r] = W[_H + u_r]
                W[_H + u_r] = top_h[jt - c0 + 1]
                W[_F + u_r] = top_f[jt - c0 + 1]
            rs = jt + 1 - c0  # the row entering the tile at column c0
            if rs <= R:
                W[_H + _U(R - rs)] = left_h[rs]
                W[_E + _U(R - rs)] = left_e[rs]
            jr = jt + 1  # row r is at column jr - r
            xlo = R - rhi
            jm0 = jr - R - 1 + xlo  # 0-based column of row rhi
            for k in range(rhi - rlo + 1):
                x = _U(xlo + k)
                jm1 = jm0 + k
                left = W[_H + x]
                e = max(_I(left - oe), _I(W[_E + x] - ge))
                f = max(_I(W[_H + x + one] - oe), _I(W[_F + x + one] - ge))
                if COMPARE:  # W[_Q] holds the query code, or 254 for codes that never match
                    s = MATCH if W[_Q + x] == t[_U(jm1)] else MISMATCH
                else:  # W[_Q] holds the query code times the matrix row length (a 16-bit index: one 16-lane vpgatherdd)
                    s = TAB[np.uint16(W[_Q + x] + t[_U(jm1)])]
                h = max(_I(W[_P + x + one] + s), e, f, zero)
                W[_P + x] = left
                W[_H + x] = h
                W[_E + x] = e
                W[_F + x] = f
                W[_S + x] = max(W[_S + x], _I(h * 16 + (15 - (jm1 & 15))))
            r_end = jt + 2 - c1  # the row leaving the tile at column c1 - 1
            if 1 <= r_end <= R:
                left_h[r_end] = W[_H + _U(R - r_end)]
                left_e[r_end] = W[_E + _U(R - r_end)]
            if rhi == R:
                bot_h[jr - R - c0 + 1] = W[_H]
                bot_f[jr - R - c0 + 1] = W[_F]
            # Rows that end a segment here (column a multiple of GROUP), every 16th row: from
            # one to the next the segment starts 16 columns earlier and the row is 16 lower, so
            # the diagonal dd falls by 32 and the band is kept up to date without a division.
            r = rlo + ((jr - rlo) & 15)
            if r <= rhi:
                g0 = scan_lo + jr - r - GROUP
                dd = g0 + 1 - (i0 + r - 1) + m
                band = dd // width
                rem = dd - band * width
                while r <= rhi and g0 >= own_lo:
                    xs = _U(R - r)
                    p = W[_S + xs]
                    W[_S + xs] = 0
                    h = p >> 4
                    if h > 0:
                        lin = (i0 + r - 1) * wr + rem + (15 - (p & 15))
                        key = (np.uint64(h) << np.uint64(32)) | (low - np.uint64(lin))
                        if key > keys[band]:
                            keys[band] = key
                    r += 16
                    g0 -= 16
                    rem -= 32
                    while rem < 0:
                        rem += width
                        band -= 1
                while r <= rhi:  # segments in the overlap, owned by the section on the left
                    W[_S + _U(R - r)] = 0
                    r += 16
            r = jr - n  # the row at the section's last column ends its (partial) segment too
            if n & 15 and rlo <= r <= rhi:
                xs = _U(R - r)
                p = W[_S + xs]
                W[_S + xs] = 0
                h = p >> 4
                g0 = scan_lo + (n - 1) // GROUP * GROUP
                if h > 0 and g0 >= own_lo:
                    i = i0 + r - 1
                    dd = g0 + 1 - i + m
                    band = dd // width
                    lin = i * wr + (dd - band * width) + (15 - (p & 15))
                    key = (np.uint64(h) << np.uint64(32)) | (low - np.uint64(lin))
                    if key > keys[band]:
                        keys[band] = key

    return tile


_kernels: dict[bytes, Any] = {}
_kernels_lock = threading.Lock()


def _match_mismatch(matrix: np.ndarray) -> tuple[int, int] | None:
    """``(match, mismatch)`` if ``matrix`` is ``match`` on part of its diagonal and ``mismatch`` elsewhere."""
    diag = np.diagonal(matrix)
    match, mismatch = int(diag.max()), int(matrix.min())
    expected = np.where(np.diag(diag == match), match, mismatch)
    return (match, mismatch) if match != mismatch and np.array_equal(matrix, expected) else None


def _kernel(scoring: Scoring) -> tuple[Any, np.ndarray]:
    """The tile kernel of ``scoring`` (built once per process and matrix), and the query code of each residue code."""
    matrix = np.ascontiguousarray(scoring.matrix, np.int32)
    if matrix.size > 1 << 16:
        raise ValueError(f"{matrix.shape} matrix: the tile kernel indexes it with 16 bits")
    pair = _match_mismatch(matrix)
    if pair is None:
        codes = np.arange(matrix.shape[0], dtype=np.int32) * matrix.shape[1]
    else:
        codes = np.where(np.diagonal(matrix) == pair[0], np.arange(matrix.shape[0]), 254).astype(np.int32)
    with _kernels_lock:
        if matrix.tobytes() not in _kernels:
            _kernels[matrix.tobytes()] = _make_kernel(matrix.ravel(), *(pair or (None, None)))
        return _kernels[matrix.tobytes()], codes


def _row_parts(m: int, threads: int, rows: int) -> list[list[tuple[int, int]]]:
    """Blocks ``(first row, rows)`` of each thread's contiguous share of the ``m`` rows."""
    cuts = [m * k // threads for k in range(threads + 1)]
    parts = []
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        blocks = -(-(hi - lo) // rows)
        size = -(-(hi - lo) // blocks)  # blocks of (nearly) equal height, at most `rows`
        parts.append([(1 + a, min(size, hi - a)) for a in range(lo, hi, size)])
    return parts


def _tiled_scan(
    q: np.ndarray,
    t: np.ndarray,
    scoring: Scoring,
    width: int,
    scan_lo: int,
    own_lo: int,
    keys: np.ndarray,
    threads: int,
    rows: int = ROWS,
    cols: int = COLS,
) -> None:
    m, n = q.size, t.size
    kernel, codes = _kernel(scoring)
    threads = max(1, min(threads, m))
    parts = _row_parts(m, threads, rows)
    chunks = [(c0, min(n + 1, c0 + cols)) for c0 in range(1, n + 1, cols)]
    # the last row of each part, chunk by chunk, for the next part's thread (None: not yet)
    handover: list[list[tuple[np.ndarray, np.ndarray] | None]] = [[None] * len(chunks) for _ in parts]
    ready = threading.Condition()

    def run_part(k: int) -> None:
        states = []
        for i0, r in parts[k]:
            w = np.zeros(6 * _LS, np.int32)
            w[int(_E) : int(_E) + _LS] = NEG
            w[int(_F) : int(_F) + _LS] = NEG
            w[int(_Q) : int(_Q) + r] = codes[q[i0 - 1 : i0 - 1 + r]][::-1]  # row r at x = R - r
            states.append((w, np.zeros(r + 1, np.int32), np.full(r + 1, NEG, np.int32)))
        for c, (c0, c1) in enumerate(chunks):
            if k == 0:
                top_h, top_f = np.zeros(c1 - c0 + 1, np.int32), np.full(c1 - c0 + 1, NEG, np.int32)
            else:
                with ready:
                    ready.wait_for(lambda: handover[k - 1][c] is not None)  # noqa: B023 (called in this iteration only)
                    top_h, top_f = handover[k - 1][c]
                    handover[k - 1][c] = None  # taken (nobody waits for it again): free it
            for (i0, r), (w, left_h, left_e) in zip(parts[k], states):
                bot_h, bot_f = np.empty(c1 - c0 + 1, np.int32), np.empty(c1 - c0 + 1, np.int32)
                bot_h[0], bot_f[0] = (left_h[r] if c0 > 1 else 0), NEG  # the corner; its F is never read
                kernel(w, t, n, m, i0, r, c0, c1, top_h, top_f, bot_h, bot_f, left_h, left_e,
                       scoring.gap_open, scoring.gap_extend, width, scan_lo, own_lo, keys)  # fmt: skip
                top_h, top_f = bot_h, bot_f
            if k + 1 < len(parts):
                with ready:
                    handover[k][c] = (top_h, top_f)
                    ready.notify_all()

    if len(parts) == 1:
        run_part(0)
        return
    with ThreadPoolExecutor(len(parts)) as pool:
        for f in [pool.submit(run_part, k) for k in range(len(parts))]:
            f.result()


def scan_section(
    query: np.ndarray, target: np.ndarray, section: Section, rule: BandRule, scoring: Scoring, threads: int = 0
) -> tuple[BandKeys, float]:
    """Band keys of the cells ``section`` owns, and the seconds the scan took (``threads``: 0 = all cores)."""
    keys = np.zeros(rule.n_bands(target.size), np.uint64)
    q = np.require(query, np.uint8, ["C", "W"])
    t = np.require(target[section.scan_lo : section.own_hi], np.uint8, ["C", "W"])
    threads = threads or len(os.sched_getaffinity(0))
    start = time.perf_counter()
    if section.own_hi > section.own_lo and q.size:
        if min(q.size, t.size) * max(scoring.max_score, 1) >= PACK_LIMIT:
            mat = np.require(scoring.matrix, np.int32, ["C", "W"])
            _scan(q, t, mat, scoring.gap_open, scoring.gap_extend, rule.width, GROUP, section.scan_lo, section.own_lo, section.own_hi, keys)
        else:
            _tiled_scan(q, t, scoring, rule.width, section.scan_lo, section.own_lo, keys, threads)
    return BandKeys.from_dense(keys), time.perf_counter() - start


def reference_scan_section(query: np.ndarray, target: np.ndarray, section: Section, rule: BandRule, scoring: Scoring) -> BandKeys:
    """The band keys by the plain row-by-row scan: the specification :func:`scan_section` must equal."""
    keys = np.zeros(rule.n_bands(target.size), np.uint64)
    q = np.require(query, np.uint8, ["C", "W"])
    t = np.require(target[section.scan_lo : section.own_hi], np.uint8, ["C", "W"])
    mat = np.require(scoring.matrix, np.int32, ["C", "W"])
    if section.own_hi > section.own_lo:
        _scan(q, t, mat, scoring.gap_open, scoring.gap_extend, rule.width, GROUP, section.scan_lo, section.own_lo, section.own_hi, keys)
    return BandKeys.from_dense(keys)
