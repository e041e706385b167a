"""Where a ``swgpu`` command's wall time goes: run it in this process with its main phases timed.

``python bench/phase_times.py search --db ... --query ...`` runs the command as ``swgpu``
would and prints one JSON line: seconds since the interpreter started (from /proc) at the
end of the imports this script does first, and each timed call's start and end (main
thread; the GPU warm-up thread's own work under ``warm_up_thread``). Also reports the
stack that first imports ``cupyx`` (it pulls in scipy.sparse), if anything does.
"""

from __future__ import annotations

import functools
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
    original = getattr(owner, name)

    @functools.wraps(original)
    def wrapper(*a, **k):
        import threading

        s = time.time()
        try:
            return original(*a, **k)
        finally:
            spans.append((label, round(s - T0, 3), round(time.time() - T0, 3), threading.current_thread().name))

    setattr(owner, name, wrapper)


import importlib  # noqa: E402

api, cli, engine, formats, search, search_command = (
    importlib.import_module(f"swgpu_core.{m}") for m in ("api", "cli", "engine", "formats", "search", "commands.search")
)

imported = time.time() - T0
timed(cli, "build_parser", "build_parser")
timed(engine, "_warm", "warm_up_thread")
timed(engine, "probe_gpu", "probe_gpu")
timed(api, "open_database", "open_database")
timed(api, "read_queries", "read_queries")
timed(api, "statistics", "statistics")
timed(search, "search", "search (scanner made before)")
timed(formats, "write_output", "write_output")
timed(search_command, "run", "command run")
align_long_command, long_trace = (importlib.import_module(f"swgpu_core.{m}") for m in ("commands.align_long", "long.trace"))
timed(align_long_command, "run", "align-long run")
timed(api, "read_sequence", "read_sequence")
timed(api, "scan_long", "scan_long")
timed(api, "trace_long", "trace_long")
timed(long_trace, "trace_on_gpu", "trace_on_gpu")
timed(long_trace, "trace_end_points", "trace_end_points (CPU)")
if "--backend" in sys.argv and sys.argv[sys.argv.index("--backend") + 1] != "cpu":
    from swgpu_core.gpu import kernels
    from swgpu_core.gpu import search as gpu_search

    timed(gpu_search.CudaBackend, "__init__", "CudaBackend()")
    timed(gpu_search.CudaBackend, "scan", "CudaBackend.scan")
    timed(gpu_search.DeviceWorker, "prepare", "DeviceWorker.prepare")
    timed(gpu_search.DeviceWorker, "upload", "DeviceWorker.upload")
    timed(kernels, "ScanKernels", "ScanKernels()")
    if sys.argv[1] == "align-long":
        from swgpu_core.gpu import long_scan
        from swgpu_core.gpu import traceback as gpu_traceback

        timed(long_scan, "scan_sections", "gpu scan_sections")
        timed(gpu_traceback, "align_packed", "align_packed")
        timed(gpu_traceback, "pack_sequences", "pack_sequences")
        timed(gpu_traceback, "_ends", "tb _ends")
        timed(gpu_traceback, "_regions", "tb _regions")
rc = cli.main(sys.argv[1:])
end = time.time() - T0
print(
    json.dumps(
        {
            "argv": sys.argv[1:],
            "imports_done": round(imported, 3),
            "end": round(end, 3),
            "rc": rc,
            "spans": sorted(spans, key=lambda s: s[1]),
            "cupyx_imported_from": cupyx_stack,
            "compiled_from_source": len(compiled),
            "compiled_examples": compiled[:8],
        }
    )
)
