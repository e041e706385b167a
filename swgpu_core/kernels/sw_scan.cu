// Smith-Waterman local alignment scores with affine gaps, one query against many subjects.
//
// One source for every arithmetic: the cell update is written once against an `Arith`
// policy (packed 16-bit with Hopper DPX instructions, packed 16-bit with plain SIMD
// intrinsics for older GPUs, or 32-bit), and one thread-step routine serves both the
// inter-task kernel (a few lanes of a warp per subject) and the intra-task kernel (a whole
// block per subject, for the long tail of the length-sorted database).
//
// Table orientation: rows are subject residues, streamed; columns are query positions,
// held in registers. A "group" of threads owns a pass of COLS = lanes * R consecutive
// query columns, R per thread; lane t works on row i at step i + t (a wavefront), and
// passes the H and E values of its last column to lane t + 1 (warp shuffle, or shared
// memory between warps). Queries wider than one pass are done in several passes; the last
// lane stores its column's H and E per row in a global boundary buffer that the first lane
// reads in the next pass.
//
// In the packed arithmetics one 32-bit word holds two subjects (low and high half), the
// two neighbours in the length-sorted database, so they have about the same length.
//
// Recurrences (BLAST convention: a gap of length k costs open + k * extend, oe = open + extend):
//   E[i][j] = max(E[i][j-1] - extend, H[i][j-1] - oe)       gap along the query (row)
//   F[i][j] = max(F[i-1][j] - extend, H[i-1][j] - oe)       gap along the subject (column)
//   H[i][j] = max(0, H[i-1][j-1] + S(q_j, s_i), E[i][j], F[i][j])
// Since H >= 0, E and F never fall below -oe, so 16-bit lanes cannot underflow; a subject
// whose best score reaches 32767 - max(S) may overflow and is flagged for a 32-bit rescore.

#ifdef __CUDACC_RTC__  // NVRTC (CuPy) has no standard headers
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
#else
#include <cstdint>
#endif

#ifndef SWGPU_PAD_SCORE
#define SWGPU_PAD_SCORE (-1024)
#endif

// ---------------------------------------------------------------- arithmetic policies
struct DpxS16x2 {  // Hopper (sm_90+): VIADDMNMX / VIMNMX3 instructions
    using T = uint32_t;
    static constexpr int kLanes = 2;
    static __device__ __forceinline__ T splat(int v) { return (uint32_t)(uint16_t)(int16_t)v * 0x10001u; }
    static __device__ __forceinline__ T add(T a, T b) { return __vadd2(a, b); }
    static __device__ __forceinline__ T addmax(T a, T b, T c) { return __viaddmax_s16x2(a, b, c); }
    static __device__ __forceinline__ T max3relu(T a, T b, T c) { return __vimax3_s16x2_relu(a, b, c); }
    static __device__ __forceinline__ T max3(T a, T b, T c) { return __vimax3_s16x2(a, b, c); }
    static __device__ __forceinline__ int lane_value(T v, int k) { return (int)(int16_t)(k ? (v >> 16) : (v & 0xffffu)); }
    static __device__ __forceinline__ T shfl_max(T v, unsigned mask, int offset, int width) {
        return __vmaxs2(v, __shfl_xor_sync(mask, v, offset, width));
    }
};

struct PlainS16x2 {  // any GPU: packed SIMD intrinsics without DPX
    using T = uint32_t;
    static constexpr int kLanes = 2;
    static __device__ __forceinline__ T splat(int v) { return DpxS16x2::splat(v); }
    static __device__ __forceinline__ T add(T a, T b) { return __vadd2(a, b); }
    static __device__ __forceinline__ T addmax(T a, T b, T c) { return __vmaxs2(__vadd2(a, b), c); }
    static __device__ __forceinline__ T max3relu(T a, T b, T c) { return __vmaxs2(__vmaxs2(a, b), __vmaxs2(c, 0u)); }
    static __device__ __forceinline__ T max3(T a, T b, T c) { return __vmaxs2(__vmaxs2(a, b), c); }
    static __device__ __forceinline__ int lane_value(T v, int k) { return DpxS16x2::lane_value(v, k); }
    static __device__ __forceinline__ T shfl_max(T v, unsigned mask, int offset, int width) {
        return __vmaxs2(v, __shfl_xor_sync(mask, v, offset, width));
    }
};

