"""The CPU candidate stage of ``--mode fast`` (numba): word hits, two-hit rule, ungapped X-drop.

The rule is :mod:`swgpu_core.seed`'s. The queries of a batch are laid end to end (BLAST's
concatenated query), each followed by ``window`` spacer positions, and each subject is
scanned once for all of them: a subject word's lookup-table row lists every (query,
position) it hits. A hit's *slot* is its diagonal in the concatenated query, ``P - j + L``
(P: the hit's position in the concatenation, j: in the subject of length L), so one array
of ``sum(len + window) + max L`` slots holds every diagonal of a subject without clearing.

Each slot keeps the subject positions of its last ``WORD`` hits (in the chunk's residue
numbering). A new hit triggers if one of them is ``WORD..window`` positions before it:
hits closer than ``WORD`` are at most ``WORD - 1``, so the latest hit at least ``WORD``
before is always among the last ``WORD``. Entries of the block's earlier subjects lie
before the subject's first residue and are ignored (each block starts with a fresh array). Two queries can share a slot only on hits more than
``window`` apart (the spacer), which the test rejects, and then every hit of the earlier
query on that slot precedes every hit of the later one, so neither pushes out a hit the
other still needs.

A (query, subject) pair stops being looked at once it is a candidate (the set is an
"exists"); blocks of subjects run on a thread pool, the numba code releasing the GIL.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..database import Chunk, Database
from ..fasta import EncodedSequence
from ..lazyjit import njit
from ..scoring import Scoring
from ..seed import WORD, WORD_CODES, SeedParams, word_table

#: Residues of subjects per block of work (a thread's unit; its flag matrix is queries x subjects bytes).
BLOCK_RESIDUES = 1 << 20


@njit(cache=True, nogil=True)
def _extend(qcodes, qstart, qend, res, sbeg, send, i, j, matrix, xdrop):
    """Ungapped X-drop gains right of the word at (i, j) and left of it (each >= 0)."""
    right = 0
    run = 0
    a, b = i + WORD, j + WORD
    while a < qend and b < send:
        run += matrix[qcodes[a], res[b]]
        if run > right:
            right = run
        elif right - run > xdrop:
            break
        a += 1
        b += 1
    left = 0
    run = 0
    a, b = i - 1, j - 1
    while a >= qstart and b >= sbeg:
        run += matrix[qcodes[a], res[b]]
        if run > left:
            left = run
        elif left - run > xdrop:
            break
        a -= 1
        b -= 1
    return right + left


@njit(cache=True, nogil=True)
def _seed_block(
    res, offsets, first, stop, tab_off, tab_query, tab_pos, qcodes, qstart, qlen, qcat, n_slots, matrix, window, xdrop, trigger,
    flags, counts,
):  # fmt: skip
    """Mark ``flags[q, s - first]`` for every candidate subject s in [first, stop) (chunk-relative
    numbering; ``offsets`` chunk-relative); ``counts`` += hits, triggers."""
    base = offsets[first]  # ring entries are positions relative to the block's first residue (int32)
    ring = np.full(n_slots * WORD, -1, np.int32)
    done = np.full(qlen.size, -1, np.int64)  # done[q] == s: (q, s) is already a candidate
    hits = 0
    triggers = 0
    for s in range(first, stop):
        sbeg = offsets[s]
        send = offsets[s + 1]
        length = send - sbeg
        lo = sbeg - base
        for j in range(sbeg, send - WORD + 1):
            c0, c1, c2 = res[j], res[j + 1], res[j + 2]
            if c0 >= WORD_CODES or c1 >= WORD_CODES or c2 >= WORD_CODES:
                continue
            w = (c0 * WORD_CODES + c1) * WORD_CODES + c2
            here = j - base
            for e in range(tab_off[w], tab_off[w + 1]):
                q = tab_query[e]
                if done[q] == s:
                    continue
                i = tab_pos[e]
                hits += 1
                slot = (qcat[q] + i - (j - sbeg) + length) * WORD
                partner = False
                for k in range(WORD):
                    before = ring[slot + k]
                    if before >= lo and WORD <= here - before <= window:
                        partner = True
                        break
                for k in range(WORD - 1, 0, -1):
                    ring[slot + k] = ring[slot + k - 1]
                ring[slot] = here
                if not partner:
                    continue
                triggers += 1
                qs = qstart[q]
                a = qs + i
                score = matrix[qcodes[a], res[j]] + matrix[qcodes[a + 1], res[j + 1]] + matrix[qcodes[a + 2], res[j + 2]]
                score += _extend(qcodes, qs, qs + qlen[q], res, sbeg, send, a, j, matrix, xdrop)
                if score >= trigger:
                    done[q] = s
                    flags[q, s - first] = 1
    counts[0] += hits
    counts[1] += triggers


class CpuSeeder:
    """The candidate stage of one query batch on the CPU (see :class:`swgpu_core.seed.Seeder`)."""

    name = "cpu"

    def __init__(self, scoring: Scoring, queries: list[EncodedSequence], params: SeedParams, threads: int = 0):
        self.params = params
        self.threads = threads or len(os.sched_getaffinity(0))
        self.n_queries = len(queries)
        codes = [np.asarray(q.codes, np.uint8) for q in queries]
        self.table = word_table(codes, scoring.matrix, params.threshold)
        self.matrix = np.ascontiguousarray(scoring.matrix, dtype=np.int32)
        self.qlen = np.array([c.size for c in codes], np.int64)
        self.qstart = np.concatenate(([0], np.cumsum(self.qlen)[:-1])).astype(np.int64)
        self.qcodes = np.concatenate(codes) if codes else np.zeros(0, np.uint8)
        # each query's slots: its positions, then `window` spacer slots (see the module doc)
        self.qcat = (self.qstart + np.arange(self.n_queries, dtype=np.int64) * params.window).astype(np.int64)
        self.span = int(self.qlen.sum()) + self.n_queries * params.window
        self.counts = {"hits": 0, "triggers": 0, "candidates": 0}

    def _blocks(self, offsets: np.ndarray, n: int) -> list[tuple[int, int]]:
        """Runs of subjects of about BLOCK_RESIDUES (at least 4 per thread when there are enough subjects)."""
        size = min(BLOCK_RESIDUES, max(1, int(offsets[-1]) // (4 * self.threads)))
        cuts = np.searchsorted(offsets, np.arange(size, int(offsets[-1]), size))
        bounds = np.unique(np.concatenate(([0], np.clip(cuts, 0, n), [n])))
        return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]

    def candidates(self, db: Database, chunk: Chunk) -> list[np.ndarray]:
        res = np.ascontiguousarray(db.chunk_residues(chunk))
        offsets = np.asarray(db.offsets[chunk.first : chunk.stop + 1], np.int64) - chunk.residue_start
        n = chunk.n_sequences
        if n == 0 or self.n_queries == 0:
            return [np.zeros(0, np.int64) for _ in range(self.n_queries)]
        max_len = int((offsets[1:] - offsets[:-1]).max())
        n_slots = self.span + max_len + 1
        p = self.params
        t = self.table

        def run(bounds: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
            a, b = bounds
            flags = np.zeros((self.n_queries, b - a), np.uint8)
            counts = np.zeros(2, np.int64)
            _seed_block(
                res, offsets, a, b, t.offsets, t.queries, t.positions, self.qcodes, self.qstart, self.qlen, self.qcat, n_slots,
                self.matrix, p.window, p.xdrop, p.trigger, flags, counts,
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
            self.counts["triggers"] += int(counts[1])
            qs, cols = np.nonzero(flags)
            split = np.searchsorted(qs, np.arange(self.n_queries + 1))
            for q in range(self.n_queries):
                per_query[q].append(cols[split[q] : split[q + 1]].astype(np.int64) + (a + chunk.first))
        out = [np.concatenate(p) for p in per_query]
        self.counts["candidates"] += sum(int(c.size) for c in out)
        return out
