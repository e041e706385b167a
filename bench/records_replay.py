"""A traced GPU search's records, replayed on the CPU: the host's part of ``align_query_hits``.

    python bench/tb_replay.py --db DB --queries q500.fasta --save capture.npz   # on a device
    python bench/records_replay.py --capture capture.npz --db DB --queries q500.fasta [--repeats 7] [--profile]

``capture.npz`` holds the hits a search of bench200M x 500 selected (top 50, E-value 10) and
the results of the one GPU traceback call their alignment made. Here
:func:`~swgpu_core.align.align_query_hits` runs on the same database (bench200M, rebuilt with
``make_bench_db.py --residues 200000000 --seed 7``) with an engine whose traceback does the
host's work of the CUDA engine's (packing the pairs, the results into the engine's currency)
around the stored results instead of the GPU's kernels. Timed: the whole call and its parts
(medians of ``--repeats``); ``--profile`` prints cProfile's top functions of one run. A
fingerprint of the records (every field but the texts, and the texts of a sample) tells
whether two trees make the same records.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import json
import pstats
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import swgpu_core as sw  # noqa: E402
from swgpu_core.search import QueryHits  # noqa: E402

FIELDS = ("status", "score", "qstart", "qend", "sstart", "send", "ops", "ops_start", "ops_len")


def load(capture: Path, db: sw.Database, queries: Path) -> tuple[list[QueryHits], dict[str, np.ndarray]]:
    data = np.load(capture)
    by_id = {q.id: q for q in sw.read_queries(queries)}
    bounds = np.concatenate(([0], np.cumsum(data["counts"])))
    hits = [
        QueryHits(by_id[str(qid)], data["subjects"][a:b].astype(np.int64), data["scores"][a:b].astype(np.int32))
        for qid, a, b in zip(data["query_ids"], bounds[:-1], bounds[1:])
    ]
    return hits, {f: data[f] for f in FIELDS}


def fingerprint(alignments: list) -> str:
    h = hashlib.sha256()
    for k, a in enumerate(x for per in alignments for x in per):
        h.update(repr((a.subject_id, a.rank, a.score, a.qstart, a.qend, a.sstart, a.send, a.length, a.identities, a.positives,
                       a.mismatches, a.gap_opens, a.gaps, a.evalue, a.bitscore)).encode())  # fmt: skip
        if k % 97 == 0:
            h.update((a.qseq + a.sseq + a.midline + a.cigar).encode())
    return h.hexdigest()[:16]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--capture", type=Path, required=True)
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--queries", type=Path, required=True)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    db = sw.open_database(args.db)
    scoring = sw.Scoring.protein()
    hits, stored = load(args.capture, db, args.queries)
    stats = sw.statistics(scoring, db)
    engine = replay_engine(stored)
    run = lambda: sw.align(db, hits, scoring, backend=engine, statistics=stats)  # noqa: E731
    first = run()
    walls = []
    for _ in range(args.repeats):
        t = time.perf_counter()
        run()
        walls.append(time.perf_counter() - t)
    if args.profile:
        prof = cProfile.Profile()
        prof.runcall(run)
        pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
    print(json.dumps({"records": first.count, "wall_s": round(statistics.median(walls), 4), "best_s": round(min(walls), 4),
                      "fingerprint": fingerprint(first.alignments)}))  # fmt: skip


def replay_engine(stored: dict[str, np.ndarray]):
    """The CUDA engine's traceback with the stored results in place of the kernels' (see the module doc)."""
    from swgpu_core.align import traceback as sw_traceback
    from swgpu_core.align.traceback import PairTrace

    class Replay:
        kind = "cuda"

        def traceback(self, tasks, scoring, threads=0, device=None):
            # the host's work of gpu.traceback.traceback_pairs around align_packed: the packing
            # (none where the pairs come packed, PairTasks) ...
            if not (hasattr(sw_traceback, "PairTasks") and isinstance(tasks, sw_traceback.PairTasks)):
                pack(tasks)
            # ... and PackedTraces.paths
            s = stored
            ends = [s[f] for f in ("score", "qstart", "qend", "sstart", "send")]
            if hasattr(sw_traceback, "TracedPaths"):
                return sw_traceback.TracedPaths.gather(ends, s["ops"], s["ops_start"], s["ops_len"])
            cols = [a.tolist() for a in (*ends, s["ops_start"], s["ops_len"])]  # trees before the paths as arrays
            ops = s["ops"]
            return [PairTrace(sc, qs, qe, ss, se, ops[o : o + n].copy()) for sc, qs, qe, ss, se, o, n in zip(*cols)]

    return Replay()


def pack(tasks) -> None:
    """The work of ``gpu.traceback.pack_sequences`` on ``tasks`` (its result is not needed here)."""
    where: dict[int, int] = {}
    size = 0
    for t in tasks:
        for a in (t.query, t.subject):
            if id(a) not in where:
                where[id(a)] = size
                size += a.size
    np.fromiter((where[id(t.query)] for t in tasks), np.int64, len(tasks))
    np.fromiter((where[id(t.subject)] for t in tasks), np.int64, len(tasks))
    np.concatenate([t.subject for t in tasks])


if __name__ == "__main__":
    main()
