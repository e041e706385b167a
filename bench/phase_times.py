"""Where a ``swgpu`` command's wall time goes: run it in this process with its main phases timed.

``python bench/phase_times.py search --db ... --query ...`` runs the command as ``swgpu``
would and prints one JSON line: seconds since the interpreter started (from /proc) at the
end of this script's own imports (the standard library and ``swgpu_core.cli``), then each
timed call's and each timed module import's start and end, with its thread. The modules
are patched as their imports complete (PATCHES), so the command imports them itself, as
``swgpu`` does. Also reports the stack that first imports ``cupyx`` (it pulls in
scipy.sparse), if anything does, and the garbage collector's pauses: each collection over
2 ms as a span ("gc genN"), and the count and seconds of all of them per generation; and per
GPU of a search (``per_device``) its scan as :data:`per_device` describes it, and per call of the GPU
traceback (``traceback``) its pairs' sizes and kernel seconds.
"""

from __future__ import annotations

import functools
import gc
import importlib.abc
import importlib.machinery
import json
import os
import sys
import time
import traceback
from pathlib import Path


def process_start() -> float:
    """The wall-clock time this process started (to 10 ms): its start in clock ticks after boot
    (/proc/self/stat) against the time since boot (/proc/uptime)."""
    start_ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
    uptime = float(Path("/proc/uptime").read_text().split()[0])
    return time.time() - (uptime - start_ticks / os.sysconf("SC_CLK_TCK"))


T0 = process_start()
spans: list[tuple[str, float, float, str]] = []
cupyx_stack: list[str] = []


class Spy:
    def find_spec(self, name, path=None, target=None):
        if name == "cupyx.linalg" and not cupyx_stack:  # the lazy cupyx module actually loading
            frames = [f for f in traceback.extract_stack() if "importlib" not in f.filename and "<frozen" not in f.filename]
            cupyx_stack.extend(f"{f.filename}:{f.lineno} {f.name}" for f in frames[-12:])
        return None


sys.meta_path.insert(0, Spy())
compiled: list[str] = []  # modules imported from source: no bytecode (or a stale one) was found
_loader = importlib.machinery.SourceFileLoader
_source_to_code = _loader.source_to_code


def _counting(self, data, path, *a, **k):
    compiled.append(str(path))
    return _source_to_code(self, data, path, *a, **k)


_loader.source_to_code = _counting


def timed(owner, name: str, label: str) -> None:
    """Record each call of ``owner.name`` as a span; a label starting "first " records only the
    first call per device (its ``self.device_id``, the label then ending in the device)."""
    original = getattr(owner, name)
    seen: set = set()

    @functools.wraps(original)
    def wrapper(*a, **k):
        import threading

        s = time.time()
        try:
            return original(*a, **k)
        finally:
            tag = label
            if label.startswith("first "):
                device = getattr(a[0], "device_id", None)
                tag = f"{label} {device}"
                if device in seen:
                    tag = None
                seen.add(device)
            if tag is not None:
                spans.append((tag, round(s - T0, 3), round(time.time() - T0, 3), threading.current_thread().name))

    setattr(owner, name, wrapper)


#: per GPU, what happened during its scan: launches (count, last start), the end of its steps, the GPU's own
#: clock from its first scan's start to the end of its latest one against the kernel seconds it accounted (the
#: difference is the time that GPU stood idle between queries), and the kernel seconds it accounted per query
#: (comparable between runs: whether a GPU of a two-GPU run scans a query as fast as one GPU alone)
per_device: dict = {}


def _device_entry(worker) -> dict:
    return per_device.setdefault(str(worker.device_id), {"launches": 0})


def every_launch(owner, name: str) -> None:
    """Count each call of ``owner.name`` (``DeviceWorker._launch``) per device and keep the last one's start."""
    original = getattr(owner, name)

    @functools.wraps(original)
    def wrapper(self, *a, **k):
        s = time.time()
        entry = _device_entry(self)
        entry["launches"] += 1
        entry["last_launch"] = round(s - T0, 3)
        return original(self, *a, **k)

    setattr(owner, name, wrapper)


