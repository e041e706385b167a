"""A traced search's GPU traceback call, replayed under several launch plans (device bench).

``python bench/tb_replay.py --db DIR --queries FASTA [--top 50] [--reps 3]``: searches on GPU 0,
selects the hits as ``swgpu search`` does (E-value 10), traces them through the API and keeps
the one :func:`swgpu_core.gpu.traceback.align_packed` call that makes; then replays that call
as planned; with the one-warp groups' launches on one stream, one after another; with the
latency-bound pairs' threshold (``gpu_plan.latency_bound``) divided by 4; with every pair on
one warp at the R of its least latency (``team_warps=1``); and with every R's cells costed alike
(``gpu_plan.CELL_COST``). ``--uniform N`` replays
20,000 related pairs of 100 to N residues instead (``swgpu pairs``: the throughput). Prints one JSON line per plan: the call's wall
time and kernel seconds (medians of ``--reps`` after a warm-up), the layouts' counts, and
whether every plan gave the planned call's results.
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import swgpu_core as sw  # noqa: E402
from swgpu_core.align import gpu_plan  # noqa: E402
from swgpu_core.gpu import traceback as tb  # noqa: E402
from swgpu_core.gpu.device import geometry  # noqa: E402


def captured_call(db_dir: str, queries: str, top: int, save: str | None = None) -> tuple[tuple, dict]:
    """The call's arguments; with ``save``, the selected hits and the call's results in that
    ``.npz`` too (for replaying the records on the CPU: ``bench/records_replay.py``)."""
    db = sw.open_database(db_dir)
    scoring = sw.Scoring.protein()
    result = sw.search(db, queries, scoring, backend="cuda", top=top, devices=[0])
    selected = sw.select_hits(db, result.hits, result.statistics)
    calls = []
    real = tb.align_packed

    def capture(*args, **kwargs):
        out = real(*args, **kwargs)
        calls.append((args, kwargs, out))
        return out

    tb.align_packed = capture
    try:
        sw.align(db, selected, scoring, backend="cuda", statistics=result.statistics, device=0)
    finally:
        tb.align_packed = real
    assert len(calls) == 1, len(calls)
    args, kwargs, out = calls[0]
    if save:
        fields = ("status", "score", "qstart", "qend", "sstart", "send", "ops", "ops_start", "ops_len")
        np.savez_compressed(
            save,
            query_ids=np.array([qh.query.id for qh in selected]),
            counts=np.array([len(qh) for qh in selected]),
            subjects=np.concatenate([qh.subjects for qh in selected]),
            scores=np.concatenate([qh.scores for qh in selected]),
            **{f: getattr(out, f) for f in fields},
        )
    return args, kwargs


def scaled_bound(factor: float):
    def bound(rows, cols, sms):
        rows = np.asarray(rows, np.int64)
        if gpu_plan.few_pairs(rows.size, sms):
            return np.ones(rows.size, bool)
        alone = gpu_plan.latency(rows, cols, gpu_plan.rows_per_lane(rows, cols))
        return alone > alone.sum() / (gpu_plan.FEW_PAIRS_PER_SM * sms) / factor

    return bound


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db")
    ap.add_argument("--queries")
    ap.add_argument("--top", type=int, default=50)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--save", help="keep the selected hits and the call's results in this .npz")
    ap.add_argument("--uniform", type=int, default=0, help="replay 20,000 related pairs of 100 to this many residues instead")
    args = ap.parse_args()
    if args.uniform:  # many pairs of one kind (swgpu pairs): the throughput
        rng = np.random.default_rng(1)
        qs = [rng.integers(0, 20, int(rng.integers(100, args.uniform))).astype(np.uint8) for _ in range(20_000)]
        ss = [np.where(rng.random(q.size) < 0.3, rng.integers(0, 20, q.size), q).astype(np.uint8) for q in qs]
        call_args, call_kwargs = (*tb.pack_sequences(qs, ss), sw.Scoring.protein()), {}
    else:
        call_args, call_kwargs = captured_call(args.db, args.queries, args.top, args.save)
    rows, cols = np.asarray(call_args[2]), np.asarray(call_args[4])
    sms = geometry(0).sms
    real_bound, real_cost = gpu_plan.latency_bound, dict(gpu_plan.CELL_COST)
    equal = {4: 1.0, 8: 1.0, 16: 1.0}
    variants = [("planned", 1, None, real_cost), ("one-warp groups on one stream", 1, None, real_cost),
                ("planned, bound/4", 4, None, real_cost), ("one warp", 1, 1, real_cost), ("cells alike", 1, None, equal)]  # fmt: skip
    real_launch = tb._Kernels.launch

    def one_stream(self, kind, r, w, n, args, apart=None):  # as until 2026-11-28: the one-warp groups one after another
        return real_launch(self, kind, r, w, n, args, apart if w > 1 else None)

    ref = None
    for name, factor, team, cost in variants:
        gpu_plan.latency_bound = scaled_bound(factor)
        gpu_plan.CELL_COST.update(cost)
        tb._Kernels.launch = one_stream if name == "one-warp groups on one stream" else real_launch
        try:
            r, w = gpu_plan.layout(rows, cols, sms) if team is None else (None, None)
            kwargs = dict(call_kwargs, team_warps=team) if team else call_kwargs
            tb.align_packed(*call_args, **kwargs)  # warm-up
            walls, kernels = [], []
            for _ in range(args.reps):
                t = time.perf_counter()
                out = tb.align_packed(*call_args, **kwargs)
                walls.append(time.perf_counter() - t)
                kernels.append(out.kernel_seconds)
        finally:
            gpu_plan.latency_bound = real_bound
            gpu_plan.CELL_COST.update(real_cost)
            tb._Kernels.launch = real_launch
        got = (out.status.tobytes(), out.qstart.tobytes(), out.sstart.tobytes(), out.ops_len.tobytes())
        ref = ref or got
        layouts = collections.Counter(zip(r.tolist(), w.tolist())) if r is not None else {}
        line = {"plan": name, "pairs": int(rows.size), "cells": int((rows * cols).sum()), "wall_s": round(statistics.median(walls), 4),
                "kernel_s": {k: round(statistics.median(x.get(k, 0.0) for x in kernels), 4) for k in sorted(kernels[0])},
                "layouts": {f"R{a}W{b}": n for (a, b), n in sorted(layouts.items())}, "same": got == ref}  # fmt: skip
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
