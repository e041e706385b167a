"""Where a search's traceback spends its time on one GPU and on several (``gpu.traceback.align_on``).

    python3 bench/tb_devices.py DB QUERIES [--top 50] [--devices 0,1] [--rounds 3]
    python3 bench/tb_devices.py --random N,LENGTH [--devices 0,1] [--rounds 3]

With ``--random``, N random pairs of LENGTH residues (a sequence and a mutated copy: long
gapped alignments, as ``swgpu pairs`` meets them) instead of a search's hits.

Searches ``QUERIES`` against ``DB`` on the listed GPUs (untimed), then traces the top hits as
``swgpu search`` does (``align_query_hits``), and times, in one process:

* the first traceback on the first GPU, cold (its first use of the kernels; profiled, on
  stderr), then the first on all of them (the others' first use);
* per round, the pairs on GPU 0 alone, on all the listed GPUs, and each run of the cut
  (``device_parts``) alone on its GPU, one after another (what each GPU's share costs);
* the three phases of ``align_query_hits`` on GPU 0: the tasks gathered, ``align_packed``
  (the GPU), ``build_alignments`` (the records, CPU).

One JSON line on stdout: medians of the rounds, seconds.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import statistics
import sys
import time

import cupy as cp
import numpy as np

from swgpu_core import api
from swgpu_core.align.alignment import build_alignments
from swgpu_core.align.gpu_plan import device_parts
from swgpu_core.align.traceback import PairTask
from swgpu_core.commands import parse_index_list
from swgpu_core.fasta import EncodedSequence
from swgpu_core.gpu import traceback as gpu
from swgpu_core.gpu.device import geometry
from swgpu_core.scoring import Scoring


def timed(fn, *args, **kwargs) -> tuple[float, object]:
    t = time.perf_counter()
    out = fn(*args, **kwargs)
    for d in range(cp.cuda.runtime.getDeviceCount()):
        with cp.cuda.Device(d):
            cp.cuda.Device().synchronize()
    return time.perf_counter() - t, out


def random_pairs(args: argparse.Namespace, devices: list[int], scoring: Scoring) -> None:
    """One and all GPUs on ``--random`` pairs: medians of the rounds after a cold call on each."""
    n, length = (int(x) for x in args.random.split(","))
    rng = np.random.default_rng(5)
    qs, ss = [], []
    for _ in range(n):
        q = rng.integers(0, 20, length).astype(np.uint8)
        s = q.copy()
        hit = rng.random(length) < 0.25
        s[hit] = rng.integers(0, 20, int(hit.sum()))
        cut = rng.random(length) < 0.02  # deletions
        qs.append(q)
        ss.append(s[~cut].copy())
    packed = gpu.pack_sequences(qs, ss)
    rec: dict = {"pairs": n, "length": length, "devices": devices}
    rec["parts"] = device_parts(packed[2], packed[4], len(devices), geometry(devices[0]).sms)
    rec["cold_first_s"] = round(timed(gpu.align_on, [devices[0]], *packed, scoring)[0], 3)
    rec["cold_others_s"] = round(timed(gpu.align_on, devices, *packed, scoring)[0], 3)
    rows: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        rows.setdefault("one_gpu_s", []).append(timed(gpu.align_on, [devices[0]], *packed, scoring)[0])
        rows.setdefault("all_gpus_s", []).append(timed(gpu.align_on, devices, *packed, scoring)[0])
    rec.update({k: round(statistics.median(v), 3) for k, v in rows.items()})
    print(json.dumps(rec))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("db", nargs="?")
    ap.add_argument("queries", nargs="?")
    ap.add_argument("--random", help="N,LENGTH: random related pairs instead of a search's hits")
    ap.add_argument("--top", type=int, default=50)
    ap.add_argument("--devices", default="0,1")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    devices = parse_index_list(args.devices, "--devices")
    scoring = Scoring.protein()
    if args.random:
        random_pairs(args, devices, scoring)
        return
    db = api.open_database(args.db)
    queries = api.read_queries(args.queries, db.alphabet)
    result = api.search(db, queries, scoring, backend="cuda", top=args.top, devices=devices, show_progress=False)
    hits = api.select_hits(db, result.hits, result.statistics)

    gathered = time.perf_counter()
    indices = [i for qh in hits for i in qh.subjects.tolist()]
    unique = list(dict.fromkeys(indices))
    sequences = {i: EncodedSequence(ident, desc, np.asarray(db.codes(i))) for i, (ident, desc) in zip(unique, db.headers(unique))}
    qs = [qh.query for qh in hits for _ in range(len(qh))]
    ss = [sequences[i] for i in indices]
    scores = [s for qh in hits for s in qh.scores.tolist()]
    tasks = [PairTask(q.codes, s.codes, score) for q, s, score in zip(qs, ss, scores)]
    gathered = time.perf_counter() - gathered

    packed = gpu.pack_sequences([t.query for t in tasks], [t.subject for t in tasks])
    expected = np.array(scores, np.int32)
    parts = device_parts(packed[2], packed[4], len(devices), geometry(devices[0]).sms)
    rec: dict = {"pairs": len(tasks), "devices": devices, "parts": parts, "gather_s": round(gathered, 3)}
    profile = cProfile.Profile()
    profile.enable()
    rec["cold_first_s"] = round(timed(gpu.align_on, [devices[0]], *packed, scoring, expected)[0], 3)
    profile.disable()
    pstats.Stats(profile, stream=sys.stderr).sort_stats("cumulative").print_stats(30)
    rec["cold_others_s"] = round(timed(gpu.align_on, devices, *packed, scoring, expected)[0], 3)
    rows: dict[str, list[float]] = {}
    kernel: dict[str, list[dict]] = {}
    for _ in range(args.rounds):
        t, res = timed(gpu.align_on, [devices[0]], *packed, scoring, expected)
        rows.setdefault("one_gpu_s", []).append(t)
        kernel.setdefault("one_gpu", []).append(res.kernel_seconds)
        t, res = timed(gpu.align_on, devices, *packed, scoring, expected)
        rows.setdefault("all_gpus_s", []).append(t)
        kernel.setdefault("all_gpus", []).append(res.kernel_seconds)
        for d, (a, b) in zip(devices, parts):
            with cp.cuda.Device(d):
                part = slice(a, b)
                t, res = timed(
                    gpu.align_packed, packed[0], packed[1][part], packed[2][part], packed[3][part], packed[4][part], scoring, expected[part]
                )
            rows.setdefault(f"part_{d}_alone_s", []).append(t)
            kernel.setdefault(f"part_{d}", []).append(res.kernel_seconds)
        t, res = timed(gpu.align_on, [devices[0]], *packed, scoring, expected)
        traces = res.traces(np.arange(len(tasks)))
        t2 = time.perf_counter()
        build_alignments(traces, qs, ss, indices, [1] * len(tasks), scoring)
        rows.setdefault("build_alignments_s", []).append(time.perf_counter() - t2)
    rec.update({k: round(statistics.median(v), 3) for k, v in rows.items()})
    rec["kernel_s"] = {k: {n: round(statistics.median(x[n] for x in v), 3) for n in v[0]} for k, v in kernel.items()}
    print(json.dumps(rec))


if __name__ == "__main__":
    main()
