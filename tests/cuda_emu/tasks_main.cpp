// Runs sw_inter_tasks of kernels/sw_scan.cu on the CPU (cuda_emu.h) for tests/test_subset_kernel.py.
//
// usage: tasks_emu DIR SEED
// DIR holds raw arrays (residues offsets subjects profiles prof_offsets qpads warp_query bnd_rows
// .bin; profiles: every query's int16 profile end to end, prof_offsets: int64 element offsets)
// and scalars.txt: arith(0 dpx, 1 plain, 2 s32) lanes r n_slots oe extend overflow_at boundary_rows.
// Writes DIR/scores.bin (int32 per entry) and DIR/overflow.bin (int32: count, then entries).

#include "cuda_emu.h"
#include "emu_files.h"

#include "sw_scan.cu"

#include <fstream>
#include <string>

template <class A, int R, int G>
static void run(const std::function<void(void (*)(SWGPU_TASK_PARAMS))>& launch) {
    launch(&sw_inter_tasks<A, R, G>);
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
    auto warp_query = load<int32_t>(dir + "/warp_query.bin");
    auto bnd_rows = load<int64_t>(dir + "/bnd_rows.bin");
    int arith, lanes, r, n_slots, oe, extend, overflow_at, boundary_rows;
    {
        std::ifstream in(dir + "/scalars.txt");
        in >> arith >> lanes >> r >> n_slots >> oe >> extend >> overflow_at >> boundary_rows;
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
    const unsigned blocks = (unsigned)((groups * lanes + kInterBlock - 1) / kInterBlock);
    auto launch = [&](void (*kernel)(SWGPU_TASK_PARAMS)) {
        emu::launch(
            dim3{blocks, 1, 1}, dim3{(unsigned)kInterBlock, 1, 1},
            [&] {
                kernel(residues.data(), offsets.data(), subjects.data(), n_slots, pointers.data(), qpads.data(), warp_query.data(),
                       bnd_rows.data(), oe, extend, overflow_at, boundary.data(), scores.data(), overflow.data());
            },
            seed);
    };
    const int shape = lanes * 100 + r;
#define SHAPES(A)                                                    \
    switch (shape) {                                                 \
        case 808: run<A, 8, 8>(launch); break;                       \
        case 816: run<A, 16, 8>(launch); break;                      \
        case 1616: run<A, 16, 16>(launch); break;                    \
        case 3216: run<A, 16, 32>(launch); break;                    \
        default: std::fprintf(stderr, "tasks_emu: no shape %d\n", shape); return 2; \
    }
    if (arith == 0) {
        SHAPES(DpxS16x2)
    } else if (arith == 1) {
        SHAPES(PlainS16x2)
    } else {
        SHAPES(S32)
    }
    std::ofstream(dir + "/scores.bin", std::ios::binary).write(reinterpret_cast<const char*>(scores.data()), (std::streamsize)(4 * n_slots));
    std::ofstream(dir + "/overflow.bin", std::ios::binary)
        .write(reinterpret_cast<const char*>(overflow.data()), (std::streamsize)(4 * (n_slots + 1)));
    return 0;
}
