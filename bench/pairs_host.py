"""``swgpu pairs``' host part on the CPU: everything of :func:`swgpu_core.pairs.align_pair_set` but the traceback.

    python bench/pairs_host.py [--pairs 20000] [--repeats 5] [--work /tmp/pairs-host]

``--pairs`` related protein pairs (80-300 residues, 30% of the subject's residues redrawn)
are traced once by the CPU reference and kept in ``--work``; then ``align_pair_set`` runs
with BLAST's statistics and an engine that hands back those paths, as the GPU's would be
(subjects, records, E-values, the hits the writers take). Prints the median seconds and
microseconds per pair, and a fingerprint of the records (every compared field, E-values
included) to tell whether two trees make the same.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from swgpu_core.align.traceback import AlignedPairs  # noqa: E402
from swgpu_core.engine import get_engine  # noqa: E402
from swgpu_core.fasta import EncodedSequence  # noqa: E402
from swgpu_core.pairs import PairSet, SubjectSet, align_pair_set  # noqa: E402
from swgpu_core.scoring import Scoring  # noqa: E402
from swgpu_core.significance import statistics as run_statistics  # noqa: E402


class Subjects(SubjectSet):
    """The subjects of the generated pairs (a :class:`SubjectSet` without its FASTA file)."""

    def __init__(self, records: list[EncodedSequence], scoring: Scoring) -> None:
        self._records = records
        self.lengths = np.array([len(r) for r in records], np.int64)
        self.order = np.arange(len(records), dtype=np.int64)
        self.alphabet = scoring.alphabet
        self.version_tag = "generated"


class Replay:
    """An engine whose ``align_pairs`` hands back stored paths, as the GPU's would come (arrays)."""

    kind = "cuda"

    def __init__(self, traces: list) -> None:
        self.traces = traces

    def align_pairs(self, queries, subjects, scoring, threads: int = 0) -> AlignedPairs:
        return AlignedPairs.of(self.traces)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=20_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--work", type=Path, default=Path("/tmp/pairs-host"))
    args = ap.parse_args()
    scoring = Scoring.protein()
    rng = np.random.default_rng(1)
    qs = [rng.integers(0, 20, int(rng.integers(80, 300))).astype(np.uint8) for _ in range(args.pairs)]
    ss = [np.where(rng.random(q.size) < 0.3, rng.integers(0, 20, q.size), q).astype(np.uint8) for q in qs]
    args.work.mkdir(parents=True, exist_ok=True)
    stored = args.work / f"traces-{args.pairs}.pickle"
    if stored.is_file():
        traces = pickle.loads(stored.read_bytes())
    else:
        traces = list(get_engine("cpu").align_pairs(qs, ss, scoring))
        stored.write_bytes(pickle.dumps(traces))
    pairs = PairSet([EncodedSequence(f"q{k}", "", q) for k, q in enumerate(qs)], list(range(args.pairs)),
                    Subjects([EncodedSequence(f"s{k}", "a subject", s) for k, s in enumerate(ss)], scoring))  # fmt: skip
    stats = run_statistics(scoring)
    engine = Replay(traces)
    walls = []
    for _ in range(args.repeats):
        t = time.perf_counter()
        _, alignments, _ = align_pair_set(pairs, scoring, engine, stats)
        walls.append(time.perf_counter() - t)
    h = hashlib.sha256()
    for alns in alignments:
        for a in alns:
            h.update(
                repr((a.subject_id, a.score, a.qstart, a.qend, a.sstart, a.send, a.length, a.identities, a.evalue, a.bitscore)).encode()
            )
    wall = statistics.median(walls)
    print(
        json.dumps(
            {
                "pairs": args.pairs,
                "wall_s": round(wall, 4),
                "us_per_pair": round(wall / args.pairs * 1e6, 2),
                "fingerprint": h.hexdigest()[:16],
            }
        )
    )


if __name__ == "__main__":
    main()
