// The candidate stage of the seeded search (--mode fast): for a group of query segments and a
// database chunk on the device, every (query, subject) pair with a triggering word hit whose
// ungapped X-drop extension reaches the trigger score (the rule of swgpu_core/seed.py and
// docs/seeded.md, order-independent, so the CPU seeder finds the same set).
//
// Work: one block per (query group, slice of subjects); each warp of the block takes one
// subject at a time (the longest of the slice first) and walks its word positions in order.
// The group's lookup table (subject word -> super-query positions whose word scores >= T
// against it) is in shared memory: 8001 uint16 offsets, uint16 entries. A group is a few
// query segments laid end to end with `window` spacer positions between them (a "super-query"
// of length Q <= 65535), so one diagonal array per warp serves all of them: two words of
// different segments are more than `window` apart on any diagonal, and never pair.
//
// Diagonal words. A hit (I, j) (super-query position, subject position) triggers iff an earlier
// hit on its diagonal lies WORD..window positions before it. A warp keeps one 32-bit word per
// diagonal, in a ring of R >= Q + window slots (slot (j - I) mod R: two diagonals that share a
// slot never have hits within `window` positions of each other, so neither sees the other's):
//
//   [ base : 22 - kBatch bits | dp : 7 | mask : kBatch + 3 ]
//
//   mask  the diagonal's hits at positions base .. base + kBatch + 2 (bit k: position base + k);
//   dp    base - p, p the diagonal's latest hit before base (127: none within the window);
//   base  kept mod 2^bits, in the warp's running coordinate (subjects follow each other with a
//         gap > window, so a new subject sees every earlier entry as stale).
//
// A batch of subject positions jb .. jb + kBatch - 1 uses base = jb - 3 (WORD = 3): a hit at
// j = jb + r then has its partners either in the mask (bits max(0, r + 3 - window) .. r, the
// positions base .. j - 3: the three before the batch and the batch's own) or before the base,
// where only the latest hit p matters (it is at least 4 before j, so it pairs iff j - p =
// dp + r + 3 <= window). A word written for an earlier batch is *realigned* to the new base
// first: its mask shifted down by the difference, the highest bit shifted out giving dp (or dp
// grown by the difference). Every kRenormPeriod positions a warp realigns all its words, so a
// base difference never wraps.
//
// Batches. A warp takes 32 subject positions (a "superbatch": one per lane computes its word
// and its lookup-table row) and cuts them into batches of at most kBatch positions and kHits
// hits, cut back to a whole number of rounds of 32 hits where the positions allow (a batch
// costs a little, a round's idle lanes more). A batch's hits are spread over the lanes in balanced rounds (a lane finds its hit's
// position from the positions' running hit counts: ballots, a reduction and two shuffles), then
//   A. each hit realigns its diagonal's word and sets its own bit (one shared-memory CAS,
//      retried when another hit of the batch on that diagonal came first: every retry finds
//      the word realigned, so the result is the same in any order);
//   B. after a warp barrier each hit reads its word: the mask and dp answer the rule.
// So a batch is two steps with a barrier between, and the result is the one of a walk in
// subject order: no hit of a batch can be a partner of another at distance < 3, and every
// partner at distance >= 3 is in the word when it is read.
//
// Extension. Triggering hits go to a per-warp queue; when 32 are queued, each lane extends
// one (of an owned position: a long query is cut into segments that overlap by `window`
// positions, each triggering only for the words it owns; and of a query that is not yet a
// candidate for this subject): word score, then the right and left X-drop gains (the rule's
// loops, which stop as soon as the trigger score is reached), and a hit reaching the trigger
// appends (query, subject) to the output once per segment and subject (a per-warp flag per
// segment; the host removes the duplicates that segments of one query leave).
//
// Host side: swgpu_core/seed_tables.py builds the groups, tables and the shared-memory layout
// (smem_bytes mirrors Layout below; the kernel checks the launch's size and flags an error).

#include "common.cuh"  // types (values of SWGPU_SEED_* from swgpu_core/kernel_abi.seed_options)

