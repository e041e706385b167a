"""Seeded search (``--mode fast``): which subjects a query's exact Smith-Waterman scores.

The fast mode decides, per query, a set of *candidate* subjects by spaced seeds in a reduced
alphabet (as DIAMOND seeds) and ungapped X-drop extension (as BLASTP extends), and scores
only those with the exact machinery, so every reported hit has exactly the score, alignment
and E-value of ``--mode exact``; fast mode can only miss hits. The rule (``docs/seeded.md``):

* residues are read in a *reduced alphabet*: ``params.alphabet`` puts the 20 standard amino
  acids (codes 0..19) into groups; codes >= 20 are in no group and carry no seed;
* a *shape* is a pattern of compared (``1``) and skipped (``0``) positions, all shapes of one
  weight W (their ``1``s); its *key* at position p of a sequence is the groups at p + the
  compared offsets, read as a number in base ``n_groups``; it exists where the shape's whole
  span lies in the sequence and every compared residue is in a group;
* a *hit* is (shape, i, j) whose keys at query position i and subject position j are equal;
  its *span score* is ``sum(M[q[i+t], s[j+t]] for t < len(shape))`` with the search's matrix;
* a hit whose span score reaches ``span`` is extended without gaps, to the right from
  i+L/j+L and to the left from i-1/j-1, each side stopping when its running sum falls more
  than ``xdrop`` below that side's best, or at a sequence end; HSP score = span score + both
  sides' best gains (each >= 0);
* (query, subject) is a candidate iff some hit's HSP score reaches the subject's trigger,
  ``trigger + trigger_step * max(0, floor(log2 L) - 9)`` for a subject of length L: chance HSPs
  grow with the subject's length (by about ln 2 / lambda, 2.2 for BLOSUM62, per doubling), so
  a long subject needs more to become a candidate (floor(log2 L) is the bit length of L less one).

The set is defined order-independently, so every backend finds the same one (tested). This
module is pure numpy (no numba, no CuPy): the parameters, the query batch's seed index both
backends start from, and the types the engine's seeders return.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from . import kernel_abi
from .cores import cpu_threads

if TYPE_CHECKING:
    from .database import Chunk, Database

#: The residues a seed may compare: the 20 standard amino acids, codes 0..19, in code order.
_STANDARD = "ARNDCQEGHILKMFPSTWYV"
#: Longest shape: the seed kernel unrolls a hit's span loop to the longest shape's length.
MAX_SHAPE_LENGTH = 16
#: Most keys one shape may have (``n_groups ** weight``): each shape's key table has this many rows.
MAX_KEYS = 1 << 24

#: The reduced alphabet: DIAMOND's 11 groups (Buchfink et al. 2021) with KREDQN split into
#: KR and EDQN and STA into ST and A. Measured against DIAMOND's own at weight 7 (docs/seeded.md):
#: the same recall at weight 6 with 2.4 times fewer random hits.
DEFAULT_ALPHABET = "KR EDQN C G H M F Y ILV W P ST A"
#: DIAMOND's 14 "very sensitive" shapes (weight 7), each cut after its sixth compared position.
DEFAULT_SHAPES = (
    "1110111", "11011011", "111111", "101011101", "1111000101", "11010010101", "1101100011",
    "101010100011", "110010100101", "1101010101", "111001001001", "11011000001001", "11100100010001", "110100010001001",
)  # fmt: skip

#: The search modes: every subject scored, or only the seeded candidates.
SEARCH_MODES = ("exact", "fast")
#: Why a fast-mode search has no fitted E-values (its statistics say so).
FAST_NO_FIT = (
    "a fast-mode search scores only its seeded candidates, and a fit needs every subject's score (use --mode exact, or BLAST's parameters)"
)


@dataclass(frozen=True)
class SeedParams:
    """The seeding rule's parameters (scores in raw units of the search's matrix).

    Each candidate costs a full Smith-Waterman scan of its subject, so the trigger is set high
    (52, 27 bits for BLOSUM62: BLASTP's gapped trigger is 41), higher still for long subjects
    (+3 per doubling from 1,024 residues), and the span filter (24) spares the extension of
    most chance hits: at 24 against 20, 37% of the extensions and 8% fewer candidates, the fast
    search 17-21% faster for 0.4-0.6% of the exact mode's significant pairs (measured:
    ``docs/seeded.md``).
    """

    span: int = 24  # a hit whose span scores at least this is extended
    xdrop: int = 16  # an ungapped extension stops this far below its best
    trigger: int = 52  # an HSP scoring at least this makes a subject shorter than 1,024 residues a candidate
    trigger_step: int = 3  # added to the trigger per doubling of the subject's length from 1,024 residues
    alphabet: str = DEFAULT_ALPHABET  # the reduced alphabet's groups, separated by spaces
    shapes: tuple[str, ...] = DEFAULT_SHAPES

    def __post_init__(self) -> None:
        if self.xdrop < 0 or self.trigger_step < 0:
            raise ValueError(f"seed X-drop and trigger step must be >= 0 (got {self.xdrop}, {self.trigger_step})")
        letters = "".join(self.alphabet.split())
        if sorted(letters) != sorted(set(letters)) or not set(letters) <= set(_STANDARD):
            raise ValueError(f"seed alphabet {self.alphabet!r}: groups of distinct standard amino acids")
        object.__setattr__(self, "shapes", tuple(self.shapes))
        if not self.shapes or any(not s or set(s) - {"0", "1"} or s[0] != "1" or s[-1] != "1" for s in self.shapes):
            raise ValueError(f"seed shapes {self.shapes}: each a pattern of 0 and 1 that starts and ends with 1")
        weights = {s.count("1") for s in self.shapes}
        if len(weights) != 1:
            raise ValueError(f"seed shapes {self.shapes}: all of one weight (got {sorted(weights)})")
        if max(len(s) for s in self.shapes) > MAX_SHAPE_LENGTH:
            raise ValueError(f"seed shapes may span at most {MAX_SHAPE_LENGTH} positions")
        if self.n_keys > MAX_KEYS:
            raise ValueError(f"seed keys: {self.n_groups} groups to the power {self.weight} exceed {MAX_KEYS}")

    @property
    def groups(self) -> list[str]:
        return self.alphabet.split()

    @property
    def n_groups(self) -> int:
        return len(self.groups)

    @property
    def weight(self) -> int:
        return self.shapes[0].count("1")

    @property
    def n_keys(self) -> int:
        return self.n_groups**self.weight

    def reduction(self) -> np.ndarray:
        """uint8[256]: each residue code's group, 255 for codes in no group."""
        out = np.full(256, 255, np.uint8)
        for g, letters in enumerate(self.groups):
            for c in letters:
                out[_STANDARD.index(c)] = g
        return out

    def shape_offsets(self) -> np.ndarray:
        """int32[n_shapes, weight]: each shape's compared offsets."""
        return np.array([[t for t, c in enumerate(s) if c == "1"] for s in self.shapes], np.int32)

    def shape_lengths(self) -> np.ndarray:
        return np.array([len(s) for s in self.shapes], np.int32)

    def describe(self) -> str:
        return (
            f"{len(self.shapes)} spaced shapes of weight {self.weight} in a {self.n_groups}-letter alphabet, "
            f"span {self.span}, xdrop {self.xdrop}, trigger {self.trigger} (+{self.trigger_step} per doubling of the subject from 1,024)"
        )


