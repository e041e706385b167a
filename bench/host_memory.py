"""Peak host memory of a command, anonymous and file-backed apart (device bench).

``python bench/host_memory.py -- swgpu search ...`` runs the command and samples its
``/proc/PID/status`` every 5 ms: ``RssAnon`` (the process's own memory: Python, CuPy, pinned
staging buffers, results) and ``RssFile`` (mapped file pages, such as the database's
memory-mapped residues, which the kernel can drop and read again). Prints one JSON line with
both peaks and the wall time. A streamed search should keep ``RssAnon`` flat whatever the
database's size: the residues reach the GPU through a fixed ring of pinned buffers.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time


def sample(pid: int) -> dict[str, int]:
    out: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key in ("RssAnon", "RssFile", "VmHWM"):
                    out[key] = int(value.split()[0]) * 1024
    except OSError:
        pass
    return out


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak = {"RssAnon": 0, "RssFile": 0, "VmHWM": 0}
    while proc.poll() is None:
        for key, value in sample(proc.pid).items():
            peak[key] = max(peak[key], value)
        time.sleep(0.005)
    err = proc.stderr.read() if proc.stderr else ""
    print(json.dumps({"argv": argv, "rc": proc.returncode, "wall_s": round(time.perf_counter() - start, 3),
                      "peak_bytes": peak, "stderr_tail": err.strip().splitlines()[-2:]}))  # fmt: skip


if __name__ == "__main__":
    main()
