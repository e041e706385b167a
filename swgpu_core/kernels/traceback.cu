// Exact local-alignment traceback of many pairs at once ("kernel 2" of Khajeh-Saeed and
// Perot): the GPU twin of swgpu_core/align/traceback.py, bit for bit as docs/traceback.md
// specifies (same end cell, start cell, tie rules and path).
//
// One warp per pair. The query runs down the rows, R consecutive rows per lane, so a pass
// covers 32 * R rows; the subject is streamed column by column as a wavefront: lane t works
// on column j at step j - 1 + t and hands H and F of its last row (and the subject residue
// code) to lane t + 1 by shuffle, the layout of sw_scan.cu's inter-task kernel turned on its
// side. Taller queries take several passes; the last lane keeps its row's (H, F) per column
// in a global boundary buffer that the first lane of the next pass reads.
//
// Three kernels:
//   tb_ends<R>    pass 1 (forward local scan: best score S and the end cell under the key
//                 (H desc, i asc, j asc)) and pass 2 (the anchored reverse scan: the start
//                 cell, the first cell with D >= S in reverse row-major order, i.e. the key
//                 (i desc, j desc); a pass stops the scan once it holds a hit, since every
//                 later pass has smaller i). Given end cells and scores, pass 1 is skipped
//                 (anchored mode: align-long's end points, found by its own scan).
//   tb_region<R>  pass 3: the global recurrences over the rectangle [is..ie] x [js..je] only,
//                 storing each cell's 4-bit direction nibble in global memory, and H(ie, je).
//   tb_walk       one thread per pair follows the nibbles from (ie, je) back to the corner.
//
// Nibble layout (differs from the CPU's row-major bytes; the bits are the same): for pass p,
// column j (1-based in the region) and lane t, the R nibbles of the lane's rows are one
// R/2-byte word at word index (p * width + j - 1) * 32 + t, row r of the lane in bits 4r..4r+3.
// A warp stores 32 consecutive words per step, fully coalesced.
//
// Arithmetic is int32 with NEG = -(1 << 28) as minus infinity, as in the reference.

#include "common.cuh"  // types; kMaxCodes, Status, EndField, Warps<R> (values from swgpu_core/kernel_abi.py)

static constexpr int kNeg = -(1 << 28);
static constexpr unsigned kAll = 0xffffffffu;
static constexpr int kBig = 0x7fffffff;

// Modes of a scan pass.
enum Mode : int { kForward = 0, kReverse = 1, kRegion = 2 };

template <int R> struct NibbleWord;
template <> struct NibbleWord<4> { using T = uint16_t; };
template <> struct NibbleWord<8> { using T = uint32_t; };
template <> struct NibbleWord<16> { using T = uint64_t; };


// A sequence as the scan sees it: residue k (0-based) at base[k * stride].
struct Seq {
    const uint8_t* base;
    int stride;  // +1 forward, -1 reversed
    int len;
    __device__ __forceinline__ int code(int k) const { return __ldg(base + (int64_t)k * stride); }
};

// The lane's score table: for each residue code c, the R substitution scores of its rows as
// signed bytes, at prof[c * 32 * R + lane * R]. Each lane reads and writes only its own bytes.
template <int R>
__device__ __forceinline__ void build_profile(const int8_t* smat, int n_codes, const Seq& q, int row0, uint8_t* prof, int lane) {
    int code[R];
#pragma unroll
    for (int r = 0; r < R; ++r) code[r] = row0 + r < q.len ? q.code(row0 + r) : 0;
    for (int c = 0; c < n_codes; ++c) {
        uint32_t w[R / 4];
#pragma unroll
        for (int k = 0; k < R / 4; ++k) {
            w[k] = 0;
#pragma unroll
            for (int b = 0; b < 4; ++b) w[k] |= (uint32_t)(uint8_t)smat[code[4 * k + b] * n_codes + c] << (8 * b);
        }
        uint8_t* dst = prof + c * 32 * R + lane * R;
        if constexpr (R == 4) {
            *reinterpret_cast<uint32_t*>(dst) = w[0];
        } else if constexpr (R == 8) {
            *reinterpret_cast<uint2*>(dst) = make_uint2(w[0], w[1]);
        } else {
            *reinterpret_cast<uint4*>(dst) = make_uint4(w[0], w[1], w[2], w[3]);
        }
    }
}

