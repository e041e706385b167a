// One huge local alignment (Smith-Waterman, affine gaps, exact int32 scores): a query of
// m residues (rows i = 1..m) against one target section (columns j), with the best end
// point of every diagonal band recorded for `swgpu align-long` (docs/align_long.md). The
// section may come cut into independent parts (overlapping column ranges, each scanned
// from zeros, swgpu_core/long/gpu_plan.py) that one launch scans side by side.
//
// Work split (a blocked wavefront that keeps the GPU busy whatever the query length):
// the target is cut into column blocks of 32 * R columns. A warp takes the next column
// block from a global counter, holds its columns in registers (R per lane) and sweeps
// all m query rows as a wavefront inside the warp (lane t works on row s - t at step s,
// taking the left neighbour's values by shuffle). The column block to its right runs on
// another warp a little behind: lane 31 publishes, per row, the G and E values of the
// block's last column in a global slot, and lane 0 of the next block reads them. So any
// number of blocks run at once, memory is linear in the target (the band keys) and in the
// query (n_slots slots of m words per part), and the query length has no limit.
//
// Parts: one scan keeps only about 2 m / 32 warps busy (a block waits for its left
// neighbour's first rows), too few for a GPU when the query is short, so the host may cut
// the section into n_parts parts (each with its own columns, blocks and slot ring) and the
// counter hands out blocks interleaved: index k is block k / n_parts of part k % n_parts.
// All parts' band keys go to one array (atomicMax merges them, as the host merges
// sections).
//
// Handoff without fences: a slot word packs G + oe and E + oe (kSlotBits = 28 bits each; the
// host checks that no score can reach 2^28) with an 8-bit tag of the producing block's
// generation, stored and loaded as one relaxed 64-bit access. A consumer spins until the
// tag it expects appears. Spinning always ends: block c of a part waits only on block
// c - 1 of that part, which a running warp took earlier from the counter (and which
// waits only on earlier blocks), whatever the residency. Slot (c mod n_slots) of a part
// is rewritten by block c + n_slots, whose row r needs row r of block c + n_slots - 1,
// ..., which needs row r of block c + 1, which block c + 1 computes only from the word of
// block c it has read: every word is read before it is overwritten, for any n_slots >= 1
// and however many blocks of the part run at once.
//
// Recurrences (BLAST convention, oe = open + extend), kept as G = H - oe as in sw_scan.cu:
//   F(i,j) = max(F(i-1,j) - ext, G(i-1,j))
//   Y(i,j) = max(G(i-1,j-1) + S + oe, F(i,j), 0) - oe        "G without E"
//   E(i,j) = max(E(i,j-1) - ext, Y(i,j-1))                   (H - oe >= E - oe, oe >= ext)
//   G(i,j) = max(Y(i,j), E(i,j) - oe)
// E depends on the left cell's Y only, so the chain along a row is one DPX add-max per cell.
//
// End points: the segment of a lane (its R columns, starting at global 1-based column c)
// lies at row i in band b = floor((c - i + m) / w). The lane keeps its best cell for the
// current band (H desc, then row, then column) and, when the band changes, raises the
// band's 64-bit key with atomicMax: key = H << 32 | (2^32 - 1 - lin), with
// lin = i * (w + R) + (c - i + m - b * w) + (j - c). The CPU scan computes the same keys.

#include "common.cuh"  // types; PartField, kLongWarpsPerBlock, kSlotBits (values from swgpu_core/kernel_abi.py)

static constexpr int kChunk = 8;          // boundary rows loaded (and checked) at once
static constexpr uint64_t kSlotMask = (1ull << kSlotBits) - 1;
static constexpr int kTagShift = 2 * kSlotBits;  // the tag's 8 bits above the two values
static_assert(kTagShift + 8 == 64, "a slot word is two values and an 8-bit tag");
static constexpr unsigned kFull = 0xffffffffu;

