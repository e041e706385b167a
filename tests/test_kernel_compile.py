"""The CUDA sources compile offline with nvcc for Hopper (sm_90), without a GPU.

CI has no device but has nvcc; this catches a kernel that would only fail to build at
run time, when CuPy compiles it for the device. ``traceback.cu`` is built with
``SWGPU_INSTANTIATE`` so that every template instance CuPy may ask for is compiled.
Skipped where nvcc is missing.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

KERNELS = Path(__file__).resolve().parent.parent / "swgpu_core" / "kernels"


@pytest.mark.parametrize("source, defines", [("sw_scan.cu", []), ("traceback.cu", ["-DSWGPU_INSTANTIATE"])])
def test_kernel_compiles_for_sm90(tmp_path, source, defines):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc not installed")
    cmd = [nvcc, "-arch=sm_90", "-std=c++17", "-cubin", *defines, "-o", str(tmp_path / "k.cubin"), str(KERNELS / source)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    assert (tmp_path / "k.cubin").stat().st_size > 0
