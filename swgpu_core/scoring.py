"""Scoring schemes: substitution matrix and affine gap costs in BLAST's convention.

A gap of length ``k`` costs ``gap_open + k * gap_extend`` (BLAST, SSEARCH). Libraries that
count ``gap_open + (k - 1) * gap_extend`` (parasail, Opal/pyopal, CUDASW++) are given
``gap_open + gap_extend`` as their opening cost; :meth:`Scoring.first_gap_cost` is that value.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .alphabet import DNA, PROTEIN, Alphabet
from .errors import InputError

#: Matrices offered by name, read from scoring-matrices (tests/test_scores.py checks them
#: equal to Biopython's); any other name Biopython knows also loads.
PROTEIN_MATRICES = ("BLOSUM45", "BLOSUM50", "BLOSUM62", "BLOSUM80", "BLOSUM90", "PAM30", "PAM70", "PAM250")

#: Letters scored as X when the matrix has no row for them.
_AS_X = "UOJ"


@dataclass(frozen=True)
class Scoring:
    """Substitution scores indexed by residue code, and the gap costs."""

    matrix_name: str
    gap_open: int
    gap_extend: int
    alphabet: Alphabet
    matrix: np.ndarray = field(repr=False, compare=False)

    @classmethod
    def protein(cls, matrix_name: str = "BLOSUM62", gap_open: int = 11, gap_extend: int = 1) -> Scoring:
        """Load a substitution matrix and lay it out in :data:`PROTEIN` code order."""
        _check_gaps(gap_open, gap_extend)
        alphabet, table = _load_matrix(matrix_name)
        letters = PROTEIN.letters
        if "X" not in alphabet:
            raise InputError(f"matrix {matrix_name} has no X row, so ambiguity codes cannot be scored")
        rows = [c if c in alphabet else ("X" if c in _AS_X + "BZ*" else None) for c in letters]
        if None in rows:
            missing = "".join(c for c, r in zip(letters, rows) if r is None)
            raise InputError(f"matrix {matrix_name} lacks residues {missing}")
        idx = [alphabet.index(r) for r in rows]
        values = table[np.ix_(idx, idx)]
        if not np.all(values == np.round(values)):
            raise InputError(f"matrix {matrix_name} has non-integer scores")
        return cls(matrix_name.upper(), gap_open, gap_extend, PROTEIN, values.astype(np.int32))

    @classmethod
    def nucleotide(cls, match: int = 5, mismatch: int = -3, gap_open: int = 8, gap_extend: int = 1) -> Scoring:
        """Match/mismatch scoring; N and ambiguity codes always score as a mismatch.

        The defaults are the SSCA#1 benchmark's (+5, -3, gap of length k costs 8 + k).
        """
        _check_gaps(gap_open, gap_extend)
        n = DNA.size
        values = np.full((n, n), mismatch, dtype=np.int32)
        np.fill_diagonal(values[:4, :4], match)
        return cls(f"match{match}mismatch{mismatch}", gap_open, gap_extend, DNA, values)

    @property
    def first_gap_cost(self) -> int:
        """Cost of a gap of length one: the opening cost in the (k-1) convention."""
        return self.gap_open + self.gap_extend

    @property
    def max_score(self) -> int:
        return int(self.matrix.max())

    def describe(self) -> str:
        return f"{self.matrix_name} gap {self.gap_open}/{self.gap_extend}"


#: Largest gap cost accepted: far beyond any useful value (substitution scores are below 30),
#: and small enough that no kernel's int32 (or packed) arithmetic can overflow with it.
MAX_GAP_COST = 1000


def _load_matrix(name: str) -> tuple[str, np.ndarray]:
    """(alphabet, scores) of the matrix ``name`` (any case): the offered ones from scoring-matrices,
    which imports in milliseconds (every process of a run loads one; Biopython's import takes
    ~0.1 s), other names from Biopython."""
    if name.upper() in PROTEIN_MATRICES:
        from scoring_matrices import ScoringMatrix

        matrix = ScoringMatrix.from_name(name.upper())
        return "".join(matrix.alphabet), np.asarray(matrix)
    from Bio.Align import substitution_matrices

    try:
        bio = substitution_matrices.load(name.upper())
    except (FileNotFoundError, ValueError):
        raise InputError(f"unknown substitution matrix {name!r} (try one of {', '.join(PROTEIN_MATRICES)})") from None
    return "".join(bio.alphabet), np.asarray(bio)


def _check_gaps(gap_open: int, gap_extend: int) -> None:
    if not (0 <= gap_open <= MAX_GAP_COST and 1 <= gap_extend <= MAX_GAP_COST):
        raise InputError(f"gap costs must be 0 <= open <= {MAX_GAP_COST} and 1 <= extend <= {MAX_GAP_COST} (got {gap_open}/{gap_extend})")
