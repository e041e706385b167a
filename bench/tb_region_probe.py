"""Device time of the traceback kernels on one huge related pair, per rows-per-lane R (device bench).

``python bench/tb_region_probe.py [--length 10000]``: a DNA query and its mutated copy
(tests/long_data.py), traced by :func:`swgpu_core.gpu.traceback.align_packed` (forward and
reverse scans in ``tb_ends``, then ``tb_region`` and ``tb_walk``) with R forced to each of 4, 8
and 16; prints one JSON line per R with the kernels' seconds and the path's length, and checks
that every R gives the same trace.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from long_data import mutate  # noqa: E402

from swgpu_core.gpu import traceback as tb  # noqa: E402
from swgpu_core.scoring import Scoring  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--length", type=int, default=10_000)
    args = ap.parse_args()
    rng = np.random.default_rng(5)
    q = rng.integers(0, 4, args.length).astype(np.uint8)
    s = mutate(q, 7)
    residues, qoff, qlen, soff, slen = tb.pack_sequences([q], [s])
    sc = Scoring.nucleotide()
    real = tb.rows_per_lane
    ref = None
    for r in (None, 4, 8, 16):
        if r is not None:
            tb.rows_per_lane = lambda rows, cols, few=False, r=r: np.full(np.size(rows), r, np.int64)
        tb.align_packed(residues, qoff, qlen, soff, slen, sc)  # warm-up (and compile)
        t = time.perf_counter()
        out = tb.align_packed(residues, qoff, qlen, soff, slen, sc)
        wall = time.perf_counter() - t
        tb.rows_per_lane = real
        trace = (int(out.score[0]), int(out.qstart[0]), int(out.qend[0]), int(out.sstart[0]), int(out.send[0]), int(out.ops_len[0]))
        ref = ref or trace
        assert trace == ref, (r, trace, ref)
        cells = (trace[2] - trace[1] + 1) * (trace[4] - trace[3] + 1)
        print(json.dumps({"R": r or "planned", "trace": trace, "region_cells": cells, "wall_s": round(wall, 4),
                          "kernel_s": {k: round(v, 4) for k, v in out.kernel_seconds.items()}}), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