enum : int {
    kWord = SWGPU_SEED_WORD,
    kWordCodes = SWGPU_SEED_WORD_CODES,
    kWords = SWGPU_SEED_N_WORDS,
    kWindow = SWGPU_SEED_WINDOW,
    kXdrop = SWGPU_SEED_XDROP,
    kTrigger = SWGPU_SEED_TRIGGER,
    kBatch = SWGPU_SEED_BATCH,
    kRounds = SWGPU_SEED_ROUNDS,
    kFlush = SWGPU_SEED_EXT_FLUSH,
    kMaxSegs = SWGPU_SEED_MAX_SEGS,
    kStride = SWGPU_SEED_MATRIX_STRIDE,
    kMaxWarps = SWGPU_SEED_MAX_WARPS,
};
enum SeedGroupField : int {
    kGBlob = SWGPU_SEED_GROUP_BLOB,
    kGCopy = SWGPU_SEED_GROUP_COPY,
    kGSegmap = SWGPU_SEED_GROUP_SEGMAP,
    kGEntries = SWGPU_SEED_GROUP_ENTRIES,
    kGSeg0 = SWGPU_SEED_GROUP_SEG0,
    kGNseg = SWGPU_SEED_GROUP_NSEG,
    kGRing = SWGPU_SEED_GROUP_RING,
    kGroupFields = SWGPU_SEED_GROUP_COUNT,
};
enum SeedSegField : int {
    kSQuery = SWGPU_SEED_SEG_QUERY,
    kSQstart = SWGPU_SEED_SEG_QSTART,
    kSQlen = SWGPU_SEED_SEG_QLEN,
    kSLo = SWGPU_SEED_SEG_LO,
    kSOwn = SWGPU_SEED_SEG_OWN,
    kSBase = SWGPU_SEED_SEG_BASE,
    kSegFields = SWGPU_SEED_SEG_COUNT,
};
enum SeedCounter : int {
    kCPairs = SWGPU_SEED_COUNTER_PAIRS,
    kCHits = SWGPU_SEED_COUNTER_HITS,
    kCTriggers = SWGPU_SEED_COUNTER_TRIGGERS,
    kCExtensions = SWGPU_SEED_COUNTER_EXTENSIONS,
    kCError = SWGPU_SEED_COUNTER_ERROR,
};

static_assert(kWord == 3, "the window of a batch starts WORD = 3 positions before it");
static_assert(kWindow >= kWord && kWindow < 127, "dp holds distances up to the window in 7 bits (127: none)");
static_assert(kBatch >= 1 && kBatch <= 12, "a diagonal word holds kBatch + 3 mask bits, 7 of dp and >= 10 of base");
static_assert(kMaxSegs % 32 == 0 && kMaxSegs <= 256, "segment flags are whole words, a segment index a byte");

constexpr unsigned kAll = 0xffffffffu;
constexpr int kHits = 32 * kRounds;          // hits of one batch at most
constexpr int kExtQueue = kHits + kFlush;    // < kFlush left over from earlier batches, plus one batch
constexpr int kMaskWidth = kBatch + kWord;   // mask bits: the 3 positions before a batch and the batch
constexpr uint32_t kMaskBits = (1u << kMaskWidth) - 1u;
constexpr int kBaseShift = kMaskWidth + 7;
constexpr int kBaseBits = 32 - kBaseShift;
constexpr uint32_t kBaseMask = (1u << kBaseBits) - 1u;
constexpr uint32_t kNone = 127;
// Positions a warp may advance between two realignments of all its words: a stored base is
// then less than kRenormPeriod + window + 36 behind any base it is realigned to (the slack
// covers the superbatch being walked and the jump to the next subject), less than 2^bits.
constexpr uint32_t kRenormPeriod = (1u << kBaseBits) - 2u * (kWindow + 1) - 64u;
static_assert((1 << kBaseBits) >= 2 * (kWindow + 1) + 64 + 256, "base bits too few for the realignment period");

// The word of a diagonal with no hit within the window, based at `base`.
__device__ __forceinline__ uint32_t empty_word(uint32_t base) { return ((base & kBaseMask) << kBaseShift) | (kNone << kMaskWidth); }

