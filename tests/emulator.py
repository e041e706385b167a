"""The g++ builds of the CPU harnesses of the CUDA kernels (``tests/cuda_emu/*_main.cpp``, on
``cuda_emu.h``): one command for every test that runs a kernel without a GPU and for the
emulated CuPy (``tests/cuda_emu/fake_cupy``)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from swgpu_core.kernel_abi import KERNEL_DIR

EMU = Path(__file__).resolve().parent / "cuda_emu"


def require_gxx() -> None:
    """Skip the calling test where g++ is missing."""
    if shutil.which("g++") is None:
        pytest.skip("g++ not installed")


def build_harness(main: str, options: Sequence[str], exe: Path) -> Path:
    """``tests/cuda_emu/<main>`` (which includes a kernel's source) compiled into ``exe``, with the
    kernel's ``-D`` options as the backend gives them to NVRTC; a failed build raises with
    g++'s message."""
    defines = [o for o in options if o.startswith("-D")]
    cmd = [
        "g++",
        "-std=c++17",
        "-O2",
        "-Wall",
        "-Wno-unknown-pragmas",
        *defines,
        f"-I{EMU}",
        f"-I{KERNEL_DIR}",
        str(EMU / main),
        "-o",
        str(exe),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if done.returncode:
        raise RuntimeError(f"g++ failed on {main}:\n{done.stderr[-4000:]}")
    return exe