template <int K, int R>
__device__ __forceinline__ void unpack4(uint32_t x, int (&w)[R]) {
#pragma unroll
    for (int b = 0; b < 4; ++b) w[K + b] = (int)(int8_t)(uint8_t)(x >> (8 * b));
}

template <int R>
__device__ __forceinline__ void load_weights(const uint8_t* p, int (&w)[R]) {
    if constexpr (R == 4) {
        unpack4<0>(*reinterpret_cast<const uint32_t*>(p), w);
    } else if constexpr (R == 8) {
        const uint2 x = *reinterpret_cast<const uint2*>(p);
        unpack4<0>(x.x, w);
        unpack4<4>(x.y, w);
    } else {
        const uint4 x = *reinterpret_cast<const uint4*>(p);
        unpack4<0>(x.x, w);
        unpack4<4>(x.y, w);
        unpack4<8>(x.z, w);
        unpack4<12>(x.w, w);
    }
}

// One pass of 32 * R rows (starting at 0-based row `row_base` of q) over all columns of s.
//   kForward: local recurrences (zero floor, H = 0 on the borders); per row, the best H and
//             the first column reaching it (a[r], b[r]).
//   kReverse: global recurrences entered through the corner; per row, the first column whose
//             diagonal term D reaches `target`, and that D (a[r], b[r]).
//   kRegion:  global recurrences entered through the corner; the direction nibbles go to
//             `dirs` (this pass's words).
// After the pass h[r] holds H of the lane's rows in the last column.
template <int R, int MODE>
struct Pass {
    int h[R];  // H(i, j-1) of the lane's rows
    int e[R];  // E(i, j-1)
    int a[R];
    int b[R];

    __device__ __forceinline__ void run(const Seq& q, const Seq& s, int row_base, bool first, bool last, const uint8_t* prof,
                                        int lane, int oe, int ge, int2* bnd, int target,
                                        typename NibbleWord<R>::T* dirs) {
        const int n = s.len;
        const int row0 = row_base + lane * R;  // the lane's first row (0-based): rows i = row0 + r + 1
        const int border = MODE == kForward ? 0 : kNeg;  // H(i, 0) and, below the corner, H(0, j)
#pragma unroll
        for (int r = 0; r < R; ++r) {
            h[r] = border;
            e[r] = kNeg;
            a[r] = MODE == kForward ? 0 : kBig;
            b[r] = 0;
        }
        // H(row0, 0), the diagonal input of the lane's first row in column 1 (0 at the corner)
        int diag = MODE == kForward || row0 == 0 ? 0 : kNeg;
        int out_h = kNeg, out_f = kNeg, out_c = 0;
        // lane 0 fetches column j + 1's residue and top input one step ahead
        int next_c = 0, next_h = border, next_f = kNeg;
        if (lane == 0 && n > 0) {
            next_c = s.code(0);
            if (!first) {
                const int2 v = bnd[1];
                next_h = v.x;
                next_f = v.y;
            }
        }
        const int steps = n + 31;
        for (int step = 0; step < steps; ++step) {
            int in_h = __shfl_up_sync(kAll, out_h, 1);
            int in_f = __shfl_up_sync(kAll, out_f, 1);
            int c = __shfl_up_sync(kAll, out_c, 1);
            const int j = step - lane + 1;
            if (lane == 0) {
                in_h = next_h;
                in_f = next_f;
                c = next_c;
                if (j < n) {
                    next_c = s.code(j);
                    if (!first) {
                        const int2 v = bnd[j + 1];
                        next_h = v.x;
                        next_f = v.y;
                    }
                }
            }
            if (j >= 1 && j <= n) {
                int w[R];
                load_weights<R>(prof + c * 32 * R + lane * R, w);
                int up_h = in_h, up_f = in_f, dg = diag;
                typename NibbleWord<R>::T word = 0;
#pragma unroll
                for (int r = 0; r < R; ++r) {
                    const int fo = up_h - oe, fe = up_f - ge;
                    const int eo = h[r] - oe, ee = e[r] - ge;
                    const int d = dg + w[r];
                    const int f = max(fo, fe);
                    const int en = max(eo, ee);
                    int hn;
                    if constexpr (MODE == kForward) {
                        hn = max(max(d, en), max(f, 0));
                        if (hn > a[r]) {
                            a[r] = hn;
                            b[r] = j;
                        }
                    } else if constexpr (MODE == kReverse) {
                        hn = max(max(d, en), f);
                        if (d >= target && a[r] == kBig) {
                            a[r] = j;
                            b[r] = d;
                        }
                    } else {
                        int bits;
                        if (d >= en && d >= f) {
                            hn = d;
                            bits = 0;
                        } else if (en >= f) {
                            hn = en;
                            bits = 1;
                        } else {
                            hn = f;
                            bits = 2;
                        }
                        bits |= (eo < ee ? 4 : 0) | (fo < fe ? 8 : 0);
                        word |= (typename NibbleWord<R>::T)bits << (4 * r);
                    }
                    dg = h[r];
                    h[r] = hn;
                    e[r] = en;
                    up_h = hn;
                    up_f = f;
                }
                if constexpr (MODE == kRegion) dirs[(int64_t)(j - 1) * 32 + lane] = word;
                diag = in_h;
                if (lane == 31 && !last) bnd[j] = make_int2(up_h, up_f);
                out_h = up_h;
                out_f = up_f;
                out_c = c;
            }
        }
        __syncwarp();  // the boundary written by the last lane is read by the first in the next pass
    }
};