// `v` realigned to base `nb` (mod 2^bits, not behind v's base): mask bits before nb leave, the
// highest of them (or, without any, the old latest hit) giving dp. Branch-free; the identity
// when the base is nb already. (mask < 2^kMaskWidth, so shifts by kMaskWidth..31 act as the
// whole mask leaving.)
__device__ __forceinline__ uint32_t realign(uint32_t v, uint32_t nb) {
    const uint32_t diff = (nb - (v >> kBaseShift)) & kBaseMask, shift = min(diff, 31u);
    const uint32_t mask = v & kMaskBits;
    const uint32_t gone = mask & ((1u << shift) - 1u);
    const uint32_t dp = gone ? diff + (uint32_t)__clz(gone) - 31u : ((v >> kMaskWidth) & kNone) + diff;
    return (nb << kBaseShift) | (min(dp, kNone) << kMaskWidth) | (mask >> shift);
}

// Whether a hit at batch position r (its bit r + 3 set) has a partner, given its word after step A.
__device__ __forceinline__ bool paired(uint32_t v, int r) {
    const uint32_t dp = (v >> kMaskWidth) & kNone;
    uint32_t m = v & ((2u << r) - 1u);  // positions base .. j - 3
    if (kBatch + 2 > kWindow && r + 3 > kWindow) m &= ~((1u << (r + 3 - kWindow)) - 1u);  // within the window
    return m != 0u || dp + (uint32_t)r + 3u <= (uint32_t)kWindow;
}

// Warp-wide OR and sum: one instruction from compute capability 8.0 on, shuffles before (the
// tests' CPU emulation takes the first path, which the H100 runs).
__device__ __forceinline__ unsigned warp_or(unsigned v) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
    return __reduce_or_sync(kAll, v);
#else
    for (int o = 16; o > 0; o /= 2) v |= __shfl_xor_sync(kAll, v, o);
    return v;
#endif
}
__device__ __forceinline__ unsigned warp_sum(unsigned v) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
    return __reduce_add_sync(kAll, v);
#else
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(kAll, v, o);
    return v;
#endif
}

// ---------------------------------------------------------------- shared memory
// Byte offsets of the block's shared memory (swgpu_core/seed_tables.py: smem_bytes mirrors it).
struct Layout {
    uint32_t matrix, segs, warps, warp_bytes, counter, end;
    __device__ Layout(int copy_words, int ring, int n_warps) {
        matrix = (uint32_t)(copy_words * 2 + 15) / 16 * 16;
        segs = matrix + kStride * kStride;
        warps = (segs + kMaxSegs * kSegFields * 4 + 15) / 16 * 16;
        warp_bytes = ((uint32_t)ring * 4 + kExtQueue * 8 + kMaxSegs / 8 + 32 + 4 + 15) / 16 * 16;
        counter = warps + (uint32_t)n_warps * warp_bytes;
        end = counter + 16;
    }
};

// What a warp holds in shared memory.
struct WarpState {
    uint32_t* state;  // [ring] diagonal words
    uint32_t* ext_i;  // [kExtQueue] queued extensions: super-query position
    uint32_t* ext_j;  // [kExtQueue] and subject position
    uint32_t* done;   // [kMaxSegs / 32] segment is a candidate for the current subject
    uint8_t* nz;      // [32] a batch's positions with hits, in order
    int* cursor;      // the next queued extension to take
};

// Everything a warp reads about its group and subject.
struct Context {
    const uint32_t* lut_off;  // [kWords + 1] row offsets (shared memory)
    const uint16_t* entries;  // lookup table entries: super-query positions (shared or global memory)
    const uint8_t* segmap;    // super-query position -> segment
    const int32_t* segs;      // [kMaxSegs][kSegFields] the group's segments
    const int8_t* matrix;     // [kStride][kStride] substitution scores
    const uint8_t* qcodes;    // every query's residue codes, end to end
    const uint8_t* subject;   // the current subject's codes
    int length;               // and its length
    int subject_index;        // chunk-relative
    unsigned long long* pairs;
    unsigned long long* counters;
    int capacity;
};

