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
// Every H is used twice as "H - oe" (for E to its right, for F below) and once on the
// diagonal, so the kernels keep G = H - oe instead of H and the profile holds S + oe:
// H[i-1][j-1] + S = G[i-1][j-1] + (S + oe). That is five instructions per cell with DPX
// (see Columns::step: an add-max for E, one for F, a three-way max with the zero floor for
// H, the add that makes G, and the add of the diagonal term, made a row ahead).
// Since H >= 0, E, F and G never fall below -oe, so 16-bit lanes cannot underflow; a subject
// whose best score reaches 32767 - max(S) may overflow and is flagged for a 32-bit rescore.
//
// Rows past a subject's end (and, in the wavefront, rows before a lane's first) are computed
// like real rows with the padding residue, whose profile scores are very negative: such a
// row leaves a lane's state as it was before the first row, and never raises the best score
// after the last one (its H values are gap extensions of earlier, larger H values). So the
// inner loop has no branch; only the boundary loads and stores check the row.

#include "common.cuh"  // types; kProfileRows, kPadResidue, kInterBlock (values from swgpu_core/kernel_abi.py)

// Resident inter-task blocks per SM the registers must allow (launch bounds). Three (up to 80
// registers) keep 24 warps per SM, which a batch of few subjects needs: more groups in flight
// shorten the tails. But the row loop of Columns then spills its loop bound and a length (two
// local loads per row); with two (up to 128 registers) nothing spills. A group gets 8 lanes only
// when the batch has enough pairs to fill the GPU with them (swgpu_core.plan.inter_lanes), so
// that is where the loop's instructions count more than the warps in flight.
template <int G>
__host__ __device__ constexpr int inter_min_blocks() {  // NVRTC takes an unannotated function for a host one
    return G == 8 ? 2 : 3;
}

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

// The residues and profile words of one row for the kLanes subjects of a group.
template <class A, int R>
struct RowProfile {
    typename A::T p[R];

    // The profile row of residue `code`, addressed by a 32-bit unsigned byte offset (no
    // sign extension or 64-bit multiply per row; 28 rows of qpad int16 fit easily).
    static __device__ __forceinline__ const int4* row(const int16_t* prof_cols, int qpad, uint32_t code) {
        return reinterpret_cast<const int4*>(reinterpret_cast<const char*>(prof_cols) + code * (2u * (uint32_t)qpad));
    }

