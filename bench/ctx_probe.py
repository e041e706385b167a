"""What a GPU's start costs a fresh process, by setting (issue 16): ``cuInit``, each GPU's
primary context (with its first allocation and the streams a search makes), their release,
and the process's wall from its start to its parent's ``wait``.

``python bench/ctx_probe.py drive --rounds N`` runs, N rounds in turn, a child process
(``python bench/ctx_probe.py child``) for every combination of

* the GPUs shown (``CUDA_VISIBLE_DEVICES`` 0, and 0,1 where there are two);
* ``CUDA_DEVICE_MAX_CONNECTIONS`` (unset: 8, the driver's default; 1, 4, 16 and 32): the
  hardware work queues a context gets, each a channel the driver sets up when it makes the
  context; a search makes 9 streams per GPU, so 8 queues put two of them on one;
* a keeper or none: another process that holds the driver initialised (``cuInit``, no
  context) while the child runs, as ``swgpu gpu-hold`` or a workflow's holder does;

and prints one JSON line per child: its spans in seconds from its start, and its wall.
"""

from __future__ import annotations

import argparse
import ctypes
import itertools
import json
import os
import subprocess
import sys
import time

STREAMS = 9  # a search's streams per GPU (gpu/search.py: compute, 2 inter, 5 long, copy)


def child() -> None:
    """cuInit, then each GPU's context, a 1 MiB allocation and STREAMS streams, one GPU after
    another, then every context reset; one JSON line of spans (seconds from the script's start)."""
    t0 = time.perf_counter()
    spans: dict[str, float] = {}
    lib = ctypes.CDLL("libcuda.so.1")
    a = time.perf_counter()
    rc = lib.cuInit(0)
    spans["cuInit"] = time.perf_counter() - a
    if rc:
        raise SystemExit(f"cuInit returned {rc}")
    count = ctypes.c_int()
    lib.cuDeviceGetCount(ctypes.byref(count))
    for d in range(count.value):
        dev, ctx, ptr = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
        a = time.perf_counter()
        lib.cuDeviceGet(ctypes.byref(dev), d)
        assert lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
        lib.cuCtxSetCurrent(ctx)
        spans[f"ctx{d}"] = time.perf_counter() - a
        a = time.perf_counter()
        assert lib.cuMemAlloc_v2(ctypes.byref(ptr), 1 << 20) == 0
        spans[f"alloc{d}"] = time.perf_counter() - a
        a = time.perf_counter()
        for _ in range(STREAMS):
            s = ctypes.c_void_p()
            assert lib.cuStreamCreate(ctypes.byref(s), 1) == 0
        spans[f"streams{d}"] = time.perf_counter() - a
    a = time.perf_counter()
    for d in range(count.value):
        dev = ctypes.c_int()
        lib.cuDeviceGet(ctypes.byref(dev), d)
        lib.cuDevicePrimaryCtxReset_v2(dev)
    spans["reset"] = time.perf_counter() - a
    spans["total"] = time.perf_counter() - t0
    print(json.dumps({k: round(v, 4) for k, v in spans.items()}), flush=True)
    os._exit(0)


def drive(rounds: int) -> None:
    """Every setting in turn, ``rounds`` times; one JSON line per child."""
    env0 = dict(os.environ)
    env0.pop("CUDA_DEVICE_MAX_CONNECTIONS", None)
    listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout
    count = sum(line.startswith("GPU ") for line in listing.splitlines())
    shown = ["0"] + (["0,1"] if count >= 2 else [])
    for r, (vis, conns, keeper) in itertools.product(range(rounds), itertools.product(shown, ["", "1", "4", "16", "32"], [False, True])):
        keep = None
        if keeper:
            keep = subprocess.Popen(
                [sys.executable, "-c", "import ctypes, time; ctypes.CDLL('libcuda.so.1').cuInit(0); print(flush=True); time.sleep(600)"],
                stdout=subprocess.PIPE,
            )
            keep.stdout.readline()  # its cuInit has returned
        env = dict(env0, CUDA_VISIBLE_DEVICES=vis)
        if conns:
            env["CUDA_DEVICE_MAX_CONNECTIONS"] = conns
        a = time.perf_counter()
        out = subprocess.run([sys.executable, __file__, "child"], env=env, capture_output=True, text=True)
        wall = time.perf_counter() - a
        if keep:
            keep.kill()
            keep.wait()
        rec = {"round": r, "visible": vis, "connections": conns or "default", "keeper": keeper, "wall": round(wall, 4)}
        rec.update(json.loads(out.stdout) if out.returncode == 0 else {"error": out.stderr.strip()[-200:]})
        print(json.dumps(rec), flush=True)
        time.sleep(0.3)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("what", choices=["drive", "child"])
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    child() if a.what == "child" else drive(a.rounds)