struct S32 {  // exact for any score: one subject per thread lane
    using T = int32_t;
    static constexpr int kLanes = 1;
    static __device__ __forceinline__ T splat(int v) { return v; }
    static __device__ __forceinline__ T add(T a, T b) { return a + b; }
    static __device__ __forceinline__ T addmax(T a, T b, T c) { return max(a + b, c); }
    static __device__ __forceinline__ T max3relu(T a, T b, T c) { return max(max(a, b), max(c, 0)); }
    static __device__ __forceinline__ T max3(T a, T b, T c) { return max(max(a, b), c); }
    static __device__ __forceinline__ int lane_value(T v, int) { return v; }
    static __device__ __forceinline__ T shfl_max(T v, unsigned mask, int offset, int width) {
        return max(v, __shfl_xor_sync(mask, v, offset, width));
    }
};

// ---------------------------------------------------------------- inputs
struct ScanArgs {
    const uint8_t* residues;     // chunk residues, sequences back to back
    const int64_t* offsets;      // n + 1 offsets into residues (chunk-relative)
    const int32_t* subjects;     // subject list (chunk-relative indices), kLanes per group
    int n_subjects;              // entries in subjects
    const int16_t* profile;      // [kProfileRows][qpad]: S(query column, residue code)
    int qpad;                    // padded query length: n_passes * columns per pass
    int n_passes;
    int oe;                      // open + extend
    int extend;
    int overflow_at;             // a lane score >= this may have wrapped (16-bit only)
    uint2* boundary;             // per row: last column's (H, E) of the previous pass
    int32_t* scores;             // per chunk subject: best local score
    int32_t* overflow;           // list of subjects to rescore in 32 bits; [0] counts them
};

// Kernels take the fields as separate parameters (plain pointers and ints are what every
// launcher passes portably) and gather them into a ScanArgs.
#define SWGPU_SCAN_PARAMS                                                                                          \
    const uint8_t *residues, const int64_t *offsets, const int32_t *subjects, int n_subjects, const int16_t *profile, \
        int qpad, int n_passes, int oe, int extend, int overflow_at, uint2 *boundary, int32_t *scores, int32_t *overflow
#define SWGPU_SCAN_ARGS \
    ScanArgs { residues, offsets, subjects, n_subjects, profile, qpad, n_passes, oe, extend, overflow_at, boundary, scores, overflow }

static constexpr int kPadResidue = 27;   // subject rows past a sequence's end
static constexpr int kProfileRows = 28;

// The residues and profile words of one row for the kLanes subjects of a group.
template <class A, int R>
struct RowProfile {
    typename A::T p[R];

    __device__ __forceinline__ void load(const int16_t* prof_cols, int qpad, const int codes[A::kLanes]) {
        if constexpr (A::kLanes == 2) {
            const int4* ra = reinterpret_cast<const int4*>(prof_cols + (size_t)codes[0] * qpad);
            const int4* rb = reinterpret_cast<const int4*>(prof_cols + (size_t)codes[1] * qpad);
#pragma unroll
            for (int k = 0; k < R / 8; ++k) {
                const int4 a = __ldg(ra + k), b = __ldg(rb + k);
                const uint32_t wa[4] = {(uint32_t)a.x, (uint32_t)a.y, (uint32_t)a.z, (uint32_t)a.w};
                const uint32_t wb[4] = {(uint32_t)b.x, (uint32_t)b.y, (uint32_t)b.z, (uint32_t)b.w};
#pragma unroll
                for (int w = 0; w < 4; ++w) {
                    p[8 * k + 2 * w] = __byte_perm(wa[w], wb[w], 0x5410);
                    p[8 * k + 2 * w + 1] = __byte_perm(wa[w], wb[w], 0x7632);
                }
            }
        } else {
            const int4* ra = reinterpret_cast<const int4*>(prof_cols + (size_t)codes[0] * qpad);
#pragma unroll
            for (int k = 0; k < R / 8; ++k) {
                const int4 a = __ldg(ra + k);
                const uint32_t wa[4] = {(uint32_t)a.x, (uint32_t)a.y, (uint32_t)a.z, (uint32_t)a.w};
#pragma unroll
                for (int w = 0; w < 4; ++w) {
                    p[8 * k + 2 * w] = (int32_t)(int16_t)(wa[w] & 0xffffu);
                    p[8 * k + 2 * w + 1] = (int32_t)(int16_t)(wa[w] >> 16);
                }
            }
        }
    }
};

// State of one thread: R columns of the current pass.
template <class A, int R>
struct Columns {
    using T = typename A::T;
    T h[R];      // H of the last row computed, per column
    T f[R];      // F of the last row computed, per column
    T best;      // running maximum of H
    T diag;      // H[i-1][first column - 1]: the left input of the previous row

    __device__ __forceinline__ void reset(int oe) {
#pragma unroll
        for (int j = 0; j < R; ++j) { h[j] = A::splat(0); f[j] = A::splat(-oe); }
        diag = A::splat(0);
    }

