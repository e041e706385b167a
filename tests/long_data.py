"""Deterministic inputs for the align-long tests: real protein, and DNA with planted segments.

The protein target is bundled UniProt sequences (resources/db.fasta.gz) back to back; the
DNA is generated from a fixed seed with mutated copies of the query planted in it
(substitutions, insertions and deletions at known places), so expected coordinates are
known exactly.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from swgpu_core.alphabet import DNA, PROTEIN
from swgpu_core.fasta import read_fasta

RESOURCES = Path(__file__).resolve().parent.parent / "resources"


def protein_pair(n_target: int = 60_000, query_index: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """(query, target) codes: one bundled protein, and bundled proteins concatenated."""
    seqs = []
    total = 0
    for rec in read_fasta(RESOURCES / "db.fasta.gz"):
        seqs.append(PROTEIN.encode(rec.sequence))
        total += seqs[-1].size
        if total >= n_target:
            break
    return seqs[query_index].copy(), np.concatenate(seqs)[:n_target].copy()


def random_dna(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 4, n).astype(np.uint8)


def mutate(segment: np.ndarray, seed: int) -> np.ndarray:
    """A copy with ~3% substitutions, a 7-residue deletion and a 5-residue insertion inside."""
    rng = np.random.default_rng(seed)
    out = segment.copy()
    sub = rng.random(out.size) < 0.03
    out[sub] = (out[sub] + rng.integers(1, 4, int(sub.sum()))) % 4
    a, b = out.size // 3, 2 * out.size // 3
    return np.concatenate([out[:a], out[a + 7 : b], rng.integers(0, 4, 5).astype(np.uint8), out[b:]])


def planted(n: int, m: int, at: int, seed: int = 11) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(query, target, planted copy): the query's mutated copy placed at target column ``at`` (0-based)."""
    query = random_dna(m, seed)
    target = random_dna(n, seed + 1)
    copy = mutate(query, seed + 2)
    target[at : at + copy.size] = copy
    return query, target, copy


def fasta(path: Path, name: str, codes: np.ndarray, alphabet=DNA) -> Path:
    path.write_text(f">{name}\n{alphabet.decode(codes)}\n")
    return path
