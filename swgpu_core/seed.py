"""Seeded search (``--mode fast``): which subjects a query's exact Smith-Waterman scores.

The fast mode decides, per query, a set of *candidate* subjects, BLASTP-style (word hits,
the two-hit rule, ungapped X-drop extension), and scores only those with the exact
machinery, so every reported hit has exactly the score, alignment and E-value of
``--mode exact``; fast mode can only miss hits. The rule (``docs/seeded.md``):

* a *word* is 3 consecutive residues with codes < 20 (the standard amino acids); its
  index is ``c0*400 + c1*20 + c2``;
* a *hit* is a pair (query position i, subject position j) whose word score
  ``M[q[i],s[j]] + M[q[i+1],s[j+1]] + M[q[i+2],s[j+2]]`` reaches ``T``;
* a hit *triggers* if another hit lies on its diagonal ``j - i`` with
  ``WORD <= j - j' <= window`` (a non-overlapping earlier hit within the window);
* a triggering hit is extended without gaps, to the right from i+3/j+3 and to the left
  from i-1/j-1, each side stopping when its running sum falls more than ``xdrop`` below
  that side's best; HSP score = word score + both sides' best gains (each >= 0);
* (query, subject) is a candidate iff some triggering hit's HSP score reaches ``trigger``.

The set is defined order-independently, so every backend finds the same one (tested).
This module is pure numpy (no numba, no CuPy): the parameters, the word lookup table
both backends start from, and the types the engine's seeders return.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:
    from .database import Chunk, Database

#: Residues per word, and the codes a word may hold (the 20 standard amino acids, codes 0..19).
WORD, WORD_CODES = 3, 20
#: Distinct words: the lookup table's rows.
N_WORDS = WORD_CODES**WORD

#: The search modes: every subject scored, or only the seeded candidates.
SEARCH_MODES = ("exact", "fast")
#: Why a fast-mode search has no fitted E-values (its statistics say so).
FAST_NO_FIT = (
    "a fast-mode search scores only its seeded candidates, and a fit needs every subject's score (use --mode exact, or BLAST's parameters)"
)


@dataclass(frozen=True)
class SeedParams:
    """The seeding rule's parameters (raw score units of the search's matrix).

    BLASTP's for BLOSUM62 are T 11, window 40, X-drop 7 bits = 16 raw and gapped trigger
    22 bits = 41 raw. Here T is 12 (half BLAST's word hits, for 1% of recall) and the
    trigger 55 raw (28 bits): every candidate costs a full Smith-Waterman scan of its
    subject (BLAST's banded gapped extension costs far less), and with 41 the candidates
    hold 9-18% of the exact mode's cells; with 55, 2%, still finding 97-98% of the exact
    mode's hits at E <= 1e-5 (measured: ``docs/seeded.md``).
    """

    threshold: int = 12  # T: a word pair scoring at least this is a hit
    window: int = 40  # A: the two hits of a trigger are at most this far apart on the diagonal
    xdrop: int = 16  # X: an ungapped extension stops this far below its best
    trigger: int = 55  # S_trig: an HSP scoring at least this makes its subject a candidate

    def __post_init__(self) -> None:
        if self.window < WORD:
            raise ValueError(f"seed window must be at least {WORD} (got {self.window})")
        if self.xdrop < 0:
            raise ValueError(f"seed X-drop must be >= 0 (got {self.xdrop})")


@dataclass(frozen=True)
class SeedRun:
    """What a fast-mode search reports of its candidate stage (saved with its hit lists)."""

    params: SeedParams
    counts: dict[str, int]  # the seeder's counts (Seeder.counts)
    seconds: float  # wall time of the candidate stage, within the search's

    def to_json(self) -> dict:
        return {"params": asdict(self.params), "counts": dict(self.counts), "seconds": self.seconds}


@dataclass(frozen=True)
class WordTable:
    """For each of the :data:`N_WORDS` subject words, the query words that score at least T
    against it, in CSR layout: entries ``offsets[w]:offsets[w+1]`` of ``queries`` (index of
    the query in the batch) and ``positions`` (i, the word's first residue in that query),
    ordered by (query, position) within a word."""

    offsets: np.ndarray  # int64[N_WORDS + 1]
    queries: np.ndarray  # int32[n]
    positions: np.ndarray  # int32[n]

    @property
    def size(self) -> int:
        return int(self.queries.size)


def word_index(codes: np.ndarray) -> np.ndarray:
    """The word starting at each position of ``codes`` (``len - 2`` of them), -1 where the
    word holds a code >= 20 (such positions carry no word)."""
    c = np.asarray(codes).astype(np.int32)
    if c.size < WORD:
        return np.zeros(0, np.int32)
    w = c[:-2] * (WORD_CODES * WORD_CODES) + c[1:-1] * WORD_CODES + c[2:]
    bad = (c[:-2] >= WORD_CODES) | (c[1:-1] >= WORD_CODES) | (c[2:] >= WORD_CODES)
    return np.where(bad, -1, w).astype(np.int32)


def neighbourhoods(matrix: np.ndarray, threshold: int) -> tuple[np.ndarray, np.ndarray]:
    """For each query word u, the subject words w with score(u, w) >= ``threshold``, CSR:
    (offsets int64[N_WORDS + 1], words int32[...] ascending within each u).

    score(u, w) = M[u0,w0] + M[u1,w1] + M[u2,w2], query letter first (M need not be symmetric).
    For each first two query letters, the 400 scores of the first two subject letters sorted
    best first: the pairs that reach T with the third letters (u2, w2) are a prefix of that
    order, found by one binary search, so only the neighbours themselves are ever listed (a
    few hundredths of a second, where scoring all 64 million word pairs takes tenths).
    """
    n = WORD_CODES
    m = np.asarray(matrix)[:n, :n].astype(np.int32)
    pair = (m[:, None, :, None] + m[None, :, None, :]).reshape(n * n, n * n)  # [u0 u1, w0 w1]
    order = np.argsort(-pair, axis=1, kind="stable")
    best_first = np.take_along_axis(pair, order, axis=1)
    need = (threshold - m).ravel()  # [u2 w2]: what the first two letters must score
    lengths = np.stack([np.searchsorted(-row, -need, side="right") for row in best_first]).reshape(n * n, n, n)
    u = np.arange(N_WORDS)
    per = lengths[u // n, u % n].ravel()  # neighbours of each (u, w2)
    seg = np.repeat(np.arange(N_WORDS * n), per)
    within = np.arange(per.sum()) - np.repeat(np.concatenate(([0], np.cumsum(per)[:-1])), per)
    words = order[seg // n // n, within] * n + seg % n
    key = np.sort((seg // n).astype(np.int64) * N_WORDS + words)  # by u, then ascending w
    offsets = np.zeros(N_WORDS + 1, np.int64)
    np.cumsum(np.bincount(key // N_WORDS, minlength=N_WORDS), out=offsets[1:])
    return offsets, (key % N_WORDS).astype(np.int32)


def word_table(queries: list[np.ndarray], matrix: np.ndarray, threshold: int) -> WordTable:
    """The lookup table of a query batch (``queries``: residue codes of each query)."""
    nb_off, nb_words = neighbourhoods(matrix, threshold)
    words = [word_index(q) for q in queries]
    qidx = np.concatenate([np.full(w.size, k, np.int32) for k, w in enumerate(words)]) if words else np.zeros(0, np.int32)
    pos = np.concatenate([np.arange(w.size, dtype=np.int32) for w in words]) if words else np.zeros(0, np.int32)
    uw = np.concatenate(words) if words else np.zeros(0, np.int32)
    keep = uw >= 0
    qidx, pos, uw = qidx[keep], pos[keep], uw[keep]
    # every (query, position) repeated once per neighbour of its word, in (query, position) order
    n_nb = (nb_off[1:] - nb_off[:-1])[uw]
    rep = np.repeat(np.arange(uw.size), n_nb)
    first = np.repeat(nb_off[uw] - np.concatenate(([0], np.cumsum(n_nb)[:-1])), n_nb)
    subject_word = nb_words[first + np.arange(rep.size)]
    order = np.argsort(subject_word, kind="stable")  # stable: (query, position) order kept within a word
    offsets = np.zeros(N_WORDS + 1, np.int64)
    np.cumsum(np.bincount(subject_word, minlength=N_WORDS), out=offsets[1:])
    return WordTable(offsets, qidx[rep][order], pos[rep][order])


class Seeder(Protocol):
    """The candidate stage of one query batch on one engine (``Engine.seeder`` makes it; it
    holds the batch's lookup table and any device state).

    ``counts`` sums what the seeder counted over its calls, for reports and benchmarks:
    at least ``"candidates"`` ((query, subject) pairs found); ``"hits"``, ``"triggers"`` and
    ``"extensions"`` where the implementation counts them (early stopping makes them
    implementation-dependent; only the candidate set is part of the contract)."""

    name: str
    params: SeedParams
    counts: dict[str, int]

    def candidates(self, db: Database, chunk: Chunk) -> list[np.ndarray]:
        """Per query of the batch, its candidate subjects in ``chunk``: sorted, unique int64
        indices in the database's sorted numbering (``chunk.first <= k < chunk.stop``, the
        numbering :meth:`~swgpu_core.engine.Scanner.scan_chunk` returns)."""
        ...