    // One row: takes the left neighbour's H and E of this row, returns this thread's last ones.
    __device__ __forceinline__ void step(const T (&p)[R], T& in_h, T& in_e, T neg_oe, T neg_ext) {
        T e = in_e, left = in_h, d = diag;
        diag = in_h;
#pragma unroll
        for (int j = 0; j < R; ++j) {
            e = A::addmax(e, neg_ext, A::add(left, neg_oe));
            f[j] = A::addmax(f[j], neg_ext, A::add(h[j], neg_oe));
            const T hn = A::max3relu(A::add(d, p[j]), e, f[j]);
            d = h[j];
            h[j] = hn;
            left = hn;
        }
#pragma unroll
        for (int j = 0; j + 1 < R; j += 2) best = A::max3(best, h[j], h[j + 1]);
        in_h = left;
        in_e = e;
    }
};

template <class A>
__device__ __forceinline__ void load_codes(const ScanArgs& a, const int64_t (&off)[A::kLanes], const int (&len)[A::kLanes], int row,
                                           int (&codes)[A::kLanes]) {
#pragma unroll
    for (int k = 0; k < A::kLanes; ++k) codes[k] = row < len[k] ? (int)__ldg(a.residues + off[k] + row) : kPadResidue;
}

template <class A>
__device__ __forceinline__ void finish(const ScanArgs& a, typename A::T best, const int (&subj)[A::kLanes]) {
#pragma unroll
    for (int k = 0; k < A::kLanes; ++k) {
        if (subj[k] < 0) continue;
        const int s = A::lane_value(best, k);
        a.scores[subj[k]] = s;
        if (A::kLanes > 1 && s >= a.overflow_at) {
            const int slot = atomicAdd(a.overflow, 1);
            a.overflow[1 + slot] = subj[k];
        }
    }
}

template <class A>
__device__ __forceinline__ int group_subjects(const ScanArgs& a, int group, int (&subj)[A::kLanes], int64_t (&off)[A::kLanes],
                                              int (&len)[A::kLanes]) {
    int longest = 0;
#pragma unroll
    for (int k = 0; k < A::kLanes; ++k) {
        const int idx = group * A::kLanes + k;
        subj[k] = idx < a.n_subjects ? a.subjects[idx] : -1;
        off[k] = subj[k] >= 0 ? a.offsets[subj[k]] : 0;
        len[k] = subj[k] >= 0 ? (int)(a.offsets[subj[k] + 1] - off[k]) : 0;
        longest = max(longest, len[k]);
    }
    return longest;
}

// ---------------------------------------------------------------- inter-task kernel
// G lanes of a warp per group of kLanes subjects; groups in reverse list order so that the
// longest subjects (the list is sorted by length) start first and the tail stays short.
template <class A, int R, int G>
__global__ void __launch_bounds__(256) sw_inter(SWGPU_SCAN_PARAMS) {
    const ScanArgs a = SWGPU_SCAN_ARGS;
    using T = typename A::T;
    static_assert(32 % G == 0 && R % 8 == 0, "G divides a warp, R is a multiple of 8");
    const int lane = threadIdx.x % G;
    const int n_groups = (a.n_subjects + A::kLanes - 1) / A::kLanes;
    const int group = n_groups - 1 - (int)((blockIdx.x * blockDim.x + threadIdx.x) / G);
    if (group < 0) return;  // whole groups leave together
    const unsigned mask = (G == 32) ? 0xffffffffu : (((1u << G) - 1u) << ((threadIdx.x % 32) / G * G));

    int subj[A::kLanes], len[A::kLanes];
    int64_t off[A::kLanes];
    const int longest = group_subjects<A>(a, group, subj, off, len);
    uint2* bnd = a.boundary + off[0];  // the group's subjects are adjacent: room for `longest` rows
    const T neg_oe = A::splat(-a.oe), neg_ext = A::splat(-a.extend);

    Columns<A, R> col;
    col.best = A::splat(0);
    for (int pass = 0; pass < a.n_passes; ++pass) {
        col.reset(a.oe);
        const int16_t* prof = a.profile + pass * (G * R) + lane * R;
        T out_h = A::splat(0), out_e = neg_oe;
        const bool first = pass == 0, last = pass == a.n_passes - 1;
        int codes[A::kLanes];
        load_codes<A>(a, off, len, max(-lane, 0), codes);  // prefetched one row ahead
        for (int s = 0; s < longest + G - 1; ++s) {
            const int row = s - lane;
            T in_h = __shfl_up_sync(mask, out_h, 1, G);
            T in_e = __shfl_up_sync(mask, out_e, 1, G);
            if (row >= 0 && row < longest) {
                if (lane == 0) {
                    if (first) { in_h = A::splat(0); in_e = neg_oe; }
                    else { const uint2 b = bnd[row]; in_h = (T)b.x; in_e = (T)b.y; }
                }
                RowProfile<A, R> rp;
                rp.load(prof, a.qpad, codes);
                load_codes<A>(a, off, len, row + 1, codes);
                col.step(rp.p, in_h, in_e, neg_oe, neg_ext);
                out_h = in_h;
                out_e = in_e;
                if (lane == G - 1 && !last) bnd[row] = make_uint2((uint32_t)out_h, (uint32_t)out_e);
            }
        }
        __syncwarp(mask);  // the boundary written by the last lane is read by the first next pass
    }
    T best = col.best;
#pragma unroll
    for (int o = G / 2; o > 0; o /= 2) best = A::shfl_max(best, mask, o, G);
    if (lane == 0) finish<A>(a, best, subj);
}