def steps_end(owner, name: str) -> None:
    """Record when each generator of ``owner.name`` (``DeviceWorker.scan_steps``) returns, per device."""
    original = getattr(owner, name)

    @functools.wraps(original)
    def wrapper(self, *a, **k):
        result = yield from original(self, *a, **k)
        _device_entry(self).setdefault("steps_end", []).append(round(time.time() - T0, 3))
        return result

    setattr(owner, name, wrapper)


def gpu_clock(owner, name: str) -> None:
    """After each call of ``owner.name`` (``DeviceWorker._account(dev, f, ...)``, run once the flight's events
    completed): the GPU's seconds from its first flight's start to this flight's end, and its kernel seconds."""
    original = getattr(owner, name)

    @functools.wraps(original)
    def wrapper(self, dev, f, *a, **k):
        result = original(self, dev, f, *a, **k)
        import cupy as cp

        entry = _device_entry(self)
        first = entry.setdefault("_first_mark", f.marks[0])
        span = cp.cuda.get_elapsed_time(first, f.marks[-1]) / 1e3
        entry["gpu_span"] = round(max(span, entry.get("gpu_span", 0.0)), 4)
        entry["kernel_seconds"] = round(self.kernel_seconds, 4)
        entry.setdefault("query_seconds", {})[f.index] = round(self.last_timing["seconds"], 5)  # this GPU's share of each of its queries
        return result

    setattr(owner, name, wrapper)


#: per call of the GPU traceback (``align_packed``): its pairs, the cells of its largest pair and of all
#: (query x subject: the forward scan's), the pairs of over 10^7 cells, and the kernels' device seconds
traceback_calls: list = []


def traceback_sizes(owner, name: str) -> None:
    """Record each call of ``owner.name`` (``gpu.traceback.align_packed``): the sizes of its pairs and the
    device seconds of each kernel (``PackedTraces.kernel_seconds``), to tell a tail of huge pairs from bulk."""
    original = getattr(owner, name)

    @functools.wraps(original)
    def wrapper(residues, qoff, qlen, soff, slen, *a, **k):
        result = original(residues, qoff, qlen, soff, slen, *a, **k)
        import numpy as np

        cells = np.asarray(qlen, np.int64) * np.asarray(slen, np.int64)
        traceback_calls.append({"pairs": int(cells.size), "cells": int(cells.sum()), "largest_cells": int(cells.max(initial=0)),
                                "pairs_over_1e7_cells": int((cells > 10**7).sum()),
                                "kernel_seconds": {n: round(v, 4) for n, v in result.kernel_seconds.items()}})  # fmt: skip
        return result

    setattr(owner, name, wrapper)


#: what is timed, per module: (attribute, or Class.attribute, label). Each module is patched the
#: moment its import finishes (the finder below), so the command imports everything itself, in
#: its own order and threads, as `swgpu` does: nothing is imported ahead (until 2026-11-26 the
#: script imported CuPy and the library first, which hid their import and the GIL they hold).
PATCHES = {
    "swgpu_core.cli": [("build_parser", "build_parser")],
    "swgpu_core.cuda_driver": [("initialise", "cuInit (ctypes)"), ("_reset_active", "release contexts")],
    "swgpu_core.engine": [("_warm", "warm_up_thread"), ("probe_gpu", "probe_gpu")],
    "swgpu_core.api": [("open_database", "open_database"), ("read_queries", "read_queries"), ("statistics", "statistics"),
                       ("read_sequence", "read_sequence"), ("scan_long", "scan_long"), ("trace_long", "trace_long"),
                       ("select_hits", "select_hits")],
    "swgpu_core.align.hits": [("align_query_hits", "align_query_hits")],
    "swgpu_core.align.alignment": [("build_alignments", "build_alignments")],
    "swgpu_core.hitlist": [("save_hits", "save_hits")],
    "swgpu_core.score_stats": [("ScoreHistograms.for_search", "ScoreHistograms.for_search")],
    "swgpu_core.commands._options": [("report_hits", "report_hits")],
    "swgpu_core.search": [("search", "search (scanner made before)")],
    "swgpu_core.formats": [("write_output", "write_output")],
    "swgpu_core.commands.search": [("run", "command run")],
    "swgpu_core.commands.align_long": [("run", "align-long run")],
    "swgpu_core.long.trace": [("trace_on_gpu", "trace_on_gpu"), ("trace_end_points", "trace_end_points (CPU)")],
    "cupy": [],  # its import, as a span
    "swgpu_core.gpu.search": [("CudaBackend.__init__", "CudaBackend()"), ("CudaBackend.scan", "CudaBackend.scan"),
                              ("DeviceWorker.prepare", "DeviceWorker.prepare"), ("DeviceWorker.upload", "DeviceWorker.upload"),
                              ("DeviceWorker._copy_from", "DeviceWorker._copy_from"), ("DeviceWorker._launch", "first launch on GPU"),
                              ("DeviceWorker.__init__", "DeviceWorker()"), ("DeviceWorker._copy_in", "DeviceWorker._copy_in"),
                              ("DeviceWorker.staging_ring", "DeviceWorker.staging_ring")],
    "swgpu_core.database": [("Database._check_chunk", "check a chunk (CRC-32, alphabet)"),
                            ("Database.verify_residues", "Database.verify_residues")],
    "swgpu_core.gpu.kernels": [("ScanKernels.__init__", "ScanKernels()")],
    "swgpu_core.gpu.long_scan": [("scan_sections", "gpu scan_sections")],
    "swgpu_core.gpu.traceback": [("align_packed", "align_packed"), ("pack_sequences", "pack_sequences"), ("_ends", "tb _ends"),
                                 ("_regions", "tb _regions")],
}  # fmt: skip


