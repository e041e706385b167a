"""How far the planner's calibration varies from one measurement to the next on this GPU.

Every machine measures the planner's constants once, on its first search, and keeps them
(``~/.cache/swgpu/calibration.json``, :mod:`swgpu_core.gpu.calibration`); a skewed measurement
would skew every later scan. ``python bench/calibration_spread.py --runs N [--idle S]`` measures
them N times, each in a fresh process with an empty cache (``SWGPU_CACHE`` a new folder), after
S seconds with the GPU idle (its clocks come down meanwhile), and prints one JSON line per run
and then each constant's smallest and largest value and their ratio.

Why: on 2026-11-27 one H100 machine ran every workload of the scoreboard 1.3-1.8 times slower
than another H100 with the same commit, while CUDASW++ ran as fast on both
(bench/RESULTS.md, twentieth session); that machine's calibration was not kept.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

CONSTANTS = ("inter_rate", "intra_rate", "inter_step", "intra_step", "inter_step_loaded", "intra_step_loaded")

#: a fresh process: GPU 0's worker, its model measured (the cache is empty), printed as JSON
CHILD = """
import json
from swgpu_core.gpu.search import DeviceWorker
from swgpu_core.scoring import Scoring
print(json.dumps(DeviceWorker(0, Scoring.protein(), None, None, None).model.to_json()))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--idle", type=float, default=0.0, help="seconds with the GPU idle before each run")
    args = parser.parse_args()
    models = []
    for run in range(args.runs):
        time.sleep(args.idle)
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, SWGPU_CACHE=cache)
            began = time.perf_counter()
            out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True).stdout
            model = json.loads(out.splitlines()[-1])
        models.append(model)
        print(json.dumps({"run": run + 1, "idle_s": args.idle, "seconds": round(time.perf_counter() - began, 2),
                          **{k: model[k] for k in CONSTANTS}}), flush=True)  # fmt: skip
    spread = {k: {"min": min(m[k] for m in models), "max": max(m[k] for m in models)} for k in CONSTANTS}
    for v in spread.values():
        v["max_over_min"] = round(v["max"] / v["min"], 3)
    print(json.dumps({"spread": spread}))


if __name__ == "__main__":
    main()
