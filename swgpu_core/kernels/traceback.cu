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
// A pair too long for one warp (its one warp would outlast the rest of the call) takes a team:
// a block of W warps on the one pair (tb_ends_team, tb_region_team), whose pass covers W * 32 * R
// rows, warp w the w-th 32 * R of them, as the scan's intra-task kernel spreads a pass over a
// block (sw_scan.cu). The cells, their order along each row and every tie rule are those of W
// passes of one warp: a team changes when a cell is computed, never what it is.
//
// Three kernels (and the two team kernels):
//   tb_ends<R>    pass 1 (forward local scan: best score S and the end cell under the key
//                 (H desc, i asc, j asc)) and pass 2 (the anchored reverse scan: the start
//                 cell, the first cell with D >= S in reverse row-major order, i.e. the key
//                 (i desc, j desc); a pass stops the scan once it holds a hit, since every
//                 later pass has smaller i). Given end cells and scores, pass 1 is skipped
//                 (anchored mode: align-long's end points, found by its own scan).
//   tb_region<R>  pass 3: the global recurrences over the rectangle [is..ie] x [js..je] only,
//                 storing each cell's 4-bit direction nibble in global memory, and H(ie, je).
//   tb_walk       one thread per pair follows the nibbles from (ie, je) back to the corner.
// And for a rectangle whose nibbles would hold too much memory, pass 3 in strips (tb_strip,
// tb_strip_team, tb_walk_strip; "Strips" below).
//
// Nibble layout (differs from the CPU's row-major bytes; the bits are the same): for group p
// of 32 * R rows (a warp's pass), column j (1-based in the region) and lane t, the R nibbles of
// the lane's rows are one R/2-byte word at word index (p * width + j - 1) * 32 + t, row r of the
// lane in bits 4r..4r+3. A warp stores 32 consecutive words per step, fully coalesced. A team
// writes the same words (its warp w of team pass k holds group k * W + w), so tb_walk reads
// both alike.
//
// Arithmetic is int32 with NEG = -(1 << 28) as minus infinity, as in the reference.

#include "common.cuh"  // types; kMaxCodes, Status, EndField, Warps<R> (values from swgpu_core/kernel_abi.py)

static constexpr int kNeg = -(1 << 28);
static constexpr unsigned kAll = 0xffffffffu;
static constexpr int kBig = 0x7fffffff;

// Modes of a scan pass.
enum Mode : int { kForward = 0, kReverse = 1, kRegion = 2, kGlobal = 3 };

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

// ---------------------------------------------------------------- teams
// Warp w of a team works on column j at block step j - 1 + w * kTeamDelay + lane; its first
// lane takes H and F of the row above (warp w - 1's last row) from warp w - 1's ring of
// kTeamRing columns, and the team synchronises every kTeamBatch steps. Lane 0 fetches column
// c's inputs one step ahead, at block step c - 2 + w * D (D = kTeamDelay); warp w - 1's last
// lane wrote them at step c - 1 + (w - 1) * D + 31, that is 32 steps before (D - 32 = 32).
// Batches are the steps [32 b, 32 b + 31], each ended by a barrier, so a write at a step of
// batch b is read at a step of batch b + 1, after that barrier. The slot is written again
// kTeamRing columns (as many steps) later, in a batch after the reading one. Warp 0 of a team
// pass takes its inputs from the last warp of the pass before through the global boundary
// buffer, as one warp's passes do; within a pass the last warp writes column c of it (step
// c + (W - 1) * D + 30) well after warp 0 read it (step c - 2), batches apart.
static constexpr int kTeamBatch = kTeamDelay / 2, kTeamRing = 2 * kTeamDelay;
static_assert(kTeamBatch == 32 && kTeamDelay - 32 >= kTeamBatch, "a ring slot is read in the batch after the one that wrote it");
static_assert((kTeamRing & (kTeamRing - 1)) == 0, "ring columns are taken modulo a power of two");

// A warp's place in the warps that trace its pair: alone (warp 0 of 1), or in a team.
struct Team {
    int warp;     // rows warp * 32 R .. of each team pass
    int warps;    // W
    int2* ring;   // shared, kTeamRing (H, F) per warp: warp w's last lane writes, warp w + 1's first reads
    bool active;  // some of the warp's rows of this pass lie in the query; if not, it only keeps the barriers
};