// ---------------------------------------------------------------- ungapped extension
// The queued extensions of a subject run together: every lane takes the next one when its own
// ends (an extension's length varies widely: a lane per extension in fixed rounds would leave
// most lanes waiting for the longest of each round). An extension is the word score, then the
// right side from i + 3 / j + 3, then the left side from i - 1 / j - 1, each the rule's loop:
// the best running sum (>= 0), stopping more than kXdrop below the best or at a sequence's end,
// and here also as soon as the total reaches the trigger (the exact gain no longer matters).
// A queued hit is skipped when its segment does not own it or is a candidate already.
struct Extension {
    const uint8_t* q;  // next query residue of the side being walked
    const uint8_t* s;  // and subject residue
    int stride;        // +1 right, -1 left
    int steps;         // left on this side
    int run, best;     // the side's running sum and best
    int score;         // word score plus the gains of finished sides
    int i, j;          // the hit (query position, subject position)
    int qlen, seg;     // its query's length and segment; seg < 0: no extension in hand
};

// Take queued extensions from the cursor until one needs running (or the queue is done).
__device__ __forceinline__ void take(const Context& c, const WarpState& w, int n, int job, Extension& x, unsigned& ran) {
    for (; job < n; job = atomicAdd(w.cursor, 1)) {
        const uint32_t big_i = w.ext_i[job];
        const int seg = c.segmap[big_i];
        const int32_t* sg = c.segs + seg * kSegFields;
        if (((w.done[seg >> 5] >> (seg & 31)) & 1u) || (int)big_i < sg[kSOwn]) continue;
        x.i = (int)big_i - sg[kSBase] + sg[kSLo];
        x.j = (int)w.ext_j[job];
        x.qlen = sg[kSQlen];
        x.seg = seg;
        const uint8_t* q = c.qcodes + sg[kSQstart] + x.i;
        const uint8_t* s = c.subject + x.j;
        x.score = 0;
#pragma unroll
        for (int t = 0; t < kWord; ++t) x.score += c.matrix[__ldg(q + t) * kStride + __ldg(s + t)];
        x.q = q + kWord;
        x.s = s + kWord;
        x.stride = 1;
        x.steps = min(x.qlen - x.i, c.length - x.j) - kWord;
        x.run = x.best = 0;
        ++ran;
        return;
    }
    x.seg = -1;
}

// Flag segment `seg` a candidate for this subject; the first to do so appends (query, subject).
__device__ __forceinline__ void report(const Context& c, const WarpState& w, int seg) {
    const uint32_t bit = 1u << (seg & 31);
    if (atomicOr(&w.done[seg >> 5], bit) & bit) return;
    const unsigned long long slot = atomicAdd(&c.counters[kCPairs], 1ull);
    if (slot < (unsigned long long)c.capacity)
        c.pairs[slot] = ((unsigned long long)(uint32_t)c.segs[seg * kSegFields + kSQuery] << 32) | (uint32_t)c.subject_index;
}

// Run all n queued extensions; returns how many extensions ran (the warp's total).
__device__ __forceinline__ unsigned run_extensions(const Context& c, const WarpState& w, int n, int lane) {
    if (lane == 0) *w.cursor = 32;
    __syncwarp();
    Extension x;
    unsigned ran = 0;
    take(c, w, n, lane, x, ran);
    while (x.seg >= 0) {
        if (x.steps > 0 && x.score + x.best < kTrigger) {  // one step of the side
            x.run += c.matrix[__ldg(x.q) * kStride + __ldg(x.s)];
            x.q += x.stride;
            x.s += x.stride;
            --x.steps;
            if (x.run > x.best) x.best = x.run;
            else if (x.best - x.run > kXdrop) x.steps = 0;
        } else if (x.stride > 0 && x.score + x.best < kTrigger) {  // the right side ended: the left one
            x.score += x.best;
            x.q = c.qcodes + c.segs[x.seg * kSegFields + kSQstart] + x.i - 1;
            x.s = c.subject + x.j - 1;
            x.stride = -1;
            x.steps = min(x.i, x.j);
            x.run = x.best = 0;
        } else {  // done: a candidate if the trigger is reached
            if (x.score + x.best >= kTrigger) report(c, w, x.seg);
            take(c, w, n, atomicAdd(w.cursor, 1), x, ran);
        }
    }
    __syncwarp();
    return warp_sum(ran);
}

