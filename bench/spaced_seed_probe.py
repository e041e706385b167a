"""Issue 15 probe: spaced seeds in a reduced alphabet as the fast mode's candidate stage.

    python bench/spaced_seed_probe.py cpu DB QUERIES [--queries-n N] [--out pairs.npy]
    python bench/spaced_seed_probe.py gpu DB QUERIES [--queries-n N] [--out pairs.npy] [--recall]

The rule probed (order-independent, like the present one): residues map to DIAMOND's 11-letter
reduced alphabet (KREDQN C G H M F Y ILV W P STA; codes >= 20 carry no seed). For each of
DIAMOND's 14 "very sensitive" spaced shapes of weight 7, a *hit* is a (query position i,
subject position j) whose reduced letters agree at the shape's 7 positions. A hit whose span
(the shape's whole length, BLOSUM62 on the real residues) scores at least ``--span`` is
extended without gaps both ways (X-drop ``--xdrop``); (query, subject) is a candidate iff
some hit's span + gains reaches ``--trigger``. Measured on the CPU first (20 M residues of
bench200M's kind, 100 queries): at span 10, trigger 60 it keeps 1.0% of the cells and
97.4% / 94.3% of the exact mode's pairs at E <= 1e-6 / 1e-4 (the 200 M cutoffs 1e-5 / 1e-3).

``cpu``: numba, one thread, the reference. ``gpu``: a CuPy kernel, one warp per subject,
one lane per subject position; prints the kernel's time per chunk and in all, the counts,
and with ``--recall`` runs the exact search of the same queries on the GPU and prints the
share of its pairs (E <= 1e-5, 1e-3) that the candidates hold. ``--out``: the candidate
pairs (query, subject in sorted numbering) as int64 [n, 2], sorted, to compare the two.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import swgpu_core as sw  # noqa: E402

LETTERS = "ARNDCQEGHILKMFPSTWYV"  # swgpu's protein codes 0..19
GROUPS = "KREDQN C G H M F Y ILV W P STA"
SHAPES = ["11101111", "110110111", "111111001", "1010111011", "11110001011", "110100101011", "110110001101",
          "1010101000111", "1100101001011", "1101010101001", "1110010010011", "110110000010011", "111001000100011",
          "1101000100010011"]  # fmt: skip
WEIGHT = 7
N_RED = len(GROUPS.split())
N_KEYS = N_RED**WEIGHT


def reduction() -> np.ndarray:
    red = np.full(32, 255, np.uint8)
    for g, letters in enumerate(GROUPS.split()):
        for c in letters:
            red[LETTERS.index(c)] = g
    return red


def shape_offsets() -> tuple[np.ndarray, np.ndarray]:
    offs = np.array([[t for t, c in enumerate(s) if c == "1"] for s in SHAPES], np.int32)
    return offs, np.array([len(s) for s in SHAPES], np.int32)


def query_keys(codes: np.ndarray, qstart: np.ndarray, red: np.ndarray, offs: np.ndarray, length: int) -> tuple[np.ndarray, np.ndarray]:
    """(keys, positions) of one shape over the concatenated queries, positions where the whole
    span lies in one query and all 7 letters reduce."""
    n = codes.size
    pos = np.arange(n, dtype=np.int64)
    qid = np.searchsorted(qstart, pos, side="right") - 1
    ok = pos + length <= qstart[qid + 1]
    key = np.zeros(n, np.int64)
    for o in offs:
        idx = np.minimum(pos + o, n - 1)
        r = red[np.minimum(codes[idx], 31)]
        ok &= r != 255
        key = key * N_RED + r
    return key[ok], pos[ok]


def load(db_path: str, q_path: str, n: int | None):
    db = sw.open_database(db_path)
    queries = sw.read_queries(q_path)[:n]
    codes = [np.asarray(q.codes, np.uint8) for q in queries]
    qstart = np.zeros(len(codes) + 1, np.int64)
    qstart[1:] = np.cumsum([c.size for c in codes])
    return db, queries, np.concatenate(codes), qstart


def cpu(args: argparse.Namespace) -> np.ndarray:
    import numba as nb

    @nb.njit(cache=False)
    def scan(res, offsets, first, stop, qcodes, qstart, qid_of, red, so, sl, tab_off, tab_pos, m, span_min, xdrop, trigger, flags):
        nsh = sl.size
        for s in range(first, stop):
            sb, se = offsets[s], offsets[s + 1]
            for j in range(sb, se):
                for sh in range(nsh):
                    L = sl[sh]
                    if j + L > se:
                        continue
                    key = 0
                    ok = True
                    for t in range(so.shape[1]):
                        r = red[res[j + so[sh, t]]]
                        if r == 255:
                            ok = False
                            break
                        key = key * 11 + r
                    if not ok:
                        continue
                    for e in range(tab_off[sh, key], tab_off[sh, key + 1]):
                        g = tab_pos[e]
                        q = qid_of[g]
                        if flags[q, s - first]:
                            continue
                        span = 0
                        for t in range(L):
                            span += m[qcodes[g + t], res[j + t]]
                        if span < span_min:
                            continue
                        best = 0
                        run = 0
                        x, y = g + L, j + L
                        while x < qstart[q + 1] and y < se:
                            run += m[qcodes[x], res[y]]
                            if run > best:
                                best = run
                            elif best - run > xdrop:
                                break
                            x += 1
                            y += 1
                        bl = 0
                        run = 0
                        x, y = g - 1, j - 1
                        while x >= qstart[q] and y >= sb:
                            run += m[qcodes[x], res[y]]
                            if run > bl:
                                bl = run
                            elif bl - run > xdrop:
                                break
                            x -= 1
                            y -= 1
                        if span + best + bl >= trigger:
                            flags[q, s - first] = 1

    db, queries, qcodes, qstart = load(args.db, args.queries, args.queries_n)
    red = reduction()
    so, sl = shape_offsets()
    tab_off = np.zeros((len(SHAPES), N_KEYS + 1), np.int64)
    pos_parts = []
    base = 0
    for k, (o, L) in enumerate(zip(so, sl)):
        key, pos = query_keys(qcodes, qstart, red, o, int(L))
        order = np.argsort(key, kind="stable")
        tab_off[k, 1:] = np.cumsum(np.bincount(key, minlength=N_KEYS)) + base
        tab_off[k, 0] = base
        pos_parts.append(pos[order])
        base += key.size
    tab_pos = np.concatenate(pos_parts)
    qid_of = np.repeat(np.arange(len(queries)), np.diff(qstart)).astype(np.int64)
    m = np.ascontiguousarray(sw.Scoring.protein().matrix, np.int32)
    pairs = []
    started = time.perf_counter()
    for chunk in db.chunks:
        res = np.ascontiguousarray(db.chunk_residues(chunk))
        offsets = np.asarray(db.offsets[chunk.first : chunk.stop + 1], np.int64) - chunk.residue_start
        flags = np.zeros((len(queries), chunk.n_sequences), np.uint8)
        scan(res, offsets, 0, chunk.n_sequences, qcodes, qstart, qid_of, red, so, sl, tab_off, tab_pos, m, args.span, args.xdrop, args.trigger, flags)  # fmt: skip
        q, s = np.nonzero(flags)
        pairs.append(np.stack([q, s + chunk.first], axis=1))
    print(json.dumps({"cpu_seconds": round(time.perf_counter() - started, 2)}))
    return np.concatenate(pairs).astype(np.int64)


KERNEL = r"""
// One warp per subject (grid-stride over the chunk's subjects), 32 subject positions at a time,
// one per lane. For each shape: every lane computes its position's key and probes the presence
// bitmap; the warp then takes the hits of all 32 lanes in rounds of 32 (an inclusive scan of the
// lanes' entry counts, each lane finding its hit's source lane by a binary search over the scan
// through shuffles), so lanes stay busy however unevenly the keys hit. A hit whose span scores
// at least SPAN_MIN goes to the warp's queue in shared memory; the queue is extended 32 at a
// time, one hit per lane, so the X-drop loops run side by side. (A variant that reduced each
// lane's 16-residue window once into registers and unrolled the shapes needed 128 registers
// and ran 20% slower: bench/RESULTS.md.)
#define QCAP 64
struct Ext { int q, g, j, span; };

