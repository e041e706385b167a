"""The seeding rule of ``--mode fast`` written out by brute force, and data to test it on.

:func:`reference_candidates` follows the text of ``docs/seeded.md`` (from the shared
contract) pair by pair, with no key table and no early stop: for every shape every
(query position, subject position) pair is compared, and every hit's span is scored and,
where it scores enough, extended. The CPU (numba) and GPU seeders must return the same
candidate sets (``tests/test_seed.py``; a GPU test uses the same functions).

:func:`seed_data` makes small inputs that exercise the rule: random sequences, mutated
copies of the queries (substitutions and indels: real seeds), keys interrupted by codes
>= 20 (B Z X * U), sequences shorter than a shape, and a tandem repeat (many hits on few
diagonals).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from swgpu_core.alphabet import PROTEIN
from swgpu_core.database import Database, build_database
from swgpu_core.seed import SeedParams


def _groups(codes: np.ndarray, p: SeedParams) -> np.ndarray:
    """Each residue's group (int), -1 for codes in no group."""
    letters = "ARNDCQEGHILKMFPSTWYV"
    group_of = {c: g for g, members in enumerate(p.groups) for c in members}
    return np.array([group_of.get(letters[c], -1) if c < 20 else -1 for c in codes], np.int64)


def hits(q: np.ndarray, s: np.ndarray, p: SeedParams) -> list[tuple[int, int, int]]:
    """Every (shape, i, j) whose compared residues are all in a group and pairwise in the same
    one: all pairs of positions compared at once (a matrix per compared offset)."""
    gq, gs = _groups(q, p), _groups(s, p)
    out = []
    for k, shape in enumerate(p.shapes):
        m, n = q.size - len(shape) + 1, s.size - len(shape) + 1
        if m <= 0 or n <= 0:
            continue
        same = np.ones((m, n), bool)
        for t, c in enumerate(shape):
            if c == "1":
                a, b = gq[t : t + m], gs[t : t + n]
                same &= (a[:, None] == b[None, :]) & (a[:, None] >= 0)
        out.extend((k, int(i), int(j)) for i, j in zip(*np.nonzero(same)))
    return out


def side_gain(q: np.ndarray, s: np.ndarray, i: int, j: int, step: int, matrix: np.ndarray, xdrop: int) -> int:
    """Best running sum (>= 0) walking from (i, j) by ``step``, stopping more than ``xdrop`` below the best or at an end."""
    best = run = 0
    while 0 <= i < q.size and 0 <= j < s.size:
        run += int(matrix[q[i], s[j]])
        if run > best:
            best = run
        elif best - run > xdrop:
            break
        i += step
        j += step
    return best


def is_candidate(q: np.ndarray, s: np.ndarray, matrix: np.ndarray, p: SeedParams) -> bool:
    for k, i, j in hits(q, s, p):
        length = len(p.shapes[k])
        span = sum(int(matrix[q[i + t], s[j + t]]) for t in range(length))
        if span < p.span:
            continue
        gains = side_gain(q, s, i + length, j + length, 1, matrix, p.xdrop) + side_gain(q, s, i - 1, j - 1, -1, matrix, p.xdrop)
        if span + gains >= p.trigger + p.trigger_step * max(0, s.size.bit_length() - 1 - 9):
            return True
    return False


def reference_candidates(queries: list[np.ndarray], subjects: list[np.ndarray], matrix: np.ndarray, p: SeedParams) -> list[np.ndarray]:
    """Per query, the indices (into ``subjects``) of its candidates, ascending."""
    return [np.array([k for k, s in enumerate(subjects) if is_candidate(q, s, matrix, p)], np.int64) for q in queries]


def _mutate(rng: np.random.Generator, seq: np.ndarray, identity: float) -> np.ndarray:
    out = []
    for c in seq:
        r = rng.random()
        if r < 0.03:
            continue  # deletion
        out.append(c if rng.random() < identity else rng.integers(0, 20))
        if r > 0.97:
            out.extend(rng.integers(0, 20, size=rng.integers(1, 4)))  # insertion
    return np.array(out, np.uint8)


def seed_data(seed: int = 1, n_queries: int = 6, n_subjects: int = 120) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(queries, subjects) as residue codes: see the module doc."""
    rng = np.random.default_rng(seed)
    queries = [rng.integers(0, 20, size=int(rng.integers(40, 260))).astype(np.uint8) for _ in range(n_queries)]
    queries[0][10:13] = [22, 20, 21]  # X B Z: no word there
    unit = rng.integers(0, 20, size=7).astype(np.uint8)
    queries[-1] = np.concatenate([np.tile(unit, 12), queries[-1]])  # repeat: many hits per diagonal
    subjects = []
    for k in range(n_subjects):
        kind = k % 4
        if kind == 0:  # random
            s = rng.integers(0, 20, size=int(rng.integers(1, 400))).astype(np.uint8)
        else:  # homologous to a query at decreasing identity, inside random flanks
            q = queries[int(rng.integers(0, n_queries))]
            a = int(rng.integers(0, q.size // 2))
            core = _mutate(rng, q[a : a + int(rng.integers(20, 200))], (0.9, 0.6, 0.4)[kind - 1])
            flanks = [rng.integers(0, 20, size=int(rng.integers(0, 60))).astype(np.uint8) for _ in range(2)]
            s = np.concatenate([flanks[0], core, flanks[1]])
        if k % 9 == 5 and s.size > 8:
            s[rng.integers(0, s.size, size=3)] = rng.choice([20, 21, 22, 23, 24])  # B Z X * U inside
        subjects.append(s)
    subjects[3] = np.array([4, 4], np.uint8)  # shorter than a word
    subjects[7] = np.concatenate([np.tile(unit, 10), subjects[7]])
    return queries, subjects


def write_fasta(path: Path, seqs: list[np.ndarray], prefix: str) -> Path:
    with open(path, "w") as fh:
        for k, s in enumerate(seqs):
            fh.write(f">{prefix}{k}\n{PROTEIN.decode(s)}\n")
    return path


def seed_database(tmp: Path, subjects: list[np.ndarray], chunk_residues: int = 4000) -> tuple[Database, np.ndarray]:
    """The subjects as a database of several chunks, and for each sorted index its subject's index in ``subjects``."""
    db = build_database(write_fasta(tmp / "subjects.fasta", subjects, "s"), tmp / "db", chunk_residues=chunk_residues, show_progress=False)
    return db, np.asarray(db.order, np.int64)