// ---------------------------------------------------------------- the kernel
#define SWGPU_SEED_PARAMS                                                                                            \
    const uint8_t *residues, const int64_t *offsets, const int32_t *slices, int n_slices, const uint16_t *blobs,       \
        const int32_t *groups, const int32_t *segs, const uint8_t *qcodes, const int8_t *matrix, int copy_words, int ring, \
        int smem_bytes, unsigned long long *pairs, int capacity, unsigned long long *counters

extern "C" __global__ void __launch_bounds__(kMaxWarps * 32) seed_candidates(SWGPU_SEED_PARAMS) {
    extern __shared__ __align__(16) uint8_t smem[];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, n_warps = blockDim.x / 32;
    const Layout lay(copy_words, ring, n_warps);
    if (lay.end > (uint32_t)smem_bytes) {
        if (threadIdx.x == 0) atomicAdd(&counters[kCError], 1ull);
        return;
    }
    const int group = blockIdx.x / n_slices, slice = blockIdx.x % n_slices;
    const int32_t* gr = groups + group * kGroupFields;
    const int ring_g = gr[kGRing], n_seg = gr[kGNseg];

    // the group's blob, the matrix and the segment rows into shared memory; the warps' words
    {
        const uint4* src = reinterpret_cast<const uint4*>(blobs + gr[kGBlob]);
        uint4* dst = reinterpret_cast<uint4*>(smem);
        for (int k = threadIdx.x; k < gr[kGCopy] / 8; k += blockDim.x) dst[k] = __ldg(src + k);
        int8_t* m = reinterpret_cast<int8_t*>(smem + lay.matrix);
        for (int k = threadIdx.x; k < kStride * kStride; k += blockDim.x) m[k] = matrix[k];
        int32_t* sg = reinterpret_cast<int32_t*>(smem + lay.segs);
        for (int k = threadIdx.x; k < n_seg * kSegFields; k += blockDim.x) sg[k] = segs[gr[kGSeg0] * kSegFields + k];
        uint8_t* wbase = smem + lay.warps;
        for (int k = threadIdx.x; k < n_warps * ring_g; k += blockDim.x) {
            const int wk = k / ring_g;
            reinterpret_cast<uint32_t*>(wbase + wk * lay.warp_bytes)[k - wk * ring_g] = empty_word(0u - kWord);
        }
        if (threadIdx.x == 0) *reinterpret_cast<int*>(smem + lay.counter) = 0;
    }
    __syncthreads();

    const uint16_t* blob = reinterpret_cast<const uint16_t*>(smem);
    Context c;
    c.lut_off = reinterpret_cast<const uint32_t*>(blob);
    c.entries = (gr[kGEntries] < gr[kGCopy] ? blob : blobs + gr[kGBlob]) + gr[kGEntries];
    c.segmap = reinterpret_cast<const uint8_t*>(blob + gr[kGSegmap]);
    c.segs = reinterpret_cast<const int32_t*>(smem + lay.segs);
    c.matrix = reinterpret_cast<const int8_t*>(smem + lay.matrix);
    c.qcodes = qcodes;
    c.pairs = pairs;
    c.counters = counters;
    c.capacity = capacity;
    WarpState w;
    {
        uint8_t* base = smem + lay.warps + warp * lay.warp_bytes;
        w.state = reinterpret_cast<uint32_t*>(base);
        w.ext_i = w.state + ring;
        w.ext_j = w.ext_i + kExtQueue;
        w.done = w.ext_j + kExtQueue;
        w.nz = reinterpret_cast<uint8_t*>(w.done + kMaxSegs / 32);
        w.cursor = reinterpret_cast<int*>(w.nz + 32);
    }
    int* next_subject = reinterpret_cast<int*>(smem + lay.counter);
    const int lo = slices[slice], hi = slices[slice + 1];

    uint32_t jc = 0;        // the warp's running coordinate of the current subject's position 0
    uint32_t renormed = 0;  // coordinate of the last realignment of all words
    unsigned long long total_hits = 0, total_triggers = 0, extensions = 0;
    const uint32_t lt_mask = (1u << lane) - 1u, le_mask = lt_mask | (1u << lane);

    for (;;) {
        int k = 0;
        if (lane == 0) k = atomicAdd(next_subject, 1);
        k = __shfl_sync(kAll, k, 0);
        const int s = hi - 1 - k;  // the slice is sorted by length: longest first
        if (s < lo) break;
        const int64_t off = offsets[s];
        c.subject = residues + off;
        c.length = (int)(offsets[s + 1] - off);
        c.subject_index = s;
        if (lane < kMaxSegs / 32) w.done[lane] = 0u;
        int queued = 0;
        uint32_t hits = 0, triggers = 0;  // of this subject, for the counters (32 bits: a cheaper add per round)
        __syncwarp();
        const int n_pos = c.length - (kWord - 1);  // word positions
        uint32_t jm = jc % (uint32_t)ring_g;       // coordinate of the superbatch's first position, mod ring
        for (int p0 = 0; p0 < n_pos; p0 += 32, jm = jm + 32 >= (uint32_t)ring_g ? jm + 32 - ring_g : jm + 32) {
            const uint32_t jsb = jc + (uint32_t)p0;
            if (jsb + 32u - renormed > kRenormPeriod) {  // realign every word, so no base difference wraps
                const uint32_t nb = (jsb - kWord) & kBaseMask;
                for (int t = lane; t < ring_g; t += 32) w.state[t] = realign(w.state[t], nb);
                renormed = jsb;
                __syncwarp();
            }
            // this lane's position: its word and lookup-table row
            const int p = p0 + lane;
            int cnt = 0, wstart = 0;
            if (p < n_pos) {
                const int c0 = __ldg(c.subject + p), c1 = __ldg(c.subject + p + 1), c2 = __ldg(c.subject + p + 2);
                if (c0 < kWordCodes && c1 < kWordCodes && c2 < kWordCodes) {
                    const int word = (c0 * kWordCodes + c1) * kWordCodes + c2;
                    wstart = (int)c.lut_off[word];
                    cnt = (int)c.lut_off[word + 1] - wstart;
                }
            }
            int incl = cnt;  // inclusive running count of hits over the superbatch's positions
#pragma unroll
            for (int o = 1; o < 32; o *= 2) {
                const int v = __shfl_up_sync(kAll, incl, o);
                if (lane >= o) incl += v;
            }
            if (__shfl_sync(kAll, incl, 31) == 0) continue;
            const int excl = incl - cnt;

            int a = 0, e0 = 0;  // next batch: from position a, skipping e0 entries of it
            while (a < 32) {
                const int base = __shfl_sync(kAll, excl, a) + e0;  // the batch's first hit, in superbatch numbering
                const int left_a = __shfl_sync(kAll, cnt, a) - e0;
                int b, n;
                if (left_a > kHits) {  // a crowded position, in parts: its hits share no diagonal
                    b = a + 1;
                    n = kHits;
                } else {
                    // the longest run of at most kBatch positions and kHits hits, cut back to whole
                    // rounds of 32 hits where its last round would be at most half full and that
                    // keeps a position (idle lanes cost more than a batch)
                    const bool fits = lane >= a && lane < a + kBatch && incl - base <= kHits;
                    b = a + __popc(__ballot_sync(kAll, fits));
                    const int most = __shfl_sync(kAll, incl, b - 1) - base;
                    const int whole = most >= 32 && (-most & 31) > 16 ? most / 32 * 32 : most;
                    b = max(a + __popc(__ballot_sync(kAll, fits && incl - base <= whole)), a + 1);
                    n = __shfl_sync(kAll, incl, b - 1) - base;
                }
                if (n > 0) {
                    hits += (uint32_t)n;
                    // this lane's position in the batch: its first hit (batch numbering) and whether it has any
                    const int first = max(excl - base, 0);
                    const bool has = lane >= a && lane < b && (lane == a ? left_a : cnt) > 0;
                    const int estart = wstart - (excl - base);  // entry of the batch's hit h at this position: estart + h
                    const unsigned nz = __ballot_sync(kAll, has);
                    if (has) w.nz[__popc(nz & lt_mask)] = (uint8_t)lane;
                    __syncwarp();
                    const int nz_pos = w.nz[lane];
                    const uint32_t nb = (jsb + (uint32_t)a - kWord) & kBaseMask;  // the batch's window base
                    uint32_t slot[kRounds], big_i[kRounds];  // per round: the hit's slot | batch position << 16, its super-query position
                    // the batch's entries first (all rounds' loads in flight together: from global
                    // memory they take a few hundred cycles), then A: every hit realigns its
                    // diagonal's word and sets its bit
#pragma unroll
                    for (int rd = 0; rd < kRounds; ++rd) {
                        if (rd * 32 >= n) break;  // uniform
                        const int h = rd * 32 + lane;
                        // the position of hit h: the positions starting in this round, ranked after the one
                        // holding the round's first hit
                        const int from = first - rd * 32;  // this position's first hit, relative to the round
                        const bool starts = has && (unsigned)(from - 1) < 31u;
                        const unsigned start_bits = warp_or(starts ? 1u << from : 0u);
                        const int rank = __popc(__ballot_sync(kAll, has && from <= 0)) - 1 + __popc(start_bits & le_mask);
                        const int l = __shfl_sync(kAll, nz_pos, rank & 31);
                        const int e = __shfl_sync(kAll, estart, l & 31) + h;
                        slot[rd] = (uint32_t)(l - a) << 16;
                        big_i[rd] = h < n ? c.entries[e] : 0u;
                    }
#pragma unroll
                    for (int rd = 0; rd < kRounds; ++rd) {
                        if (rd * 32 + lane >= n) break;
                        const int r = (int)(slot[rd] >> 16);
                        int sl = (int)jm + a + r - (int)big_i[rd];
                        sl += sl < 0 ? ring_g : 0;
                        sl -= sl >= ring_g ? ring_g : 0;
                        slot[rd] |= (uint32_t)sl;
                        const uint32_t bit = 1u << (r + kWord);
                        uint32_t old = w.state[sl];
                        for (;;) {
                            const uint32_t prev = atomicCAS(&w.state[sl], old, realign(old, nb) | bit);
                            if (prev == old) break;
                            old = prev;
                        }
                    }
                    __syncwarp();
                    // B: every hit reads its word; the paired ones are queued for extension
#pragma unroll
                    for (int rd = 0; rd < kRounds; ++rd) {
                        if (rd * 32 >= n) break;
                        const int h = rd * 32 + lane;
                        const int r = (int)(slot[rd] >> 16);
                        const bool push = h < n && paired(w.state[slot[rd] & 0xffffu], r);
                        const unsigned ballot = __ballot_sync(kAll, push);
                        if (push) {
                            const int at = queued + __popc(ballot & lt_mask);
                            w.ext_i[at] = big_i[rd];
                            w.ext_j[at] = (uint32_t)(p0 + a + r);
                        }
                        queued += __popc(ballot);
                        triggers += (uint32_t)__popc(ballot);
                    }
                    __syncwarp();
                    if (queued >= kFlush) {
                        extensions += run_extensions(c, w, queued, lane);
                        queued = 0;
                    }
                }
                if (left_a > kHits) {
                    e0 += kHits;
                } else {
                    a = b;
                    e0 = 0;
                }
            }
        }
        if (queued > 0) extensions += run_extensions(c, w, queued, lane);
        total_hits += hits;
        total_triggers += triggers;
        // the next subject starts more than a window after this one's last position
        jc += (uint32_t)((max(n_pos, 0) + 31) / 32 * 32 + kWindow + 1);
    }
    if (lane == 0) {
        atomicAdd(&counters[kCHits], total_hits);
        atomicAdd(&counters[kCTriggers], total_triggers);
        atomicAdd(&counters[kCExtensions], extensions);
    }
}
