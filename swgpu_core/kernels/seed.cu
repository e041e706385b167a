// The candidate stage of the seeded search (--mode fast): for a query batch's seed index and a
// database chunk on the device, every (query, subject) pair with a spaced-seed hit whose span
// score reaches SPAN and whose ungapped X-drop extension reaches the subject's trigger (the rule of
// swgpu_core/seed.py and docs/seeded.md, order-independent, so the CPU seeder finds the same set).
//
// Work. One warp per segment of a subject: its positions cut into runs of at most kSegment
// (segments: (subject, first position) pairs, swgpu_core/seed.py seed_segments), in a
// grid-stride loop. A warp per whole subject left the chunk of bench200M's longest subjects (262
// of them, up to 36,000 residues) to a few hundred warps; cut, no warp's walk outlasts a segment.
// A hit's span and extension may reach past its segment, within its subject. 32 subject positions
// at a time, one per lane. Per shape, each lane makes its position's key from the reduced residues at the
// shape's compared offsets, tests it in the shape's presence bitmap (a bit per key: 0.6 MB per
// shape for 13 groups at weight 6, so every shape's bitmap stays in L2) and, where present, reads
// its entry range from the shape's key offsets.
//
// Hits in rounds. The entry counts of the 32 lanes differ widely (a key's count is the number of
// query positions carrying it: 0 for most positions, dozens for common keys), so a lane looping
// over its own entries would leave the others idle. Instead the warp takes the 32 lanes' hits
// together in rounds of 32: an inclusive scan of the counts (five shuffles) numbers the hits
// 0 .. total - 1, and in each round lane l takes hit base + l, finding its source lane as the
// first lane whose inclusive count exceeds it (a binary search over the scan, five shuffles).
// Each lane then scores its hit's span (the query's residues from global memory, the subject's
// from the L1-cached chunk). Read as 8-byte words instead (the queries padded, the subject from a
// warp's window in shared memory), the span was no faster (e1b2f67: 0.500 s; a8be5f5, bytes: 0.489 s, for
// bench200M x 500 on an H100); the kernel is bound by the instructions it issues (Nsight Compute,
// bench/RESULTS.md), not by these loads.
//
// Extensions in a queue. About one hit in five passes the span filter, and an X-drop extension
// walks a variable distance, so extending each hit where it is found would again idle most lanes.
// Passing hits (of pairs not yet candidates) go to the warp's queue in shared memory, appended in
// lane order by a ballot; once 32 are queued each lane extends one, side by side. The queue holds
// fewer than 32 left-overs plus one round's 32 (kQueue = 64). It is emptied at each segment's end,
// as its entries need the subject's bounds. The walks are half the kernel's instructions, and
// Nsight Compute counts 13-14 of the 32 lanes active per step (bench200M x 500, chunk 1; each
// side runs as long as its longest walk). Each walk counts its steps in bounds beforehand and
// moves two pointers (the seed kernels of bench200M x 500: 0.287 s against 0.304 s with four
// bounds tests a step). Lanes that claim the next queued hit as their own walk ends, so that
// fewer idle, were slower: 0.341-0.352 s (the claims' ballots and loads cost more than the
// idle lanes; f8d864f, 2b3f3c1; bench/RESULTS.md, twelfth session).
//
// Output: a bit per (query, subject of the chunk), set by atomicOr; a hit that passes the span
// filter is not queued when its pair's bit is already set, and a queued one not extended (the rule
// is an "exists", so this only saves work). The host turns the bits into each query's sorted
// subjects.

#include "common.cuh"  // types (values of SWGPU_SEED_* from swgpu_core/kernel_abi.seed_options)

enum : int {
    kShapes = SWGPU_SEED_SHAPES,
    kWeight = SWGPU_SEED_WEIGHT,
    kGroups = SWGPU_SEED_GROUPS,
    kKeys = SWGPU_SEED_KEYS,
    kSpan = SWGPU_SEED_SPAN,
    kXdrop = SWGPU_SEED_XDROP,
    kTrigger = SWGPU_SEED_TRIGGER,
    kTriggerStep = SWGPU_SEED_TRIGGER_STEP,
    kTriggerBaseLog2 = SWGPU_SEED_TRIGGER_BASE_LOG2,
    kStride = SWGPU_SEED_MATRIX_STRIDE,
    kWarps = SWGPU_SEED_WARPS,
    kMaxLength = SWGPU_SEED_MAX_LENGTH,
    kSegment = SWGPU_SEED_SEGMENT,
};
enum SeedCounter : int { kCHits = SWGPU_SEED_COUNTER_HITS, kCExtensions = SWGPU_SEED_COUNTER_EXTENSIONS };

