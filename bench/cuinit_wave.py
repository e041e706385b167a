"""Processes that start CUDA at once, each on a GPU of its own, as a workflow's first wave of
GPU jobs does (issue 16): does the driver serve them better one after another than together?

``python bench/cuinit_wave.py drive --rounds R [--counts 1 2 4] [--no-holder]`` starts, for
each count N and turn (``none``, ``init``, ``context``), N children at once, child k with
``CUDA_VISIBLE_DEVICES=k``. Each loads the driver library, waits for the common start, then
makes its start: ``cuInit``, GPU 0's primary context, a 1 MiB allocation and the 9 streams a
search makes. ``none``: nothing more; ``init``: ``cuInit`` under a host-wide ``flock`` (the
children take turns for it); ``context``: the whole start under the lock. One JSON line per
wave: each child's seconds from the common start to the end of ``cuInit`` and to the end of
its start ("ready"). By default a holder (another process that keeps the driver initialised,
as a workflow's ``gpu.hold_driver`` does) runs throughout, started and initialised before the
first wave; ``--no-holder`` runs without it.
"""

from __future__ import annotations

import argparse
import ctypes
import fcntl
import json
import os
import subprocess
import sys
import time

STREAMS = 9  # a search's streams per GPU (gpu/search.py)
LOCK = "/tmp/swgpu-cuinit-wave.lock"


def child(mode: str) -> None:
    lib = ctypes.CDLL("libcuda.so.1")
    fd = os.open(LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    print("ready", flush=True)
    go = float(sys.stdin.readline())
    while time.time() < go:
        pass
    if mode != "none":
        fcntl.flock(fd, fcntl.LOCK_EX)
    locked = time.time() - go
    assert lib.cuInit(0) == 0
    init = time.time() - go
    if mode == "init":
        fcntl.flock(fd, fcntl.LOCK_UN)
    dev, ctx, ptr = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
    lib.cuDeviceGet(ctypes.byref(dev), 0)
    assert lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
    lib.cuCtxSetCurrent(ctx)
    assert lib.cuMemAlloc_v2(ctypes.byref(ptr), 1 << 20) == 0
    for _ in range(STREAMS):
        s = ctypes.c_void_p()
        assert lib.cuStreamCreate(ctypes.byref(s), 1) == 0
    ready = time.time() - go
    if mode == "context":
        fcntl.flock(fd, fcntl.LOCK_UN)
    print(json.dumps({"lock_s": round(locked, 4), "init_s": round(init, 4), "ready_s": round(ready, 4)}), flush=True)
    os._exit(0)


def wave(n: int, mode: str) -> list[dict]:
    kids = []
    for k in range(n):
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(k))
        kids.append(
            subprocess.Popen(
                [sys.executable, __file__, "child", "--mode", mode], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
            )
        )
    for p in kids:
        assert p.stdout.readline().strip() == "ready"
    go = time.time() + 0.05
    for p in kids:
        p.stdin.write(f"{go}\n")
        p.stdin.flush()
    out = [json.loads(p.stdout.readline()) for p in kids]
    for p in kids:
        p.wait()
    return out


def drive(rounds: int, counts: list[int], holder: bool) -> None:
    keep = None
    if holder:
        keep = subprocess.Popen(
            [sys.executable, "-c", "import ctypes, time; ctypes.CDLL('libcuda.so.1').cuInit(0); print(flush=True); time.sleep(900)"],
            stdout=subprocess.PIPE,
        )
        keep.stdout.readline()
    try:
        for r in range(rounds):
            for n in counts:
                for mode in ("none", "init", "context") if r % 2 == 0 else ("context", "init", "none"):
                    kids = wave(n, mode)
                    rec = {"round": r, "processes": n, "mode": mode, "holder": holder, "children": kids}
                    rec["last_init_s"] = max(c["init_s"] for c in kids)
                    rec["last_ready_s"] = max(c["ready_s"] for c in kids)
                    rec["mean_ready_s"] = round(sum(c["ready_s"] for c in kids) / n, 4)
                    print(json.dumps(rec), flush=True)
                    time.sleep(1.0)  # the last wave's teardown done
    finally:
        if keep:
            keep.kill()
            keep.wait()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("what", choices=["drive", "child"])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--counts", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--mode", default="none")
    p.add_argument("--no-holder", action="store_true")
    a = p.parse_args()
    child(a.mode) if a.what == "child" else drive(a.rounds, a.counts, not a.no_holder)