__device__ __forceinline__ Team alone() { return Team{0, 1, nullptr, true}; }

// The dynamic shared memory of a team kernel (bytes as swgpu_core.align.gpu_plan.team_shared_bytes
// counts them): per warp a profile of n_codes * 32 * R bytes, then per warp a ring, then per
// warp 4 ints of scratch for the block's reductions.
#ifndef SWGPU_TEAM_SMEM  // the CPU emulation of the tests names its own buffer
extern __shared__ __align__(16) uint8_t tb_team_smem[];
#define SWGPU_TEAM_SMEM tb_team_smem
#endif

struct TeamMemory {
    uint8_t* profiles;
    int2* ring;
    int* scratch;
    int profile_bytes;
};

template <int R>
__device__ __forceinline__ TeamMemory team_memory(int n_codes, int warps) {
    const int profile_bytes = n_codes * 32 * R;  // a multiple of 16: the profiles' vector loads stay aligned
    uint8_t* base = SWGPU_TEAM_SMEM;
    int2* ring = reinterpret_cast<int2*>(base + (int64_t)warps * profile_bytes);
    return TeamMemory{base, ring, reinterpret_cast<int*>(ring + warps * kTeamRing), profile_bytes};
}

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

// One pass of 32 * R rows (starting at 0-based row `row_base` of q) over all columns of s, by
// one warp alone or by warp team.warp of a team (TEAM: then the rows are that warp's share of
// the team pass, and every warp of the block calls this together).
//   kForward: local recurrences (zero floor, H = 0 on the borders); per row, the best H and
//             the first column reaching it (a[r], b[r]).
//   kReverse: global recurrences entered through the corner; per row, the first column whose
//             diagonal term D reaches `target`, and that D (a[r], b[r]).
//   kRegion:  global recurrences entered through the corner; the direction nibbles go to
//             `dirs` (this pass's words).
//   kGlobal:  the same recurrences, H only (kRegion's H: the larger of D, E and F whichever
//             the tie rule names), for the strips' checkpoints.
// The pass reads the row above it from `bnd_in` (unless `first`) and leaves its last row in
// `bnd_out` (unless `last`); a pass that keeps no checkpoint gives one buffer for both, read
// one column ahead of the write. After the pass h[r] holds H of the lane's rows in the last column.
template <int R, int MODE, bool TEAM>
struct Pass {
    int h[R];  // H(i, j-1) of the lane's rows
    int e[R];  // E(i, j-1)
    int a[R];
    int b[R];

