// A CPU stand-in for the CUDA device code this repository's tests run with g++ (no GPU here):
// the keywords, the built-in indices, the warp intrinsics, barriers and atomics a kernel uses.
//
// A block runs as one fiber (ucontext) per CUDA thread on one OS thread. A fiber runs until it
// reaches a warp intrinsic (__shfl*_sync, __ballot_sync, __any_sync, __match_any_sync, __syncwarp) or
// __syncthreads, where it waits; a warp operation completes when every live lane of the warp
// waits at it (they must all be at the same kind of operation: a divergent warp operation
// aborts, as does a deadlock), a block barrier when every live thread does. Between those
// points the ready fibers run one after the other, in a random order drawn from a seed, so a
// kernel whose result depends on the interleaving of lanes between barriers (a missing
// __syncwarp) shows it as a difference between seeds; and the warps of a block run at speeds
// drawn from the seed (run_block), so a kernel that counts on warps keeping step without a
// __syncthreads shows it too. Atomics are plain operations (one OS
// thread), but each first lets the other fibers run: a CAS loop meets lost races, and lanes
// that take work from a shared counter interleave. Blocks run one after the other; `smem` is
// the one dynamic shared-memory buffer.

#pragma once

#include <ucontext.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __shared__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n)

using std::max;
using std::min;

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
};
struct uint2 {
    unsigned x, y;
};
struct uint4 {
    unsigned x, y, z, w;
};
struct int2 {
    int x, y;
};
struct int3 {
    int x, y, z;
};
struct int4 {
    int x, y, z, w;
};

