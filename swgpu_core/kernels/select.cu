#include "common.cuh"

// The k-th largest of n int32 scores, exactly, without sorting them: for a query's candidate
// selection on one batch (gpu/search.py, DeviceWorker._kth_largest), where a sort of every
// subject's score cost the GPU a radix sort and the host a library call per query and batch.
//
// A radix select. The scores become order-preserving unsigned keys (key = score ^ 2^31: the
// sign bit flipped, so that unsigned order is signed order), and the k-th largest key is found
// one digit at a time from the most significant, a pass per digit: the host passes the digits'
// positions (kernel_abi.SELECT_PASSES: bits 21-31, 10-20, 0-9), each at most kSelectBits wide.
//
// Invariant, before the pass whose digit sits at bits [shift, shift + bits): the wanted key
// agrees with state[0] (the prefix) on every bit above shift + bits, and it is the state[1]-th
// largest (the rank) of the keys that agree with the prefix there. For the first pass that is
// true with prefix 0 and rank k (no bit lies above). select_count counts the digit of each such
// key into a histogram; select_pick walks the histogram from its highest bin down: the bin in
// which the count of keys so far first reaches the rank holds the wanted key, so that bin is
// its digit (added to the prefix) and its rank among the bin's keys is the rank less the keys
// in the bins above (the new rank). After the pass at shift 0 the prefix is the whole key.
// The rank's bin exists because the keys counted number at least the rank: all n >= k keys in
// the first pass, and in each later one the keys of the bin chosen before, which held the rank.
//
// Counting: the scores of a batch mostly agree in their high digits (they are small), so the
// lanes of a warp would all add 1 to the same shared counter, one after the other. Lanes whose
// digits are equal find each other with __match_any_sync and the first of them adds their
// number once.

static_assert(kSelectBins % kSelectPickThreads == 0 && kSelectPickThreads % 32 == 0, "the pick's threads take whole bins, whole warps");

// The histogram of the digit at bits [shift, shift + bits) of the keys that agree with the
// prefix above it, added into `hist` (zero before the pass: select_pick leaves it so).
extern "C" __global__ void select_count(const int32_t* __restrict__ scores, int64_t n, const uint32_t* __restrict__ state,
                                        uint32_t* __restrict__ hist, int shift, int bits) {
    __shared__ uint32_t local[kSelectBins];
    for (int b = threadIdx.x; b < kSelectBins; b += blockDim.x) local[b] = 0;
    __syncthreads();
    const uint32_t above = shift + bits >= 32 ? 0u : ~0u << (shift + bits);  // the bits found by earlier passes
    const uint32_t prefix = state[0] & above;
    const uint32_t digit_mask = (1u << bits) - 1u;
    const int lane = threadIdx.x & 31;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    // the warp's lanes go round together (their loop bound is the warp's first lane's), so that
    // every lane takes part in each __match_any_sync; lanes past the end carry no digit
    for (int64_t base = (int64_t)blockIdx.x * blockDim.x + (threadIdx.x - lane); base < n; base += stride) {
        const int64_t i = base + lane;
        uint32_t digit = kSelectBins;  // none: past the end, or another prefix
        if (i < n) {
            const uint32_t key = (uint32_t)scores[i] ^ 0x80000000u;
            if ((key & above) == prefix) digit = (key >> shift) & digit_mask;
        }
        const uint32_t peers = __match_any_sync(0xffffffffu, digit);
        if (digit != kSelectBins && lane == __ffs(peers) - 1) atomicAdd(&local[digit], (uint32_t)__popc(peers));
    }
    __syncthreads();
    for (int b = threadIdx.x; b < (1 << bits); b += blockDim.x)
        if (local[b]) atomicAdd(&hist[b], local[b]);
}

// One block of kSelectPickThreads threads: the digit of the pass (see the invariant above) into
// `state`; `first` takes rank `k` and prefix 0 instead of reading them; after the pass at shift 0
// the k-th largest score into kth[0]. Leaves `hist` zero for the next pass.
extern "C" __global__ void __launch_bounds__(kSelectPickThreads)
    select_pick(uint32_t* __restrict__ hist, uint32_t* __restrict__ state, int shift, int bits, int first, uint32_t k, int32_t* __restrict__ kth) {
    __shared__ uint32_t warp_total[kSelectPickThreads / 32];
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    const int per = (1 << bits) / kSelectPickThreads > 0 ? (1 << bits) / kSelectPickThreads : 1;
    const int high = (1 << bits) - 1 - t * per;  // this thread's bins: high, high - 1, ... (those >= 0), thread 0 the highest
    const int count = high < 0 ? 0 : (high + 1 < per ? high + 1 : per);
    uint32_t mine = 0;
    for (int j = 0; j < count; ++j) mine += hist[high - j];
    // the keys in the bins above this thread's: an exclusive scan over the threads in order
    uint32_t inclusive = mine;
    for (int d = 1; d < 32; d <<= 1) {
        const uint32_t v = __shfl_up_sync(0xffffffffu, inclusive, d);
        if (lane >= d) inclusive += v;
    }
    if (lane == 31) warp_total[warp] = inclusive;
    __syncthreads();
    if (warp == 0) {
        uint32_t w = lane < kSelectPickThreads / 32 ? warp_total[lane] : 0u;
        for (int d = 1; d < 32; d <<= 1) {
            const uint32_t v = __shfl_up_sync(0xffffffffu, w, d);
            if (lane >= d) w += v;
        }
        if (lane < kSelectPickThreads / 32) warp_total[lane] = w;  // now inclusive over the warps
    }
    __syncthreads();
    uint32_t before = inclusive - mine + (warp ? warp_total[warp - 1] : 0u);
    const uint32_t rank = first ? k : state[1];
    const uint32_t prefix = first ? 0u : state[0];
    __syncthreads();  // every thread has read the state before the one that finds the digit writes it
    for (int j = 0; j < count; ++j) {
        const uint32_t c = hist[high - j];
        if (before < rank && rank <= before + c) {
            const uint32_t key = prefix | ((uint32_t)(high - j) << shift);
            state[0] = key;
            state[1] = rank - before;
            if (shift == 0) kth[0] = (int32_t)(key ^ 0x80000000u);
        }
        before += c;
        hist[high - j] = 0;
    }
}
