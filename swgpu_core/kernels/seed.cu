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
// Diagonal state. A hit (I, j) (super-query position, subject position) triggers iff an earlier
// hit on its diagonal lies WORD..window positions before it. Hits of one subject position are
// on distinct diagonals, and hits closer than WORD = 3 never pair, so the latest hit at least 3
// before j is one of the last three hits of the diagonal. A warp keeps, per diagonal, one 32-bit
// word (a ring of R >= Q + window slots, slot (j - I) mod R: two diagonals sharing a slot are
// never both within `window` of the current position):
//
//   [ p1 : 24 - kBatch bits | bd : 7 | f : 1 | mask : kBatch ]
//
//   p1    the subject position of the diagonal's latest hit (mod 2^bits, in the warp's running
//         coordinate: subjects follow each other with a gap > window, so a new subject sees
//         every earlier entry as stale);
//   f     a hit at p1 - 1;
//   bd    p1 - b, b = the latest hit at or before p1 - 2 (127: none within the window);
//   mask  the hits of the current batch (bit r: batch position r).
//
// For a hit at j with d = j - p1 (the state before the batch), the latest earlier hit at least
// 3 before j is p1 if d >= 3, p1 - 1 if d == 2 and f, else b (d in {1, 2}); so d, f and bd give
// its distance exactly. p1 is kept mod 2^bits; every kRenormPeriod positions a warp rewrites
// entries more than `window` old as empty (p1 = window + 1 behind), so a distance never wraps.
//
// Batches. A warp takes 32 subject positions (a "superbatch": one per lane computes its word
// and its lookup-table row) and cuts them into batches of at most kBatch positions and kHits
// hits. A batch's hits are spread over the lanes in balanced rounds (a lane finds its hit's
// position by binary search over the positions' running hit counts), then:
//   A. each hit sets its bit in its diagonal's mask (shared-memory atomicOr);
//   B. each hit reads the word: the history (p1, f, bd) answers for partners before the batch,
//      the mask for partners inside it (bits r - window .. r - 3); the diagonal's last hit of
//      the batch (its "owner", no higher mask bit) computes the new history, mask cleared, and
//      writes it at once if it is the batch's only hit on that diagonal (the common case);
//   C. only if some diagonal had several hits, after a warp barrier, their owners write.
// So no hit waits for another, and the result is the one of a walk in subject order.
//
// Extension. Triggering hits of owned positions (a long query is cut into segments that
// overlap by `window` positions; each segment triggers only for the words it owns) whose
// query is not yet a candidate for this subject go to a per-warp queue; when 32 are queued,
// each lane extends one (word score + right and left X-drop gains, the rule's exact loops)
// and a hit reaching the trigger score appends (query, subject) to the output once per
// segment and subject (a per-warp flag per segment; the host removes the duplicates that
// segments of one query leave).
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
    kMaxSegs = SWGPU_SEED_MAX_SEGS,
    kStride = SWGPU_SEED_MATRIX_STRIDE,
    kMaxWarps = SWGPU_SEED_MAX_WARPS,
};
enum SeedGroupField : int {
    kGBlob = SWGPU_SEED_GROUP_BLOB,
    kGWords = SWGPU_SEED_GROUP_WORDS,
    kGSegmap = SWGPU_SEED_GROUP_SEGMAP,
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

static_assert(kWord == 3, "the diagonal history (f, bd) is written for words of 3");
static_assert(kWindow >= kWord && kWindow < 127, "bd holds distances up to the window in 7 bits (127: none)");
static_assert(kBatch >= 1 && kBatch <= 16, "a batch's positions are found by a 4-step binary search");
static_assert(kMaxSegs % 32 == 0 && kMaxSegs <= 256, "segment flags are whole words, a segment index a byte");

constexpr unsigned kAll = 0xffffffffu;
constexpr int kHits = 32 * kRounds;          // hits of one batch at most
constexpr int kExtQueue = kHits + 32;        // < 32 left over from earlier batches, plus one batch
constexpr int kOffsets = kWords + 1;         // the lookup table's row offsets
constexpr int kEntriesAt = (kOffsets + 7) / 8 * 8;  // uint16 index of the first entry in a blob
constexpr int kP1Shift = kBatch + 8;
constexpr int kP1Bits = 32 - kP1Shift;
constexpr uint32_t kP1Mask = (1u << kP1Bits) - 1u;
constexpr uint32_t kBatchMask = (1u << kBatch) - 1u;
constexpr uint32_t kNone = 127;
// Positions a warp may advance between two renormalisations: a stored p1 is then at most
// kRenormPeriod + 2 * (window + 1) + 64 behind any position compared with it (the slack covers
// the superbatch being walked and the jump to the next subject), less than 2^bits.
constexpr uint32_t kRenormPeriod = (1u << kP1Bits) - 2u * (kWindow + 1) - 128u;
static_assert((1 << kP1Bits) > 2 * (kWindow + 1) + 128 + 256, "p1 bits too few for the renormalisation period");

__device__ __forceinline__ uint32_t history(uint32_t p1, uint32_t bd, uint32_t f) {
    return ((p1 & kP1Mask) << kP1Shift) | (bd << (kBatch + 1)) | (f << kBatch);
}

// The empty state at coordinate t: a latest hit window + 1 behind t, no earlier one.
__device__ __forceinline__ uint32_t empty_state(uint32_t t) { return history(t - (kWindow + 1), kNone, 0); }

// ---------------------------------------------------------------- shared memory
// Byte offsets of the block's shared memory (swgpu_core/seed_tables.py: smem_bytes mirrors it).
struct Layout {
    uint32_t matrix, segs, warps, warp_bytes, counter, end;
    __device__ Layout(int blob_words, int ring, int n_warps) {
        matrix = (uint32_t)(blob_words * 2 + 15) / 16 * 16;
        segs = matrix + kStride * kStride;
        warps = (segs + kMaxSegs * kSegFields * 4 + 15) / 16 * 16;
        warp_bytes = ((uint32_t)ring * 4 + kExtQueue * 8 + kMaxSegs / 8 + 15) / 16 * 16;
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
};

// Everything a warp reads about its group and subject.
struct Context {
    const uint16_t* lut_off;  // [kOffsets] row offsets
    const uint16_t* entries;  // lookup table entries: super-query positions
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
// The best running sum (>= 0) walking from (a, b) by `step` over query q[0, qlen) and subject
// s[0, slen), stopping more than kXdrop below the best or at either sequence's end.
template <int Step>
__device__ __forceinline__ int side_gain(const uint8_t* q, int qlen, int a, const uint8_t* s, int slen, int b, const int8_t* m) {
    int best = 0, run = 0;
    for (; a >= 0 && a < qlen && b >= 0 && b < slen; a += Step, b += Step) {
        run += m[__ldg(q + a) * kStride + __ldg(s + b)];
        if (run > best) best = run;
        else if (best - run > kXdrop) break;
    }
    return best;
}

// Extend the queued hit k; on a score reaching the trigger, flag its segment and append
// (query, subject) once.
__device__ __forceinline__ void extend(const Context& c, const WarpState& w, int k) {
    const uint32_t big_i = w.ext_i[k];
    const int j = (int)w.ext_j[k];
    const int seg = c.segmap[big_i];
    const uint32_t bit = 1u << (seg & 31);
    if (w.done[seg >> 5] & bit) return;  // an earlier extension made it a candidate
    const int32_t* sg = c.segs + seg * kSegFields;
    const int i = (int)big_i - sg[kSBase] + sg[kSLo];
    const uint8_t* q = c.qcodes + sg[kSQstart];
    const int qlen = sg[kSQlen];
    const int8_t* m = c.matrix;
    const uint8_t* s = c.subject;
    int score = 0;
#pragma unroll
    for (int t = 0; t < kWord; ++t) score += m[__ldg(q + i + t) * kStride + __ldg(s + j + t)];
    score += side_gain<1>(q, qlen, i + kWord, s, c.length, j + kWord, m);
    score += side_gain<-1>(q, qlen, i - 1, s, c.length, j - 1, m);
    if (score < kTrigger) return;
    if (atomicOr(&w.done[seg >> 5], bit) & bit) return;  // another lane of this round was first
    const unsigned long long slot = atomicAdd(&c.counters[kCPairs], 1ull);
    if (slot < (unsigned long long)c.capacity)
        c.pairs[slot] = ((unsigned long long)(uint32_t)sg[kSQuery] << 32) | (uint32_t)c.subject_index;
}

// Run the newest min(n, 32) queued extensions, one per lane; returns how many remain.
__device__ __forceinline__ int run_extensions(const Context& c, const WarpState& w, int n, int lane, unsigned long long& extensions) {
    const int take = min(n, 32);
    if (lane < take) extend(c, w, n - take + lane);
    extensions += (unsigned long long)take;
    __syncwarp();
    return n - take;
}

// ---------------------------------------------------------------- the diagonal rule
// Phase B for one hit at subject coordinate j, batch position r, given its diagonal's word v:
// whether it triggers, and (for the diagonal's last hit of the batch) the word after the batch.
struct Verdict {
    bool trigger;
    bool owner;  // the diagonal's last hit of the batch: it writes `next`
    bool alone;  // and the only one: it may write at once
    uint32_t next;
};

__device__ __forceinline__ Verdict judge(uint32_t v, uint32_t j, int r) {
    const uint32_t mask = v & kBatchMask;
    const uint32_t hist = v >> kBatch;
    const uint32_t f = hist & 1u, bd = (hist >> 1) & 127u, p1 = hist >> 8;
    const uint32_t d = (j - p1) & kP1Mask;  // >= 1: p1 precedes the batch
    // distance to the latest hit before the batch that lies at least kWord before j
    const uint32_t dist = d >= (uint32_t)kWord ? d : (d == 2u && f ? 3u : d + bd);
    Verdict out;
    out.trigger = dist <= (uint32_t)kWindow;
    if (r >= kWord) {  // partners inside the batch: bits r - window .. r - kWord
        uint32_t m = mask & ((2u << (r - kWord)) - 1u);
        if (r > kWindow) m &= ~((1u << (r - kWindow)) - 1u);
        out.trigger |= m != 0u;
    }
    out.owner = (mask >> (r + 1)) == 0u;
    out.alone = mask == (1u << r);
    // the new history: p1' = j; f' = a hit at j - 1; bd' = distance to the latest hit <= j - 2
    const uint32_t f2 = r >= 1 ? (mask >> (r - 1)) & 1u : (uint32_t)(d == 1u);
    const uint32_t inner = r >= 2 ? mask & ((1u << (r - 1)) - 1u) : 0u;  // batch hits <= j - 2
    uint32_t bd2 = inner ? (uint32_t)r - (31u - (uint32_t)__clz(inner)) : (d >= 2u ? d : (f ? 2u : 1u + bd));
    if (bd2 > (uint32_t)kWindow) bd2 = kNone;
    out.next = history(j, bd2, f2);
    return out;
}

// ---------------------------------------------------------------- the kernel
#define SWGPU_SEED_PARAMS                                                                                            \
    const uint8_t *residues, const int64_t *offsets, const int32_t *slices, int n_slices, const uint16_t *blobs,       \
        const int32_t *groups, const int32_t *segs, const uint8_t *qcodes, const int8_t *matrix, int blob_words, int ring, \
        int smem_bytes, unsigned long long *pairs, int capacity, unsigned long long *counters

extern "C" __global__ void __launch_bounds__(kMaxWarps * 32) seed_candidates(SWGPU_SEED_PARAMS) {
    extern __shared__ __align__(16) uint8_t smem[];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, n_warps = blockDim.x / 32;
    const Layout lay(blob_words, ring, n_warps);
    if (lay.end > (uint32_t)smem_bytes) {
        if (threadIdx.x == 0) atomicAdd(&counters[kCError], 1ull);
        return;
    }
    const int group = blockIdx.x / n_slices, slice = blockIdx.x % n_slices;
    const int32_t* gr = groups + group * kGroupFields;
    const int ring_g = gr[kGRing], n_seg = gr[kGNseg];

    // the group's blob, the matrix and the segment rows into shared memory; the warps' state
    {
        const uint4* src = reinterpret_cast<const uint4*>(blobs + gr[kGBlob]);
        uint4* dst = reinterpret_cast<uint4*>(smem);
        for (int k = threadIdx.x; k < gr[kGWords] / 8; k += blockDim.x) dst[k] = __ldg(src + k);
        int8_t* m = reinterpret_cast<int8_t*>(smem + lay.matrix);
        for (int k = threadIdx.x; k < kStride * kStride; k += blockDim.x) m[k] = matrix[k];
        int32_t* sg = reinterpret_cast<int32_t*>(smem + lay.segs);
        for (int k = threadIdx.x; k < n_seg * kSegFields; k += blockDim.x) sg[k] = segs[gr[kGSeg0] * kSegFields + k];
        uint8_t* wbase = smem + lay.warps;
        for (int k = threadIdx.x; k < n_warps * ring_g; k += blockDim.x) {
            const int wk = k / ring_g;
            reinterpret_cast<uint32_t*>(wbase + wk * lay.warp_bytes)[k - wk * ring_g] = empty_state(0);
        }
        if (threadIdx.x == 0) *reinterpret_cast<int*>(smem + lay.counter) = 0;
    }
    __syncthreads();

    const uint16_t* blob = reinterpret_cast<const uint16_t*>(smem);
    Context c;
    c.lut_off = blob;
    c.entries = blob + kEntriesAt;
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
    }
    int* next_subject = reinterpret_cast<int*>(smem + lay.counter);
    const int lo = slices[slice], hi = slices[slice + 1];

