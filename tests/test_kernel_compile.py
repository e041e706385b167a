"""The CUDA sources compile offline with nvcc for Hopper (sm_90), without a GPU.

CI has no device but has nvcc; this catches a kernel that would only fail to build at
run time, when CuPy compiles it for the device. Template kernels are instantiated as the
backends name them (``traceback.cu`` with ``SWGPU_INSTANTIATE``, the others through a
small wrapper that includes the source), so their bodies are compiled, not only parsed.
The build is the one CuPy gets: the options of :func:`~swgpu_core.kernel_abi.compile_options`,
with ``common.cuh`` found through ``-I``; a second test checks that the self-contained text
CuPy compiles (:func:`~swgpu_core.kernel_abi.kernel_source`) is that same source.
Skipped where nvcc is missing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from swgpu_core import kernel_abi
from swgpu_core.seed import SeedParams

KERNELS = kernel_abi.KERNEL_DIR


SCAN_INSTANCES = [
    f"template __global__ void {kernel}<{arith},{r},{n}>({params});"
    for arith in ("DpxS16x2", "PlainS16x2", "S32")
    for kernel, r, n, params in [
        *((k, r, n, "SWGPU_SCAN_PARAMS") for k, r, n in [("sw_inter", 16, 8), ("sw_inter", 16, 16), ("sw_inter", 16, 32), ("sw_inter", 8, 8),
                                                       ("sw_intra", 8, 1), ("sw_intra", 8, 2), ("sw_intra", 8, 4), ("sw_intra", 8, 8)]),
        *(("sw_inter_tasks", r, n, "SWGPU_TASK_PARAMS") for r, n in [(16, 8), (16, 16), (16, 32), (8, 8)]),
        *(("sw_intra_tasks", 8, n, "SWGPU_TASK_PARAMS") for n in (4, 8)),
    ]
]  # fmt: skip
#: the seed kernel's extra options: the rule's parameters (their defaults) and its layout constants
SEED_OPTIONS = list(kernel_abi.seed_options(SeedParams()))
#: sw_long<GROUP, codes, copies> for DNA (15 codes + pad, 32 copies) and protein (27 + pad, 8)
LONG_INSTANCES = [
    "template __global__ void sw_long<16, 16, 32>(const uint8_t*, const int64_t*, int, int, const uint8_t*, int, "
    "const int32_t*, int, int, int, int, uint64_t*, int*, unsigned long long*);",
    "template __global__ void sw_long<16, 28, 8>(const uint8_t*, const int64_t*, int, int, const uint8_t*, int, "
    "const int32_t*, int, int, int, int, uint64_t*, int*, unsigned long long*);",
]


@pytest.mark.parametrize("inlined", [False, True], ids=["include", "inlined"])
@pytest.mark.parametrize(
    "source, defines, instances",
    [
        ("sw_scan.cu", [], SCAN_INSTANCES),
        ("traceback.cu", ["-DSWGPU_INSTANTIATE"], []),
        ("sw_long.cu", [], LONG_INSTANCES),
        ("seed.cu", SEED_OPTIONS, []),
    ],
)
def test_kernel_compiles_for_sm90(tmp_path, source, defines, instances, inlined):
    """``include``: the file as it is, the header through ``-I``; ``inlined``: the one text
    CuPy compiles, alone in a directory without the header."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc not installed")
    unit = tmp_path / "unit.cu"
    text = kernel_abi.kernel_source(source) if inlined else f'#include "{source}"'
    unit.write_text(text + "\n" + "\n".join(instances) + "\n")
    options = [*kernel_abi.compile_options(), *defines] + ([] if inlined else [f"-I{KERNELS}"])
    cmd = [nvcc, "-arch=sm_90", "-std=c++17", "-cubin", *options, "-o", str(tmp_path / "k.cubin"), str(unit)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    assert (tmp_path / "k.cubin").stat().st_size > 0


@pytest.mark.parametrize("source", ["sw_scan.cu", "traceback.cu", "sw_long.cu", "seed.cu"])
def test_cupy_source_is_the_file_with_the_header_inlined(source):
    """What CuPy compiles: the file, its one ``#include "common.cuh"`` replaced by the
    header's text (so CuPy's cache key, the source text, changes with the header)."""
    text = kernel_abi.kernel_source(source)
    header = (KERNELS / kernel_abi.HEADER).read_text()
    assert header.strip() in text and '#include "common.cuh"' not in text
    lines = text.splitlines()
    first = lines.index(f'#line 1 "{kernel_abi.HEADER}"')
    last = next(k for k in range(first + 1, len(lines)) if lines[k].startswith("#line "))
    original = (KERNELS / source).read_text().splitlines()
    include = next(k for k, line in enumerate(original) if line.startswith('#include "common.cuh"'))
    assert lines[last] == f'#line {include + 2} "{source}"'
    assert lines[:first] + lines[last + 1 :] == original[:include] + original[include + 1 :]


def test_preprocessed_without_options_fails(tmp_path):
    """A build without the generated options stops at once instead of using stale values."""
    cxx = shutil.which("g++") or shutil.which("cc")
    if cxx is None:
        pytest.skip("no C preprocessor")
    done = subprocess.run([cxx, "-E", "-x", "c++", str(KERNELS / kernel_abi.HEADER)], capture_output=True, text=True)
    assert done.returncode != 0 and "compile_options" in done.stderr
    with_options = subprocess.run(
        [cxx, "-E", "-x", "c++", *kernel_abi.compile_options(), str(KERNELS / kernel_abi.HEADER)], capture_output=True, text=True
    )
    assert with_options.returncode == 0, with_options.stderr


def _nvrtc() -> ctypes.CDLL | None:
    """libnvrtc, where one is installed: ``$SWGPU_NVRTC``, the system's, or an ``nvidia-cuda-nvrtc`` wheel's."""
    import site
    import sys

    candidates = [os.environ.get("SWGPU_NVRTC", ""), ctypes.util.find_library("nvrtc") or ""]
    for base in [*site.getsitepackages(), *sys.path]:
        candidates += sorted(
            str(p) for p in Path(base).glob("nvidia/*/lib/libnvrtc.so*") if "builtins" not in p.name and ".alt." not in p.name
        )
    for path in filter(None, candidates):
        try:
            # NVRTC dlopens its builtins library by name: load the one beside it first
            for builtins in sorted(Path(path).parent.glob("libnvrtc-builtins.so*")):
                if ".alt." not in builtins.name:
                    ctypes.CDLL(str(builtins), mode=ctypes.RTLD_GLOBAL)
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None


@pytest.mark.parametrize(
    "source, names, extra",
    [
        ("sw_scan.cu", [inst.split("void ", 1)[1].split("(", 1)[0] for inst in SCAN_INSTANCES], []),
        ("traceback.cu", [f"tb_{k}<{r}>" for k in ("ends", "region") for r in kernel_abi.TB_WARPS] + ["tb_walk"], []),
        ("sw_long.cu", ["sw_long<16,16,32>", "sw_long<16,28,8>"], []),
        ("seed.cu", ["seed_candidates"], SEED_OPTIONS),
    ],
)
def test_nvrtc_compiles_what_cupy_compiles(source, names, extra):
    """The exact text and options CuPy hands NVRTC (``__CUDACC_RTC__``: the typedef prelude
    of common.cuh, no include path), with the kernels' name expressions resolved."""
    lib = _nvrtc()
    if lib is None:
        pytest.skip("libnvrtc not found (set SWGPU_NVRTC or install nvidia-cuda-nvrtc)")
    prog = ctypes.c_void_p()
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), kernel_abi.kernel_source(source).encode(), source.encode(), 0, None, None) == 0
    try:
        for name in names:
            assert lib.nvrtcAddNameExpression(prog, name.encode()) == 0
        options = [o.encode() for o in ("-std=c++17", *kernel_abi.compile_options(), *extra, "--gpu-architecture=sm_90")]
        result = lib.nvrtcCompileProgram(prog, len(options), (ctypes.c_char_p * len(options))(*options))
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, log)
        assert result == 0, log.value.decode()[-4000:]
        for name in names:
            lowered = ctypes.c_char_p()
            assert lib.nvrtcGetLoweredName(prog, name.encode(), ctypes.byref(lowered)) == 0 and lowered.value, name
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