@dataclass(frozen=True)
class SeedRun:
    """What a fast-mode search reports of its candidate stage (saved with its hit lists)."""

    params: SeedParams
    counts: dict[str, int]  # the seeder's counts (Seeder.counts)
    seconds: float  # the candidate stage's wall time within the search's; where the GPU overlaps it with the scoring, its kernels' time

    def to_json(self) -> dict:
        params = asdict(self.params)
        params["shapes"] = list(self.params.shapes)
        return {"params": params, "description": self.params.describe(), "counts": dict(self.counts), "seconds": self.seconds}


#: Subjects shorter than 2 ** (TRIGGER_BASE_LOG2 + 1) residues get the plain trigger (the rule's 9).
TRIGGER_BASE_LOG2 = 9


def keys_of(groups: np.ndarray, params: SeedParams, shape: int) -> np.ndarray:
    """The key of ``shape`` at each position (int32: at most :data:`MAX_KEYS`), -1 where it has
    none, from each position's group (``params.reduction()`` of the residue codes, 255: none)."""
    n = groups.size - len(params.shapes[shape]) + 1
    if n <= 0:
        return np.zeros(0, np.int32)
    key = np.zeros(n, np.int32)
    bad = np.zeros(n, bool)
    for o in params.shape_offsets()[shape]:
        g = groups[o : o + n]
        bad |= g == 255
        key *= params.n_groups
        key += g
    key[bad] = -1
    return key


@dataclass(frozen=True)
class SeedIndex:
    """A query batch's seeds: the queries end to end (``codes``, query k at
    ``starts[k]:starts[k+1]``) and, per shape, the positions of the concatenation (int32) that
    carry a key, ordered by (key, position). Shape k's run is ``shape_starts[k]:shape_starts[k+1]``
    of ``keys`` and ``positions``. Both backends build their lookup from it."""

    codes: np.ndarray  # uint8[total]
    starts: np.ndarray  # int64[n_queries + 1]
    keys: np.ndarray  # int32[n]
    positions: np.ndarray  # int32[n]
    shape_starts: np.ndarray  # int64[n_shapes + 1]

    @property
    def n_queries(self) -> int:
        return self.starts.size - 1

    def query_of(self) -> np.ndarray:
        """int32[total]: the query each position of the concatenation belongs to."""
        return np.repeat(np.arange(self.n_queries, dtype=np.int32), np.diff(self.starts))

    def key_offsets(self, n_keys: int) -> np.ndarray:
        """int32[n_shapes, n_keys + 1]: shape k's key u has the entries ``[off[k, u], off[k, u + 1])``
        of ``positions`` (offsets into the whole array)."""
        n_shapes = self.shape_starts.size - 1
        out = np.empty((n_shapes, n_keys + 1), np.int32)
        for k in range(n_shapes):
            a, b = self.shape_starts[k], self.shape_starts[k + 1]
            out[k, 0] = a
            np.cumsum(np.bincount(self.keys[a:b], minlength=n_keys), out=out[k, 1:])
            out[k, 1:] += a
        return out


