"""Pairwise alignment throughput: N pairs of L residues cut from uniprot20k, score + traceback.

    python bench/bench_pairs.py --data ../shared/data --backend cuda --pairs 500000 --length 512
    python bench/bench_pairs.py --data ../shared/data --backend cpu --pairs 2000 --length 512

Query and subject of each pair are slices of the concatenated uniprot20k residues at
random offsets (real sequence, mostly unrelated, like the hits of a database search); with
``--related`` the subject is a mutated copy of the query (long gapped alignments, the worst
case for pass 3 and the walk). GCUPS counts the N * L * L cells of each pair's table once,
although the kernels visit some of them up to three times (forward scan, reverse scan,
region).

cuda: ``align_packed`` on all pairs (no per-pair Python objects), kind ``pairs`` without
scores and kind ``traceback`` with the scores given (as after a search); a warm-up first,
then the median of ``--repeats`` runs, wall clock around the whole call (upload, kernels,
download, host bookkeeping) plus the kernels' own CUDA-event times. One line per kind is
appended to ``--out``. cpu: the numba reference on all cores of this machine, and parasail's
striped traceback (``sw_trace_striped_32``, open 12 = our 11, see README) when installed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from swgpu_core.align.traceback import PairTask, PairTasks  # noqa: E402
from swgpu_core.alphabet import PROTEIN  # noqa: E402
from swgpu_core.cores import cpu_threads  # noqa: E402
from swgpu_core.fasta import read_sequences  # noqa: E402
from swgpu_core.kernel_abi import Status  # noqa: E402
from swgpu_core.scoring import Scoring  # noqa: E402


def make_pairs(data: Path, n: int, length: int, related: bool, seed: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Flat residues and the (query, subject) offsets of ``n`` pairs of ``length`` residues."""
    seqs = read_sequences(data / "uniprot20k.fasta.gz")
    flat = np.concatenate([s.codes for s in seqs])
    rng = np.random.default_rng(seed)
    qoff = rng.integers(0, flat.size - length, n)
    if not related:
        return flat, qoff, rng.integers(0, flat.size - length, n)
    # mutated copies: 25% substitutions and a few 1-3 residue shifts, appended after the residues
    subj = flat[qoff[:, None] + np.arange(length)]
    subst = rng.random(subj.shape) < 0.25
    subj[subst] = rng.integers(0, 20, int(subst.sum()))
    for row in subj:
        for _ in range(3):
            at, k = int(rng.integers(0, length - 4)), int(rng.integers(1, 4))
            row[at:] = np.roll(row[at:], k)
    soff = flat.size + np.arange(n, dtype=np.int64) * length
    return np.concatenate([flat, subj.ravel()]), qoff, soff


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def bench_cuda(args, scoring, flat, qoff, soff) -> list[dict]:
    import cupy as cp

    from swgpu_core.gpu import traceback as gpu

    n, L = qoff.size, args.length
    lens = np.full(n, L, np.int32)
    warm = min(n, 4096)
    gpu.align_packed(flat, qoff[:warm], lens[:warm], soff[:warm], lens[:warm], scoring)
    out = []
    expected = None
    for kind in ("pairs", "traceback"):
        walls, kernels, res = [], [], None
        for _ in range(args.repeats):
            cp.cuda.Device().synchronize()
            t0 = time.perf_counter()
            res = gpu.align_packed(flat, qoff, lens, soff, lens, scoring, expected)
            walls.append(time.perf_counter() - t0)
            kernels.append(dict(res.kernel_seconds))
        bad = int(np.count_nonzero((res.status != Status.OK) & (res.status != Status.NO_ALIGNMENT)))
        wall = statistics.median(walls)
        ksum = statistics.median(sum(k.values()) for k in kernels)
        row = {
            "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "commit": commit(),
            "gpu": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
            "kind": kind,
            "pairs": n,
            "length": L,
            "related": args.related,
            "pairs_per_s": n / wall,
            "gcups": n * L * L / wall / 1e9,
            "seconds": wall,
            "kernel_seconds": ksum,
            "kernel_pairs_per_s": n / ksum,
            "kernel_gcups": n * L * L / ksum / 1e9,
            "per_kernel": {k: statistics.median(d.get(k, 0.0) for d in kernels) for k in kernels[0]},
            "repeats": walls,
            "aligned": int(np.count_nonzero(res.status == Status.OK)),
            "errors": bad,
            "mean_ops": float(res.ops_len.mean()),
            "scoring": scoring.describe(),
        }
        out.append(row)
        print(
            f"{kind:9s} {n} pairs of {L}{' related' if args.related else ''}: {row['pairs_per_s']:,.0f} pairs/s "
            f"({row['gcups']:.1f} GCUPS) end to end, kernels {row['kernel_pairs_per_s']:,.0f} pairs/s "
            f"({row['kernel_gcups']:.1f} GCUPS) {row['per_kernel']}, errors {bad}"
        )
        expected = res.score.copy()
    api = min(n, 100_000)  # the backend seam of `swgpu search --align`: the pairs in, TracedPaths out
    keep = [i for i in range(api) if expected[i] > 0]
    tasks = [PairTask(flat[qoff[i] : qoff[i] + L], flat[soff[i] : soff[i] + L], int(expected[i])) for i in keep]
    idx = np.asarray(keep, np.int64)
    packed = PairTasks(flat, qoff[idx], lens[idx], soff[idx], lens[idx], expected[idx].astype(np.int64))  # as a search packs its hits
    gpu.traceback_pairs(tasks[:warm], scoring)
    base = out[-1]  # the traceback kernels' row
    for kind, given, what in (("traceback-api", tasks, "PairTask objects in"), ("traceback-packed", packed, "PairTasks (packed) in")):
        t0 = time.perf_counter()
        gpu.traceback_pairs(given, scoring)
        wall = time.perf_counter() - t0
        row = dict(base, kind=kind, pairs=len(keep), pairs_per_s=len(keep) / wall, gcups=len(keep) * L * L / wall / 1e9, seconds=wall)
        for key in ("kernel_seconds", "kernel_pairs_per_s", "kernel_gcups", "per_kernel", "repeats", "aligned", "errors", "mean_ops"):
            row.pop(key)
        out.append(row)
        print(f"{kind} {len(keep)} pairs: {row['pairs_per_s']:,.0f} pairs/s end to end (one run, {what}, TracedPaths out)")
    if args.profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.runcall(gpu.align_packed, flat, qoff, lens, soff, lens, scoring)
        pstats.Stats(prof).sort_stats("tottime").print_stats(12)
    if args.check:
        from swgpu_core.align import traceback as cpu

        k = min(n, args.check)
        want = cpu.align_pairs([flat[o : o + L] for o in qoff[:k]], [flat[o : o + L] for o in soff[:k]], scoring)
        for i, w in enumerate(want):
            t = res.trace(i)
            assert w is not None and (t.qstart, t.qend, t.sstart, t.send, t.score) == (w.qstart, w.qend, w.sstart, w.send, w.score)
            assert np.array_equal(t.ops, w.ops), f"pair {i}: paths differ"
        print(f"checked {k} pairs against the CPU reference: identical")
    return out


