// Runs kernels/seed.cu on the CPU (cuda_emu.h) for tests/test_seed_kernel.py.
//
// usage: seed_emu DIR SEED
// DIR holds the kernel's arrays as raw files (residues offsets slices blobs groups segs qcodes
// matrix .bin) and scalars.txt: n_slices copy_words ring smem_bytes capacity warps n_blocks.
// Writes DIR/pairs.bin (uint64, min(count, capacity)) and DIR/counters.bin (uint64).

#include "cuda_emu.h"
#include "emu_files.h"

// the dynamic shared memory of the block being run (blocks run one after the other)
alignas(16) uint8_t smem[1 << 20];

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
    auto slices = load<int32_t>(dir + "/slices.bin");
    auto blobs = load<uint16_t>(dir + "/blobs.bin");
    auto groups = load<int32_t>(dir + "/groups.bin");
    auto segs = load<int32_t>(dir + "/segs.bin");
    auto qcodes = load<uint8_t>(dir + "/qcodes.bin");
    auto matrix = load<int8_t>(dir + "/matrix.bin");
    int n_slices, copy_words, ring, smem_bytes, capacity, warps, n_blocks;
    {
        std::ifstream in(dir + "/scalars.txt");
        in >> n_slices >> copy_words >> ring >> smem_bytes >> capacity >> warps >> n_blocks;
        if (!in || smem_bytes > (int)sizeof(smem)) {
            std::fprintf(stderr, "seed_emu: bad scalars.txt\n");
            return 2;
        }
    }
    std::vector<unsigned long long> pairs(std::max(capacity, 1)), counters(8, 0);
    std::memset(smem, 0xA5, sizeof(smem));  // shared memory starts as garbage
    emu::launch(
        dim3{(unsigned)n_blocks, 1, 1}, dim3{(unsigned)(32 * warps), 1, 1},
        [&] {
            seed_candidates(residues.data(), offsets.data(), slices.data(), n_slices, blobs.data(), groups.data(), segs.data(),
                            qcodes.data(), matrix.data(), copy_words, ring, smem_bytes, pairs.data(), capacity, counters.data());
        },
        seed);
    const size_t stored = (size_t)std::min<unsigned long long>(counters[kCPairs], (unsigned long long)capacity);
    std::ofstream(dir + "/pairs.bin", std::ios::binary).write(reinterpret_cast<const char*>(pairs.data()), (std::streamsize)(8 * stored));
    std::ofstream(dir + "/counters.bin", std::ios::binary).write(reinterpret_cast<const char*>(counters.data()), 8 * 8);
    return 0;
}