// Query and subject of pair `p` from the packed residues.
struct PairSeqs {
    Seq q, s;
};

__device__ __forceinline__ PairSeqs pair_seqs(const uint8_t* residues, const int64_t* qoff, const int32_t* qlen, const int64_t* soff,
                                              const int32_t* slen, int p) {
    return PairSeqs{Seq{residues + qoff[p], 1, qlen[p]}, Seq{residues + soff[p], 1, slen[p]}};
}

__device__ __forceinline__ void load_matrix(const int8_t* matrix, int n_codes, int8_t* smat) {
    for (int k = threadIdx.x; k < n_codes * n_codes; k += blockDim.x) smat[k] = matrix[k];
    __syncthreads();
}

// Pass 1 for the warp's pair: the best score and its end cell (1-based) under the key
// (H desc, i asc, j asc), in every lane.
template <int R>
__device__ __forceinline__ int3 forward_end(const int8_t* smat, int n_codes, const PairSeqs& ps, uint8_t* prof, int lane, int oe,
                                            int ge, int2* bnd) {
    const int rows = 32 * R;
    int bh = 0, bi = 0, bj = 0;
    const int n_passes = (ps.q.len + rows - 1) / rows;
    Pass<R, kForward> fwd;
    for (int k = 0; k < n_passes; ++k) {
        const int row0 = k * rows + lane * R;
        build_profile<R>(smat, n_codes, ps.q, row0, prof, lane);
        fwd.run(ps.q, ps.s, k * rows, k == 0, k == n_passes - 1, prof, lane, oe, ge, bnd, 0, nullptr);
#pragma unroll
        for (int r = 0; r < R; ++r)  // rows ascending: strictly greater keeps the smaller i
            if (row0 + r < ps.q.len && fwd.a[r] > bh) {
                bh = fwd.a[r];
                bi = row0 + r + 1;
                bj = fwd.b[r];
            }
    }
#pragma unroll
    for (int o = 16; o > 0; o /= 2) {
        const int oh = __shfl_xor_sync(kAll, bh, o), oi = __shfl_xor_sync(kAll, bi, o), oj = __shfl_xor_sync(kAll, bj, o);
        if (oh > bh || (oh == bh && (oi < bi || (oi == bi && oj < bj)))) {
            bh = oh;
            bi = oi;
            bj = oj;
        }
    }
    return make_int3(bh, bi, bj);
}