def bench_cpu(args, scoring, flat, qoff, soff) -> list[dict]:
    from swgpu_core.align import traceback as cpu

    L = args.length
    qs = [flat[o : o + L] for o in qoff]
    ss = [flat[o : o + L] for o in soff]
    cpu.align_pairs(qs[:4], ss[:4], scoring)  # compile / load the numba cache
    t0 = time.perf_counter()
    cpu.align_pairs(qs, ss, scoring, threads=args.threads)
    wall = time.perf_counter() - t0
    rows = [
        {
            "kind": "pairs-cpu",
            "pairs": len(qs),
            "length": L,
            "threads": args.threads,
            "pairs_per_s": len(qs) / wall,
            "gcups": len(qs) * L * L / wall / 1e9,
            "seconds": wall,
        }
    ]
    try:
        import parasail
    except ImportError:
        parasail = None
    if parasail is not None:
        letters = [PROTEIN.decode(q) for q in qs], [PROTEIN.decode(s) for s in ss]
        t0 = time.perf_counter()
        for q, s in zip(*letters):
            r = parasail.sw_trace_striped_32(q, s, scoring.gap_open + scoring.gap_extend, scoring.gap_extend, parasail.blosum62)
            _ = r.cigar  # the traceback proper is lazy
        wall = time.perf_counter() - t0
        rows.append(
            {
                "kind": "pairs-parasail",
                "pairs": len(qs),
                "length": L,
                "threads": 1,
                "pairs_per_s": len(qs) / wall,
                "gcups": len(qs) * L * L / wall / 1e9,
                "seconds": wall,
            }
        )
    for r in rows:
        print(
            f"{r['kind']:15s} {r['pairs']} pairs of {L}, {r['threads']} threads: {r['pairs_per_s']:,.0f} pairs/s ({r['gcups']:.2f} GCUPS)"
        )
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    p.add_argument("--backend", choices=("cuda", "cpu"), default="cuda")
    p.add_argument("--pairs", type=int, default=500_000)
    p.add_argument("--length", type=int, default=512)
    p.add_argument("--related", action="store_true", help="subjects are mutated copies of the queries")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=0, help="CPU threads (default: all cores)")
    p.add_argument("--check", type=int, default=0, help="compare the first N GPU paths with the CPU reference")
    p.add_argument("--profile", action="store_true", help="print where the host time of one GPU call goes (cProfile)")
    p.add_argument("--out", type=Path, help="append the GPU results (JSON lines) here")
    args = p.parse_args()
    scoring = Scoring.protein()
    flat, qoff, soff = make_pairs(args.data, args.pairs, args.length, args.related)
    if args.backend == "cpu":
        args.threads = cpu_threads(args.threads)
        bench_cpu(args, scoring, flat, qoff, soff)
        return
    rows = bench_cuda(args, scoring, flat, qoff, soff)
    if args.out:
        with open(args.out, "a") as fh:
            for r in rows:
                fh.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