class Patcher(importlib.abc.MetaPathFinder):
    """Applies PATCHES to a module when its import completes, and times the import of each."""

    def find_spec(self, name, path=None, target=None):
        if name not in PATCHES:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            import threading

            s = time.time()
            run(module)
            spans.append((f"import {name}", round(s - T0, 3), round(time.time() - T0, 3), threading.current_thread().name))
            for attr, label in PATCHES[name]:
                owner = module
                *outer, last = attr.split(".")
                for part in outer:
                    owner = getattr(owner, part)
                timed(owner, last, label)
            if name == "swgpu_core.gpu.traceback":
                traceback_sizes(module, "align_packed")
            if name == "swgpu_core.gpu.search":
                every_launch(module.DeviceWorker, "_launch")
                steps_end(module.DeviceWorker, "scan_steps")
                gpu_clock(module.DeviceWorker, "_account")

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, Patcher())
gc_totals = {g: [0, 0.0] for g in range(3)}  # per generation: collections, seconds
_gc_start = [0.0]


def gc_pause(phase: str, info: dict) -> None:
    if phase == "start":
        _gc_start[0] = time.time()
        return
    import threading

    seconds = time.time() - _gc_start[0]
    gc_totals[info["generation"]][0] += 1
    gc_totals[info["generation"]][1] += seconds
    if seconds > 0.002:
        spans.append(
            (f"gc gen{info['generation']}", round(_gc_start[0] - T0, 3), round(time.time() - T0, 3), threading.current_thread().name)
        )


gc.callbacks.append(gc_pause)
imported = time.time() - T0
from swgpu_core import cli  # noqa: E402

# PHASE_EXIT=os ends as the swgpu executable does (cli.console): the command may release its GPUs while it
# writes (process_ends), the exit waits for that, then os._exit
ENDS_AS_CONSOLE = os.environ.get("PHASE_EXIT") == "os"
rc = cli.main(sys.argv[1:], process_ends=ENDS_AS_CONSOLE)
if ENDS_AS_CONSOLE:
    from swgpu_core import cuda_driver

    cuda_driver.wait_released()
end = time.time() - T0
print(
    json.dumps(
        {
            "argv": sys.argv[1:],
            "t0": round(T0, 3),  # the process's start, wall clock (to place runs of several processes on one time line)
            "imports_done": round(imported, 3),
            "end": round(end, 3),
            "rc": rc,
            "spans": sorted(spans, key=lambda s: s[1]),
            "per_device": {d: {k: v for k, v in e.items() if not k.startswith("_")} for d, e in per_device.items()},
            "cupyx_imported_from": cupyx_stack,
            "gc": {f"gen{g}": {"collections": n, "seconds": round(t, 3)} for g, (n, t) in gc_totals.items()},
            "traceback": traceback_calls,
            "compiled_from_source": len(compiled),
            "compiled_examples": compiled[:8],
        }
    )
)
if ENDS_AS_CONSOLE:  # skip the interpreter's finalisation (CuPy's frees, module teardown): what is left is the driver's
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)