    uint32_t jc = 0;         // the warp's running coordinate of the current subject's position 0
    uint32_t renormed = 0;   // coordinate of the last renormalisation
    unsigned long long hits = 0, triggers = 0, extensions = 0;
    const uint32_t lt_mask = (1u << lane) - 1u;

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
        __syncwarp();
        const int n_pos = c.length - (kWord - 1);  // word positions
        uint32_t jm = jc % (uint32_t)ring_g;       // coordinate of the superbatch's first position, mod ring
        for (int p0 = 0; p0 < n_pos; p0 += 32, jm = jm + 32 >= (uint32_t)ring_g ? jm + 32 - ring_g : jm + 32) {
            const uint32_t jsb = jc + (uint32_t)p0;
            if (jsb + 32u - renormed > kRenormPeriod) {  // forget entries older than the window
                for (int t = lane; t < ring_g; t += 32) {
                    const uint32_t v = w.state[t];
                    if (((jsb - (v >> kP1Shift)) & kP1Mask) > (uint32_t)kWindow) w.state[t] = empty_state(jsb);
                }
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
                    wstart = c.lut_off[word];
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
                const int base = __shfl_sync(kAll, excl, a) + e0;
                const int left_a = __shfl_sync(kAll, cnt, a) - e0;
                int b, n;
                if (left_a > kHits) {  // a crowded position, in parts: its hits share no diagonal
                    b = a + 1;
                    n = kHits;
                } else {
                    const bool fits = lane >= a && lane < a + kBatch && incl - base <= kHits;
                    b = a + __popc(__ballot_sync(kAll, fits));
                    n = __shfl_sync(kAll, incl, b - 1) - base;
                }
                if (n > 0) {
                    hits += (unsigned long long)n;
                    const int rel = incl - base;           // hits of the batch up to this lane's position
                    const int estart = wstart - (excl - base);  // entry of this position's hit k: estart + k
                    // per round: the hit's slot | super-query position << 16, its batch position, and
                    // (deferred owners) the diagonal's word after the batch, never 0 (bd >= 1)
                    uint32_t slot[kRounds], pos[kRounds], next[kRounds];
#pragma unroll
                    for (int rd = 0; rd < kRounds; ++rd) next[rd] = 0u;
                    bool deferred = false;
                    // A: every hit marks its diagonal's mask
#pragma unroll
                    for (int rd = 0; rd < kRounds; ++rd) {
                        if (rd * 32 >= n) break;  // uniform
                        const int kk = rd * 32 + lane;
                        int l = a;  // l = a + #{positions of the batch whose running count <= kk}
#pragma unroll
                        for (int step = 8; step > 0; step /= 2) {
                            const int probe = l + step - 1;
                            const int v = __shfl_sync(kAll, rel, probe & 31);
                            if (probe < b && v <= kk) l += step;
                        }
                        const int e = __shfl_sync(kAll, estart, l & 31) + kk;
                        pos[rd] = (uint32_t)l;
                        slot[rd] = 0;
                        if (kk < n) {
                            const int big_i = c.entries[e];
                            int sl = (int)jm + l - big_i;
                            sl += sl < 0 ? ring_g : 0;
                            sl -= sl >= ring_g ? ring_g : 0;
                            slot[rd] = (uint32_t)sl | ((uint32_t)big_i << 16);
                            atomicOr(&w.state[sl], 1u << (l - a));
                        }
                    }
                    __syncwarp();
                    // B: judge every hit; lone owners write at once; queue the triggers
#pragma unroll
                    for (int rd = 0; rd < kRounds; ++rd) {
                        if (rd * 32 >= n) break;
                        const int kk = rd * 32 + lane;
                        bool push = false;
                        const int l = (int)pos[rd];
                        const uint32_t big_i = slot[rd] >> 16, sl = slot[rd] & 0xffffu;
                        if (kk < n) {
                            const Verdict vd = judge(w.state[sl], jsb + (uint32_t)l, l - a);
                            if (vd.owner) {
                                if (vd.alone) w.state[sl] = vd.next;
                                else { next[rd] = vd.next; deferred = true; }
                            }
                            if (vd.trigger) {
                                const int seg = c.segmap[big_i];
                                push = (int)big_i >= c.segs[seg * kSegFields + kSOwn] && !((w.done[seg >> 5] >> (seg & 31)) & 1u);
                            }
                        }
                        const unsigned ballot = __ballot_sync(kAll, push);
                        if (push) {
                            const int at = queued + __popc(ballot & lt_mask);
                            w.ext_i[at] = big_i;
                            w.ext_j[at] = (uint32_t)(p0 + l);
                        }
                        queued += __popc(ballot);
                        triggers += (unsigned long long)__popc(ballot);
                    }
                    // C: owners of diagonals with several hits in the batch
                    if (__any_sync(kAll, deferred)) {
                        __syncwarp();
#pragma unroll
                        for (int rd = 0; rd < kRounds; ++rd)
                            if (next[rd] != 0u) w.state[slot[rd] & 0xffffu] = next[rd];
                    }
                    __syncwarp();
                    while (queued >= 32) queued = run_extensions(c, w, queued, lane, extensions);
                }
                if (left_a > kHits) {
                    e0 += kHits;
                } else {
                    a = b;
                    e0 = 0;
                }
            }
        }
        while (queued > 0) queued = run_extensions(c, w, queued, lane, extensions);
        // the next subject starts more than a window after this one's last position
        jc += (uint32_t)((max(n_pos, 0) + 31) / 32 * 32 + kWindow + 1);
    }
    if (lane == 0) {
        atomicAdd(&counters[kCHits], hits);
        atomicAdd(&counters[kCTriggers], triggers);
        atomicAdd(&counters[kCExtensions], extensions);
    }
}
