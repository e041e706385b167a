"""Why ``cuInit`` takes 0.3-0.45 s inside ``swgpu search`` and 0.12 s alone (issue 16).

``python bench/cuinit_probe.py VARIANT [--db DIR --query FASTA]`` runs, in this fresh process,
``cuInit`` through ctypes (GIL released, as :mod:`swgpu_core.cuda_driver` does) beside one
kind of other work, and prints one JSON line: each span's start and end in seconds since the
process started (from /proc, to 10 ms).

Variants (what runs beside ``cuInit``, which runs in a thread of its own unless said):

* ``alone``: nothing (cuInit in the main thread);
* ``numpy``: the main thread imports numpy;
* ``cupy``: the main thread imports CuPy;
* ``swgpu``: the main thread does what ``swgpu search`` does before its scan, without CuPy:
  imports the command and the API, opens the database, reads the queries;
* ``both``: ``swgpu`` in the main thread and CuPy's import in another (the real process);
* ``serial``: ``cuInit``, then CuPy's import, in the main thread.

A driver loop runs each variant in turn, several rounds (``device_multigpu.sh cuinit``).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import threading
import time
from pathlib import Path


def process_start() -> float:
    """When this process started (wall clock, to 10 ms), from /proc."""
    start_ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
    uptime = float(Path("/proc/uptime").read_text().split()[0])
    return time.time() - (uptime - start_ticks / os.sysconf("SC_CLK_TCK"))


T0 = process_start()
spans: dict[str, tuple[float, float]] = {}


def timed(name: str, fn) -> None:
    a = time.time()
    fn()
    spans[name] = (round(a - T0, 3), round(time.time() - T0, 3))


def cu_init() -> None:
    lib = ctypes.CDLL("libcuda.so.1")
    rc = lib.cuInit(0)
    if rc != 0:
        raise SystemExit(f"cuInit returned {rc}")


def import_cupy() -> None:
    import cupy  # noqa: F401


def import_numpy() -> None:
    import numpy  # noqa: F401


def swgpu_head(db: str, query: str) -> None:
    from swgpu_core import api
    from swgpu_core.commands import search  # noqa: F401

    database = api.open_database(db)
    api.read_queries(query, database.alphabet)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("variant", choices=["alone", "numpy", "cupy", "swgpu", "both", "serial"])
    p.add_argument("--db")
    p.add_argument("--query")
    a = p.parse_args()
    spans["script start"] = (round(time.time() - T0, 3),) * 2
    if a.variant == "alone":
        timed("cuInit", cu_init)
    elif a.variant == "serial":
        timed("cuInit", cu_init)
        timed("import cupy", import_cupy)
    else:
        others = []
        t = threading.Thread(target=timed, args=("cuInit", cu_init))
        t.start()
        if a.variant == "both":
            others.append(threading.Thread(target=timed, args=("import cupy", import_cupy)))
            others[-1].start()
        if a.variant == "numpy":
            timed("import numpy", import_numpy)
        elif a.variant == "cupy":
            timed("import cupy", import_cupy)
        else:
            timed("swgpu head", lambda: swgpu_head(a.db, a.query))
        for o in [t, *others]:
            o.join()
    print(json.dumps({"variant": a.variant, "visible": os.environ.get("CUDA_VISIBLE_DEVICES", "all"), **spans}))


if __name__ == "__main__":
    main()
