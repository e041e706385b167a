// Reading a harness's input arrays (tests/cuda_emu/*_main.cpp): raw files written by numpy's tofile.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

// The file's elements, and one spare zero element (a harness may pass an empty array's pointer).
template <class T>
static std::vector<T> load(const std::string& path) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) {
        std::fprintf(stderr, "cuda_emu harness: cannot read %s\n", path.c_str());
        std::exit(2);
    }
    const size_t bytes = (size_t)in.tellg();
    std::vector<T> out(bytes / sizeof(T) + 1);
    in.seekg(0);
    in.read(reinterpret_cast<char*>(out.data()), (std::streamsize)bytes);
    return out;
}
