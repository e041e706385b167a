"""Scores equal independent implementations: Biopython's PairwiseAligner and parasail."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import numpy as np
import pytest
from Bio import SeqIO
from Bio.Align import PairwiseAligner, substitution_matrices

from swgpu_core.alphabet import PROTEIN
from swgpu_core.backends.cpu import CpuBackend
from swgpu_core.database import Database, build_database
from swgpu_core.fasta import read_sequences
from swgpu_core.scoring import PROTEIN_MATRICES, Scoring
from swgpu_core.search import search

LETTERS = "ARNDCQEGHILKMFPSTWYV"
RARE = "BZX*UOJ"


def random_fasta(path: Path, rng: np.random.Generator, n: int, max_len: int, prefix: str) -> list[str]:
    """Random protein records incl. length 1, rare/ambiguity letters and lower case."""
    seqs = []
    for i in range(n):
        length = 1 if i < 3 else int(rng.integers(1, max_len + 1))
        chars = rng.choice(list(LETTERS), length)
        rare = rng.random(length) < 0.08
        chars[rare] = rng.choice(list(RARE), int(rare.sum()))
        seq = "".join(chars)
        if i % 4 == 1:
            seq = seq.lower()
        seqs.append(seq)
    path.write_text("".join(f">{prefix}{i} random\n{s}\n" for i, s in enumerate(seqs)))
    return seqs


def biopython_score(aligner: PairwiseAligner, a: str, b: str) -> int:
    """Biopython has no U/O/J rows and no lower case: score them as we document (X, upper)."""
    table = str.maketrans("UOJ", "XXX")
    return int(aligner.score(a.upper().translate(table), b.upper().translate(table)))


@pytest.mark.parametrize("matrix", PROTEIN_MATRICES)
def test_offered_matrices_equal_biopython(matrix: str) -> None:
    """The offered matrices load from scoring-matrices (fast to import): the same scores as
    Biopython's in the same layout, and none of Biopython imported for them."""
    import subprocess
    import sys

    bio = substitution_matrices.load(matrix)
    scoring = Scoring.protein(matrix.lower())
    letters = [c if c in bio.alphabet else "X" for c in PROTEIN.letters]
    idx = [bio.alphabet.index(c) for c in letters]
    assert np.array_equal(scoring.matrix, np.asarray(bio)[np.ix_(idx, idx)].astype(np.int32))
    code = f"import sys; from swgpu_core.scoring import Scoring; Scoring.protein({matrix!r}); print('Bio' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


@pytest.mark.parametrize(
    ("matrix", "gap_open", "gap_extend"),
    [("BLOSUM62", 11, 1), ("BLOSUM45", 14, 2), ("PAM30", 9, 1), ("BLOSUM80", 10, 1), ("PAM250", 0, 3)],
)
def test_scores_equal_biopython(tmp_path: Path, matrix: str, gap_open: int, gap_extend: int) -> None:
    rng = np.random.default_rng(zlib.crc32(matrix.encode()))
    subjects = random_fasta(tmp_path / "db.fa", rng, 150, 160, "s")
    queries = random_fasta(tmp_path / "q.fa", rng, 6, 120, "q")
    db = build_database(tmp_path / "db.fa", tmp_path / "db", chunk_residues=3000, show_progress=False)
    scoring = Scoring.protein(matrix, gap_open, gap_extend)
    result = search(db, read_sequences(tmp_path / "q.fa"), scoring, CpuBackend(scoring, threads=2), top=len(subjects), show_progress=False)

    aligner = PairwiseAligner(mode="local", substitution_matrix=substitution_matrices.load(matrix))
    aligner.open_gap_score, aligner.extend_gap_score = -(gap_open + gap_extend), -gap_extend
    for qh, qseq in zip(result.hits, queries):
        got = {int(db.order[s]): int(sc) for s, sc in zip(qh.subjects, qh.scores)}
        assert len(got) == len(subjects)
        want = {j: biopython_score(aligner, qseq, sseq) for j, sseq in enumerate(subjects)}
        assert got == want, f"{matrix} {gap_open}/{gap_extend} query {qh.query.id}"


def test_ties_follow_source_order(tmp_path: Path) -> None:
    """Equal scores are ranked by position in the source FASTA, whatever the length order."""
    seqs = ["MKTAYIAKQR", "WWWW", "MKTAYIAKQR", "MKTAYIAKQRGG", "MKTAYIAKQR"]
    (tmp_path / "db.fa").write_text("".join(f">s{i}\n{s}\n" for i, s in enumerate(seqs)))
    (tmp_path / "q.fa").write_text(">q\nMKTAYIAKQR\n")
    db = build_database(tmp_path / "db.fa", tmp_path / "db", chunk_residues=12, show_progress=False)
    scoring = Scoring.protein()
    hits = search(db, read_sequences(tmp_path / "q.fa"), scoring, CpuBackend(scoring, threads=1), top=4, show_progress=False).hits[0]
    assert [db.seq_id(int(s)) for s in hits.subjects] == ["s0", "s2", "s3", "s4"]


def test_top50_equals_parasail_on_real_proteins(bundled_db: Database, resources: Path) -> None:
    """Five real UniProt queries against 3,000 real UniProt proteins, parasail sw_striped_32."""
    parasail = pytest.importorskip("parasail")
    scoring = Scoring.protein("BLOSUM62", 11, 1)
    queries = read_sequences(resources / "queries.fasta")
    result = search(bundled_db, queries, scoring, CpuBackend(scoring, threads=2), top=50, show_progress=False)

    table = str.maketrans("UOJ", "XXX")  # parasail would score unknown letters as '*'
    with gzip.open(resources / "db.fasta.gz", "rt") as fh:
        subjects = [(r.id, str(r.seq).upper().translate(table)) for r in SeqIO.parse(fh, "fasta")]
    for qh in result.hits:
        qtext = bundled_db.alphabet.decode(qh.query.codes).translate(table)
        profile = parasail.profile_create_32(qtext, parasail.blosum62)
        scores = [parasail.sw_striped_profile_32(profile, s, scoring.first_gap_cost, scoring.gap_extend).score for _, s in subjects]
        best = sorted(range(len(subjects)), key=lambda j: (-scores[j], j))[:50]
        want = [(subjects[j][0], scores[j]) for j in best]
        got = [(bundled_db.seq_id(int(s)), int(sc)) for s, sc in zip(qh.subjects, qh.scores)]
        assert got == want, qh.query.id
