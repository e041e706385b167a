"""The CUDA sources compile offline with nvcc for Hopper (sm_90), without a GPU.

CI has no device but has nvcc; this catches a kernel that would only fail to build at
run time, when CuPy compiles it for the device. Template kernels are instantiated as the
backends name them (``traceback.cu`` with ``SWGPU_INSTANTIATE``, the others through a
small wrapper that includes the source), so their bodies are compiled, not only parsed.
Skipped where nvcc is missing.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

KERNELS = Path(__file__).resolve().parent.parent / "swgpu_core" / "kernels"


SCAN_INSTANCES = [
    f"template __global__ void {kernel}<{arith},{r},{n}>(SWGPU_SCAN_PARAMS);"
    for arith in ("DpxS16x2", "PlainS16x2", "S32")
    for kernel, r, n in [("sw_inter", 16, 8), ("sw_inter", 16, 16), ("sw_inter", 16, 32), ("sw_inter", 8, 8),
                         ("sw_intra", 8, 1), ("sw_intra", 8, 2), ("sw_intra", 8, 4), ("sw_intra", 8, 8)]
]  # fmt: skip
#: sw_long<GROUP, codes, copies> for DNA (15 codes + pad, 32 copies) and protein (27 + pad, 8)
LONG_INSTANCES = [
    "template __global__ void sw_long<16, 16, 32>(const uint8_t*, const int64_t*, int, int, const uint8_t*, int, "
    "const int32_t*, int, int, int, int, uint64_t*, int*, unsigned long long*);",
    "template __global__ void sw_long<16, 28, 8>(const uint8_t*, const int64_t*, int, int, const uint8_t*, int, "
    "const int32_t*, int, int, int, int, uint64_t*, int*, unsigned long long*);",
]


@pytest.mark.parametrize(
    "source, defines, instances",
    [("sw_scan.cu", [], SCAN_INSTANCES), ("traceback.cu", ["-DSWGPU_INSTANTIATE"], []), ("sw_long.cu", [], LONG_INSTANCES)],
)
def test_kernel_compiles_for_sm90(tmp_path, source, defines, instances):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc not installed")
    unit = tmp_path / "unit.cu"
    unit.write_text(f'#include "{KERNELS / source}"\n' + "\n".join(instances) + "\n")
    cmd = [nvcc, "-arch=sm_90", "-std=c++17", "-cubin", *defines, "-o", str(tmp_path / "k.cubin"), str(unit)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    assert (tmp_path / "k.cubin").stat().st_size > 0