extern "C" __global__ void __launch_bounds__(256)
spaced_seed(const unsigned char* __restrict__ res, const long long* __restrict__ offs, int n_subj,
            const unsigned char* __restrict__ red_g, const int* __restrict__ so_g, const int* __restrict__ sl_g,
            const unsigned int* __restrict__ bitmap, const int* __restrict__ tab_off, const int* __restrict__ tab_pos,
            const int* __restrict__ qid_of, const int* __restrict__ qstart, const unsigned char* __restrict__ qcodes,
            const int* __restrict__ matrix_g, unsigned int* __restrict__ flags, int row_words,
            unsigned long long* __restrict__ counters)
{
    __shared__ int M[32 * 32];
    __shared__ unsigned char RED[32];
    __shared__ int SO[NSH * W];
    __shared__ int SL[NSH];
    __shared__ Ext QU[8][QCAP];
    __shared__ int QL[8][QCAP];  // each queued hit's span length
    for (int t = threadIdx.x; t < 32 * 32; t += blockDim.x) M[t] = matrix_g[t];
    for (int t = threadIdx.x; t < 32; t += blockDim.x) RED[t] = red_g[t];
    for (int t = threadIdx.x; t < NSH * W; t += blockDim.x) SO[t] = so_g[t];
    for (int t = threadIdx.x; t < NSH; t += blockDim.x) SL[t] = sl_g[t];
    __syncthreads();
    const int lane = threadIdx.x & 31, wib = threadIdx.x >> 5;
    const int nwarps = (gridDim.x * blockDim.x) >> 5;
    Ext* qu = QU[wib];
    int* ql = QL[wib];
    unsigned long long hits = 0, exts = 0;
    for (int s = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; s < n_subj; s += nwarps) {
        const long long sb = offs[s], se = offs[s + 1];
        const unsigned int bit = 1u << (s & 31);
        int queued = 0;
        // extend the first n queued hits (n <= 32), one per lane, then drop them from the queue
        auto flush = [&](int n) {
            if (lane < n) {
                const Ext h = qu[lane];
                const int L = ql[lane];
                unsigned int* fw = flags + (size_t)h.q * row_words + (s >> 5);
                if (!(*((volatile unsigned int*)fw) & bit)) {
                    ++exts;
                    const int qe = qstart[h.q + 1], qs = qstart[h.q];
                    int best = 0, run = 0, x = h.g + L;
                    long long y = (long long)h.j + L;
                    while (x < qe && y < se) {
                        run += M[qcodes[x] * 32 + res[y]];
                        if (run > best) best = run; else if (best - run > XDROP) break;
                        ++x; ++y;
                    }
                    int bl = 0; run = 0; x = h.g - 1; y = (long long)h.j - 1;
                    while (x >= qs && y >= sb) {
                        run += M[qcodes[x] * 32 + res[y]];
                        if (run > bl) bl = run; else if (bl - run > XDROP) break;
                        --x; --y;
                    }
                    if (h.span + best + bl >= TRIGGER) atomicOr(fw, bit);
                }
            }
            __syncwarp();
            const int rest = queued - n;
            Ext keep; int keepL = 0;
            if (lane < rest) { keep = qu[n + lane]; keepL = ql[n + lane]; }
            __syncwarp();
            if (lane < rest) { qu[lane] = keep; ql[lane] = keepL; }
            __syncwarp();
            queued = rest;
        };
        for (long long j0 = sb; j0 < se; j0 += 32) {
            const long long j = j0 + lane;
            for (int sh = 0; sh < NSH; ++sh) {
                const int L = SL[sh];
                int a = 0, cnt = 0;
                if (j + L <= se) {
                    unsigned int key = 0;
                    bool ok = true;
                    #pragma unroll
                    for (int t = 0; t < W; ++t) {
                        const unsigned int r = RED[res[j + SO[sh * W + t]]];
                        if (r == 255u) { ok = false; break; }
                        key = key * NRED + r;
                    }
                    if (ok && ((__ldg(bitmap + (size_t)sh * BM_WORDS + (key >> 5)) >> (key & 31)) & 1u)) {
                        const int* to = tab_off + (size_t)sh * (NKEYS + 1);
                        a = to[key];
                        cnt = to[key + 1] - a;
                    }
                }
                int incl = cnt;
                #pragma unroll
                for (int d = 1; d < 32; d <<= 1) {
                    const int v = __shfl_up_sync(0xffffffffu, incl, d);
                    if (lane >= d) incl += v;
                }
                const int total = __shfl_sync(0xffffffffu, incl, 31);
                for (int base = 0; base < total; base += 32) {
                    const int h = base + lane;
                    int lo = 0;  // the source lane: the first l with incl[l] > h
                    #pragma unroll
                    for (int step = 16; step > 0; step >>= 1) {
                        const int v = __shfl_sync(0xffffffffu, incl, lo + step - 1);
                        if (v <= h) lo += step;
                    }
                    const int src_incl = __shfl_sync(0xffffffffu, incl, lo);
                    const int src_cnt = __shfl_sync(0xffffffffu, cnt, lo);
                    const int src_a = __shfl_sync(0xffffffffu, a, lo);
                    bool pass = false;
                    Ext mine;
                    if (h < total) {
                        const int g = tab_pos[src_a + (h - (src_incl - src_cnt))];
                        const int q = qid_of[g];
                        const int jh = (int)(j0 + lo);
                        const unsigned int* fw = flags + (size_t)q * row_words + (s >> 5);
                        if (!(*((volatile const unsigned int*)fw) & bit)) {
                            ++hits;
                            int span = 0;
                            for (int t = 0; t < L; ++t) span += M[qcodes[g + t] * 32 + res[jh + t]];
                            if (span >= SPAN_MIN) { pass = true; mine.q = q; mine.g = g; mine.j = jh; mine.span = span; }
                        }
                    }
                    const unsigned int ball = __ballot_sync(0xffffffffu, pass);
                    if (pass) {
                        const int slot = queued + __popc(ball & ((1u << lane) - 1u));
                        qu[slot] = mine;
                        ql[slot] = L;
                    }
                    __syncwarp();
                    queued += __popc(ball);
                    if (queued >= 32) flush(32);
                }
            }
        }
        while (queued > 0) flush(min(queued, 32));
    }
    atomicAdd(&counters[0], hits);
    atomicAdd(&counters[1], exts);
}
"""


def gpu(args: argparse.Namespace) -> np.ndarray:
    import cupy as cp

    db, queries, qcodes, qstart = load(args.db, args.queries, args.queries_n)
    red = reduction()
    so, sl = shape_offsets()
    t0 = time.perf_counter()
    bm_words = -(-N_KEYS // 32)
    tab_off = cp.zeros((len(SHAPES), N_KEYS + 1), cp.int32)
    bitmap = cp.zeros((len(SHAPES), bm_words), cp.uint32)
    pos_parts = []
    base = 0
    for k, (o, L) in enumerate(zip(so, sl)):
        key, pos = query_keys(qcodes, qstart, red, o, int(L))
        order = np.argsort(key, kind="stable")
        counts = cp.bincount(cp.asarray(key), minlength=N_KEYS)
        tab_off[k, 1:] = cp.cumsum(counts) + base
        tab_off[k, 0] = base
        present = cp.zeros(bm_words * 32, cp.uint8)
        present[:N_KEYS] = counts > 0
        bitmap[k] = cp.packbits(present, bitorder="little").view(cp.uint32)
        pos_parts.append(pos[order])
        base += key.size
    d_tab_pos = cp.asarray(np.concatenate(pos_parts).astype(np.int32))
    d_qid = cp.asarray(np.repeat(np.arange(len(queries)), np.diff(qstart)).astype(np.int32))
    d_qstart = cp.asarray(qstart.astype(np.int32))
    d_q = cp.asarray(np.concatenate([qcodes, np.zeros(32, np.uint8)]))  # the span's word loads read past the end
    m = np.zeros((32, 32), np.int32)
    mat = sw.Scoring.protein().matrix
    m[: mat.shape[0], : mat.shape[1]] = mat
    d_m = cp.asarray(m)
    d_red = cp.asarray(red)
    d_so, d_sl = cp.asarray(so.ravel()), cp.asarray(sl)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    counters = cp.zeros(2, cp.uint64)
    cp.cuda.Device().synchronize()
    table_s = time.perf_counter() - t0
    n_res = int(qstart[-1])
    results = []
    for span_min, trigger in [(int(x), int(y)) for x, y in (v.split(":") for v in args.points)]:
        opts = (f"-DNSH={len(SHAPES)}", f"-DW={WEIGHT}", f"-DNRED={N_RED}", f"-DNKEYS={N_KEYS}", f"-DBM_WORDS={bm_words}",
                f"-DSPAN_MIN={span_min}", f"-DXDROP={args.xdrop}", f"-DTRIGGER={trigger}", "-std=c++17")  # fmt: skip
        kernel = cp.RawKernel(KERNEL, "spaced_seed", options=opts)
        for _rep in range(2):  # the first pass warms up (compile, caches); the second is timed
            counters.fill(0)
            pairs, kernel_s, per_chunk = [], 0.0, []
            for chunk in db.chunks:
                res = cp.asarray(np.ascontiguousarray(db.chunk_residues(chunk)))
                offsets = cp.asarray(np.asarray(db.offsets[chunk.first : chunk.stop + 1], np.int64) - chunk.residue_start)
                n = chunk.n_sequences
                row_words = -(-n // 32)
                flags = cp.zeros((len(queries), row_words), cp.uint32)
                a, b = cp.cuda.Event(), cp.cuda.Event()
                a.record()
                kernel((sms * args.blocks_per_sm,), (256,), (res, offsets, np.int32(n), d_red, d_so, d_sl, bitmap, tab_off, d_tab_pos,
                                                              d_qid, d_qstart, d_q, d_m, flags, np.int32(row_words), counters))  # fmt: skip
                b.record()
                b.synchronize()
                sec = cp.cuda.get_elapsed_time(a, b) / 1e3
                kernel_s += sec
                per_chunk.append(round(sec, 4))
                bits = cp.unpackbits(flags.view(cp.uint8), bitorder="little").reshape(len(queries), row_words * 32)[:, :n]
                q, s = cp.nonzero(bits)
                pairs.append(np.stack([q.get(), s.get() + chunk.first], axis=1))
        out = np.concatenate(pairs).astype(np.int64)
        c = counters.get()
        cells = np.asarray(db.lengths, np.int64)[out[:, 1]] @ np.diff(qstart)[out[:, 0]] / (n_res * db.n_residues) if out.size else 0.0
        row = {"queries": len(queries), "query_residues": n_res, "db_residues": db.n_residues, "table_seconds": round(table_s, 3),
               "kernel_seconds": round(kernel_s, 4), "per_chunk": per_chunk, "hits": int(c[0]), "extensions": int(c[1]),
               "candidates": int(out.shape[0]), "candidates_per_query": round(out.shape[0] / len(queries), 1),
               "cells": round(float(cells), 5), "span": span_min, "xdrop": args.xdrop, "trigger": trigger}  # fmt: skip
        print(json.dumps(row), flush=True)
        results.append((row, out))
    if args.subset:
        subset_time(db, queries, results)
    if args.recall:
        exact_recall(db, queries, results)
    return results[0][1]


def subset_time(db, queries, results: list) -> None:
    """The exact stage of each point's candidates: the engine's ``scan_subset`` over every chunk
    (top 500), after one warm-up pass, wall time on the host."""
    from swgpu_core.engine import get_engine

    scanner = get_engine("cuda").scanner(sw.Scoring.protein())
    for row, pairs in results:
        per_chunk = []
        for chunk in db.chunks:
            inside = pairs[(pairs[:, 1] >= chunk.first) & (pairs[:, 1] < chunk.stop)]
            per_chunk.append((chunk, [inside[inside[:, 0] == k, 1] for k in range(len(queries))]))
        times = []
        for _rep in range(2):
            started = time.perf_counter()
            for chunk, subjects in per_chunk:
                scanner.scan_subset(db, chunk, queries, subjects, 500)
            times.append(time.perf_counter() - started)
        print(
            json.dumps(
                {"span": row["span"], "trigger": row["trigger"], "cells": row["cells"], "subset_seconds": [round(t, 3) for t in times]}
            ),
            flush=True,
        )


def exact_recall(db, queries, results: list) -> None:
    """The exact search of the same queries (GPU, top 500), then each point's recall."""
    started = time.perf_counter()
    result = sw.search(db, queries, backend="cuda", top=500, keep_score_stats=False)
    stats = sw.statistics(sw.Scoring.protein(), db)
    refs = {}
    for cut in (1e-5, 1e-3):
        refs[cut] = set()
        for k, qh in enumerate(result.hits):
            e = stats.evalue(k, len(qh.query), qh.scores, np.asarray(db.lengths)[qh.subjects])
            refs[cut].update((k, int(s)) for s in qh.subjects[e <= cut])
    print(json.dumps({"exact_seconds": round(time.perf_counter() - started, 2), "exact_scan": round(result.seconds, 2)}), flush=True)
    for row, pairs in results:
        found = set(map(tuple, pairs.tolist()))
        got = {"span": row["span"], "trigger": row["trigger"], "kernel_seconds": row["kernel_seconds"], "cells": row["cells"]}
        for cut, ref in refs.items():
            got[f"recall_{cut:g}"] = round(len(ref & found) / max(len(ref), 1), 4)
            got[f"pairs_{cut:g}"] = len(ref)
        print(json.dumps(got), flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("where", choices=["cpu", "gpu"])
    p.add_argument("db")
    p.add_argument("queries")
    p.add_argument("--queries-n", type=int)
    p.add_argument("--span", type=int, default=10, help="the CPU's span minimum")
    p.add_argument("--points", nargs="+", default=["10:60"], help="GPU: SPAN:TRIGGER points, one kernel each")
    p.add_argument("--xdrop", type=int, default=16)
    p.add_argument("--trigger", type=int, default=60, help="the CPU's trigger")
    p.add_argument("--blocks-per-sm", type=int, default=8)
    p.add_argument("--recall", action="store_true")
    p.add_argument("--subset", action="store_true", help="GPU: time the exact stage of each point's candidates")
    p.add_argument("--out")
    a = p.parse_args()
    pairs = cpu(a) if a.where == "cpu" else gpu(a)
    pairs = pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))] if pairs.size else pairs
    print(json.dumps({"pairs": int(pairs.shape[0])}))
    if a.out:
        np.save(a.out, pairs)


if __name__ == "__main__":
    main()