    // `kstride`: int4 words between a thread's blocks of 8 columns (see build_profile)
    __device__ __forceinline__ void load(const int16_t* prof_cols, int qpad, uint32_t codes, int kstride) {
        if constexpr (A::kLanes == 2) {
            const int4* ra = row(prof_cols, qpad, codes & 0xffu);
            const int4* rb = row(prof_cols, qpad, codes >> 8);
#pragma unroll
            for (int k = 0; k < R / 8; ++k) {
                const int4 a = __ldg(ra + k * kstride), b = __ldg(rb + k * kstride);
                const uint32_t wa[4] = {(uint32_t)a.x, (uint32_t)a.y, (uint32_t)a.z, (uint32_t)a.w};
                const uint32_t wb[4] = {(uint32_t)b.x, (uint32_t)b.y, (uint32_t)b.z, (uint32_t)b.w};
#pragma unroll
                for (int w = 0; w < 4; ++w) {
                    p[8 * k + 2 * w] = __byte_perm(wa[w], wb[w], 0x5410);
                    p[8 * k + 2 * w + 1] = __byte_perm(wa[w], wb[w], 0x7632);
                }
            }
        } else {
            const int4* ra = row(prof_cols, qpad, codes);
#pragma unroll
            for (int k = 0; k < R / 8; ++k) {
                const int4 a = __ldg(ra + k * kstride);
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

// State of one thread: R columns of the current pass. Per column it keeps F of the last row
// and the next row's diagonal term, not H: the diagonal term of row i + 1, column j is
// D = G[i][j-1] + P_{i+1}[j] (G = H - oe, P = S + oe), and it is made in row i, from the G
// of column j - 1 just computed and the profile of row i + 1, which the caller therefore
// loads one row ahead (`step`'s `p`). Why not keep G and add the profile in the next row, as
// the recurrences read: then column j of row i + 1 needs G[i][j-1] after the new G[i+1][j-1]
// exists, so the new G cannot take the old one's register; ptxas rotates the registers by
// one column per row and pays ~28 register copies per row of 16 cells (the SASS of
// 3d11068, bench/RESULTS.md). Here every value is rewritten in place once its last reader
// is done: E, H, G as temporaries, D and F per column, five DPX instructions per cell as
// before (an add-max for E, a three-way max with the zero floor for H, an add for G, an add
// for the next D, an add-max for the next F).
template <class A, int R>
struct Columns {
    using T = typename A::T;
    T d[R];      // diagonal term of the next row, per column: G[i][j-1] + P_{i+1}[j]
    T f[R];      // F of the next row, per column: max(F[i][j] - extend, G[i][j])
    T best;      // running maximum of H - oe

    // Before a pass's first step: G and F at their floor -oe (no cell above row 0), and the
    // diagonal terms of the thread's first row from its profile `p0` (a padding row's for a
    // thread whose first step comes before row 0: its rows until then must change nothing).
    __device__ __forceinline__ void reset(const T (&p0)[R], T neg_oe) {
#pragma unroll
        for (int j = 0; j < R; ++j) {
            d[j] = A::add(neg_oe, p0[j]);
            f[j] = neg_oe;
        }
    }

    // One row i: takes the left neighbour's G and E of this row, returns this thread's last.
    // `p` holds S + oe of row i + 1 per column.
    __device__ __forceinline__ void step(const T (&p)[R], T& in_g, T& in_e, T neg_oe, T neg_ext) {
        T e = in_e, left = in_g, prev = in_g;
#pragma unroll
        for (int j = 0; j < R; ++j) {
            e = A::addmax(e, neg_ext, left);                         // E[i][j]
            const T g = A::add(A::max3relu(d[j], e, f[j]), neg_oe);  // G[i][j] = H[i][j] - oe
            d[j] = A::add(left, p[j]);                               // G[i][j-1] + P_{i+1}[j]
            f[j] = A::addmax(f[j], neg_ext, g);                      // F[i+1][j]
            if (j % 2 == 1) best = A::max3(best, prev, g);
            prev = g;
            left = g;
        }
        in_g = left;
        in_e = e;
    }
};

// Residue codes of a group's subjects for one row, one byte per subject in a word, so that
// a single shuffle hands them to the next lane of the wavefront.
template <class A>
__device__ __forceinline__ uint32_t load_codes(const ScanArgs& a, const int64_t (&off)[A::kLanes], const int (&len)[A::kLanes],
                                               int row) {
    uint32_t codes = 0;
#pragma unroll
    for (int k = 0; k < A::kLanes; ++k)
        codes |= (uint32_t)(row < len[k] ? (int)__ldg(a.residues + off[k] + row) : kPadResidue) << (8 * k);
    return codes;
}

__device__ __forceinline__ int warp_max(int v) {
#pragma unroll
    for (int o = 16; o > 0; o /= 2) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Store a group's scores: at the subject's index, or (`by_slot`, a task list) at the list entry.
template <class A>
__device__ __forceinline__ void finish(const ScanArgs& a, typename A::T best, const int (&subj)[A::kLanes], int group, bool by_slot) {
#pragma unroll
    for (int k = 0; k < A::kLanes; ++k) {
        if (subj[k] < 0) continue;
        const int s = A::lane_value(best, k) + a.oe;  // best holds H - oe
        const int at = by_slot ? group * A::kLanes + k : subj[k];
        a.scores[at] = s;
        if (A::kLanes > 1 && s >= a.overflow_at) {
            const int slot = atomicAdd(a.overflow, 1);
            a.overflow[1 + slot] = at;
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
        subj[k] = idx >= 0 && idx < a.n_subjects ? a.subjects[idx] : -1;
        off[k] = subj[k] >= 0 ? a.offsets[subj[k]] : 0;
        len[k] = subj[k] >= 0 ? (int)(a.offsets[subj[k] + 1] - off[k]) : 0;
        longest = max(longest, len[k]);
    }
    return longest;
}

// Where a group keeps its rows in the boundary buffer (in a whole-batch scan; a task list names
// them). A group of one subject: from its residue offset o. A packed pair (a, a+1) of the
// length-sorted list needs max(l_a, l_a+1) = l_a+1 rows, and takes them from
// (o_a + l_a) / 2 = o_a+1 / 2: the next pair starts at o_a+3 / 2 = (o_a+1 + l_a+1 + l_a+2) / 2,
// which is at least o_a+1 / 2 + l_a+1 since l_a+2 >= l_a+1 (rounded down too: the rounding of
// o_a+1 / 2 + (l_a+1 + l_a+2) / 2 cannot fall below o_a+1 / 2 + l_a+1 rounded down). So packed
// scans of a batch of N residues need N / 2 + (its longest length) + 1 rows, half a row per residue
// (kernel_abi.boundary_rows), provided that the lists scanned side by side are whole runs of
// pairs: the host splits a batch between its two kernels at an even subject, and the only group
// of one subject is the batch's last (a lone subject inside would reach into the next pair's rows).
template <class A>
__device__ __forceinline__ int64_t boundary_row(const int64_t (&off)[A::kLanes], const int (&len)[A::kLanes]) {
    return A::kLanes == 2 ? (off[0] + len[0]) / 2 : off[0];
}

// ---------------------------------------------------------------- inter-task kernel
// G lanes of a warp per group of kLanes subjects; groups in reverse list order so that the
// longest subjects (the list is sorted by length) start first and the tail stays short.
// The groups of a warp run the same number of rows (the longest of the warp, padding the
// others), so every shuffle is a whole-warp one.
// Each pass pays G - 1 steps of wavefront fill and drain. Running a query's passes as one
// wavefront instead (a lane going on to row 0 of the next pass while the lanes after it finish
// the pass before, each pass at least 3G - 1 steps so that the boundary row is written a batch
// before lane 0's lanes read it) saves those steps, one in eleven for 32 lanes over ~300-residue
// subjects, but was slower: the lanes' pass and row bookkeeping and a __syncwarp per batch cost
// more per step than it saved (H100, bench200M x 20, one call each against this loop: resident
// 1.97 / 1.99 against 1.93 / 1.93 s, a 1/32 budget 2.44 / 2.47 against 2.45 / 2.46 s).
// The scan of one group by its G lanes (the body of sw_inter and sw_inter_tasks). `bnd_row`: the
// group's rows in the boundary buffer, -1 for those of boundary_row (a whole-batch scan).
template <class A, int R, int G>
__device__ __forceinline__ void inter_scan(const ScanArgs& a, int group, int64_t bnd_row, bool by_slot) {
    using T = typename A::T;
    static_assert(32 % G == 0 && R % 8 == 0, "G divides a warp, R is a multiple of 8");
    constexpr unsigned kAll = 0xffffffffu;
    const int lane = threadIdx.x % G;
    int subj[A::kLanes], len[A::kLanes];
    int64_t off[A::kLanes];
    const int longest = group_subjects<A>(a, group, subj, off, len);
    const int rows = warp_max(longest);
    uint2* bnd = a.boundary + (bnd_row < 0 ? boundary_row<A>(off, len) : bnd_row);
    const T neg_oe = A::splat(-a.oe), neg_ext = A::splat(-a.extend);
    const uint32_t pad_codes = A::kLanes == 2 ? kPadResidue * 0x101u : kPadResidue;

    Columns<A, R> col;
    col.best = neg_oe;
    for (int pass = 0; pass < a.n_passes; ++pass) {
        const int16_t* prof = a.profile + pass * (G * R) + lane * 8;  // blocks of 8 columns, G apart
        // the diagonal terms of each lane's first row: row 0 for lane 0, a padding row (before
        // row 0) for the others; and the codes lane 0 hands to lane 1 for its first step, its
        // row -1, whose successor is row 0
        uint32_t out_c = lane == 0 ? load_codes<A>(a, off, len, 0) : pad_codes;
        {
            RowProfile<A, R> rp0;
            rp0.load(prof, a.qpad, out_c, G);
            col.reset(rp0.p, neg_oe);
        }
        const bool first = pass == 0, last = pass == a.n_passes - 1;
        T out_g = neg_oe, out_e = neg_oe;
        // Lane 0 needs each row's successor's residue codes (Columns) and, after the first pass,
        // the previous pass's boundary of the row. Loaded one row at a time by lane 0 they cost
        // the whole warp an issue slot per instruction; instead lane l of the group holds row
        // b + l of the current batch of G rows (and the codes of row b + l + 1), loads the next
        // batch ahead, and lane 0 takes row s from lane s % G.
        const uint2 none = make_uint2((uint32_t)neg_oe, (uint32_t)neg_oe);
        uint32_t codes_batch = pad_codes, codes_next = load_codes<A>(a, off, len, lane + 1);
        uint2 bnd_batch = none, bnd_next = !first && lane < longest ? bnd[lane] : none;
        for (int s = 0; s < rows + G - 1; ++s) {
            const int row = s - lane;
            if ((s & (G - 1)) == 0) {  // uniform across the warp
                codes_batch = codes_next;
                bnd_batch = bnd_next;
                const int ahead = s + G + lane;
                codes_next = load_codes<A>(a, off, len, ahead + 1);
                bnd_next = !first && ahead < longest ? bnd[ahead] : none;
            }
            T in_g = __shfl_up_sync(kAll, out_g, 1, G);
            T in_e = __shfl_up_sync(kAll, out_e, 1, G);
            uint32_t codes = __shfl_up_sync(kAll, out_c, 1, G);
            const uint32_t own_c = __shfl_sync(kAll, codes_batch, s & (G - 1), G);
            const T own_g = __shfl_sync(kAll, bnd_batch.x, s & (G - 1), G);
            const T own_e = __shfl_sync(kAll, bnd_batch.y, s & (G - 1), G);
            if (lane == 0) {
                codes = own_c;
                in_g = own_g;
                in_e = own_e;
            }
            RowProfile<A, R> rp;
            rp.load(prof, a.qpad, codes, G);
            col.step(rp.p, in_g, in_e, neg_oe, neg_ext);
            out_g = in_g;
            out_e = in_e;
            out_c = codes;
            // rows are read ahead of this write (at step row - G - lane at the latest), and the
            // previous pass's value at bnd[row] was read at step row - G or earlier
            if (lane == G - 1 && !last && row >= 0 && row < longest) bnd[row] = make_uint2((uint32_t)out_g, (uint32_t)out_e);
        }
        __syncwarp();  // the boundary written by the last lane is read by the group next pass
    }
    T best = col.best;
#pragma unroll
    for (int o = G / 2; o > 0; o /= 2) best = A::shfl_max(best, kAll, o, G);
    if (lane == 0 && group >= 0) finish<A>(a, best, subj, group, by_slot);
}

template <class A, int R, int G>
__global__ void __launch_bounds__(kInterBlock, inter_min_blocks<G>()) sw_inter(SWGPU_SCAN_PARAMS) {
    const ScanArgs a = SWGPU_SCAN_ARGS;
    const int n_groups = (a.n_subjects + A::kLanes - 1) / A::kLanes;
    const int thread = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (n_groups - 1 - (thread & ~31) / G < 0) return;  // whole warps past the list leave
    inter_scan<A, R, G>(a, n_groups - 1 - thread / G, -1, false);
}

// ---------------------------------------------------------------- inter-task kernel over task lists
// Many queries in one launch (the seeded search scores a few candidates per query): the list
// `subjects` holds each group's subjects (-1: padding), every group of G lanes scanning them
// against one query, group_query[group], whose profile and padded length are its own (the groups
// of a warp may scan different queries: the host gives the groups of one warp queries of as
// many passes, so a warp's groups make the same passes; swgpu_core/subset_tasks.py task_list).
// Scores go to the list entries (and the overflow list names entries), and each group keeps its
// boundary rows at bnd_rows[group] (queries of one pass do not use it).
#define SWGPU_TASK_PARAMS                                                                                              \
    const uint8_t *residues, const int64_t *offsets, const int32_t *subjects, int n_subjects,                         \
        const unsigned long long *profiles, const int32_t *qpads, const int32_t *group_query, const int64_t *bnd_rows, \
        int oe, int extend, int overflow_at, uint2 *boundary, int32_t *scores, int32_t *overflow

// The launch bounds as sw_inter's: the task lists give every query 8 lanes a group (swgpu_core/
// subset_tasks.py TASK_LANES), and with three blocks' bounds (80 registers) Nsight Compute counted
// 624 M local-memory spill requests in one launch over bench200M's chunk 1; with two (100
// registers), none, for the same time (38.5 against 39.1 ms; bench/RESULTS.md, twelfth session).
template <class A, int R, int G>
__global__ void __launch_bounds__(kInterBlock, inter_min_blocks<G>()) sw_inter_tasks(SWGPU_TASK_PARAMS) {
    const int thread = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if ((thread & ~31) / G * A::kLanes >= n_subjects) return;  // whole warps past the list leave
    const int group = thread / G;  // the list is padded to whole warps, so every group has a query
    const int q = group_query[group];
    const int qpad = qpads[q];
    const ScanArgs a{residues, offsets, subjects, n_subjects, reinterpret_cast<const int16_t*>(profiles[q]), qpad, qpad / (G * R),
                     oe, extend, overflow_at, boundary, scores, overflow};
    inter_scan<A, R, G>(a, group, bnd_rows[group], true);
}

// ---------------------------------------------------------------- intra-task kernel
// A block of W warps per group of kLanes (long) subjects: the pass is W * 32 * R columns
// wide. Warp w runs kDelay steps behind warp w - 1 and takes its left input from a shared
// ring written by warp w - 1's last lane; the block synchronises every kBatch steps
// (kDelay from swgpu_core/kernel_abi.py, whose planner counts the same fill).
//
// Lane 0's inputs come in batches, as in inter_scan: at the start of each batch of
// kBatch = 32 steps, lane l reads what lane 0 needs at step s0 + l (the codes of its row + 1,
// and its left input: the ring's row, or for warp 0 the previous pass's boundary), all lanes
// at once, and lane 0 takes them by shuffles. Read one step at a time by lane 0, they cost
// the whole warp the issue slots of a lane's loads and bounds checks per step: a third of the
// instructions of a step ran with one lane (Nsight Compute, H100: 22 active threads per warp
// on average). Safe with kDelay = 2 * kBatch: lane 0 of warp w is at row s - w * kDelay, and
// warp w - 1's last lane writes row r at step r + (w - 1) * kDelay + 31, so the rows a batch
// reads at s0 (r <= s0 + 31 - w * kDelay) were written by step s0 - 2, in an earlier batch,
// before the barrier that ends it; a ring slot is written again kRing rows later, 95 steps
// after the batch that read it, in a later batch.
static constexpr int kDelay = SWGPU_INTRA_DELAY, kBatch = kDelay / 2, kRing = 2 * kDelay;
static_assert(kBatch == 32, "a batch of steps is a warp's worth of lane 0's inputs");
static_assert((kRing & (kRing - 1)) == 0, "ring rows are taken modulo a power of two");

// The scan of one group by a block of W warps (the body of sw_intra and sw_intra_tasks). `bnd_row`:
// the group's rows in the boundary buffer, -1 for those of boundary_row (a whole-batch scan).
template <class A, int R, int W>
__device__ __forceinline__ void intra_scan(const ScanArgs& a, int group, int64_t bnd_row, bool by_slot) {
    using T = typename A::T;
    static_assert(R % 8 == 0, "R is a multiple of 8");
    constexpr unsigned kAll = 0xffffffffu;
    __shared__ uint2 ring[W][kRing];
    __shared__ T warp_best[W];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, thread = threadIdx.x;

    int subj[A::kLanes], len[A::kLanes];
    int64_t off[A::kLanes];
    const int longest = group_subjects<A>(a, group, subj, off, len);
    uint2* bnd = a.boundary + (bnd_row < 0 ? boundary_row<A>(off, len) : bnd_row);
    const T neg_oe = A::splat(-a.oe), neg_ext = A::splat(-a.extend);
    const uint32_t pad_codes = A::kLanes == 2 ? kPadResidue * 0x101u : kPadResidue;
    const uint2 none = make_uint2((uint32_t)neg_oe, (uint32_t)neg_oe);
    const int lag = warp * kDelay + lane;  // this thread works on row (block step - lag)
    const int steps = longest + (W - 1) * kDelay + 31;

    Columns<A, R> col;
    col.best = neg_oe;
    for (int pass = 0; pass < a.n_passes; ++pass) {
        const int16_t* prof = a.profile + pass * (W * 32 * R) + thread * 8;
        // as in inter_scan: row 0's diagonal terms for thread 0, a padding row's for the others
        // (their first steps come before row 0), and row 0's codes for thread 1's first step
        uint32_t out_c = lag == 0 ? load_codes<A>(a, off, len, 0) : pad_codes;
        {
            RowProfile<A, R> rp0;
            rp0.load(prof, a.qpad, out_c, W * 32);
            col.reset(rp0.p, neg_oe);
        }
        const bool first = pass == 0, last = pass == a.n_passes - 1;
        T out_g = neg_oe, out_e = neg_oe;
        for (int s0 = 0; s0 < steps; s0 += kBatch) {
            // lane l: lane 0's inputs for step s0 + l, whose row is r
            const int r = s0 + lane - warp * kDelay;
            const uint32_t batch_c = r + 1 >= 0 ? load_codes<A>(a, off, len, r + 1) : pad_codes;
            uint2 batch_b = none;
            if (r >= 0 && r < longest) {
                if (warp > 0) batch_b = ring[warp - 1][r & (kRing - 1)];
                else if (!first) batch_b = bnd[r];
            }
            for (int t = 0; t < kBatch; ++t) {
                const int row = s0 + t - lag;
                T in_g = __shfl_up_sync(kAll, out_g, 1);
                T in_e = __shfl_up_sync(kAll, out_e, 1);
                uint32_t codes = __shfl_up_sync(kAll, out_c, 1);
                const uint32_t own_c = __shfl_sync(kAll, batch_c, t);
                const T own_g = (T)__shfl_sync(kAll, batch_b.x, t);
                const T own_e = (T)__shfl_sync(kAll, batch_b.y, t);
                if (lane == 0) {
                    codes = own_c;
                    in_g = own_g;
                    in_e = own_e;
                }
                RowProfile<A, R> rp;
                rp.load(prof, a.qpad, codes, W * 32);
                col.step(rp.p, in_g, in_e, neg_oe, neg_ext);
                out_g = in_g;
                out_e = in_e;
                out_c = codes;
                if (lane == 31 && row >= 0 && row < longest) {
                    const uint2 v = make_uint2((uint32_t)out_g, (uint32_t)out_e);
                    if (warp < W - 1) ring[warp][row & (kRing - 1)] = v;
                    else if (!last) bnd[row] = v;
                }
            }
            __syncthreads();
        }
    }
    T best = col.best;
#pragma unroll
    for (int o = 16; o > 0; o /= 2) best = A::shfl_max(best, kAll, o, 32);
    if (lane == 0) warp_best[warp] = best;
    __syncthreads();
    if (thread == 0) {
        for (int w = 1; w < W; ++w) best = A::max3(best, warp_best[w], warp_best[w]);
        finish<A>(a, best, subj, group, by_slot);
    }
}

template <class A, int R, int W>
__global__ void __launch_bounds__(W * 32) sw_intra(SWGPU_SCAN_PARAMS) {
    const ScanArgs a = SWGPU_SCAN_ARGS;
    const int n_groups = (a.n_subjects + A::kLanes - 1) / A::kLanes;
    intra_scan<A, R, W>(a, n_groups - 1 - (int)blockIdx.x, -1, false);
}

// ---------------------------------------------------------------- intra-task kernel over task lists
// The seeded search's long pairs (a query of several inter-task passes against a long subject;
// which ones, swgpu_core.subset_tasks.long_pairs): in the inter-task kernel such a pair is one
// warp's passes one after the other, the launch's critical path. Here a block per group, as in
// sw_intra, over a task list as sw_inter_tasks reads it, whose unit is a group: group g (block
// g, the list sorted longest first) scans its subjects against query group_query[g], with its
// own profile, passes and boundary rows bnd_rows[g]; scores go to the list entries.
template <class A, int R, int W>
__global__ void __launch_bounds__(W * 32) sw_intra_tasks(SWGPU_TASK_PARAMS) {
    const int group = (int)blockIdx.x;
    if (group * A::kLanes >= n_subjects) return;  // the whole block
    const int q = group_query[group];
    const int qpad = qpads[q];
    const ScanArgs a{residues, offsets, subjects, n_subjects, reinterpret_cast<const int16_t*>(profiles[q]), qpad, qpad / (W * 32 * R),
                     oe, extend, overflow_at, boundary, scores, overflow};
    intra_scan<A, R, W>(a, group, bnd_rows[group], true);
}