#: Query residues from which :func:`seed_index` runs its shapes on threads. Below, starting the
#: threads costs more than they save (2-core CPU machine, best of 7, one thread against two:
#: 23,229 residues 10.6 against 11.0 ms, 45,056 residues 20.4 against 13.9 ms)
PARALLEL_INDEX_RESIDUES = 30_000


def seed_index(queries: list[np.ndarray], params: SeedParams, threads: int = 0) -> SeedIndex:
    """The seed index of a query batch (``queries``: residue codes of each query), its shapes on
    ``threads`` threads (0: every core this process may use). Each shape's keys are made over the
    whole concatenation at once (500 queries: milliseconds, where a pass per query took tenths
    of a second), then those whose span crosses a query's end are dropped. The shapes' numpy
    work releases the GIL, so they run side by side: with that, the groups reduced once and
    32-bit keys, 4,000 queries took 0.44-0.54 s on the 2-core CPU machine, against 1.1-1.4 s one
    shape after the other (bench/RESULTS.md, fourteenth session)."""
    codes = np.concatenate([np.asarray(q, np.uint8) for q in queries]) if queries else np.zeros(0, np.uint8)
    starts = np.zeros(len(queries) + 1, np.int64)
    starts[1:] = np.cumsum([len(q) for q in queries])
    if int(starts[-1]) >= 1 << 31:
        raise ValueError("a seeded query batch holds at most 2**31 - 1 residues")
    groups = params.reduction()[codes]
    # residues from each position to its query's end: a shape of this length or less fits there
    room = (np.repeat(starts[1:], np.diff(starts)) - np.arange(codes.size)).astype(np.int32)

    def shape_seeds(shape: int) -> tuple[np.ndarray, np.ndarray]:
        key = keys_of(groups, params, shape)
        pos = np.flatnonzero((key >= 0) & (room[: key.size] >= len(params.shapes[shape])))
        packed = key[pos].astype(np.int64) << 31 | pos
        packed.sort()  # (key, position) order; unique, so any sort is stable
        return (packed >> 31).astype(np.int32), (packed & ((1 << 31) - 1)).astype(np.int32)

    n_shapes = len(params.shapes)
    workers = min(n_shapes, cpu_threads(threads))
    if workers > 1 and codes.size >= PARALLEL_INDEX_RESIDUES:
        with ThreadPoolExecutor(workers) as pool:
            seeds = list(pool.map(shape_seeds, range(n_shapes)))
    else:
        seeds = [shape_seeds(k) for k in range(n_shapes)]
    shape_starts = np.zeros(n_shapes + 1, np.int64)
    shape_starts[1:] = np.cumsum([k.size for k, _p in seeds])
    return SeedIndex(codes, starts, np.concatenate([k for k, _p in seeds]), np.concatenate([p for _k, p in seeds]), shape_starts)


def seed_segments(offsets, segment: int = kernel_abi.SEED_SEGMENT) -> np.ndarray:
    """The seed kernel's units of work over a chunk (``offsets``: its n + 1 residue offsets): the
    (subject, first position) of each run of at most ``segment`` positions of each subject (the
    kernel's SWGPU_SEED_SEGMENT), in subject order, as int32 [k, 2]."""
    lengths = np.diff(np.asarray(offsets, np.int64))
    count = np.maximum(1, -(-lengths // segment))
    subject = np.repeat(np.arange(lengths.size), count)
    first = (np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)) * segment
    return np.stack([subject, first], axis=1).astype(np.int32)


class Seeder(Protocol):
    """The candidate stage of one query batch on one engine (``Engine.seeder`` makes it; it
    holds the batch's seed index and any device state).

    ``counts`` sums what the seeder counted over its calls, for reports and benchmarks:
    at least ``"candidates"`` ((query, subject) pairs found); ``"hits"`` and ``"extensions"``
    where the implementation counts them (early stopping makes them
    implementation-dependent; only the candidate set is part of the contract)."""

    name: str
    params: SeedParams
    counts: dict[str, int]

    def candidates(self, db: Database, chunk: Chunk) -> list[np.ndarray]:
        """Per query of the batch, its candidate subjects in ``chunk``: sorted, unique int64
        indices in the database's sorted numbering (``chunk.first <= k < chunk.stop``, the
        numbering :meth:`~swgpu_core.engine.Scanner.scan_chunk` returns)."""
        ...