constexpr unsigned kAll = 0xffffffffu;
constexpr int kQueue = 64;
constexpr uint32_t kNoGroup = 255u;
constexpr int kBitmapWords = (kKeys + 31) / 32;
static_assert(kGroups <= 128 && (kNoGroup & 128u), "a group index is below 128; kNoGroup (seed.py's 255) has the high bit");

struct Pending {  // a hit that passed the span filter
    int query, pos, subject_pos, span, length;  // pos: in the concatenated queries; subject_pos: in the chunk
};

// Best running sum (>= 0) of the ungapped walk of at most n steps from q and s by `step`,
// stopping more than kXdrop below the best.
__device__ __forceinline__ int gain(const uint8_t* __restrict__ q, const uint8_t* __restrict__ s, int n, int step, const int* M) {
    int best = 0, run = 0;
    for (; n > 0; --n) {
        run += M[*q * kStride + *s];
        best = max(best, run);
        if (best - run > kXdrop) break;
        q += step;
        s += step;
    }
    return best;
}

extern "C" __global__ void __launch_bounds__(32 * kWarps) seed_candidates(
    const uint8_t* __restrict__ res, const int64_t* __restrict__ offsets,
    const int32_t* __restrict__ segments, int n_segments,  // [n_segments][2]: subject, first position (chunk-relative)
    const uint8_t* __restrict__ reduction,       // [256] residue code -> group (kNoGroup: none)
    const int32_t* __restrict__ shape_offsets,   // [kShapes][kWeight] compared offsets
    const int32_t* __restrict__ shape_lengths,   // [kShapes]
    const uint32_t* __restrict__ bitmap,         // [kShapes][kBitmapWords] keys present
    const int32_t* __restrict__ key_offsets,     // [kShapes][kKeys + 1] entry ranges
    const int32_t* __restrict__ positions,       // entries: positions in the concatenated queries
    const int32_t* __restrict__ query_of,        // [query residues] the query of each position
    const int32_t* __restrict__ qstart,          // [n_queries + 1]
    const uint8_t* __restrict__ qcodes,          // the queries end to end
    const int32_t* __restrict__ matrix,          // [kStride][kStride]
    uint32_t* __restrict__ flags, int row_words, // [n_queries][row_words] a bit per subject of the chunk
    unsigned long long* __restrict__ counters) {
    __shared__ int M[kStride * kStride];
    __shared__ uint8_t RED[256];
    __shared__ int SO[kShapes * kWeight];
    __shared__ int SL[kShapes];
    __shared__ Pending queue_of[kWarps][kQueue];
    for (int t = threadIdx.x; t < kStride * kStride; t += blockDim.x) M[t] = matrix[t];
    for (int t = threadIdx.x; t < 256; t += blockDim.x) RED[t] = reduction[t];
    for (int t = threadIdx.x; t < kShapes * kWeight; t += blockDim.x) SO[t] = shape_offsets[t];
    for (int t = threadIdx.x; t < kShapes; t += blockDim.x) SL[t] = shape_lengths[t];
    __syncthreads();
    const int lane = threadIdx.x & 31;
    Pending* queue = queue_of[threadIdx.x >> 5];
    const int n_warps = (gridDim.x * blockDim.x) >> 5;
    unsigned long long hits = 0, extensions = 0;
    for (int w = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; w < n_segments; w += n_warps) {
        const int s = segments[2 * w];
        const int64_t sb = offsets[s], se = offsets[s + 1];
        const int64_t jb = sb + segments[2 * w + 1], je = min(se, jb + (int64_t)kSegment);
        const uint32_t bit = 1u << (s & 31);
        // the subject's trigger: kTriggerStep more per doubling of its length from 2^(base+1)
        const int needed = kTrigger + kTriggerStep * max(0, 31 - __clz((unsigned)(se - sb)) - kTriggerBaseLog2);
        int queued = 0;
        // extend the first n queued hits (n <= 32), one per lane, then move the rest to the front
        auto flush = [&](int n) {
            if (lane < n) {
                const Pending h = queue[lane];
                uint32_t* word = flags + (size_t)h.query * row_words + (s >> 5);
                if (!(*(volatile uint32_t*)word & bit)) {
                    ++extensions;
                    const int qlo = qstart[h.query], qhi = qstart[h.query + 1];
                    const int x = h.pos + h.length;
                    const int64_t y = h.subject_pos + h.length;
                    const int score = h.span + gain(qcodes + x, res + y, (int)min((int64_t)(qhi - x), se - y), 1, M) +
                                      gain(qcodes + h.pos - 1, res + h.subject_pos - 1, (int)min((int64_t)(h.pos - qlo), h.subject_pos - sb), -1, M);
                    if (score >= needed) atomicOr(word, bit);
                }
            }
            __syncwarp();
            const int rest = queued - n;
            Pending keep;
            if (lane < rest) keep = queue[n + lane];
            __syncwarp();
            if (lane < rest) queue[lane] = keep;
            __syncwarp();
            queued = rest;
        };
        for (int64_t j0 = jb; j0 < je; j0 += 32) {
            const int64_t j = j0 + lane;
            for (int sh = 0; sh < kShapes; ++sh) {
                const int length = SL[sh];
                int first = 0, count = 0;
                if (j < je && j + length <= se) {
                    uint32_t key = 0, none = 0;
#pragma unroll
                    for (int t = 0; t < kWeight; ++t) {
                        const uint32_t g = RED[res[j + SO[sh * kWeight + t]]];
                        none |= g & 128u;  // kNoGroup has the high bit, every group index is below 128
                        key = key * kGroups + (g & 127u);
                    }
                    if (!none && ((__ldg(bitmap + (size_t)sh * kBitmapWords + (key >> 5)) >> (key & 31)) & 1u)) {
                        const int32_t* range = key_offsets + (size_t)sh * (kKeys + 1) + key;
                        first = range[0];
                        count = range[1] - first;
                    }
                }
                int upto = count;  // inclusive scan of the counts over the lanes
#pragma unroll
                for (int d = 1; d < 32; d <<= 1) {
                    const int v = __shfl_up_sync(kAll, upto, d);
                    if (lane >= d) upto += v;
                }
                const int total = __shfl_sync(kAll, upto, 31);
                for (int base = 0; base < total; base += 32) {
                    const int h = base + lane;
                    int src = 0;  // the first lane whose inclusive count exceeds h
#pragma unroll
                    for (int step = 16; step > 0; step >>= 1) {
                        if (__shfl_sync(kAll, upto, src + step - 1) <= h) src += step;
                    }
                    const int src_upto = __shfl_sync(kAll, upto, src);
                    const int src_count = __shfl_sync(kAll, count, src);
                    const int src_first = __shfl_sync(kAll, first, src);
                    bool pass = false;
                    Pending mine;
                    if (h < total) {
                        ++hits;
                        const int p = positions[src_first + h - (src_upto - src_count)];
                        const int64_t jh = j0 + src;
                        // the span's loads issued together (a fixed trip count, predicated past the
                        // shape's length), so their latencies overlap
                        int span = 0;
#pragma unroll
                        for (int t = 0; t < kMaxLength; ++t)
                            if (t < length) span += M[qcodes[p + t] * kStride + res[jh + t]];
                        // the pair's flag only for the one hit in five that passes: most hits never read it
                        if (span >= kSpan) {
                            const int q = query_of[p];
                            if (!(*(volatile const uint32_t*)(flags + (size_t)q * row_words + (s >> 5)) & bit)) {
                                pass = true;
                                mine = Pending{q, p, (int)jh, span, length};
                            }
                        }
                    }
                    const uint32_t ballot = __ballot_sync(kAll, pass);
                    if (pass) queue[queued + __popc(ballot & ((1u << lane) - 1u))] = mine;
                    __syncwarp();
                    queued += __popc(ballot);
                    if (queued >= 32) flush(32);
                }
            }
        }
        while (queued > 0) flush(min(queued, 32));
    }
    atomicAdd(counters + kCHits, hits);
    atomicAdd(counters + kCExtensions, extensions);
}
