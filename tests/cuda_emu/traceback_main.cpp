// Runs one launch of a kernel of kernels/traceback.cu (tb_ends, tb_ends_team, tb_region,
// tb_region_team, tb_walk, tb_strip, tb_strip_team, tb_walk_strip) on the CPU (cuda_emu.h) for the
// fake CuPy of tests/cuda_emu/fake_cupy, which swgpu_core.gpu.traceback drives as it drives CuPy.
//
// usage: traceback_emu DIR SEED
// DIR holds scalars.txt: kernel(0 ends, 1 region, 2 walk, 3 strip, 4 walk of a strip) R
// warps(0: the one-warp-per-pair kernel, else a team's) grid block n_pairs n_codes gap_open
// gap_extend has_expected(strip: has pass_of) has_given(walk of a strip: span) has_boundary
// shared_bytes; and the launch's arrays as raw .bin files (those its kernel reads: residues qoff
// qlen soff slen matrix expected given boundary bnd_off ends / rect dirs dirs_off score / ops
// ops_off n_ops / ckpt ckpt_off pass_of / walk). Writes back what the kernel writes: ends.bin;
// dirs.bin and score.bin (and ckpt.bin); ops.bin and n_ops.bin (and walk.bin).

#include "cuda_emu.h"
#include "emu_files.h"

#include <fstream>
#include <string>

// the team kernels' dynamic shared memory, and the static shared arrays of the one-warp kernels:
// one copy for all the fibers of a block (blocks run one after the other)
static std::vector<uint8_t> team_smem;
#define SWGPU_TEAM_SMEM (team_smem.data())
#undef __shared__
#define __shared__ static
#include "traceback.cu"

template <class T>
static void save(const std::string& path, const std::vector<T>& v, size_t n) {
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(v.data()), (std::streamsize)(n * sizeof(T)));
}