__device__ __forceinline__ uint64_t load_relaxed(const uint64_t* p) {
    uint64_t v;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ void store_relaxed(uint64_t* p, uint64_t v) {
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ void flush_band(unsigned long long* keys, int64_t band, int best, uint32_t lin, int oe) {
    const unsigned long long key = ((unsigned long long)(uint32_t)(best + oe) << 32) | (unsigned long long)(0xffffffffu - lin);
    if (key > keys[band]) atomicMax(keys + band, key);  // a stale read only costs an atomic
}

// Scores come from shared memory: S(q, t) + oe for codes q, t < A (the last code pads), in
// COPIES interleaved copies so that lane l reads copy l % COPIES: with one copy, lanes
// that look up different cells of a small alphabet hit the same banks (DNA: four codes).
template <int R, int A, int COPIES>
__global__ void __launch_bounds__(32 * kLongWarpsPerBlock) sw_long(const uint8_t* target, const int64_t* parts, int n_parts, int max_blocks,
                                               const uint8_t* query, int m, const int32_t* matrix, int oe, int ext,
                                               int w, int n_slots, uint64_t* slots, int* counter,
                                               unsigned long long* band_keys) {
    static_assert(R % 16 == 0, "R columns are loaded 16 bytes at a time");
    __shared__ int smat[A * A * COPIES];
    for (int k = threadIdx.x; k < A * A * COPIES; k += blockDim.x) smat[k] = matrix[k / COPIES];
    __syncthreads();
    const int lane = threadIdx.x & 31;
    const int copy_bytes = (lane % COPIES) * 4;
    const int neg_oe = -oe, neg_ext = -ext;
    const uint32_t wr = (uint32_t)(w + R);
    const int steps = (m + 31 + kChunk - 1) / kChunk * kChunk;

    for (;;) {
        int idx = 0;
        if (lane == 0) idx = atomicAdd(counter, 1);
        idx = __shfl_sync(kFull, idx, 0);
        const int p = idx % n_parts, c = idx / n_parts;
        if (c >= max_blocks) break;
        const int64_t* part = parts + kPartFields * p;
        if (c >= part[kBlocks]) continue;  // a shorter part: its blocks are all taken
        const uint8_t* cols = target + part[kOffset];
        const int64_t ncols = part[kColumns], col0 = part[kCol0], own_lo = part[kOwnLo], own_hi = part[kOwnHi];

        const int64_t local0 = (int64_t)c * 32 * R + (int64_t)lane * R;
        int tc[R];  // byte offset of each column's scores in a row of smat (this lane's copy)
#pragma unroll
        for (int v = 0; v < R / 16; ++v) {
            const int4 x = *reinterpret_cast<const int4*>(cols + local0 + 16 * v);
            const uint32_t wd[4] = {(uint32_t)x.x, (uint32_t)x.y, (uint32_t)x.z, (uint32_t)x.w};
#pragma unroll
            for (int b = 0; b < 16; ++b) tc[16 * v + b] = (int)((wd[b / 4] >> (8 * (b % 4))) & 0xffu) * COPIES * 4 + copy_bytes;
        }
        const int64_t gc = col0 + local0;  // global 0-based column of the segment's first cell
        const bool track = gc >= own_lo && gc < own_hi;
        const int nreal = (int)max((int64_t)0, min((int64_t)R, ncols - local0));  // columns k < nreal exist
        const int64_t dd0 = gc + m;            // (gc + 1) - 1 + m: the segment's diagonal at row 1
        int64_t band = dd0 / w;
        int boff = (int)(dd0 % w);
        int best = neg_oe;
        uint32_t blin = 0;

        int g[R], f[R];
#pragma unroll
        for (int k = 0; k < R; ++k) { g[k] = neg_oe; f[k] = neg_oe; }
        int diag = neg_oe, out_g = neg_oe, out_e = neg_oe;

        uint64_t* ring = slots + (int64_t)p * n_slots * m;
        uint64_t* mine = ring + (int64_t)(c % n_slots) * m;
        const uint64_t* prev = ring + (int64_t)((c + n_slots - 1) % n_slots) * m;
        const uint64_t my_tag = (uint64_t)((c / n_slots) % 255 + 1) << kTagShift;
        const uint64_t want_tag = c > 0 ? (uint64_t)(((c - 1) / n_slots) % 255 + 1) << kTagShift : 0;
        const bool has_left = c > 0;

        uint64_t nxt = 0, cur = 0;
        if (has_left && lane < kChunk && lane < m) nxt = load_relaxed(prev + lane);
        int qn = query[32 - lane];  // code of this lane's row at step 0 (the array has 32 pad codes in front)

        for (int s0 = 0; s0 < steps; s0 += kChunk) {
            cur = nxt;
            const int r_next = s0 + kChunk + lane;
            if (has_left && lane < kChunk && r_next < m) nxt = load_relaxed(prev + r_next);
            if (has_left) {  // wait until the left block has published rows s0 .. s0 + kChunk - 1
                const int r = s0 + lane;
                bool ok = lane >= kChunk || r >= m || (cur >> kTagShift) << kTagShift == want_tag;
                while (!__all_sync(kFull, ok)) {
                    __nanosleep(200);
                    if (!ok) {
                        cur = load_relaxed(prev + r);
                        ok = (cur >> kTagShift) << kTagShift == want_tag;
                    }
                }
            }
#pragma unroll
            for (int u = 0; u < kChunk; ++u) {
                const int s = s0 + u;
                const int row = s - lane;
                const int qc = qn;
                qn = query[32 + s + 1 - lane];
                int in_g = __shfl_up_sync(kFull, out_g, 1);
                int in_e = __shfl_up_sync(kFull, out_e, 1);
                const uint64_t bw = __shfl_sync(kFull, cur, u);
                if (lane == 0) {
                    if (has_left && row < m) {
                        in_g = (int)((bw >> kSlotBits) & kSlotMask) - oe;
                        in_e = (int)(bw & kSlotMask) - oe;
                    } else {
                        in_g = neg_oe;
                        in_e = neg_oe;
                    }
                }
                const char* mrow = reinterpret_cast<const char*>(smat + qc * A * COPIES);
                int e = in_e, dg = diag;
                diag = in_g;
#pragma unroll
                for (int k = 0; k < R; ++k) {
                    const int d = dg + *reinterpret_cast<const int*>(mrow + tc[k]);
                    dg = g[k];
                    f[k] = __viaddmax_s32(f[k], neg_ext, g[k]);
                    const int y = __vimax3_s32_relu(d, f[k], 0) - oe;
                    g[k] = __viaddmax_s32(e, neg_oe, y);
                    e = __viaddmax_s32(e, neg_ext, y);
                }
                out_g = g[R - 1];
                out_e = e;
                const bool valid = row >= 0 && row < m;
                if (valid && lane == 31)
                    store_relaxed(mine + row, my_tag | ((uint64_t)(out_g + oe) << kSlotBits) | (uint64_t)(out_e + oe));
                const bool live = valid && track;
                int seg = g[0];
#pragma unroll
                for (int k = 1; k + 1 < R; k += 2) seg = __vimax3_s32(seg, g[k], g[k + 1]);
                seg = max(seg, g[R - 1]);
                const bool up = live && seg > best;
                if (__any_sync(kFull, up)) {  // rare, and warp-uniform: a real branch, not predicated code
                    if (up) {
                        const uint32_t base = (uint32_t)(row + 1) * wr + (uint32_t)boff;
#pragma unroll
                        for (int k = 0; k < R; ++k) {
                            if (k < nreal && g[k] > best) {
                                best = g[k];
                                blin = base + k;
                            }
                        }
                    }
                }
                if (live && (boff == 0 || row == m - 1) && best > neg_oe) {
                    flush_band(band_keys, band, best, blin, oe);
                    best = neg_oe;
                }
                if (valid) {
                    if (boff == 0) {
                        --band;
                        boff = w - 1;
                    } else {
                        --boff;
                    }
                }
            }
        }
    }
}