// ---------------------------------------------------------------- intra-task kernel
// A block of W warps per group of kLanes (long) subjects: the pass is W * 32 * R columns
// wide. Warp w runs kDelay steps behind warp w - 1 and takes its left input from a shared
// ring written by warp w - 1's last lane; the block synchronises every kBatch steps, and
// kDelay = 2 * kBatch guarantees every value is written in an earlier batch than it is read.
static constexpr int kBatch = 32, kDelay = 64, kRing = 128;

template <class A, int R, int W>
__global__ void __launch_bounds__(W * 32) sw_intra(SWGPU_SCAN_PARAMS) {
    const ScanArgs a = SWGPU_SCAN_ARGS;
    using T = typename A::T;
    static_assert(R % 8 == 0, "R is a multiple of 8");
    __shared__ uint2 ring[W][kRing];
    __shared__ T warp_best[W];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, thread = threadIdx.x;
    const int n_groups = (a.n_subjects + A::kLanes - 1) / A::kLanes;
    const int group = n_groups - 1 - (int)blockIdx.x;

    int subj[A::kLanes], len[A::kLanes];
    int64_t off[A::kLanes];
    const int longest = group_subjects<A>(a, group, subj, off, len);
    uint2* bnd = a.boundary + off[0];
    const T neg_oe = A::splat(-a.oe), neg_ext = A::splat(-a.extend);
    const int lag = warp * kDelay + lane;  // this thread works on row (block step - lag)
    const int steps = longest + (W - 1) * kDelay + 31;

    Columns<A, R> col;
    col.best = A::splat(0);
    for (int pass = 0; pass < a.n_passes; ++pass) {
        col.reset(a.oe);
        const int16_t* prof = a.profile + pass * (W * 32 * R) + thread * R;
        T out_h = A::splat(0), out_e = neg_oe;
        const bool first = pass == 0, last = pass == a.n_passes - 1;
        int codes[A::kLanes];
        load_codes<A>(a, off, len, 0, codes);  // prefetched one row ahead
        for (int s0 = 0; s0 < steps; s0 += kBatch) {
            for (int s = s0; s < s0 + kBatch; ++s) {
                const int row = s - lag;
                T in_h = __shfl_up_sync(0xffffffffu, out_h, 1);
                T in_e = __shfl_up_sync(0xffffffffu, out_e, 1);
                if (row >= 0 && row < longest) {
                    if (lane == 0) {
                        if (warp > 0) { const uint2 b = ring[warp - 1][row % kRing]; in_h = (T)b.x; in_e = (T)b.y; }
                        else if (first) { in_h = A::splat(0); in_e = neg_oe; }
                        else { const uint2 b = bnd[row]; in_h = (T)b.x; in_e = (T)b.y; }
                    }
                    RowProfile<A, R> rp;
                    rp.load(prof, a.qpad, codes);
                    load_codes<A>(a, off, len, row + 1, codes);
                    col.step(rp.p, in_h, in_e, neg_oe, neg_ext);
                    out_h = in_h;
                    out_e = in_e;
                    if (lane == 31) {
                        const uint2 v = make_uint2((uint32_t)out_h, (uint32_t)out_e);
                        if (warp < W - 1) ring[warp][row % kRing] = v;
                        else if (!last) bnd[row] = v;
                    }
                }
            }
            __syncthreads();
        }
    }
    T best = col.best;
#pragma unroll
    for (int o = 16; o > 0; o /= 2) best = A::shfl_max(best, 0xffffffffu, o, 32);
    if (lane == 0) warp_best[warp] = best;
    __syncthreads();
    if (thread == 0) {
        for (int w = 1; w < W; ++w) best = A::max3(best, warp_best[w], warp_best[w]);
        finish<A>(a, best, subj);
    }
}