// Passes 1 and 2 for one pair per warp. `expected` (may be null): the scores the search
// found; a pair whose best score differs gets kMismatch and no pass 2. `given` (may be null,
// then `expected` is not): per pair the end cell (qend, send), 1-based, whose alignment
// scores expected[p]; pass 1 is skipped (a window's own best cell may lie elsewhere).
// `ends`: per pair kEndFields ints (status, score, qstart, qend, sstart, send; 1-based).
template <int R>
__global__ void __launch_bounds__(Warps<R>::value * 32) tb_ends(const uint8_t* residues, const int64_t* qoff, const int32_t* qlen,
                                                                 const int64_t* soff, const int32_t* slen, int n_pairs,
                                                                 const int8_t* matrix, int n_codes, int gap_open, int gap_extend,
                                                                 const int32_t* expected, const int32_t* given, int2* boundary,
                                                                 const int64_t* bnd_off, int32_t* ends) {
    constexpr int W = Warps<R>::value;
    __shared__ int8_t smat[kMaxCodes * kMaxCodes];
    __shared__ __align__(16) uint8_t profiles[W][kMaxCodes * 32 * R];
    load_matrix(matrix, n_codes, smat);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int p = blockIdx.x * W + warp;
    if (p >= n_pairs) return;
    uint8_t* prof = profiles[warp];
    const int oe = gap_open + gap_extend;
    const PairSeqs ps = pair_seqs(residues, qoff, qlen, soff, slen, p);
    int2* bnd = boundary ? boundary + bnd_off[p] : nullptr;
    const int rows = 32 * R;

    // ---- pass 1 (or the given end): best score and end cell
    const int3 best = given ? make_int3(expected[p], given[2 * p], given[2 * p + 1])
                            : forward_end<R>(smat, n_codes, ps, prof, lane, oe, gap_extend, bnd);
    const int bh = best.x, bi = best.y, bj = best.z;
    int32_t* out = ends + (int64_t)p * kEndFields;
    if (lane == 0) {
        out[kScore] = bh;
        out[kQEnd] = bi;
        out[kSEnd] = bj;
        out[kQStart] = 0;
        out[kSStart] = 0;
    }
    if (!given && expected && expected[p] != bh) {
        if (lane == 0) out[kStatus] = kMismatch;
        return;
    }
    if (bh <= 0) {
        if (lane == 0) out[kStatus] = kNoAlignment;
        return;
    }

    // ---- pass 2: start cell, the first cell with D >= S in reverse row-major order
    const Seq rq{ps.q.base + (bi - 1), -1, bi}, rs{ps.s.base + (bj - 1), -1, bj};
    const int r_passes = (bi + rows - 1) / rows;
    Pass<R, kReverse> rev;
    int hit_lane = -1, hi = 0, hj = 0, hd = 0;
    for (int k = 0; k < r_passes && hit_lane < 0; ++k) {
        const int row0 = k * rows + lane * R;
        build_profile<R>(smat, n_codes, rq, row0, prof, lane);
        rev.run(rq, rs, k * rows, k == 0, k == r_passes - 1, prof, lane, oe, gap_extend, bnd, bh, nullptr);
        int mi = 0, mj = 0, md = 0;
        bool found = false;
#pragma unroll
        for (int r = R - 1; r >= 0; --r)  // the lane's smallest reversed row with a hit
            if (row0 + r < rq.len && rev.a[r] != kBig) {
                found = true;
                mi = row0 + r + 1;
                mj = rev.a[r];
                md = rev.b[r];
            }
        const unsigned any = __ballot_sync(kAll, found);
        if (any) {
            hit_lane = __ffs(any) - 1;
            hi = __shfl_sync(kAll, mi, hit_lane);
            hj = __shfl_sync(kAll, mj, hit_lane);
            hd = __shfl_sync(kAll, md, hit_lane);
        }
    }
    if (lane == 0) {
        if (hit_lane < 0) {
            out[kStatus] = kNoStart;
        } else if (hd > bh) {
            out[kStatus] = kAbove;
        } else {
            out[kStatus] = kOk;
            out[kQStart] = bi - hi + 1;  // reversed row i' is query row ie - i' + 1
            out[kSStart] = bj - hj + 1;
        }
    }
}

