"""How much a skewed planner calibration slows a search: each constant scaled in turn.

The planner's constants are measured once per machine and kept
(``~/.cache/swgpu/calibration.json``, :mod:`swgpu_core.gpu.calibration`). If one machine
measured them wrongly (a GPU still at low clocks, another process on it), every later
search there would be planned from them. ``python bench/calibration_sensitivity.py --db D
--query Q [--factors 0.5 2]`` copies this machine's cached calibration into a fresh cache for
every variant (all constants as measured, then each constant times each factor) and runs
``swgpu search`` once per variant after one warm-up, printing one JSON line per run with the
scan's GCUPS from the command's own summary line.

Why: on 2026-11-27 one H100 machine ran the scoreboard's searches at 0.57-0.78 of their
usual speed while CUDASW++ ran as usual there (bench/RESULTS.md, twentieth session); a skewed
calibration is one explanation, and this shows whether one can slow a search that much. It
could not: on another H100, ten calibrations from three machines all gave the usual speed
(the twenty-first session's `calreplay`); on the slow machine the constants measured as
steadily as elsewhere, and only the variants that move subjects to the inter-task kernel ran
at the usual speed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from calibration_spread import CONSTANTS  # the planner's six constants (this script's folder is on sys.path)

SUMMARY = re.compile(r"in ([0-9.]+) s, ([0-9.]+) GCUPS")


def search(db: str, query: str, cache: str) -> tuple[float, float]:
    """(scan seconds, GCUPS) of one ``swgpu search`` with the calibration cache in ``cache``."""
    cmd = [
        sys.executable,
        "-m",
        "swgpu_core",
        "search",
        "--db",
        db,
        "--query",
        query,
        "--backend",
        "cuda",
        "--top",
        "10",
        "--out",
        os.devnull,
    ]
    err = subprocess.run(cmd, env=dict(os.environ, SWGPU_CACHE=cache), capture_output=True, text=True, check=True).stderr
    found = SUMMARY.findall(err)
    if not found:
        raise SystemExit(f"no summary line in: {err[-500:]}")
    return float(found[-1][0]), float(found[-1][1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--query", required=True)
    parser.add_argument("--factors", type=float, nargs="+", default=[0.5, 2.0])
    args = parser.parse_args()
    home = os.environ.get("SWGPU_CACHE", str(Path.home() / ".cache" / "swgpu"))
    search(args.db, args.query, home)  # warm-up; measures the calibration where none is cached
    measured = json.loads((Path(home) / "calibration.json").read_text())
    variants: list[tuple[str, float]] = [("as measured", 1.0)] + [(k, f) for k in CONSTANTS for f in args.factors]
    for constant, factor in variants:
        with tempfile.TemporaryDirectory() as cache:
            skewed = {
                key: {**model, **({constant: model[constant] * factor} if constant in model else {})} for key, model in measured.items()
            }
            (Path(cache) / "calibration.json").write_text(json.dumps(skewed))
            seconds, gcups = search(args.db, args.query, cache)
        print(json.dumps({"constant": constant, "factor": factor, "scan_s": seconds, "gcups": gcups, "db": Path(args.db).name}), flush=True)


if __name__ == "__main__":
    main()
