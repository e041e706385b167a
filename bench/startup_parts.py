"""What the GPU warm-up of a command costs, piece by piece, in one fresh process (device bench).

``python bench/startup_parts.py`` prints one JSON line: the seconds of importing CuPy,
CUDA's initialisation, each device's context, NVRTC's version query (CuPy's kernel cache
asks it before every cached load), the scan kernels' load through
:func:`swgpu_core.gpu.kernels.scan_kernels`, the worker's ``prepare`` (planner model and the
selection routines), and, for comparison, the same scan module loaded straight from its
cached binary (``cuModuleLoad`` of the cubin) with its functions looked up.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

T: dict[str, float] = {}


def timed(label: str, fn, *a, **k):
    s = time.perf_counter()
    out = fn(*a, **k)
    T[label] = round(time.perf_counter() - s, 4)
    return out


def main() -> None:
    import ctypes

    libcuda = timed("dlopen libcuda", ctypes.CDLL, "libcuda.so.1")
    timed("cuInit (ctypes, GIL released)", libcuda.cuInit, 0)
    cupy = timed("import cupy", __import__, "cupy")
    n = timed("getDeviceCount (after cuInit)", cupy.cuda.runtime.getDeviceCount)
    from swgpu_core.gpu.device import open_context
    from swgpu_core.gpu.kernels import INTER_SHAPES, INTRA_SHAPES, _names_path, kernel_abi, kernel_source, scan_kernels
    from swgpu_core.gpu.search import DeviceWorker
    from swgpu_core.scoring import Scoring

    timed("context 0", open_context, 0)
    timed("nvrtc version", cupy.cuda.compiler._get_nvrtc_version)
    k = timed("scan_kernels(0)", scan_kernels, 0)
    timed("prepare(0)", DeviceWorker(0, Scoring.protein(), None, None, None).prepare)
    if n > 1:
        timed("context 1", open_context, 1)
        timed("scan_kernels(1)", scan_kernels, 1)
        timed("prepare(1)", DeviceWorker(1, Scoring.protein(), None, None, None).prepare)
    # the same module straight from CuPy's cached binary
    names = [s.template(a) for s in INTER_SHAPES + INTRA_SHAPES for a in (k.packed, "S32")]
    names += [s.task_template(a) for s in INTER_SHAPES for a in (k.packed, "S32")]
    options = ("-std=c++17", *kernel_abi.compile_options())
    lowered = json.loads(_names_path(kernel_source(), options, names).read_text())
    probe = next(iter(lowered.values())).encode()
    cache = Path(os.environ.get("CUPY_CACHE_DIR", Path.home() / ".cupy" / "kernel_cache"))
    found = None
    for f in sorted(cache.glob("*.cubin"), key=lambda p: p.stat().st_size, reverse=True):
        data = f.read_bytes()
        if probe in data:
            found = data[data.index(b"\x7fELF") :]
            break
    if found is not None:
        Path("/tmp/scan.cubin").write_bytes(found)
        T["cubin bytes"] = len(found)
        for dev in range(min(n, 2)):
            with cupy.cuda.Device(dev):
                mod = timed(f"RawModule(path=cubin) {dev}", cupy.RawModule, path="/tmp/scan.cubin")
                timed(f"get_function x{len(names)} {dev}", lambda m=mod: [m.get_function(lowered[x]) for x in names])
    print(json.dumps({"devices": n, "seconds": T}))


if __name__ == "__main__":
    main()
