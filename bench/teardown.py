"""What a GPU search's process pays at its end, and where a multi-GPU scan's tail goes (issue 16).

``python bench/teardown.py --db DB --queries Q.fasta [--n 40] [--rounds 3] [--devices 0 0,1]``
runs child processes of this script, each of which searches the first ``--n`` queries
through the API and ends with ``os._exit`` (as the ``swgpu`` command does), in variants:

* ``init``: only ``cuInit``, no context;
* ``exit``: the search, then ``os._exit`` at once;
* ``reset``: the search, then each GPU's primary context destroyed (``cudaDeviceReset``) in
  this thread before ``os._exit``;
* ``reset-bg``: the same reset in a thread while this one sleeps 0.15 s (a search's writing
  of bench200M x 500 takes 0.11-0.18 s), then ``os._exit``; ``reset-par-bg`` resets the
  devices each in a thread of its own; ``exit-sleep`` sleeps as long with nothing beside;
* ``free-bg``: instead of the reset, the search's device buffers dropped and CuPy's memory
  pools freed (the contexts stay) in a thread while this one sleeps.

Per run: the child's work (process start to the line before ``os._exit``), its reset, and
the exit (that line to the parent's ``wait`` returning: the driver's teardown of what is
left). ``--tail`` instead runs the whole query file on every ``--devices`` set once each
and reports, per GPU, when its step generator started, when its last event (the end of its
scans) was seen and when it returned (its host work after the scans), against the scan's end.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

WRITING_SECONDS = 0.15


def process_start() -> float:
    start_ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
    uptime = float(Path("/proc/uptime").read_text().split()[0])
    return time.time() - (uptime - start_ticks / os.sysconf("SC_CLK_TCK"))


def reset(devices: list[int]) -> float:
    """Destroy each device's primary context (``cuDevicePrimaryCtxReset``: its memory, modules,
    streams), GIL released; seconds taken."""
    import ctypes

    from swgpu_core import cuda_driver

    lib = cuda_driver._driver()
    t = time.perf_counter()
    for d in devices:
        device = ctypes.c_int(0)
        assert lib.cuDeviceGet(ctypes.byref(device), d) == 0
        rc = lib.cuDevicePrimaryCtxReset_v2(device)
        assert rc == 0, f"cuDevicePrimaryCtxReset_v2({d}): {rc}"
    return time.perf_counter() - t


def reset_parallel(devices: list[int]) -> float:
    """:func:`reset`, one thread per device."""
    t = time.perf_counter()
    threads = [threading.Thread(target=reset, args=([d],)) for d in devices]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return time.perf_counter() - t


def free_memory(backend, devices: list[int]) -> float:
    """Drop the search's device buffers and give CuPy's pools back to the driver (the
    contexts stay); seconds taken."""
    import cupy as cp

    t = time.perf_counter()
    for w in backend.workers:
        w.resident.clear()
        w._scratch.clear()
        w._profiles.clear()
        w._staging = []
    for d in devices:
        with cp.cuda.Device(d):
            cp.get_default_memory_pool().free_all_blocks()
    cp.get_default_pinned_memory_pool().free_all_blocks()
    return time.perf_counter() - t


def child(mode: str, devices: list[int], db_path: str, queries_path: str, n: int, tail: bool) -> None:
    t0 = process_start()
    out: dict = {"mode": mode, "devices": devices}
    if mode == "init":
        from swgpu_core import cuda_driver

        cuda_driver.initialise()
    else:
        from swgpu_core import cuda_driver

        cuda_driver.start()  # as the command does, before its imports
        inits: list = []
        threading.Thread(target=lambda: (cuda_driver._STARTED[0].join(), inits.append(round(time.time() - t0, 3))), daemon=True).start()
        from swgpu_core import api, engine
        from swgpu_core.scoring import Scoring

        engine.warm_up(devices, scan=True)
        db = api.open_database(db_path)
        queries = api.read_queries(queries_path, db.alphabet)[: n or None]
        spans: list = []
        if tail:
            import swgpu_core.gpu.search as gs

            inner = gs.drive

            seen: dict = {}  # per generator, when its last event was seen done

            def timed(gen, k):
                spans.append(["start", k, round(time.time() - t0, 3)])
                while True:
                    try:
                        ev = gen.send(None)
                    except StopIteration as stop:
                        spans.append(["returned", k, round(time.time() - t0, 3)])
                        return stop.value
                    yield ev
                    seen[k] = round(time.time() - t0, 3)

            def drive(steps):
                r = inner([timed(g, k) for k, g in enumerate(steps)])
                spans.extend(["last event seen", k, v] for k, v in seen.items())
                return r

            gs.drive = drive

            def span(name, fn):
                def wrapped(self, *a, **k):
                    start = time.time() - t0
                    try:
                        return fn(self, *a, **k)
                    finally:
                        spans.append([name, getattr(self, "device_id", None), round(start, 3), round(time.time() - t0, 3)])

                return wrapped

            for name in ("__init__", "prepare", "upload"):
                setattr(gs.DeviceWorker, name, span(name, getattr(gs.DeviceWorker, name)))
            first_launch = gs.DeviceWorker._launch

            def launch(self, *a, **k):
                if self.device_id not in launched:
                    launched.add(self.device_id)
                    spans.append(["first launch", self.device_id, round(time.time() - t0, 3)])
                return first_launch(self, *a, **k)

            launched: set = set()
            gs.DeviceWorker._launch = launch
        eng = engine.get_engine("cuda")
        result = api.search(
            db, queries, Scoring.protein("BLOSUM62", 11, 1), backend=eng, top=50, devices=devices,
            show_progress=False,
        )  # fmt: skip
        out["scan_end"] = round(time.time() - t0, 3)
        out["scan_seconds"] = round(result.seconds, 3)
        out["spans"] = sorted(spans + [["cuInit ends", None, *inits]], key=lambda s: s[2])
        if mode == "reset":
            out["reset_seconds"] = round(reset(devices), 3)
        elif mode in ("reset-bg", "reset-par-bg", "free-bg"):
            box: list[float] = []
            backend = eng._scanners[tuple(devices)]
            work = {
                "reset-bg": lambda: reset(devices),
                "reset-par-bg": lambda: reset_parallel(devices),
                "free-bg": lambda: free_memory(backend, devices),
            }[mode]
            th = threading.Thread(target=lambda: box.append(work()), daemon=True)
            th.start()
            time.sleep(WRITING_SECONDS)
            th.join()
            out["reset_seconds"] = round(box[0], 3)
        elif mode == "exit-sleep":
            time.sleep(WRITING_SECONDS)
    out["work"] = round(time.time() - t0, 3)
    out["exit_at"] = time.time()
    print(json.dumps(out), flush=True)
    os._exit(0)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--db", required=True)
    p.add_argument("--queries", required=True)
    p.add_argument("--n", type=int, default=40)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--devices", nargs="+", default=["0", "0,1"])
    p.add_argument("--modes", nargs="+", default=["init", "exit", "exit-sleep", "reset", "reset-bg", "reset-par-bg", "free-bg"])
    p.add_argument("--tail", action="store_true")
    p.add_argument("--child")
    a = p.parse_args()
    if a.child:
        child(a.child, [int(d) for d in a.devices[0].split(",")], a.db, a.queries, a.n, a.tail)
        return
    rows: dict = {}
    modes = ["tail"] if a.tail else a.modes
    for _ in range(1 if a.tail else a.rounds):
        for mode in modes:
            for devs in a.devices:
                argv = [sys.executable, __file__, "--db", a.db, "--queries", a.queries, "--n", str(0 if a.tail else a.n),
                        "--devices", devs, "--child", "exit" if a.tail else mode] + (["--tail"] if a.tail else [])  # fmt: skip
                start = time.time()
                proc = subprocess.run(argv, capture_output=True, text=True)
                reaped = time.time()
                line = [x for x in proc.stdout.splitlines() if x.startswith("{")]
                if proc.returncode or not line:
                    print(f"{mode} {devs}: failed rc {proc.returncode}\n{proc.stderr[-2000:]}")
                    continue
                d = json.loads(line[-1])
                d["exit"] = round(reaped - d.pop("exit_at"), 3)
                d["wall"] = round(reaped - start, 3)
                print(json.dumps(d), flush=True)
                rows.setdefault((mode, devs), []).append(d)
    for (mode, devs), ds in rows.items():
        med = {k: round(statistics.median(x[k] for x in ds), 3) for k in ("work", "exit", "wall", "reset_seconds") if k in ds[0]}
        print(f"summary {mode} devices {devs} (n={len(ds)}): {med}", flush=True)


if __name__ == "__main__":
    main()
