"""The align-long scan on the CPU (``--backend cpu``): striped int32 SIMD blocks on all cores.

:func:`scan_section` reports the band key of every band its section's owned cells touch,
the rule of :mod:`.endpoints`, exactly as ``kernels/sw_long.cu`` does and as
:func:`reference_scan_section` (plain row-by-row Gotoh, the specification the tests
compare with) does, bit for bit, ties included: the band keys are a function of the
table's ``H`` values alone, which every order of computing the cells gives exactly.

**Striped blocks (Farrar).** The query rows are cut into blocks of at most :data:`ROWS`
rows, the section's columns into chunks of :data:`COLS`; a block sweeps a chunk column
by column. Its rows are striped over :data:`LANES` lanes: with ``S`` vectors, lane ``l``
of vector ``k`` holds row ``l * S + k`` of the block (*stripe* ``l`` is rows ``l * S`` to
``l * S + S - 1``), so one vector's rows all meet the same target residue and their
substitution scores are one contiguous load from the block's query profile
(``profile[code, k, l]``, int8): no gather, DNA and protein alike. Along a column the
vectors ``k = 0 .. S - 1`` are one recurrence per lane: the vertical gap ``F`` of row ``r``
comes from row ``r - 1``, in the vector before, and a stripe's last row feeds the next
stripe's first, which the column's pass cannot know yet.

**Why the pass plus one term per stripe is exact.** With ``oe`` = open + extend (a gap
of one) and ``ge`` = extend, Gotoh's recurrences down a column are
``F[r] = max(H[r-1] - oe, F[r-1] - ge)`` and ``H[r] = max(Hp[r], F[r])`` with
``Hp = max(diagonal + score, E, 0)``. Since ``oe >= ge`` (``gap_open >= 0``, which
:class:`~swgpu_core.scoring.Scoring` enforces), an ``H`` that came from ``F`` adds only
``F[r] - oe <= F[r] - ge`` to the next ``F``, so ``F[r]`` is a maximum over the rows above of
``Hp[r'] - oe - (r - 1 - r') ge`` (and the block's top ``F``, decayed): one term per source
row, each decaying by ``ge`` per row, combined by ``max``. Split the sources of a row in
stripe ``l`` into those in its own stripe, which the pass gets with its running
``f = max(f - ge, Hp - oe)`` (every lane starting at ``NEG``, lane 0 at the block's top
``F``), and those in the stripes above, which enter row 0 of the stripe as one term ``T_l``
and reach row ``k`` as ``T_l - k ge``. So ``H[k, l] = max(H_pass[k, l], T_l - k ge)``, exactly,
with ``T_0 = NEG`` (the top is in lane 0's pass) and ``T_(l+1) = max(end_l, T_l - S ge)``,
``end_l`` being the pass's ``f`` after stripe ``l``'s last row; the ``F`` under the block is
``max(end_15, T_15 - S ge)``. That is 15 scalar steps per column. Nothing reads column
``j``'s ``H`` before the pass of column ``j + 1``, which reads each value once (for the
diagonal, ``E`` and the segment maxima), so that pass applies the terms as it reads,
``max(h, T_l - k ge)`` with ``T_l - k ge`` carried in a register: two operations per vector,
no extra pass and no data-dependent loop (Farrar's lazy-F loop, which walks the terms down
until no lane's can matter, took 12-13 vector steps per column on random DNA and
protein). The few values read elsewhere (a stripe's last row as the next stripe's
diagonal, the block's last row for the block below) are mended where they are read. The
pass keeps ``f``, the diagonal and the term in registers over :data:`UNROLL` vectors;
LLVM vectorises the lane loop (16-lane ``vpmaxsd``, ``vpmovsxbd`` for the profile; see
``_sweep.inspect_asm``) because the state arrays are separate arguments.

**Segments and band keys.** ``H`` is kept scaled by 16 (scores and gap costs times 16,
an exact change of unit), so a row's best cell in its segment is ``max(16 H + 15 -
offset)`` with one add: the first of equal cells wins, as in the reference. When a
segment's last column has been folded in, :func:`_flush` turns the rows' packed values
into band keys, a vector pass over the stripes side by side and one key per run of a
stripe's rows in one band. The packing needs ``16 H < 2^31``: tables whose scores could
reach ``2^27``, or matrices with a score beyond int8, use the reference.

**Memory.** A block's state (``H``, ``E``, segment maxima: 3 x 8 KiB for 2,048 rows) stays
in L1 while it streams the target, the profile rows of the residues in use (2 KiB each)
in L1 or L2; the arrays are cache-line aligned and placed apart in the 4 KiB page
(:func:`_fields`).

**Blocks and threads.** A block's last row (``H``, and the ``F`` under it) goes to the
next block column by column. Block heights are multiples of :data:`ROW_STEP`
(``LANES x UNROLL``), but the query's last block, whose extra rows are padding (they are
below every real row, so they affect none, and are never reported). The rows are cut
into one contiguous part per thread; thread ``k`` sweeps its blocks chunk by chunk, and
starts chunk ``c`` of its first block once thread ``k - 1`` has finished chunk ``c`` of its
last block: a pipeline over the target, exact because every block starts from the exact
values of its neighbours above and left. Threads can reach the same band at once, so
they keep separate band keys, merged by ``max`` (:func:`_key_arrays`).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit

from ..cores import cpu_threads
from ..scoring import Scoring
from .endpoints import GROUP, BandKeys, BandRule
from .sections import Section

NEG = -(1 << 28)

#: Rows per vector (int32 lanes of AVX-512; LLVM splits them where vectors are narrower).
LANES = 16
#: Vectors per step of the column pass (its carried values stay in registers over them).
UNROLL = 8
#: Block heights are multiples of this (all but the query's last block).
ROW_STEP = LANES * UNROLL
#: Query rows per block (a multiple of ROW_STEP): the block's state stays in L1 (2,048 was faster than 1,024 on Zen 4).
ROWS = 2048
#: Target columns per chunk: the unit of hand-over between threads.
COLS = 16 * 1024
#: Tables whose best score could reach this use the reference (the packed segment maxima are 16 H + 4 bits in int32).
PACK_LIMIT = 1 << 27
#: Matrices with a score of this size or more use the reference (the query profile is int8).
SCORE_LIMIT = 1 << 7

_U = np.uint64
_I = np.int32


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


@njit(cache=True, nogil=True)
def _emit(keys, band, v, delta):
    """A band's candidate: ``v`` (a run's best, :func:`_flush`) made a key by adding ``delta`` to its low half."""
    if v >> _U(32):  # a positive score
        key = v + _U(delta)
        if key > keys[band]:
            keys[band] = key


@njit(cache=True, nogil=True)
def _flush(best, scratch, keys, g0, own_lo, m, i0, rows, width):
    """Each real row's best cell of the segment starting at section column ``g0`` (0-based) into the band keys; resets ``best``.

    Down a stripe the diagonal falls by one per row, so its rows fall in runs of one band,
    a run ending where the offset in the band (``rem``) passes 0. Within a run the key
    order is that of ``v = H << 32 | (z - k (width + 15) + packed offset)`` (``k`` the row in
    the stripe): the highest score, then the first row, then the first column, as the
    key's ``lin`` orders them; the key is ``v`` plus a constant of the run. So the stripes are
    reduced side by side, a vector per row of the stripes, and each run gives one key.
    ``scratch``: ``LANES`` each of ``acc`` (the runs' best ``v``), and each stripe's ``band``,
    ``base`` (``lin`` at its row 0, plus 15) and ``cut`` (the row where its run ends).
    """
    acc, band, base, cut = scratch
    s = best.size // LANES
    if g0 >= own_lo:
        for lane in range(rows // s, LANES):  # padding rows are never reported
            for k in range(max(0, rows - lane * s), s):
                best[_U(k * LANES + lane)] = 0
        wr = width + GROUP
        z = s * (wr - 1)
        low = 0xFFFFFFFF
        dd = g0 + 1 - i0 + m  # the diagonal of the block's first row
        b = dd // width
        rem = dd - b * width
        for lane in range(LANES):
            acc[lane] = 0
            band[lane] = b
            base[lane] = (i0 + lane * s) * wr + rem + 15
            cut[lane] = rem + 1
            rem -= s
            while rem < 0:
                rem += width
                b -= 1
        k = 0
        while k < s:
            stop = s
            for lane in range(LANES):
                stop = min(stop, cut[lane])
            for kk in range(k, stop):
                zk = z - kk * (wr - 1)
                for lane in range(acc.size):  # (not range(LANES): LLVM would unroll the loop to scalars)
                    p = best[_U(kk * LANES + lane)]
                    acc[lane] = max(acc[lane], (_U(p >> 4) << _U(32)) | _U(zk + (p & 15)))
            if stop < s:
                for lane in range(LANES):
                    if cut[lane] == stop:  # the stripe's run ends: its key, then the next band
                        _emit(keys, band[lane], acc[lane], low - base[lane] - z)
                        acc[lane] = 0
                        band[lane] -= 1
                        base[lane] += width
                        cut[lane] += width
            k = stop
        for lane in range(LANES):
            _emit(keys, band[lane], acc[lane], low - base[lane] - z)
    best[:] = 0


@njit(cache=True, nogil=True)
def _sweep(state, scratch, profile, t, keys, edges, n, m, i0, rows, c0, c1, oe, ge, width, scan_lo, own_lo):
    """Local columns ``c0 .. c1 - 1`` (1-based) of the block of ``rows`` rows starting at query row ``i0``.

    ``state``: the block's ``H`` (scaled by 16; the column before ``c0`` on entry, ``c1 - 1`` on
    return, both without their terms from the stripes above), ``E``, packed segment maxima,
    all striped (row ``l * S + k`` at ``k * LANES + l``), and the ``LANES`` terms ``T_l`` of that
    column (module docstring). ``scratch``: ``carry``, ``diag`` (``LANES + 1``) and
    :func:`_flush`'s. ``edges``: ``top_h``, ``top_f``, ``bot_h``, ``bot_f``, whose ``[k]`` is ``H`` of
    the row above the block / of its last row at column ``c0 - 1 + k``, and the ``F`` of the row
    under it. ``oe``, ``ge``: the gap costs, scaled.
    """
    h, e, best, pend = state
    carry, diag = scratch[0], scratch[1]
    top_h, top_f, bot_h, bot_f = edges
    s = h.size // LANES
    stride = _U(s * LANES)
    last = _U((s - 1) * LANES)
    zero = _I(0)
    neg = _I(NEG)
    decay = _I(s * ge)  # a term's decay over a stripe
    to_last = _I((s - 1) * ge)  # ... down to its last row
    bot_h[0] = max(h[last + _U(LANES - 1)], _I(pend[LANES - 1] - to_last))
    for j in range(c0, c1):
        off = _I(15 - ((j - 2) & 15))  # column j - 1's place in its segment (the pass folds it into `best`)
        for lane in range(carry.size):  # a stripe's first row: its diagonal is the row above, the last of the lane before
            diag[lane + 1] = max(h[last + _U(lane)], _I(pend[lane] - to_last))
            carry[lane] = neg
        diag[0] = top_h[j - c0]
        carry[0] = top_f[j - c0 + 1]
        base = _U(t[j - 1]) * stride
        for k0 in range(0, s, UNROLL):
            for lane in range(LANES):
                f = carry[lane]
                d = diag[lane]
                term = pend[lane]
                for u in range(UNROLL):
                    x = _U((k0 + u) * LANES + lane)
                    prev = max(h[x], term)  # column j - 1, final
                    term = _I(term - ge)
                    ex = max(_I(e[x] - ge), _I(prev - oe))
                    e[x] = ex
                    best[x] = max(best[x], _I(prev + off))
                    hp = max(max(_I(d + _I(profile[base + x]) * _I(16)), ex), zero)
                    h[x] = max(hp, f)
                    f = max(_I(f - ge), _I(hp - oe))
                    d = prev
                carry[lane] = f
                diag[lane] = d
                pend[lane] = term
        fin = neg  # T_l of column j, from the ends of the stripes above
        end = carry[0]
        pend[0] = neg
        for lane in range(1, LANES):
            fin = max(end, _I(fin - decay))
            end = carry[lane]
            pend[lane] = fin
        bot_h[j - c0 + 1] = max(h[last + _U(LANES - 1)], _I(fin - to_last))
        bot_f[j - c0 + 1] = max(end, _I(fin - decay))
        if j > 1 and ((j - 1) & 15) == 0:  # column j - 1 ended a segment, and the pass has folded it in
            _flush(best, scratch[2:], keys, scan_lo + j - 1 - GROUP, own_lo, m, i0, rows, width)
        if j == n:  # the section's last column: fold it in and end its (maybe partial) segment
            off = _I(15 - ((j - 1) & 15))
            for k in range(s):
                for lane in range(LANES):
                    x = _U(k * LANES + lane)
                    best[x] = max(best[x], _I(max(h[x], _I(pend[lane] - k * ge)) + off))
            _flush(best, scratch[2:], keys, scan_lo + (n - 1) // GROUP * GROUP, own_lo, m, i0, rows, width)


def _row_parts(m: int, threads: int, rows: int) -> list[list[tuple[int, int]]]:
    """Blocks ``(first row, rows)`` of each thread's contiguous share of the ``m`` rows.

    Every block but the query's last is a multiple of :data:`ROW_STEP` rows high (at most
    ``rows`` rounded up to one), the blocks of a part (nearly) equal.
    """
    units = -(-m // ROW_STEP)
    per_block = max(1, -(-rows // ROW_STEP))
    threads = max(1, min(threads, units))
    cuts = [units * k // threads for k in range(threads + 1)]
    parts = []
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        blocks = -(-(hi - lo) // per_block)
        size = -(-(hi - lo) // blocks)
        parts.append([(1 + a * ROW_STEP, min(min(a + size, hi) * ROW_STEP, m) - a * ROW_STEP) for a in range(lo, hi, size)])
    return parts


def _key_arrays(parts: list[list[tuple[int, int]]], width: int) -> int:
    """Band-key arrays for the threads of ``parts`` (thread ``k`` uses array ``k`` modulo this), so no two threads update one band at once.

    While thread ``k`` is at the chunk starting at column ``c_0`` (1-based), it flushes segments
    starting (0-based) at ``c_0 - 17`` (the one the chunk before ended) and later, and every
    thread after it may still be at the chunk before, up to the segment starting at
    ``c_0 - 33``. So their diagonals ``g0 + 1 - i + m`` are at least ``17 +`` (the rows of the
    parts between them) apart: thread ``k + 1`` may reach thread ``k``'s bands, threads ``G``
    apart may not once ``17 + (G - 1) x`` (the fewest rows of a part but the last) is at
    least the band width.
    """
    if len(parts) == 1:
        return 1
    rows = min(sum(r for _, r in part) for part in parts[:-1])
    return min(len(parts), 1 + max(1, -(-(width - 17) // rows)))


def _fields(dtype: type, sizes: list[int]) -> list[np.ndarray]:
    """Arrays of ``sizes`` elements in one buffer, each on a cache line and 1,344 bytes further into the 4 KiB pages than the last.

    Why: a vector load or store that straddles two cache lines costs two, and a load whose
    address matches an earlier store's in the low 12 bits waits for it (4K aliasing). With
    plain numpy allocations (16-byte aligned, 4 KiB apart or not, by chance) the same scan
    ran at 2.5 to 4.0 GCUPS depending on the process; with these at 4.5 in every one.
    """
    item = np.dtype(dtype).itemsize
    starts, at = [], 0  # in bytes
    for k, size in enumerate(sizes):
        at += (k * 1344 - at) % 4096
        starts.append(at // item)
        at += size * item
    buf = np.empty(at + 4096 // item, dtype)
    shift = (-buf.ctypes.data % 4096) // item
    return [buf[shift + a : shift + a + size] for a, size in zip(starts, sizes)]


def _profile(q: np.ndarray, matrix: np.ndarray, i0: int, rows: int) -> np.ndarray:
    """The striped query profile of a block: ``[code, k, l]`` = score of row ``l * S + k`` against ``code`` (int8: 64 rows in a cache line)."""
    s = -(-rows // ROW_STEP) * UNROLL
    (profile,) = _fields(np.int8, [matrix.shape[1] * s * LANES])
    grid = profile.reshape(matrix.shape[1], s, LANES)
    grid[:] = 0  # padding rows score 0
    r = np.arange(rows)
    grid[:, r % s, r // s] = matrix[q[i0 - 1 : i0 - 1 + rows]].T
    return profile


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
    matrix = np.asarray(scoring.matrix, np.int32)
    oe, ge = _I(16 * scoring.first_gap_cost), _I(16 * scoring.gap_extend)
    parts = _row_parts(m, threads, rows)
    chunks = [(c0, min(n + 1, c0 + cols)) for c0 in range(1, n + 1, cols)]
    # the last row of each part, chunk by chunk, for the next part's thread (None: not yet)
    handover: list[list[tuple[np.ndarray, np.ndarray] | None]] = [[None] * len(chunks) for _ in parts]
    ready = threading.Condition()
    part_keys = [keys] + [np.zeros_like(keys) for _ in range(1, _key_arrays(parts, width))]

    def run_part(k: int) -> None:
        blocks = []
        for i0, r in parts[k]:
            h, e, best, pend = _fields(np.int32, [-(-r // ROW_STEP) * ROW_STEP] * 3 + [LANES])
            h[:], e[:], best[:], pend[:] = 0, NEG, 0, NEG
            blocks.append((i0, r, (h, e, best, pend), _profile(q, matrix, i0, r)))
        scratch = (*_fields(np.int32, [LANES, LANES + 1]), *_fields(np.uint64, [LANES]), *_fields(np.int64, [LANES] * 3))
        for c, (c0, c1) in enumerate(chunks):
            if k == 0:
                top_h, top_f = np.zeros(c1 - c0 + 1, np.int32), np.full(c1 - c0 + 1, NEG, np.int32)
            else:
                with ready:
                    ready.wait_for(lambda: handover[k - 1][c] is not None)  # noqa: B023 (called in this iteration only)
                    top_h, top_f = handover[k - 1][c]
                    handover[k - 1][c] = None  # taken (nobody waits for it again): free it
            for i0, r, state, profile in blocks:
                bot_h, bot_f = np.empty(c1 - c0 + 1, np.int32), np.empty(c1 - c0 + 1, np.int32)
                edges = (top_h, top_f, bot_h, bot_f)
                _sweep(
                    state, scratch, profile, t, part_keys[k % len(part_keys)], edges, n, m, i0, r, c0, c1, oe, ge, width, scan_lo, own_lo
                )
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
    for other in part_keys[1:]:
        np.maximum(keys, other, out=keys)


def _striped_fits(scoring: Scoring, m: int, n: int) -> bool:
    """Whether the striped scan's packed int32 values and int8 profile can hold this table's scores."""
    return min(m, n) * max(scoring.max_score, 1) < PACK_LIMIT and int(np.abs(scoring.matrix).max()) < SCORE_LIMIT


def scan_section(
    query: np.ndarray, target: np.ndarray, section: Section, rule: BandRule, scoring: Scoring, threads: int = 0
) -> tuple[BandKeys, float]:
    """Band keys of the cells ``section`` owns, and the seconds the scan took (``threads``: 0 = all cores)."""
    keys = np.zeros(rule.n_bands(target.size), np.uint64)
    q = np.require(query, np.uint8, ["C", "W"])
    t = np.require(target[section.scan_lo : section.own_hi], np.uint8, ["C", "W"])
    threads = cpu_threads(threads)
    start = time.perf_counter()
    if section.own_hi > section.own_lo and q.size:
        if not _striped_fits(scoring, q.size, t.size):
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