    __device__ __forceinline__ void run(const Seq& q, const Seq& s, int row_base, bool first, bool last, const uint8_t* prof,
                                        int lane, int oe, int ge, const int2* bnd_in, int2* bnd_out, int target,
                                        typename NibbleWord<R>::T* dirs, const Team& team) {
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
        int next_c = 0, next_h = border, next_f = kNeg;  // lane 0: the next column's residue and top input
        // where the top input comes from and the last row's values go: the warp above's ring or the
        // pass before's boundary; the warp below's ring or the pass after's boundary
        const bool from_ring = TEAM && team.warp > 0, to_ring = TEAM && team.warp < team.warps - 1;
        const int2* above = from_ring ? team.ring + (team.warp - 1) * kTeamRing : nullptr;
        int2* below = to_ring ? team.ring + team.warp * kTeamRing : nullptr;
        const int lag = (TEAM ? team.warp * kTeamDelay : 0) + lane;  // this lane works on column step - lag + 1
        const int steps = n + (TEAM ? (team.warps - 1) * kTeamDelay : 0) + 31;
        for (int step = -1; step < steps; ++step) {  // step -1: lane 0 of warp 0 fetches column 1
            if (!TEAM || team.active) {
                int in_h = __shfl_up_sync(kAll, out_h, 1);
                int in_f = __shfl_up_sync(kAll, out_f, 1);
                int c = __shfl_up_sync(kAll, out_c, 1);
                const int j = step - lag + 1;
                if (lane == 0) {
                    in_h = next_h;
                    in_f = next_f;
                    c = next_c;
                    if (j >= 0 && j < n) {  // column j + 1's inputs, one step ahead
                        next_c = s.code(j);
                        if (from_ring) {
                            const int2 v = above[(j + 1) & (kTeamRing - 1)];
                            next_h = v.x;
                            next_f = v.y;
                        } else if (!first) {
                            const int2 v = bnd_in[j + 1];
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
                        } else if constexpr (MODE == kGlobal) {
                            hn = max(max(d, en), f);
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
                    if (lane == 31) {
                        if (to_ring) below[j & (kTeamRing - 1)] = make_int2(up_h, up_f);
                        else if (!last) bnd_out[j] = make_int2(up_h, up_f);
                    }
                    out_h = up_h;
                    out_f = up_f;
                    out_c = c;
                }
            }
            if constexpr (TEAM)
                if ((step & (kTeamBatch - 1)) == kTeamBatch - 1) __syncthreads();
        }
        // the boundary written by the last lane (warp) is read by the first in the next pass
        if constexpr (TEAM) __syncthreads();
        else __syncwarp();
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

// The warp's rows of team pass k (of `span` rows): where they start, and whether any lies in q.
__device__ __forceinline__ Team in_pass(const Team& team, int k, int rows, int len, int* base) {
    *base = (k * team.warps + team.warp) * rows;
    Team t = team;
    t.active = *base < len;
    return t;
}

// Pass 1 for one pair: the best score and its end cell (1-based) under the key
// (H desc, i asc, j asc), in every thread of the warp (alone) or of the team.
template <int R, bool TEAM>
__device__ __forceinline__ int3 forward_end(const int8_t* smat, int n_codes, const PairSeqs& ps, uint8_t* prof, int lane, int oe,
                                            int ge, int2* bnd, const Team& team, int* scratch) {
    const int rows = 32 * R, span = rows * team.warps;
    int bh = 0, bi = 0, bj = 0;
    const int n_passes = (ps.q.len + span - 1) / span;
    Pass<R, kForward, TEAM> fwd;
    for (int k = 0; k < n_passes; ++k) {
        int base;
        const Team t = in_pass(team, k, rows, ps.q.len, &base);
        const int row0 = base + lane * R;
        if (t.active) build_profile<R>(smat, n_codes, ps.q, row0, prof, lane);
        fwd.run(ps.q, ps.s, base, k == 0, k == n_passes - 1, prof, lane, oe, ge, bnd, bnd, 0, nullptr, t);
#pragma unroll
        for (int r = 0; r < R; ++r)  // rows ascending: strictly greater keeps the smaller i
            if (row0 + r < ps.q.len && fwd.a[r] > bh) {
                bh = fwd.a[r];
                bi = row0 + r + 1;
                bj = fwd.b[r];
            }
    }
    auto better = [](int oh, int oi, int oj, int h, int i, int j) { return oh > h || (oh == h && (oi < i || (oi == i && oj < j))); };
#pragma unroll
    for (int o = 16; o > 0; o /= 2) {
        const int oh = __shfl_xor_sync(kAll, bh, o), oi = __shfl_xor_sync(kAll, bi, o), oj = __shfl_xor_sync(kAll, bj, o);
        if (better(oh, oi, oj, bh, bi, bj)) {
            bh = oh;
            bi = oi;
            bj = oj;
        }
    }
    if constexpr (TEAM) {  // then across the warps
        if (lane == 0) {
            scratch[4 * team.warp] = bh;
            scratch[4 * team.warp + 1] = bi;
            scratch[4 * team.warp + 2] = bj;
        }
        __syncthreads();
        for (int w = 0; w < team.warps; ++w)
            if (better(scratch[4 * w], scratch[4 * w + 1], scratch[4 * w + 2], bh, bi, bj)) {
                bh = scratch[4 * w];
                bi = scratch[4 * w + 1];
                bj = scratch[4 * w + 2];
            }
        __syncthreads();  // the scratch is written again by the reverse scan
    }
    return make_int3(bh, bi, bj);
}

// Pass 2 for one pair: the first cell with D >= S in reverse row-major order of the prefixes
// ending at (bi, bj): x = whether there is one, then its reversed row, column and D (a reversed
// row i' is query row bi - i' + 1). A warp's pass (a team's) stops the scan once it holds a hit,
// since every later pass has smaller rows; within it the first warp, lane and row with a hit win.
template <int R, bool TEAM>
__device__ __forceinline__ int4 reverse_start(const int8_t* smat, int n_codes, const PairSeqs& ps, int bh, int bi, int bj, uint8_t* prof,
                                              int lane, int oe, int ge, int2* bnd, const Team& team, int* scratch) {
    const Seq rq{ps.q.base + (bi - 1), -1, bi}, rs{ps.s.base + (bj - 1), -1, bj};
    const int rows = 32 * R, span = rows * team.warps;
    const int r_passes = (bi + span - 1) / span;
    Pass<R, kReverse, TEAM> rev;
    int4 hit = make_int4(0, 0, 0, 0);
    for (int k = 0; k < r_passes && !hit.x; ++k) {
        int base;
        const Team t = in_pass(team, k, rows, rq.len, &base);
        const int row0 = base + lane * R;
        if (t.active) build_profile<R>(smat, n_codes, rq, row0, prof, lane);
        rev.run(rq, rs, base, k == 0, k == r_passes - 1, prof, lane, oe, ge, bnd, bnd, bh, nullptr, t);
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
        int4 mine = make_int4(0, 0, 0, 0);
        if (any) {
            const int first_lane = __ffs(any) - 1;
            mine = make_int4(1, __shfl_sync(kAll, mi, first_lane), __shfl_sync(kAll, mj, first_lane), __shfl_sync(kAll, md, first_lane));
        }
        if constexpr (TEAM) {  // the first warp with a hit
            if (lane == 0) reinterpret_cast<int4*>(scratch)[team.warp] = mine;
            __syncthreads();
            for (int w = team.warps - 1; w >= 0; --w) {
                const int4 v = reinterpret_cast<const int4*>(scratch)[w];
                if (v.x) hit = v;
            }
            __syncthreads();  // the scratch is written again after the next pass
        } else {
            hit = mine;
        }
    }
    return hit;
}

// Passes 1 and 2 of pair p (or 2 alone from the given end), its row of `ends` written by the
// pair's first thread.
template <int R, bool TEAM>
__device__ __forceinline__ void pair_ends(const int8_t* smat, int n_codes, const PairSeqs& ps, uint8_t* prof, int lane, int oe, int ge,
                                          const int32_t* expected, const int32_t* given, int p, int2* bnd, int32_t* out, const Team& team,
                                          int* scratch) {
    const bool writer = lane == 0 && team.warp == 0;
    // ---- pass 1 (or the given end): best score and end cell
    const int3 best = given ? make_int3(expected[p], given[2 * p], given[2 * p + 1])
                            : forward_end<R, TEAM>(smat, n_codes, ps, prof, lane, oe, ge, bnd, team, scratch);
    const int bh = best.x, bi = best.y, bj = best.z;
    if (writer) {
        out[kScore] = bh;
        out[kQEnd] = bi;
        out[kSEnd] = bj;
        out[kQStart] = 0;
        out[kSStart] = 0;
    }
    if (!given && expected && expected[p] != bh) {
        if (writer) out[kStatus] = kMismatch;
        return;
    }
    if (bh <= 0) {
        if (writer) out[kStatus] = kNoAlignment;
        return;
    }
    // ---- pass 2: start cell, the first cell with D >= S in reverse row-major order
    const int4 hit = reverse_start<R, TEAM>(smat, n_codes, ps, bh, bi, bj, prof, lane, oe, ge, bnd, team, scratch);
    if (writer) {
        if (!hit.x) {
            out[kStatus] = kNoStart;
        } else if (hit.w > bh) {
            out[kStatus] = kAbove;
        } else {
            out[kStatus] = kOk;
            out[kQStart] = bi - hit.y + 1;  // reversed row i' is query row ie - i' + 1
            out[kSStart] = bj - hit.z + 1;
        }
    }
}

// Passes 1 and 2 for one pair per warp. `expected` (may be null): the scores the search
// found; a pair whose best score differs gets kMismatch and no pass 2. `given` (may be null,
// then `expected` is not): per pair the end cell (qend, send), 1-based, whose alignment
// scores expected[p]; pass 1 is skipped (a window's own best cell may lie elsewhere).
// `ends`: per pair kEndFields ints (status, score, qstart, qend, sstart, send; 1-based).
#define SWGPU_TB_ENDS_PARAMS                                                                                                        \
    const uint8_t *residues, const int64_t *qoff, const int32_t *qlen, const int64_t *soff, const int32_t *slen, int n_pairs,       \
        const int8_t *matrix, int n_codes, int gap_open, int gap_extend, const int32_t *expected, const int32_t *given, int2 *boundary, \
        const int64_t *bnd_off, int32_t *ends

template <int R>
__global__ void __launch_bounds__(Warps<R>::value * 32) tb_ends(SWGPU_TB_ENDS_PARAMS) {
    constexpr int W = Warps<R>::value;
    __shared__ int8_t smat[kMaxCodes * kMaxCodes];
    __shared__ __align__(16) uint8_t profiles[W][kMaxCodes * 32 * R];
    load_matrix(matrix, n_codes, smat);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int p = blockIdx.x * W + warp;
    if (p >= n_pairs) return;
    int2* bnd = boundary ? boundary + bnd_off[p] : nullptr;
    pair_ends<R, false>(smat, n_codes, pair_seqs(residues, qoff, qlen, soff, slen, p), profiles[warp], lane, gap_open + gap_extend,
                        gap_extend, expected, given, p, bnd, ends + (int64_t)p * kEndFields, alone(), nullptr);
}

// tb_ends with a team per pair: block p traces pair p with its blockDim.x / 32 warps (the
// dynamic shared memory as team_memory lays it out).
template <int R>
__global__ void __launch_bounds__(kTeamMaxWarps * 32) tb_ends_team(SWGPU_TB_ENDS_PARAMS) {
    __shared__ int8_t smat[kMaxCodes * kMaxCodes];
    load_matrix(matrix, n_codes, smat);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    const int p = blockIdx.x;
    if (p >= n_pairs) return;  // the whole block
    const TeamMemory m = team_memory<R>(n_codes, warps);
    int2* bnd = boundary ? boundary + bnd_off[p] : nullptr;
    pair_ends<R, true>(smat, n_codes, pair_seqs(residues, qoff, qlen, soff, slen, p), m.profiles + warp * m.profile_bytes, lane,
                       gap_open + gap_extend, gap_extend, expected, given, p, bnd, ends + (int64_t)p * kEndFields,
                       Team{warp, warps, m.ring, true}, m.scratch);
}

// H(ie, je) of a region of `len` rows after its last pass (`h`: H of the lane's rows in the last
// column) into *region_score, by the lane that owns the last row (in the last team pass, which
// is the owning warp's last pass).
template <int R>
__device__ __forceinline__ void last_cell(int len, const int (&h)[R], int lane, const Team& team, int32_t* region_score) {
    const int rows = 32 * R, last = len - 1, group = last / rows;
    if (group % team.warps == team.warp && lane == (last % rows) / R) {
        int v = kNeg;
#pragma unroll
        for (int r = 0; r < R; ++r)
            if (r == last % R) v = h[r];
        *region_score = v;
    }
}

// Pass 3 for one pair: the nibbles of its rectangle q x s from `words` (its groups of 32 * R
// rows one after the other), and H of the last cell in *region_score.
template <int R, bool TEAM>
__device__ __forceinline__ void pair_region(const int8_t* smat, int n_codes, const Seq& q, const Seq& s, uint8_t* prof, int lane, int oe,
                                            int ge, int2* bnd, typename NibbleWord<R>::T* words, int32_t* region_score, const Team& team) {
    const int rows = 32 * R, span = rows * team.warps;
    const int n_passes = (q.len + span - 1) / span;
    Pass<R, kRegion, TEAM> reg;
    for (int k = 0; k < n_passes; ++k) {
        int base;
        const Team t = in_pass(team, k, rows, q.len, &base);
        if (t.active) build_profile<R>(smat, n_codes, q, base + lane * R, prof, lane);
        reg.run(q, s, base, k == 0, k == n_passes - 1, prof, lane, oe, ge, bnd, bnd, 0, words + (int64_t)(base / rows) * s.len * 32, t);
    }
    last_cell<R>(q.len, reg.h, lane, team, region_score);
}

// Pass 3 for one pair per warp: nibbles of the rectangle [is..ie] x [js..je] at byte offset
// dirs_off[p] of `dirs`, and H(ie, je) in region_score[p]. `rect`: per pair (is, ie, js, je).
#define SWGPU_TB_REGION_PARAMS                                                                                                     \
    const uint8_t *residues, const int64_t *qoff, const int64_t *soff, const int32_t *rect, int n_pairs, const int8_t *matrix,     \
        int n_codes, int gap_open, int gap_extend, int2 *boundary, const int64_t *bnd_off, uint8_t *dirs, const int64_t *dirs_off, \
        int32_t *region_score

__device__ __forceinline__ PairSeqs region_seqs(const uint8_t* residues, const int64_t* qoff, const int64_t* soff, const int32_t* rect, int p) {
    const int is = rect[4 * p], ie = rect[4 * p + 1], js = rect[4 * p + 2], je = rect[4 * p + 3];
    return PairSeqs{Seq{residues + qoff[p] + (is - 1), 1, ie - is + 1}, Seq{residues + soff[p] + (js - 1), 1, je - js + 1}};
}

template <int R>
__global__ void __launch_bounds__(Warps<R>::value * 32) tb_region(SWGPU_TB_REGION_PARAMS) {
    constexpr int W = Warps<R>::value;
    __shared__ int8_t smat[kMaxCodes * kMaxCodes];
    __shared__ __align__(16) uint8_t profiles[W][kMaxCodes * 32 * R];
    load_matrix(matrix, n_codes, smat);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int p = blockIdx.x * W + warp;
    if (p >= n_pairs) return;
    const PairSeqs ps = region_seqs(residues, qoff, soff, rect, p);
    int2* bnd = boundary ? boundary + bnd_off[p] : nullptr;
    pair_region<R, false>(smat, n_codes, ps.q, ps.s, profiles[warp], lane, gap_open + gap_extend, gap_extend, bnd,
                          reinterpret_cast<typename NibbleWord<R>::T*>(dirs + dirs_off[p]), region_score + p, alone());
}

// tb_region with a team per pair (block p, pair p), as tb_ends_team.
template <int R>
__global__ void __launch_bounds__(kTeamMaxWarps * 32) tb_region_team(SWGPU_TB_REGION_PARAMS) {
    __shared__ int8_t smat[kMaxCodes * kMaxCodes];
    load_matrix(matrix, n_codes, smat);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    const int p = blockIdx.x;
    if (p >= n_pairs) return;
    const TeamMemory m = team_memory<R>(n_codes, warps);
    const PairSeqs ps = region_seqs(residues, qoff, soff, rect, p);
    int2* bnd = boundary ? boundary + bnd_off[p] : nullptr;
    pair_region<R, true>(smat, n_codes, ps.q, ps.s, m.profiles + warp * m.profile_bytes, lane, gap_open + gap_extend, gap_extend, bnd,
                         reinterpret_cast<typename NibbleWord<R>::T*>(dirs + dirs_off[p]), region_score + p,
                         Team{warp, warps, m.ring, true});
}

// ---------------------------------------------------------------- strips
// A region of h x w cells needs h * w / 2 bytes of nibbles at once in pass 3: 5 GB for an
// alignment of 10^5 x 10^5, so that a launch held only a dozen of align-long's 200 alignments
// of that size and most SMs idled, and a region over a quarter of the GPU's memory (2.5 x 10^5
// squared on an H200) went to the CPU. In strips, pass 3 keeps one team pass of nibbles at a
// time, as the CPU reference's checkpointed strips do (swgpu_core/align/traceback.py, pass 3):
//   1. tb_strip(_team) with pass_of null runs every team pass in kGlobal mode, each pass k but
//      the last leaving its last row (H, F) in checkpoint k, and writes H(ie, je);
//   2. for each pass k from the last to the first, tb_strip(_team) with pass_of[p] = k runs
//      pass k again in kRegion mode from checkpoint k - 1 (the corner for k = 0), its nibbles
//      in the pair's strip buffer, and tb_walk_strip follows them from where the path entered
//      the strip's last row to where it leaves its first.
// Why the paths equal tb_walk's: pass k's cells depend on the rows above it only through the
// row it reads at its top, (H, F) of the last row of pass k - 1, which is checkpoint k - 1,
// written by the same pass of the same recurrences (kGlobal's H is kRegion's, and F is the
// same max either way); the borders (H(i, 0), E(i, 0)) are the same for every pass. So each
// nibble of pass k is the one tb_region stores, and the walk reads the same nibble at every
// cell: it crosses from one strip to the next with its matrix (state) and operation count in
// `walk` (WalkField), the same walk cut where its row leaves a strip. The region's layout is
// tb_region's, group by group; a strip's buffer holds the groups of one team pass.
// Per pair: pass_of null or pass_of[p] = k (< 0: no work); ckpt + ckpt_off[p]: (passes - 1)
// rows of w + 1 (H, F); dirs + dirs_off[p]: one team pass of nibbles; region_score[p] from step 1.
#define SWGPU_TB_STRIP_PARAMS                                                                                                    \
    const uint8_t *residues, const int64_t *qoff, const int64_t *soff, const int32_t *rect, int n_pairs, const int8_t *matrix,   \
        int n_codes, int gap_open, int gap_extend, int2 *ckpt, const int64_t *ckpt_off, const int32_t *pass_of, uint8_t *dirs,  \
        const int64_t *dirs_off, int32_t *region_score

// One step of the strips for one pair: every pass with checkpoints (pass < 0), or pass `pass` with its nibbles.
template <int R, bool TEAM>
__device__ __forceinline__ void pair_strip(const int8_t* smat, int n_codes, const Seq& q, const Seq& s, uint8_t* prof, int lane, int oe,
                                           int ge, int2* ckpt, int pass, typename NibbleWord<R>::T* words, int32_t* region_score,
                                           const Team& team) {
    const int rows = 32 * R, span = rows * team.warps;
    const int n_passes = (q.len + span - 1) / span;
    const int64_t stride = s.len + 1;
    int base;
    if (pass < 0) {
        Pass<R, kGlobal, TEAM> g;
        for (int k = 0; k < n_passes; ++k) {
            const Team t = in_pass(team, k, rows, q.len, &base);
            if (t.active) build_profile<R>(smat, n_codes, q, base + lane * R, prof, lane);
            g.run(q, s, base, k == 0, k == n_passes - 1, prof, lane, oe, ge, k > 0 ? ckpt + (k - 1) * stride : nullptr,
                  k < n_passes - 1 ? ckpt + k * stride : nullptr, 0, nullptr, t);
        }
        last_cell<R>(q.len, g.h, lane, team, region_score);
        return;
    }
    Pass<R, kRegion, TEAM> reg;
    const Team t = in_pass(team, pass, rows, q.len, &base);
    if (t.active) build_profile<R>(smat, n_codes, q, base + lane * R, prof, lane);
    // the strip's groups from its first: group base / rows of the region is the strip's group base / rows - pass * W
    reg.run(q, s, base, pass == 0, true, prof, lane, oe, ge, pass > 0 ? ckpt + (pass - 1) * stride : nullptr, nullptr, 0,
            words + (int64_t)(base / rows - pass * team.warps) * s.len * 32, t);
}

template <int R>
__global__ void __launch_bounds__(Warps<R>::value * 32) tb_strip(SWGPU_TB_STRIP_PARAMS) {
    constexpr int W = Warps<R>::value;
    __shared__ int8_t smat[kMaxCodes * kMaxCodes];
    __shared__ __align__(16) uint8_t profiles[W][kMaxCodes * 32 * R];
    load_matrix(matrix, n_codes, smat);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int p = blockIdx.x * W + warp;
    if (p >= n_pairs) return;
    const int pass = pass_of ? pass_of[p] : -1;
    if (pass_of && pass < 0) return;
    const PairSeqs ps = region_seqs(residues, qoff, soff, rect, p);
    pair_strip<R, false>(smat, n_codes, ps.q, ps.s, profiles[warp], lane, gap_open + gap_extend, gap_extend, ckpt + ckpt_off[p], pass,
                         reinterpret_cast<typename NibbleWord<R>::T*>(dirs + dirs_off[p]), region_score + p, alone());
}

// tb_strip with a team per pair (block p, pair p), as tb_region_team.
template <int R>
__global__ void __launch_bounds__(kTeamMaxWarps * 32) tb_strip_team(SWGPU_TB_STRIP_PARAMS) {
    __shared__ int8_t smat[kMaxCodes * kMaxCodes];
    load_matrix(matrix, n_codes, smat);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    const int p = blockIdx.x;
    if (p >= n_pairs) return;  // the whole block
    const int pass = pass_of ? pass_of[p] : -1;
    if (pass_of && pass < 0) return;  // the whole block
    const TeamMemory m = team_memory<R>(n_codes, warps);
    const PairSeqs ps = region_seqs(residues, qoff, soff, rect, p);
    pair_strip<R, true>(smat, n_codes, ps.q, ps.s, m.profiles + warp * m.profile_bytes, lane, gap_open + gap_extend, gap_extend,
                        ckpt + ckpt_off[p], pass, reinterpret_cast<typename NibbleWord<R>::T*>(dirs + dirs_off[p]), region_score + p,
                        Team{warp, warps, m.ring, true});
}

// The walk through the nibbles `d` of rows top + 1 .. of a region `width` columns wide (their
// groups of 32 * R rows from the first), from (i, j) in matrix `state` (0 H, 1 E, 2 F), each
// operation written before `end` (0 pair, 1 subject residue vs gap 'D', 2 query residue vs gap
// 'I'; `n` counts them): the path's length where it reaches the region's corner, -1 where it
// leaves the region anywhere else, kWalking where it reaches row `top` > 0 (it goes on in the
// rows above; i, j, state, n, end say where).
__device__ __forceinline__ int walk_rows(const uint8_t* d, int width, int R, int top, int& i, int& j, int& state, int& n, uint8_t*& end) {
    const int rows = 32 * R, half = R / 2;
    while (true) {
        if (i < 1) return -1;
        if (i <= top) return kWalking;
        if (j < 1) return -1;
        const int k = i - 1 - top;
        const int group = k / rows, lane = (k % rows) / R, r = k % R;
        const int64_t byte = (((int64_t)group * width + (j - 1)) * 32 + lane) * half + (r >> 1);
        const int bits = (d[byte] >> ((r & 1) * 4)) & 15;
        if (state == 0) {
            const int src = bits & 3;
            if (src == 0) {
                *--end = 0;
                ++n;
                --i;
                --j;
                if (i < 1) return j == 0 ? n : -1;
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
}

// Step 2's walk of each pair through its strip pass_of[p] (< 0, or a walk already done: nothing),
// one thread per pair: from the state in walk[p * kWalkFields ..] (the region's last cell, H, no
// operation, before the last strip), the operations written into the pair's slot of ops as
// tb_walk writes them; n_ops[p] = the path's length, -1 if it left the region, kWalking until done.
extern "C" __global__ void tb_walk_strip(const int32_t* rect, int n_pairs, int R, int span, const int32_t* pass_of, const uint8_t* dirs,
                                         const int64_t* dirs_off, uint8_t* ops, const int64_t* ops_off, int32_t* walk, int32_t* n_ops) {
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= n_pairs || pass_of[p] < 0 || n_ops[p] != kWalking) return;
    const int height = rect[4 * p + 1] - rect[4 * p] + 1, width = rect[4 * p + 3] - rect[4 * p + 2] + 1;
    int32_t* w = walk + (int64_t)p * kWalkFields;
    int i = w[kWalkI], j = w[kWalkJ], state = w[kWalkState], n = w[kWalkLength];
    uint8_t* end = ops + ops_off[p] + height + width - n;
    n_ops[p] = walk_rows(dirs + dirs_off[p], width, R, pass_of[p] * span, i, j, state, n, end);
    w[kWalkI] = i;
    w[kWalkJ] = j;
    w[kWalkState] = state;
    w[kWalkLength] = n;
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
    uint8_t* end = ops + ops_off[p] + height + width;
    int i = height, j = width, state = 0, n = 0;
    n_ops[p] = walk_rows(dirs + dirs_off[p], width, R, 0, i, j, state, n, end);
}

#ifdef SWGPU_INSTANTIATE  // offline builds (nvcc -cubin in the tests) compile every instance CuPy may ask for
#define SWGPU_TB_INSTANCES(R)                                              \
    template __global__ void tb_ends<R>(SWGPU_TB_ENDS_PARAMS);             \
    template __global__ void tb_ends_team<R>(SWGPU_TB_ENDS_PARAMS);        \
    template __global__ void tb_region<R>(SWGPU_TB_REGION_PARAMS);         \
    template __global__ void tb_region_team<R>(SWGPU_TB_REGION_PARAMS);    \
    template __global__ void tb_strip<R>(SWGPU_TB_STRIP_PARAMS);           \
    template __global__ void tb_strip_team<R>(SWGPU_TB_STRIP_PARAMS);
SWGPU_TB_INSTANCES(4)
SWGPU_TB_INSTANCES(8)
SWGPU_TB_INSTANCES(16)
#endif
