#!/usr/bin/env python3
"""What a workflow GPU job pays before its command's own work, alone and two at once.

    python3 bench/job_start.py SLOT_DIR [--reps 5] [--json OUT]

A GPU job of the workflow runs ``swgpu gpu-run --slot-dir DIR -- swgpu search ...``: one
Python process that claims a device slot (asking ``nvidia-smi -L`` which devices there are,
unless ``--devices`` names them), then replaces itself with the command. On two GPUs the
first round's two jobs start at the same instant, and each took 0.3-0.5 s longer than the
same job alone (bench/RESULTS.md). Timed here, each as a fresh process, alone and as two
started together (the later of the two ends): ``nvidia-smi -L``; Python doing nothing;
``swgpu gpu-run -- true`` with and without ``--devices``; ``swgpu --version``. Each is timed
with no process holding CUDA's driver and with ``swgpu gpu-hold`` holding it, as the
workflow runs it. Prints one JSON object: medians in seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time


def span(commands: list[list[str]]) -> float:
    """Seconds from starting ``commands`` together to the end of the last."""
    t = time.perf_counter()
    procs = [subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for c in commands]
    for p in procs:
        p.wait()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("slot_dir")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json")
    args = ap.parse_args()
    py = sys.executable
    swgpu = [py, "-m", "swgpu_core"]
    cases = {
        "nvidia-smi -L": ["nvidia-smi", "-L"],
        "python -c pass": [py, "-c", "pass"],
        "swgpu --version": [*swgpu, "--version"],
        "gpu-run -- true": [*swgpu, "gpu-run", "--slot-dir", args.slot_dir, "--", "true"],
        "gpu-run --devices 0,1 -- true": [*swgpu, "gpu-run", "--slot-dir", args.slot_dir, "--devices", "0,1", "--", "true"],
    }
    out: dict = {}
    for held in (False, True):
        holder = subprocess.Popen([*swgpu, "gpu-hold", "--while-pid", str(os.getpid())]) if held else None
        if holder is not None:
            time.sleep(1.0)  # its cuInit done
        for name, command in cases.items():
            if shutil.which(command[0]) is None:
                continue
            span([command])  # warm the page cache
            alone = [span([command]) for _ in range(args.reps)]
            pair = [span([command, command]) for _ in range(args.reps)]
            key = f"{name}{' (driver held)' if held else ''}"
            out[key] = {"alone_s": round(statistics.median(alone), 4), "two_at_once_s": round(statistics.median(pair), 4)}
            print(key, out[key], flush=True)
        if holder is not None:
            holder.terminate()
            holder.wait()
    if args.json:
        with open(args.json, "w") as fh:
            fh.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
