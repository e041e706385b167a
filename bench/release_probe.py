"""What the end of a multi-GPU search costs in the driver, by what is freed first (issue 16).

``python bench/release_probe.py drive --rounds N -- SEARCH ARGS...`` runs, N rounds in turn, a
child process per variant. The child runs ``swgpu search SEARCH ARGS`` in process (as the
executable does, CUDA shown only the command's GPUs), but where the command would release its
GPUs (:func:`swgpu_core.cuda_driver.release`, called once its last GPU work is done) it
instead does the variant's steps one after another, each timed, and then destroys every
context (``cuDevicePrimaryCtxReset``), each timed:

* ``plain``: the reset alone, as the command did it before d1167cb (now its fallback where no
  keeper can take the GPU device files);
* ``pools``: first CuPy's device memory pool (every GPU) and its pinned host pool freed;
* ``peer``: first GPU 1's access to GPU 0's memory disabled (a search's second GPU copies the
  database from the first's);
* ``both``: ``peer``, then ``pools``;
* ``parallel``: the resets of all GPUs from one thread each, at once;
* ``reverse``: the resets in the reverse order.

One JSON line per child: the variant, its steps' seconds and the reset's per device.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import subprocess
import sys
import threading
import time

VARIANTS = ("plain", "pools", "peer", "both", "parallel", "reverse")


def _reset(lib: ctypes.CDLL, ordinal: int, out: dict) -> None:
    device = ctypes.c_int(0)
    lib.cuDeviceGet(ctypes.byref(device), ordinal)
    a = time.perf_counter()
    lib.cuDevicePrimaryCtxReset_v2(device)
    out[f"reset{ordinal}"] = round(time.perf_counter() - a, 4)


def finish(variant: str, record: dict) -> None:
    """The variant's steps, then the contexts' destruction; the seconds in ``record``."""
    import gc

    import cupy as cp

    gc.disable()
    lib = ctypes.CDLL("libcuda.so.1")
    count = cp.cuda.runtime.getDeviceCount()
    a = time.perf_counter()
    if variant in ("peer", "both") and count > 1:
        with cp.cuda.Device(1):
            try:
                cp.cuda.runtime.deviceDisablePeerAccess(0)
            except cp.cuda.runtime.CUDARuntimeError as exc:
                record["peer_error"] = str(exc)
        record["peer_off"] = round(time.perf_counter() - a, 4)
    a = time.perf_counter()
    if variant in ("pools", "both"):
        for d in range(count):
            with cp.cuda.Device(d):
                cp.get_default_memory_pool().free_all_blocks()
        cp.get_default_pinned_memory_pool().free_all_blocks()
        record["pools_freed"] = round(time.perf_counter() - a, 4)
    order = list(range(count))[::-1] if variant == "reverse" else list(range(count))
    a = time.perf_counter()
    if variant == "parallel":
        threads = [threading.Thread(target=_reset, args=(lib, d, record)) for d in order]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    else:
        for d in order:
            _reset(lib, d, record)
    record["resets"] = round(time.perf_counter() - a, 4)


def child(variant: str, argv: list[str]) -> None:
    from swgpu_core import cli, cuda_driver

    record: dict = {"variant": variant}
    kept: list = []

    def instead(keep: object = None) -> None:  # cuda_driver.release's place: synchronously, timed
        kept.append(keep)
        a = time.perf_counter()
        finish(variant, record)
        record["end_total"] = round(time.perf_counter() - a, 4)

    cuda_driver.release = instead
    rc = cli.main(["search", *argv], process_ends=True)
    record["rc"] = rc
    print(json.dumps(record), flush=True)
    os._exit(rc)


def drive(rounds: int, argv: list[str]) -> None:
    for r in range(rounds):
        for variant in VARIANTS:
            a = time.perf_counter()
            out = subprocess.run([sys.executable, __file__, "child", variant, "--", *argv], capture_output=True, text=True)
            wall = time.perf_counter() - a
            lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
            rec = json.loads(lines[-1]) if lines else {"variant": variant, "error": out.stderr[-400:]}
            rec.update(round=r + 1, wall=round(wall, 3))
            print(json.dumps(rec), flush=True)


def main() -> None:
    """``drive [--rounds N] -- ARGS`` or ``child VARIANT -- ARGS`` (ARGS: the search's, after ``--``)."""
    cut = sys.argv.index("--") if "--" in sys.argv else len(sys.argv)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=["drive", "child"])
    parser.add_argument("variant", nargs="?", choices=VARIANTS)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(sys.argv[1:cut])
    search = sys.argv[cut + 1 :]
    if args.mode == "child":
        child(args.variant, search)
    else:
        drive(args.rounds, search)


if __name__ == "__main__":
    main()
