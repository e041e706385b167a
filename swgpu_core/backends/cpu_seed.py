"""The CPU candidate stage of ``--mode fast`` (numba): spaced seeds, span filter, ungapped X-drop.

The rule is :mod:`swgpu_core.seed`'s. The batch's queries are laid end to end, and each
subject is scanned once for all of them: at each subject position and for each shape, the
position's key selects the query positions that carry the same key (a table of offsets per
shape and key, :meth:`~swgpu_core.seed.SeedIndex.key_offsets`), and each such hit is scored
over its span, then extended if the span scores enough. A (query, subject) pair stops being
looked at once it is a candidate (the set is an "exists"); blocks of subjects run on a thread
pool, the numba code releasing the GIL.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..cores import cpu_threads
from ..database import Chunk, Database
from ..fasta import EncodedSequence
from ..lazyjit import njit
from ..scoring import Scoring
from ..seed import TRIGGER_BASE_LOG2, SeedParams, seed_index

#: Residues of subjects per block of work (a thread's unit; its flag matrix is queries x subjects bytes).
BLOCK_RESIDUES = 1 << 20


@njit(cache=True, nogil=True)
def _gain(qcodes, a, qlo, qhi, res, b, slo, shi, step, matrix, xdrop):
    """Best running sum (>= 0) of the ungapped walk from (a, b) by ``step``, X-drop ``xdrop``."""
    best = 0
    run = 0
    while qlo <= a < qhi and slo <= b < shi:
        run += matrix[qcodes[a], res[b]]
        if run > best:
            best = run
        elif best - run > xdrop:
            break
        a += step
        b += step
    return best


@njit(cache=True, nogil=True)
def _seed_block(
    res, offsets, first, stop, reduction, n_groups, shape_offsets, shape_lengths, key_offsets, positions, query_of, qstart, qcodes,
    matrix, span_min, xdrop, trigger, trigger_step, flags, counts,
):  # fmt: skip
    """Mark ``flags[q, s - first]`` for every candidate subject s in [first, stop) (chunk-relative
    numbering; ``offsets`` chunk-relative); ``counts`` += hits, extensions."""
    hits = 0
    extensions = 0
    n_shapes, weight = shape_offsets.shape
    for s in range(first, stop):
        sbeg = offsets[s]
        send = offsets[s + 1]
        bits = 0  # floor(log2 length)
        while (send - sbeg) >> (bits + 1):
            bits += 1
        needed = trigger + trigger_step * max(0, bits - TRIGGER_BASE_LOG2)
        for j in range(sbeg, send):
            for sh in range(n_shapes):
                length = shape_lengths[sh]
                if j + length > send:
                    continue
                key = 0
                for t in range(weight):
                    g = reduction[res[j + shape_offsets[sh, t]]]
                    if g == 255:
                        key = -1
                        break
                    key = key * n_groups + g
                if key < 0:
                    continue
                for e in range(key_offsets[sh, key], key_offsets[sh, key + 1]):
                    p = positions[e]
                    q = query_of[p]
                    if flags[q, s - first]:
                        continue
                    hits += 1
                    score = 0
                    for t in range(length):
                        score += matrix[qcodes[p + t], res[j + t]]
                    if score < span_min:
                        continue
                    extensions += 1
                    lo, hi = qstart[q], qstart[q + 1]
                    score += _gain(qcodes, p + length, lo, hi, res, j + length, sbeg, send, 1, matrix, xdrop)
                    score += _gain(qcodes, p - 1, lo, hi, res, j - 1, sbeg, send, -1, matrix, xdrop)
                    if score >= needed:
                        flags[q, s - first] = 1
    counts[0] += hits
    counts[1] += extensions


class CpuSeeder:
    """The candidate stage of one query batch on the CPU (see :class:`swgpu_core.seed.Seeder`)."""

    name = "cpu"

    def __init__(self, scoring: Scoring, queries: list[EncodedSequence], params: SeedParams, threads: int = 0):
        self.params = params
        self.threads = cpu_threads(threads)
        self.n_queries = len(queries)
        self.index = seed_index([q.codes for q in queries], params, self.threads)
        self.key_offsets = self.index.key_offsets(params.n_keys)
        self.query_of = self.index.query_of()
        self.matrix = np.ascontiguousarray(scoring.matrix, dtype=np.int32)
        self.shapes = (params.reduction(), params.n_groups, params.shape_offsets(), params.shape_lengths())
        self.counts = {"hits": 0, "extensions": 0, "candidates": 0}

    def _blocks(self, offsets: np.ndarray, n: int) -> list[tuple[int, int]]:
        """Runs of subjects of about BLOCK_RESIDUES (at least 4 per thread when there are enough subjects)."""
        size = min(BLOCK_RESIDUES, max(1, int(offsets[-1]) // (4 * self.threads)))
        cuts = np.searchsorted(offsets, np.arange(size, int(offsets[-1]), size))
        bounds = np.unique(np.concatenate(([0], np.clip(cuts, 0, n), [n])))
        return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]

    def candidates(self, db: Database, chunk: Chunk) -> list[np.ndarray]:
        n = chunk.n_sequences
        if n == 0 or self.n_queries == 0:
            return [np.zeros(0, np.int64) for _ in range(self.n_queries)]
        res = np.ascontiguousarray(db.chunk_residues(chunk))
        offsets = np.asarray(db.offsets[chunk.first : chunk.stop + 1], np.int64) - chunk.residue_start
        p, x = self.params, self.index

        def run(bounds: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
            a, b = bounds
            flags = np.zeros((self.n_queries, b - a), np.uint8)
            counts = np.zeros(2, np.int64)
            _seed_block(
                res, offsets, a, b, *self.shapes, self.key_offsets, x.positions,
                self.query_of, x.starts, x.codes, self.matrix, p.span, p.xdrop, p.trigger, p.trigger_step, flags, counts,
            )  # fmt: skip
            return flags, counts

        blocks = self._blocks(offsets, n)
        if self.threads > 1 and len(blocks) > 1:
            with ThreadPoolExecutor(self.threads) as pool:
                done = list(pool.map(run, blocks))
        else:
            done = [run(b) for b in blocks]
        per_query: list[list[np.ndarray]] = [[] for _ in range(self.n_queries)]
        for (a, _b), (flags, counts) in zip(blocks, done):
            self.counts["hits"] += int(counts[0])
            self.counts["extensions"] += int(counts[1])
            qs, cols = np.nonzero(flags)
            split = np.searchsorted(qs, np.arange(self.n_queries + 1))
            for q in range(self.n_queries):
                per_query[q].append(cols[split[q] : split[q + 1]].astype(np.int64) + (a + chunk.first))
        out = [np.concatenate(p) for p in per_query]
        self.counts["candidates"] += sum(int(c.size) for c in out)
        return out
