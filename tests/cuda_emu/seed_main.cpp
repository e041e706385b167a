// Runs kernels/seed.cu on the CPU (cuda_emu.h) for tests/test_seed_kernel.py.
//
// usage: seed_emu DIR SEED
// DIR holds the kernel's arrays as raw files (residues offsets segments reduction shape_offsets
// shape_lengths bitmap key_offsets positions query_of qstart qcodes matrix .bin; segments: int32
// pairs) and scalars.txt: row_words n_queries n_blocks. Writes DIR/flags.bin (uint32,
// n_queries x row_words) and DIR/counters.bin (uint64).

#include "cuda_emu.h"
#include "emu_files.h"

// the kernel's statically sized shared arrays: one copy for all the fibers of a block (blocks
// run one after the other); cuda_emu.h's empty __shared__ suits only `extern` shared memory
#undef __shared__
#define __shared__ static
using std::max;
using std::min;

#include "seed.cu"

#include <fstream>
#include <string>

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: seed_emu DIR SEED\n");
        return 2;
    }
    const std::string dir = argv[1];
    const unsigned seed = (unsigned)std::stoul(argv[2]);
    auto residues = load<uint8_t>(dir + "/residues.bin");
    auto offsets = load<int64_t>(dir + "/offsets.bin");
    auto segments = load<int32_t>(dir + "/segments.bin");
    auto reduction = load<uint8_t>(dir + "/reduction.bin");
    auto shape_offsets = load<int32_t>(dir + "/shape_offsets.bin");
    auto shape_lengths = load<int32_t>(dir + "/shape_lengths.bin");
    auto bitmap = load<uint32_t>(dir + "/bitmap.bin");
    auto key_offsets = load<int32_t>(dir + "/key_offsets.bin");
    auto positions = load<int32_t>(dir + "/positions.bin");
    auto query_of = load<int32_t>(dir + "/query_of.bin");
    auto qstart = load<int32_t>(dir + "/qstart.bin");
    auto qcodes = load<uint8_t>(dir + "/qcodes.bin");
    auto matrix = load<int32_t>(dir + "/matrix.bin");
    int row_words, n_queries, n_blocks;
    {
        std::ifstream in(dir + "/scalars.txt");
        in >> row_words >> n_queries >> n_blocks;
        if (!in) {
            std::fprintf(stderr, "seed_emu: bad scalars.txt\n");
            return 2;
        }
    }
    std::vector<uint32_t> flags((size_t)n_queries * row_words + 1, 0);
    std::vector<unsigned long long> counters(8, 0);
    emu::launch(
        dim3{(unsigned)n_blocks, 1, 1}, dim3{(unsigned)(32 * kWarps), 1, 1},
        [&] {
            seed_candidates(residues.data(), offsets.data(), segments.data(), (int)(segments.size() / 2), reduction.data(), shape_offsets.data(), shape_lengths.data(),
                            bitmap.data(), key_offsets.data(), positions.data(), query_of.data(), qstart.data(), qcodes.data(),
                            matrix.data(), flags.data(), row_words, counters.data());
        },
        seed);
    std::ofstream(dir + "/flags.bin", std::ios::binary)
        .write(reinterpret_cast<const char*>(flags.data()), (std::streamsize)(4 * (size_t)n_queries * row_words));
    std::ofstream(dir + "/counters.bin", std::ios::binary).write(reinterpret_cast<const char*>(counters.data()), 8 * 8);
    return 0;
}
