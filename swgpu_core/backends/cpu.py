"""CPU backend: Opal's SIMD inter-sequence Smith-Waterman through pyopal.

Opal vectorises across database sequences (AVX2/SSE/NEON) and widens from 8 to 16 to
32-bit lanes when a score overflows, so the scores are exact. It counts a gap of length
k as ``open + (k-1)*extend``, so it is given our open + extend as its opening cost.
"""

from __future__ import annotations

from multiprocessing.pool import ThreadPool

import numpy as np
import pyopal
from scoring_matrices import ScoringMatrix

from ..cores import cpu_threads
from ..database import Chunk, Database
from ..fasta import EncodedSequence
from ..score_stats import ScoreHistograms
from ..scoring import Scoring


def candidates(scores: np.ndarray, first: int, top: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices (offset by ``first``) and scores of every entry >= the ``top``-th largest:
    the chunk's candidates as :meth:`swgpu_core.engine.Scanner.scan_chunk` returns them."""
    if top >= scores.size:
        keep = np.arange(scores.size)
    else:
        kth = np.partition(scores, scores.size - top)[scores.size - top]
        keep = np.flatnonzero(scores >= kth)
    return keep.astype(np.int64) + first, scores[keep].astype(np.int32)


def opal_alphabet(scoring: Scoring) -> tuple[str, np.ndarray, np.ndarray]:
    """Letters for Opal, a code-to-letter table and the matrix over those letters.

    Opal accepts only the letters A-Z, while our protein code has 27 symbols (``*`` and
    U O J beside the 23 of BLOSUM tables). Codes whose matrix row and column are equal
    (U, O, J score as X unless the matrix defines them) share a letter, which leaves
    enough letters for all distinct symbols.
    """
    m = scoring.matrix
    reps: list[int] = []
    klass = np.empty(m.shape[0], dtype=np.intp)
    for code in range(m.shape[0]):
        same = [k for k, r in enumerate(reps) if np.array_equal(m[code], m[r]) and np.array_equal(m[:, code], m[:, r])]
        if same:
            klass[code] = same[0]
        else:
            klass[code] = len(reps)
            reps.append(code)
    if len(reps) > 26:
        raise ValueError(f"{scoring.matrix_name}: more than 26 distinct residue scores, too many for the CPU backend")
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[: len(reps)]
    table = np.frombuffer(letters.encode(), dtype=np.uint8)[klass]
    return letters, table, m[np.ix_(reps, reps)]


class CpuBackend:
    """Exact scores on the CPU; one pyopal database per chunk, built on first use."""

    name = "cpu"

    def __init__(self, scoring: Scoring, threads: int = 0):
        self.scoring = scoring
        self.threads = cpu_threads(threads)
        letters, self._to_letter, matrix = opal_alphabet(scoring)
        self._matrix = ScoringMatrix(matrix.tolist(), alphabet=letters, name=scoring.matrix_name)
        self._aligner = pyopal.Aligner(self._matrix, gap_open=scoring.first_gap_cost, gap_extend=scoring.gap_extend)
        self._pool = ThreadPool(self.threads) if self.threads > 1 else None
        self._cache: dict[tuple[str, int], pyopal.Database] = {}

    def _chunk_database(self, db: Database, chunk: Chunk) -> pyopal.Database:
        key = (str(db.path), chunk.index)
        if key not in self._cache:
            self._cache.clear()  # one chunk at a time keeps memory bounded
            residues = db.chunk_residues(chunk)
            text = self._to_letter[residues].tobytes()
            offs = db.offsets[chunk.first : chunk.stop + 1] - chunk.residue_start
            seqs = [text[offs[i] : offs[i + 1]] for i in range(chunk.n_sequences)]
            self._cache[key] = pyopal.Database(seqs, self._aligner.alphabet)
        return self._cache[key]

    def scores(self, db: Database, chunk: Chunk, query: EncodedSequence) -> np.ndarray:
        """Every subject's exact score in the chunk, int32, in sorted numbering order."""
        target = self._chunk_database(db, chunk)
        qtext = self._to_letter[query.codes].tobytes()
        n = chunk.n_sequences
        if self._pool is None or n < 256:
            results = self._aligner.align(qtext, target, mode="score")
            return np.fromiter((r.score for r in results), dtype=np.int32, count=n)
        step = -(-n // (self.threads * 4))
        parts = [(s, min(s + step, n)) for s in range(0, n, step)]
        out = np.empty(n, dtype=np.int32)

        def run(bounds: tuple[int, int]) -> None:
            s, e = bounds
            res = self._aligner.align(qtext, target, mode="score", start=s, end=e)
            out[s:e] = np.fromiter((r.score for r in res), dtype=np.int32, count=e - s)

        self._pool.map(run, parts)
        return out

    def subset_scores(self, db: Database, chunk: Chunk, query: EncodedSequence, subjects: np.ndarray) -> np.ndarray:
        """Exact scores (int32) of ``query`` against ``subjects`` (sorted-numbering indices in ``chunk``), in that order."""
        if subjects.size == 0:
            return np.zeros(0, np.int32)
        target = self._chunk_database(db, chunk).extract((subjects - chunk.first).tolist())
        qtext = self._to_letter[query.codes].tobytes()
        return np.fromiter((r.score for r in self._aligner.align(qtext, target, mode="score")), dtype=np.int32, count=subjects.size)

    def scan_subset(
        self, db: Database, chunk: Chunk, queries: list[EncodedSequence], subjects: list[np.ndarray], top: int
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """Only each query's ``subjects`` scored (see :meth:`swgpu_core.engine.Scanner.scan_subset`); queries side by side on the pool."""

        def one(k: int) -> tuple[np.ndarray, np.ndarray]:
            mine = np.asarray(subjects[k], np.int64)
            keep, scores = candidates(self.subset_scores(db, chunk, queries[k], mine), 0, top)
            return mine[keep], scores

        jobs = range(len(queries))
        return list(self._pool.map(one, jobs)) if self._pool is not None else [one(k) for k in jobs]

    def scan_chunk(
        self, db: Database, chunk: Chunk, queries: list[EncodedSequence], top: int, score_stats: ScoreHistograms | None = None
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        out = []
        for qi, q in enumerate(queries):
            scores = self.scores(db, chunk, q)
            if score_stats is not None:
                score_stats.add(qi, scores, db.lengths[chunk.first : chunk.stop])
            out.append(candidates(scores, chunk.first, top))
        return out
