"""Device time of the traceback kernels per rows-per-lane R and team size W (device bench).

``python bench/tb_team_probe.py [--out FILE]``: traces three workloads with
:func:`swgpu_core.gpu.traceback.align_packed`, every pair forced to each (R, W) of
R in 4, 8, 16 and W in the team sizes (``gpu_plan.TEAM_SIZES``), and as the plan lays them out:

* ``huge``: the largest pair of a traced bench200M x 500 search (a 4,291-residue protein query
  against a 29,880-residue subject holding a mutated copy of its middle), its score known;
* ``long1``: one align-long-like pair, 10^4 DNA against a mutated copy (tests/long_data.py);
* ``long200``: 200 such pairs at once (align-long's 200 end points).

Prints one JSON line per workload and layout: the kernels' seconds (CUDA events, the median
of 3 runs after a warm-up) and whether every layout gave the same traces. From ``long1``'s
rows the step cost of a team of W warps against one warp (``gpu_plan.TEAM_STEP_COST``) follows:
seconds / (team passes * (cols + (W - 1) * TB_TEAM_DELAY + 31)).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from long_data import mutate  # noqa: E402

from swgpu_core.align import gpu_plan  # noqa: E402
from swgpu_core.gpu import traceback as tb  # noqa: E402
from swgpu_core.scoring import Scoring  # noqa: E402


def workloads() -> dict[str, tuple]:
    rng = np.random.default_rng(5)
    q = rng.integers(0, 20, 4_291).astype(np.uint8)
    mid = q[1_000:3_000].copy()
    keep = rng.random(mid.size) > 0.2
    mid[~keep] = rng.integers(0, 20, int((~keep).sum()))
    s = np.concatenate([rng.integers(0, 20, 12_000), mid, rng.integers(0, 20, 29_880 - 12_000 - mid.size)]).astype(np.uint8)
    out = {"huge": ([q], [s], Scoring.protein())}
    dna = [rng.integers(0, 4, 10_000).astype(np.uint8) for _ in range(200)]
    out["long1"] = (dna[:1], [mutate(dna[0], 7)], Scoring.nucleotide())
    out["long200"] = (dna, [mutate(d, k) for k, d in enumerate(dna)], Scoring.nucleotide())
    return out


def run(packed: tuple, scoring: Scoring, forced: tuple[int, int] | None, reps: int = 3) -> tuple[dict, tuple]:
    real = tb._Kernels.layout
    if forced is not None:
        tb._Kernels.layout = lambda self, rows, cols: (
            np.full(np.size(rows), forced[0], np.int64),
            np.full(np.size(rows), forced[1], np.int64),
        )
    try:
        tb.align_packed(*packed, scoring)  # warm-up (and the kernels' compilation)
        times, trace = [], None
        for _ in range(reps):
            out = tb.align_packed(*packed, scoring)
            times.append(out.kernel_seconds)
            trace = (out.status.tolist(), out.score.tolist(), out.qstart.tolist(), out.sstart.tolist(), out.ops_len.tolist())
    finally:
        tb._Kernels.layout = real
    names = sorted({k for t in times for k in t})
    return {k: round(statistics.median(t.get(k, 0.0) for t in times), 5) for k in names}, trace


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    lines = []
    for name, (queries, subjects, scoring) in workloads().items():
        packed = tb.pack_sequences(queries, subjects)
        ref = None
        layouts = [None] + [(r, w) for r in gpu_plan.ROWS_PER_LANE for w in gpu_plan.TEAM_SIZES]
        if name == "long200":  # the plan's and its neighbours: 200 pairs at every layout take long
            layouts = [None] + [(16, w) for w in gpu_plan.TEAM_SIZES] + [(8, 4), (4, 8)]
        for forced in layouts:
            seconds, trace = run(packed, scoring, forced)
            ref = ref or trace
            planned = tb._Kernels(None, np.zeros((scoring.matrix.shape[0],) * 2), scoring, None, 132, tb._block_shared_bytes(0)).layout(
                np.array([q.size for q in queries]), np.array([s.size for s in subjects])
            )
            line = {"workload": name, "pairs": len(queries), "R": forced[0] if forced else "planned", "W": forced[1] if forced else "planned",
                    "plan": sorted({(int(a), int(b)) for a, b in zip(*planned)}), "kernel_s": seconds, "same_traces": trace == ref}  # fmt: skip
            print(json.dumps(line), flush=True)
            lines.append(line)
    if args.out:
        args.out.write_text("".join(json.dumps(x) + "\n" for x in lines))


if __name__ == "__main__":
    main()