namespace emu {

enum State { kReady, kAtWarp, kAtBlock, kDone };
enum Op { kShfl, kShflUp, kShflXor, kBallot, kReduceOr, kReduceAdd, kMatchAny, kSync };

struct Thread {
    ucontext_t ctx;
    std::vector<char> stack;
    dim3 idx;
    State state = kReady;
    Op op = kSync;
    uint64_t value = 0;
    int arg = 0;
    int width = 32;
    uint64_t result = 0;
};

inline ucontext_t scheduler;
inline std::vector<Thread> threads;
inline int current = 0;
inline dim3 block_idx, block_dim, grid_dim;
inline std::function<void()> body;

[[noreturn]] inline void fail(const char* what) {
    std::fprintf(stderr, "cuda_emu: %s (block %u, thread %d)\n", what, block_idx.x, current);
    std::exit(3);
}

inline void yield_to_scheduler() { swapcontext(&threads[current].ctx, &scheduler); }

inline uint64_t warp_op(Op op, uint64_t value, int arg, int width = 32) {
    if (width < 1 || width > 32 || (width & (width - 1))) fail("shuffle width not a power of 2 up to 32");
    Thread& t = threads[current];
    t.op = op;
    t.value = value;
    t.arg = arg;
    t.width = width;
    t.state = kAtWarp;
    yield_to_scheduler();
    return threads[current].result;
}

inline void trampoline() {
    body();
    threads[current].state = kDone;
    yield_to_scheduler();
}

// Complete the warp operation of warp `w` if all its live lanes wait at it.
inline bool resolve_warp(int w, int n_threads) {
    const int first = w * 32, last = std::min(first + 32, n_threads);
    bool any = false;
    for (int k = first; k < last; ++k) {
        if (threads[k].state == kReady || threads[k].state == kAtBlock) return false;
        any |= threads[k].state == kAtWarp;
    }
    if (!any) return false;
    Op op = kSync;
    bool first_seen = true;
    for (int k = first; k < last; ++k) {
        if (threads[k].state == kDone) fail("warp operation with exited lanes");
        if (first_seen) op = threads[k].op;
        else if (threads[k].op != op) fail("lanes of a warp at different warp operations");
        first_seen = false;
    }
    uint64_t ballot = 0, reduced = 0;
    for (int k = first; k < last; ++k) ballot |= (uint64_t)(threads[k].value != 0) << (k - first);
    for (int k = first; k < last; ++k) reduced = op == kReduceAdd ? (uint32_t)(reduced + threads[k].value) : reduced | threads[k].value;
    for (int k = first; k < last; ++k) {
        Thread& t = threads[k];
        const int lane = k - first, seg = lane / t.width * t.width, sub = lane - seg;
        int src = lane;
        switch (op) {  // within the lane's segment of `width` lanes, as CUDA's shuffles
            case kShfl: src = seg + (t.arg & (t.width - 1)); break;
            case kShflUp: src = sub >= t.arg ? lane - t.arg : lane; break;
            case kShflXor: src = (sub ^ t.arg) < t.width ? seg + (sub ^ t.arg) : lane; break;
            default: break;
        }
        if (first + src >= last) fail("shuffle from a lane past the block's end");
        if (op == kMatchAny) {  // the lanes whose value equals this lane's
            uint64_t peers = 0;
            for (int m = first; m < last; ++m) peers |= (uint64_t)(threads[m].value == t.value) << (m - first);
            t.result = peers;
            continue;
        }
        t.result = op == kBallot ? ballot : op == kReduceOr || op == kReduceAdd ? reduced : threads[first + src].value;
    }
    for (int k = first; k < last; ++k) threads[k].state = kReady;
    return true;
}

// Run one block of `block` threads to completion. Each warp has a speed drawn for the block:
// in a round, the ready lanes of a warp run with that probability, so the warps of a block drift
// apart between barriers as they may on a GPU (a kernel that counts on warps keeping step
// without a barrier shows it); a round in which no chosen warp could run runs every ready lane.
inline void run_block(std::mt19937& rng) {
    const int n = (int)threads.size();
    std::vector<int> order(n);
    for (int k = 0; k < n; ++k) order[k] = k;
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    std::vector<double> speed((n + 31) / 32);
    for (double& s : speed) s = 0.2 + 0.8 * uniform(rng);
    std::vector<char> chosen(speed.size());
    for (;;) {
        bool progressed = false;
        std::shuffle(order.begin(), order.end(), rng);
        for (size_t w = 0; w < speed.size(); ++w) chosen[w] = uniform(rng) < speed[w];
        for (int pass = 0; pass < 2 && !progressed; ++pass) {  // the second pass: every ready lane
            for (int k : order) {
                if (threads[k].state != kReady || (pass == 0 && !chosen[k / 32])) continue;
                current = k;
                swapcontext(&scheduler, &threads[k].ctx);
                progressed = true;
            }
        }
        for (int w = 0; w * 32 < n; ++w) progressed |= resolve_warp(w, n);
        bool all_done = true, all_at_block = true, any_at_block = false;
        for (const Thread& t : threads) {
            all_done &= t.state == kDone;
            all_at_block &= t.state == kDone || t.state == kAtBlock;
            any_at_block |= t.state == kAtBlock;
        }
        if (all_done) return;
        if (all_at_block && any_at_block) {
            for (Thread& t : threads)
                if (t.state == kAtBlock) t.state = kReady;
            progressed = true;
        }
        if (!progressed) fail("deadlock: threads wait at barriers that cannot complete");
    }
}

// Launch `kernel` (a callable running the kernel body for the current thread) on a grid.
inline void launch(dim3 grid, dim3 block, const std::function<void()>& kernel, unsigned seed, size_t stack = 256 * 1024) {
    grid_dim = grid;
    block_dim = block;
    body = kernel;
    std::mt19937 rng(seed);
    const int n = (int)(block.x * block.y * block.z);
    for (unsigned b = 0; b < grid.x; ++b) {
        block_idx = dim3{b, 0, 0};
        threads.assign(n, Thread{});
        for (int k = 0; k < n; ++k) {
            Thread& t = threads[k];
            t.idx = dim3{(unsigned)k, 0, 0};
            t.stack.resize(stack);
            getcontext(&t.ctx);
            t.ctx.uc_stack.ss_sp = t.stack.data();
            t.ctx.uc_stack.ss_size = t.stack.size();
            t.ctx.uc_link = nullptr;
            makecontext(&t.ctx, trampoline, 0);
        }
        run_block(rng);
    }
    threads.clear();
}

template <class T>
inline uint64_t bits(T v) {
    uint64_t out = 0;
    std::memcpy(&out, &v, sizeof(T));
    return out;
}
template <class T>
inline T from_bits(uint64_t v) {
    T out;
    std::memcpy(&out, &v, sizeof(T));
    return out;
}

}  // namespace emu

#define threadIdx (emu::threads[emu::current].idx)
#define blockIdx (emu::block_idx)
#define blockDim (emu::block_dim)
#define gridDim (emu::grid_dim)