static size_t file_elements(const std::string& path, size_t size) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    return in ? (size_t)in.tellg() / size : 0;
}

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: traceback_emu DIR SEED\n");
        return 2;
    }
    const std::string dir = argv[1];
    const unsigned seed = (unsigned)std::stoul(argv[2]);
    int kernel, r, warps, grid, block, n_pairs, n_codes, go, ge, has_expected, has_given, has_boundary, shared_bytes;
    {
        std::ifstream in(dir + "/scalars.txt");
        in >> kernel >> r >> warps >> grid >> block >> n_pairs >> n_codes >> go >> ge >> has_expected >> has_given >> has_boundary >> shared_bytes;
        if (!in) {
            std::fprintf(stderr, "traceback_emu: bad scalars.txt\n");
            return 2;
        }
    }
    team_smem.assign((size_t)std::max(shared_bytes, 16), 0xa5);  // a poison: read before written shows
    const dim3 g{(unsigned)grid, 1, 1}, b{(unsigned)block, 1, 1};
    const bool team = warps > 0;
    if (kernel == 4) {
        auto rect = load<int32_t>(dir + "/rect.bin");
        auto pass_of = load<int32_t>(dir + "/pass_of.bin");
        auto dirs = load<uint8_t>(dir + "/dirs.bin");
        auto dirs_off = load<int64_t>(dir + "/dirs_off.bin");
        auto ops = load<uint8_t>(dir + "/ops.bin");
        auto ops_off = load<int64_t>(dir + "/ops_off.bin");
        auto walk = load<int32_t>(dir + "/walk.bin");
        auto n_ops = load<int32_t>(dir + "/n_ops.bin");
        const int span = has_given;
        emu::launch(g, b, [&] {
            tb_walk_strip(rect.data(), n_pairs, r, span, pass_of.data(), dirs.data(), dirs_off.data(), ops.data(), ops_off.data(), walk.data(),
                          n_ops.data());
        }, seed);
        save(dir + "/ops.bin", ops, ops.size() - 1);
        save(dir + "/walk.bin", walk, walk.size() - 1);
        save(dir + "/n_ops.bin", n_ops, (size_t)n_pairs);
        return 0;
    }
    if (kernel == 3) {
        auto residues = load<uint8_t>(dir + "/residues.bin");
        auto qoff = load<int64_t>(dir + "/qoff.bin");
        auto soff = load<int64_t>(dir + "/soff.bin");
        auto rect = load<int32_t>(dir + "/rect.bin");
        auto matrix = load<int8_t>(dir + "/matrix.bin");
        auto ckpt_raw = load<int2>(dir + "/ckpt.bin");
        auto ckpt_off = load<int64_t>(dir + "/ckpt_off.bin");
        auto pass_of = load<int32_t>(dir + "/pass_of.bin");
        auto dirs = load<uint8_t>(dir + "/dirs.bin");
        auto dirs_off = load<int64_t>(dir + "/dirs_off.bin");
        auto score = load<int32_t>(dir + "/score.bin");
        // step 1 writes every checkpoint before a later pass reads it: a poison shows one read first
        if (!has_expected) std::fill(ckpt_raw.begin(), ckpt_raw.end() - 1, int2{1 << 29, 1 << 29});
        using Strip = void (*)(SWGPU_TB_STRIP_PARAMS);
        const Strip fn = r == 4 ? (team ? &tb_strip_team<4> : &tb_strip<4>) : r == 8 ? (team ? &tb_strip_team<8> : &tb_strip<8>)
                                                                                     : (team ? &tb_strip_team<16> : &tb_strip<16>);
        emu::launch(g, b, [&] {
            fn(residues.data(), qoff.data(), soff.data(), rect.data(), n_pairs, matrix.data(), n_codes, go, ge, ckpt_raw.data(),
               ckpt_off.data(), has_expected ? pass_of.data() : nullptr, dirs.data(), dirs_off.data(), score.data());
        }, seed);
        save(dir + "/ckpt.bin", ckpt_raw, ckpt_raw.size() - 1);
        save(dir + "/dirs.bin", dirs, dirs.size() - 1);
        save(dir + "/score.bin", score, score.size() - 1);
        return 0;
    }
    if (kernel == 2) {
        auto rect = load<int32_t>(dir + "/rect.bin");
        auto dirs = load<uint8_t>(dir + "/dirs.bin");
        auto dirs_off = load<int64_t>(dir + "/dirs_off.bin");
        auto ops = load<uint8_t>(dir + "/ops.bin");
        auto ops_off = load<int64_t>(dir + "/ops_off.bin");
        auto n_ops = load<int32_t>(dir + "/n_ops.bin");
        emu::launch(g, b, [&] { tb_walk(rect.data(), n_pairs, r, dirs.data(), dirs_off.data(), ops.data(), ops_off.data(), n_ops.data()); }, seed);
        save(dir + "/ops.bin", ops, ops.size() - 1);
        save(dir + "/n_ops.bin", n_ops, (size_t)n_pairs);
        return 0;
    }
    auto residues = load<uint8_t>(dir + "/residues.bin");
    auto qoff = load<int64_t>(dir + "/qoff.bin");
    auto soff = load<int64_t>(dir + "/soff.bin");
    auto matrix = load<int8_t>(dir + "/matrix.bin");
    auto bnd_off = load<int64_t>(dir + "/bnd_off.bin");
    // a poison (large and positive in every arithmetic): a boundary value read before its pass wrote it shows
    const size_t bnd_rows = has_boundary ? file_elements(dir + "/boundary.bin", sizeof(int2)) : 0;
    std::vector<int2> boundary(std::max<size_t>(bnd_rows, 1), int2{1 << 29, 1 << 29});
    int2* bnd = has_boundary ? boundary.data() : nullptr;
    if (kernel == 0) {
        auto qlen = load<int32_t>(dir + "/qlen.bin");
        auto slen = load<int32_t>(dir + "/slen.bin");
        auto expected = load<int32_t>(dir + "/expected.bin");
        auto given = load<int32_t>(dir + "/given.bin");
        std::vector<int32_t> ends((size_t)n_pairs * kEndFields, -7);
        using Ends = void (*)(SWGPU_TB_ENDS_PARAMS);
        const Ends fn = r == 4 ? (team ? &tb_ends_team<4> : &tb_ends<4>) : r == 8 ? (team ? &tb_ends_team<8> : &tb_ends<8>)
                                                                                 : (team ? &tb_ends_team<16> : &tb_ends<16>);
        emu::launch(g, b, [&] {
            fn(residues.data(), qoff.data(), qlen.data(), soff.data(), slen.data(), n_pairs, matrix.data(), n_codes, go, ge,
               has_expected ? expected.data() : nullptr, has_given ? given.data() : nullptr, bnd, bnd_off.data(), ends.data());
        }, seed);
        save(dir + "/ends.bin", ends, ends.size());
        return 0;
    }
    auto rect = load<int32_t>(dir + "/rect.bin");
    auto dirs = load<uint8_t>(dir + "/dirs.bin");
    auto dirs_off = load<int64_t>(dir + "/dirs_off.bin");
    std::vector<int32_t> score((size_t)n_pairs, -7);
    using Region = void (*)(SWGPU_TB_REGION_PARAMS);
    const Region fn = r == 4 ? (team ? &tb_region_team<4> : &tb_region<4>) : r == 8 ? (team ? &tb_region_team<8> : &tb_region<8>)
                                                                                    : (team ? &tb_region_team<16> : &tb_region<16>);
    emu::launch(g, b, [&] {
        fn(residues.data(), qoff.data(), soff.data(), rect.data(), n_pairs, matrix.data(), n_codes, go, ge, bnd, bnd_off.data(), dirs.data(),
           dirs_off.data(), score.data());
    }, seed);
    save(dir + "/dirs.bin", dirs, dirs.size() - 1);
    save(dir + "/score.bin", score, score.size());
    return 0;
}
