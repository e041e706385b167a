// Runs sw_inter_tasks or sw_intra_tasks of kernels/sw_scan.cu on the CPU (cuda_emu.h) for
// tests/test_subset_kernel.py.
//
// usage: tasks_emu DIR SEED
// DIR holds raw arrays (residues offsets subjects profiles prof_offsets qpads group_query bnd_rows
// .bin; profiles: every query's int16 profile end to end, prof_offsets: int64 element offsets)
// and scalars.txt: arith(0 dpx, 1 plain, 2 s32) kind(0 inter, 1 intra) lanes_or_warps r n_slots
// oe extend overflow_at boundary_rows, launched as swgpu_core.gpu.kernels.ScanKernels.launch_tasks
// does. Writes DIR/scores.bin (int32 per entry) and DIR/overflow.bin (int32: count, then entries).

#include "cuda_emu.h"
#include "emu_files.h"

// sw_intra_tasks's statically sized shared arrays: one copy for all the fibers of a block
#undef __shared__
#define __shared__ static
#include "sw_scan.cu"

#include <fstream>
#include <string>

using Kernel = void (*)(SWGPU_TASK_PARAMS);

template <class A>
static Kernel pick(int kind, int r, int width) {
    switch (kind * 10000 + width * 100 + r) {
        case 808: return &sw_inter_tasks<A, 8, 8>;
        case 816: return &sw_inter_tasks<A, 16, 8>;
        case 1616: return &sw_inter_tasks<A, 16, 16>;
        case 3216: return &sw_inter_tasks<A, 16, 32>;
        case 10108: return &sw_intra_tasks<A, 8, 1>;
        case 10208: return &sw_intra_tasks<A, 8, 2>;
        case 10408: return &sw_intra_tasks<A, 8, 4>;
        case 10808: return &sw_intra_tasks<A, 8, 8>;
        default: return nullptr;
    }
}

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: tasks_emu DIR SEED\n");
        return 2;
    }
    const std::string dir = argv[1];
    const unsigned seed = (unsigned)std::stoul(argv[2]);
    auto residues = load<uint8_t>(dir + "/residues.bin");
    auto offsets = load<int64_t>(dir + "/offsets.bin");
    auto subjects = load<int32_t>(dir + "/subjects.bin");
    auto profiles = load<int16_t>(dir + "/profiles.bin");
    auto prof_offsets = load<int64_t>(dir + "/prof_offsets.bin");
    auto qpads = load<int32_t>(dir + "/qpads.bin");
    auto group_query = load<int32_t>(dir + "/group_query.bin");
    auto bnd_rows = load<int64_t>(dir + "/bnd_rows.bin");
    int arith, kind, width, r, n_slots, oe, extend, overflow_at, boundary_rows;
    {
        std::ifstream in(dir + "/scalars.txt");
        in >> arith >> kind >> width >> r >> n_slots >> oe >> extend >> overflow_at >> boundary_rows;
        if (!in) {
            std::fprintf(stderr, "tasks_emu: bad scalars.txt\n");
            return 2;
        }
    }
    const size_t n_queries = qpads.size() - 1;
    std::vector<unsigned long long> pointers(n_queries);
    for (size_t q = 0; q < n_queries; ++q) pointers[q] = (unsigned long long)(uintptr_t)(profiles.data() + prof_offsets[q]);
    // a poison (large and positive in every arithmetic): a row read before its pass wrote it
    // raises that entry's score far above the truth
    std::vector<uint2> boundary((size_t)std::max(boundary_rows, 1), uint2{0x40004000u, 0x40004000u});
    std::vector<int32_t> scores((size_t)std::max(n_slots, 1), -1), overflow((size_t)n_slots + 1, 0);
    const int per_group = arith == 2 ? 1 : 2;
    const int groups = (n_slots + per_group - 1) / per_group;
    const Kernel kernel = arith == 0 ? pick<DpxS16x2>(kind, r, width) : arith == 1 ? pick<PlainS16x2>(kind, r, width) : pick<S32>(kind, r, width);
    if (kernel == nullptr) {
        std::fprintf(stderr, "tasks_emu: no shape kind %d, %d x %d\n", kind, width, r);
        return 2;
    }
    // inter: `width` lanes per group in blocks of kInterBlock threads; intra: a block of `width` warps per group
    const unsigned blocks = kind == 0 ? (unsigned)((groups * width + kInterBlock - 1) / kInterBlock) : (unsigned)groups;
    const unsigned threads = kind == 0 ? (unsigned)kInterBlock : (unsigned)(32 * width);
    emu::launch(
        dim3{blocks, 1, 1}, dim3{threads, 1, 1},
        [&] {
            kernel(residues.data(), offsets.data(), subjects.data(), n_slots, pointers.data(), qpads.data(), group_query.data(), bnd_rows.data(),
                   oe, extend, overflow_at, boundary.data(), scores.data(), overflow.data());
        },
        seed);
    std::ofstream(dir + "/scores.bin", std::ios::binary).write(reinterpret_cast<const char*>(scores.data()), (std::streamsize)(4 * n_slots));
    std::ofstream(dir + "/overflow.bin", std::ios::binary)
        .write(reinterpret_cast<const char*>(overflow.data()), (std::streamsize)(4 * (n_slots + 1)));
    return 0;
}