// Pass 3 for one pair per warp: nibbles of the rectangle [is..ie] x [js..je] at byte offset
// dirs_off[p] of `dirs`, and H(ie, je) in region_score[p]. `rect`: per pair (is, ie, js, je).
template <int R>
__global__ void __launch_bounds__(Warps<R>::value * 32) tb_region(const uint8_t* residues, const int64_t* qoff, const int64_t* soff,
                                                                   const int32_t* rect, int n_pairs, const int8_t* matrix, int n_codes,
                                                                   int gap_open, int gap_extend, int2* boundary, const int64_t* bnd_off,
                                                                   uint8_t* dirs, const int64_t* dirs_off, int32_t* region_score) {
    constexpr int W = Warps<R>::value;
    using Word = typename NibbleWord<R>::T;
    __shared__ int8_t smat[kMaxCodes * kMaxCodes];
    __shared__ __align__(16) uint8_t profiles[W][kMaxCodes * 32 * R];
    load_matrix(matrix, n_codes, smat);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int p = blockIdx.x * W + warp;
    if (p >= n_pairs) return;
    uint8_t* prof = profiles[warp];
    const int is = rect[4 * p], ie = rect[4 * p + 1], js = rect[4 * p + 2], je = rect[4 * p + 3];
    const Seq q{residues + qoff[p] + (is - 1), 1, ie - is + 1}, s{residues + soff[p] + (js - 1), 1, je - js + 1};
    int2* bnd = boundary ? boundary + bnd_off[p] : nullptr;
    Word* words = reinterpret_cast<Word*>(dirs + dirs_off[p]);
    const int rows = 32 * R;
    const int n_passes = (q.len + rows - 1) / rows;
    Pass<R, kRegion> reg;
    for (int k = 0; k < n_passes; ++k) {
        build_profile<R>(smat, n_codes, q, k * rows + lane * R, prof, lane);
        reg.run(q, s, k * rows, k == 0, k == n_passes - 1, prof, lane, gap_open + gap_extend, gap_extend, bnd, 0,
                words + (int64_t)k * s.len * 32);
    }
    // H(ie, je): the last row's value in the last column, held by the lane that owns it
    const int last = q.len - 1 - (n_passes - 1) * rows;
    if (lane == last / R) {
        int v = kNeg;
#pragma unroll
        for (int r = 0; r < R; ++r)
            if (r == last % R) v = reg.h[r];
        region_score[p] = v;
    }
}

// The path of each pair from its region's nibbles, one thread per pair: operations
// (0 pair, 1 subject residue vs gap 'D', 2 query residue vs gap 'I') written from the end of
// the pair's slot ops[ops_off[p] .. ops_off[p] + height + width) backwards, so the path reads
// start to end; n_ops[p] = its length, or -1 if the path leaves the region.
extern "C" __global__ void tb_walk(const int32_t* rect, int n_pairs, int R, const uint8_t* dirs, const int64_t* dirs_off, uint8_t* ops,
                        const int64_t* ops_off, int32_t* n_ops) {
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= n_pairs) return;
    const int height = rect[4 * p + 1] - rect[4 * p] + 1, width = rect[4 * p + 3] - rect[4 * p + 2] + 1;
    const uint8_t* d = dirs + dirs_off[p];
    uint8_t* end = ops + ops_off[p] + height + width;
    const int rows = 32 * R, half = R / 2;
    int i = height, j = width, state = 0, n = 0, result = -1;
    while (i >= 1) {
        if (j < 1) break;
        const int k = i - 1;
        const int pass = k / rows, lane = (k % rows) / R, r = k % R;
        const int64_t byte = (((int64_t)pass * width + (j - 1)) * 32 + lane) * half + (r >> 1);
        const int bits = (d[byte] >> ((r & 1) * 4)) & 15;
        if (state == 0) {
            const int src = bits & 3;
            if (src == 0) {
                *--end = 0;
                ++n;
                --i;
                --j;
                if (i < 1) {
                    if (j == 0) result = n;
                    break;
                }
            } else {
                state = src;
            }
        } else if (state == 1) {
            *--end = 1;
            ++n;
            --j;
            state = bits & 4 ? 1 : 0;
        } else {
            *--end = 2;
            ++n;
            --i;
            state = bits & 8 ? 2 : 0;
        }
    }
    n_ops[p] = result;
}

#ifdef SWGPU_INSTANTIATE  // offline builds (nvcc -cubin in the tests) compile every instance CuPy may ask for
#define SWGPU_TB_INSTANCES(R) \
    template __global__ void tb_ends<R>(const uint8_t*, const int64_t*, const int32_t*, const int64_t*, const int32_t*, int, \
                                        const int8_t*, int, int, int, const int32_t*, const int32_t*, int2*, const int64_t*, \
                                        int32_t*);                                                                        \
    template __global__ void tb_region<R>(const uint8_t*, const int64_t*, const int64_t*, const int32_t*, int, const int8_t*, \
                                          int, int, int, int2*, const int64_t*, uint8_t*, const int64_t*, int32_t*);
SWGPU_TB_INSTANCES(4)
SWGPU_TB_INSTANCES(8)
SWGPU_TB_INSTANCES(16)
#endif