template <class T>
inline T __shfl_sync(unsigned, T v, int src, int width = 32) {
    return emu::from_bits<T>(emu::warp_op(emu::kShfl, emu::bits(v), src, width));
}
template <class T>
inline T __shfl_up_sync(unsigned, T v, unsigned delta, int width = 32) {
    return emu::from_bits<T>(emu::warp_op(emu::kShflUp, emu::bits(v), (int)delta, width));
}
template <class T>
inline T __shfl_xor_sync(unsigned, T v, int mask, int width = 32) {
    return emu::from_bits<T>(emu::warp_op(emu::kShflXor, emu::bits(v), mask, width));
}
inline unsigned __ballot_sync(unsigned, int pred) { return (unsigned)emu::warp_op(emu::kBallot, pred != 0, 0); }
inline unsigned __reduce_or_sync(unsigned, unsigned value) { return (unsigned)emu::warp_op(emu::kReduceOr, value, 0); }
inline unsigned __reduce_add_sync(unsigned, unsigned value) { return (unsigned)emu::warp_op(emu::kReduceAdd, value, 0); }
inline unsigned __match_any_sync(unsigned, unsigned value) { return (unsigned)emu::warp_op(emu::kMatchAny, value, 0); }
inline int __any_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) != 0; }
inline int __all_sync(unsigned mask, int pred) { return __ballot_sync(mask, !pred) == 0; }
inline void __syncwarp(unsigned = 0xffffffffu) { emu::warp_op(emu::kSync, 0, 0); }
inline void __syncthreads() {
    emu::threads[emu::current].state = emu::kAtBlock;
    emu::yield_to_scheduler();
}

template <class T>
inline T __ldg(const T* p) {
    return *p;
}
inline int __popc(unsigned v) { return __builtin_popcount(v); }
inline int __clz(unsigned v) { return v ? __builtin_clz(v) : 32; }
inline int __ffs(unsigned v) { return __builtin_ffs((int)v); }

template <class T>
inline T atomicAdd(T* p, T v) {
    emu::yield_to_scheduler();  // lanes interleave at every atomic
    const T old = *p;
    *p = old + v;
    return old;
}
template <class T>
inline T atomicOr(T* p, T v) {
    emu::yield_to_scheduler();
    const T old = *p;
    *p = old | v;
    return old;
}
template <class T>
inline T atomicCAS(T* p, T compare, T v) {
    emu::yield_to_scheduler();  // other lanes may run between this lane's read of *p and its CAS
    const T old = *p;
    if (old == compare) *p = v;
    return old;
}
template <class T>
inline T atomicMax(T* p, T v) {
    const T old = *p;
    *p = std::max(old, v);
    return old;
}

inline uint2 make_uint2(unsigned x, unsigned y) { return uint2{x, y}; }
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{x, y, z, w}; }
inline int2 make_int2(int x, int y) { return int2{x, y}; }
inline int3 make_int3(int x, int y, int z) { return int3{x, y, z}; }
inline int4 make_int4(int x, int y, int z, int w) { return int4{x, y, z, w}; }

// Packed 16-bit SIMD and Hopper DPX intrinsics: two signed halfwords per word, wrapping adds.
namespace emu {
inline int lo16(unsigned v) { return (int16_t)(v & 0xffffu); }
inline int hi16(unsigned v) { return (int16_t)(v >> 16); }
inline unsigned pack16(int lo, int hi) { return (unsigned)(uint16_t)lo | ((unsigned)(uint16_t)hi << 16); }
template <class F>
inline unsigned halves(unsigned a, unsigned b, unsigned c, F f) {
    return pack16(f(lo16(a), lo16(b), lo16(c)), f(hi16(a), hi16(b), hi16(c)));
}
inline int wrap16(int v) { return (int16_t)(uint16_t)v; }
}  // namespace emu
inline unsigned __vadd2(unsigned a, unsigned b) {
    return emu::halves(a, b, 0, [](int x, int y, int) { return emu::wrap16(x + y); });
}
inline unsigned __vmaxs2(unsigned a, unsigned b) {
    return emu::halves(a, b, 0, [](int x, int y, int) { return std::max(x, y); });
}
inline unsigned __viaddmax_s16x2(unsigned a, unsigned b, unsigned c) {
    return emu::halves(a, b, c, [](int x, int y, int z) { return std::max(emu::wrap16(x + y), z); });
}
inline unsigned __vimax3_s16x2(unsigned a, unsigned b, unsigned c) {
    return emu::halves(a, b, c, [](int x, int y, int z) { return std::max(std::max(x, y), z); });
}
inline unsigned __vimax3_s16x2_relu(unsigned a, unsigned b, unsigned c) {
    return emu::halves(a, b, c, [](int x, int y, int z) { return std::max(std::max(std::max(x, y), z), 0); });
}
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
    const uint64_t bytes = ((uint64_t)y << 32) | x;
    unsigned out = 0;
    for (int i = 0; i < 4; ++i) out |= (unsigned)((bytes >> (8 * ((s >> (4 * i)) & 7))) & 0xffu) << (8 * i);
    return out;
}
