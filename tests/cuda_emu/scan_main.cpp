// Runs sw_inter or sw_intra of kernels/sw_scan.cu on the CPU (cuda_emu.h) for tests/test_scan_kernel.py.
//
// usage: scan_emu DIR SEED
// DIR holds raw arrays (residues offsets subjects profile .bin; profile: the query's int16
// profile for the shape) and scalars.txt: arith(0 dpx, 1 plain, 2 s32) kind(0 inter, 1 intra)
// r lanes_or_warps n_subjects qpad n_passes oe extend overflow_at boundary_rows n_scores,
// launched as swgpu_core.gpu.kernels.ScanKernels.launch does. Writes DIR/scores.bin (int32 per
// chunk subject) and DIR/overflow.bin (int32: count, then subjects), starting from their
// contents where DIR holds them (the kernels write only their subjects' scores, and the scans
// of one query append to one overflow list).

#include "cuda_emu.h"
#include "emu_files.h"

// sw_intra's statically sized shared arrays: one copy for all the fibers of a block (blocks run
// one after the other); cuda_emu.h's empty __shared__ suits only `extern` dynamic shared memory
#undef __shared__
#define __shared__ static
#include "sw_scan.cu"

#include <fstream>
#include <string>

using Kernel = void (*)(SWGPU_SCAN_PARAMS);

template <class A>
static Kernel pick(int kind, int r, int width) {
    const int shape = kind * 10000 + width * 100 + r;
    switch (shape) {
        case 808: return &sw_inter<A, 8, 8>;
        case 816: return &sw_inter<A, 16, 8>;
        case 1616: return &sw_inter<A, 16, 16>;
        case 3216: return &sw_inter<A, 16, 32>;
        case 10108: return &sw_intra<A, 8, 1>;
        case 10208: return &sw_intra<A, 8, 2>;
        case 10408: return &sw_intra<A, 8, 4>;
        default: return nullptr;
    }
}

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: scan_emu DIR SEED\n");
        return 2;
    }
    const std::string dir = argv[1];
    const unsigned seed = (unsigned)std::stoul(argv[2]);
    auto residues = load<uint8_t>(dir + "/residues.bin");
    auto offsets = load<int64_t>(dir + "/offsets.bin");
    auto subjects = load<int32_t>(dir + "/subjects.bin");
    auto profile = load<int16_t>(dir + "/profile.bin");
    int arith, kind, r, width, n_subjects, qpad, n_passes, oe, extend, overflow_at, boundary_rows, n_scores;
    {
        std::ifstream in(dir + "/scalars.txt");
        in >> arith >> kind >> r >> width >> n_subjects >> qpad >> n_passes >> oe >> extend >> overflow_at >> boundary_rows >> n_scores;
        if (!in) {
            std::fprintf(stderr, "scan_emu: bad scalars.txt\n");
            return 2;
        }
    }
    const Kernel kernel = arith == 0 ? pick<DpxS16x2>(kind, r, width) : arith == 1 ? pick<PlainS16x2>(kind, r, width) : pick<S32>(kind, r, width);
    if (kernel == nullptr) {
        std::fprintf(stderr, "scan_emu: no kernel for kind %d, %d x %d\n", kind, width, r);
        return 2;
    }
    // a guard band past the rows the host gave: a kernel writing there fails the run. The rows
    // given start out as a poison, a large positive value in every arithmetic: a kernel that
    // reads a row before its pass wrote it raises that subject's score far above the truth.
    constexpr size_t kGuard = 1 << 16;
    constexpr uint2 kPoison{0x40004000u, 0x40004000u};
    std::vector<uint2> boundary((size_t)std::max(boundary_rows, 1) + kGuard, uint2{0xdeadbeefu, 0xdeadbeefu});
    std::fill(boundary.begin(), boundary.begin() + std::max(boundary_rows, 1), kPoison);
    std::vector<int32_t> scores((size_t)std::max(n_scores, 1), -1), overflow((size_t)n_scores + 1, 0);
    for (auto [name, out] : {std::pair{"/scores.bin", &scores}, std::pair{"/overflow.bin", &overflow}}) {
        std::ifstream in(dir + name, std::ios::binary);
        if (in) in.read(reinterpret_cast<char*>(out->data()), (std::streamsize)(4 * out->size()));
    }
    const int groups = (n_subjects + (arith == 2 ? 1 : 2) - 1) / (arith == 2 ? 1 : 2);
    const dim3 grid = kind == 0 ? dim3{(unsigned)((groups * width + kInterBlock - 1) / kInterBlock), 1, 1} : dim3{(unsigned)groups, 1, 1};
    const dim3 block = kind == 0 ? dim3{(unsigned)kInterBlock, 1, 1} : dim3{(unsigned)(32 * width), 1, 1};
    emu::launch(
        grid, block,
        [&] {
            kernel(residues.data(), offsets.data(), subjects.data(), n_subjects, profile.data(), qpad, n_passes, oe, extend, overflow_at,
                   boundary.data(), scores.data(), overflow.data());
        },
        seed);
    for (size_t k = (size_t)std::max(boundary_rows, 1); k < boundary.size(); ++k) {
        if (boundary[k].x != 0xdeadbeefu || boundary[k].y != 0xdeadbeefu) {
            std::fprintf(stderr, "scan_emu: boundary row %zu written, past the %d rows given\n", k, boundary_rows);
            return 3;
        }
    }
    std::ofstream(dir + "/scores.bin", std::ios::binary).write(reinterpret_cast<const char*>(scores.data()), (std::streamsize)(4 * n_scores));
    std::ofstream(dir + "/overflow.bin", std::ios::binary)
        .write(reinterpret_cast<const char*>(overflow.data()), (std::streamsize)(4 * (n_scores + 1)));
    return 0;
}
