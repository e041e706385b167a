// Runs one launch of kernels/select.cu on the CPU (cuda_emu.h), for the emulated CuPy
// (tests/cuda_emu/fake_cupy) and tests/test_select_kernel.py.
//
// usage: select_emu DIR SEED
// DIR holds scores.bin (int32), state.bin (uint32 x 2), hist.bin (uint32, the bins) and
// kth.bin (int32 x 1), and scalars.txt: kernel (0 select_count, 1 select_pick) grid block n
// shift bits first k. Writes state.bin, hist.bin and kth.bin back.

#include "cuda_emu.h"
#include "emu_files.h"

// the kernels' statically sized shared arrays: one copy for all the fibers of a block (blocks
// run one after the other, and each kernel sets what it reads)
#undef __shared__
#define __shared__ static

#include "select.cu"

#include <fstream>
#include <string>

template <class T>
static void save(const std::string& path, const std::vector<T>& v, size_t count) {
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(v.data()), (std::streamsize)(sizeof(T) * count));
}

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: select_emu DIR SEED\n");
        return 2;
    }
    const std::string dir = argv[1];
    const unsigned seed = (unsigned)std::stoul(argv[2]);
    auto scores = load<int32_t>(dir + "/scores.bin");
    auto state = load<uint32_t>(dir + "/state.bin");
    auto hist = load<uint32_t>(dir + "/hist.bin");
    auto kth = load<int32_t>(dir + "/kth.bin");
    int kernel, grid, block, shift, bits, first;
    long long n;
    unsigned k;
    {
        std::ifstream in(dir + "/scalars.txt");
        in >> kernel >> grid >> block >> n >> shift >> bits >> first >> k;
        if (!in || hist.size() - 1 < (size_t)kSelectBins || state.size() - 1 < 2 || (long long)scores.size() - 1 < n) {
            std::fprintf(stderr, "select_emu: bad scalars.txt or arrays\n");
            return 2;
        }
    }
    emu::launch(
        dim3{(unsigned)grid, 1, 1}, dim3{(unsigned)block, 1, 1},
        [&] {
            if (kernel == 0) select_count(scores.data(), n, state.data(), hist.data(), shift, bits);
            else select_pick(hist.data(), state.data(), shift, bits, first, k, kth.data());
        },
        seed, 64 * 1024);
    save(dir + "/state.bin", state, 2);
    save(dir + "/hist.bin", hist, hist.size() - 1);
    save(dir + "/kth.bin", kth, 1);
    return 0;
}
