"""CPU traceback: optimal scores, self-consistent alignments, the tie rule, bounded memory."""

from __future__ import annotations

import numpy as np
import pytest
from Bio import Align
from Bio.Align import substitution_matrices

from swgpu_core.align import PairTask, TracebackError, build_alignment, trace_pair, traceback_pairs
from swgpu_core.align.traceback import forward_end
from swgpu_core.alphabet import PROTEIN
from swgpu_core.fasta import EncodedSequence
from swgpu_core.scoring import Scoring

LETTERS = list("ARNDCQEGHILKMFPSTWYV")
AMBIGUOUS = list("BZX*UOJ")


def bio_aligner(scoring: Scoring) -> Align.PairwiseAligner:
    """Biopython's local aligner in BLAST's gap convention, over our letters (U/O/J as X)."""
    return Align.PairwiseAligner(
        mode="local",
        substitution_matrix=substitution_matrices.load(scoring.matrix_name),
        open_gap_score=-(scoring.gap_open + scoring.gap_extend),
        extend_gap_score=-scoring.gap_extend,
    )


def as_bio(seq: str) -> str:
    return seq.translate(str.maketrans("UOJ", "XXX"))


def mutate(rng: np.random.Generator, seq: str) -> str:
    """A related sequence: substitutions, deletions and insertions."""
    out: list[str] = []
    for c in seq:
        r = rng.random()
        if r < 0.15:
            out.append(str(rng.choice(LETTERS)))
        elif r < 0.2:
            continue
        elif r < 0.25:
            out += [c, *rng.choice(LETTERS, rng.integers(1, 5))]
        else:
            out.append(c)
    return "".join(out)


def rescore(qseq: str, sseq: str, scoring: Scoring) -> int:
    """Score of aligned strings, computed column by column, independently of the aligner."""
    total, prev = 0, None
    for a, b in zip(qseq, sseq):
        kind = "I" if b == "-" else "D" if a == "-" else "M"
        if kind == "M":
            total += int(scoring.matrix[PROTEIN.encode(a)[0], PROTEIN.encode(b)[0]])
        else:
            total -= scoring.gap_extend + (scoring.gap_open if prev != kind else 0)
        prev = kind
    return total


def random_pairs(seed: int, count: int) -> list[tuple[str, str]]:
    rng = np.random.default_rng(seed)
    pairs = [("W", "W"), ("W", "A"), ("A", "AAAA"), ("X", "X"), ("U", "C"), ("*", "*")]
    for k in range(count):
        alphabet = LETTERS + AMBIGUOUS if k % 4 == 0 else LETTERS
        a = "".join(rng.choice(alphabet, rng.integers(1, 120)))
        b = mutate(rng, a) if k % 2 else "".join(rng.choice(alphabet, rng.integers(1, 120)))
        pairs.append((a, b or "A"))
    return pairs


@pytest.mark.parametrize("matrix,go,ge", [("BLOSUM62", 11, 1), ("PAM30", 9, 1), ("BLOSUM45", 14, 2)])
def test_traceback_matches_biopython_and_rescores(matrix: str, go: int, ge: int) -> None:
    scoring = Scoring.protein(matrix, go, ge)
    bio = bio_aligner(scoring)
    for a, b in random_pairs(hash(matrix) % 1000, 60):
        qa, sa = PROTEIN.encode(a), PROTEIN.encode(b)
        best, _, _ = forward_end(qa, sa, scoring.matrix, go, ge)
        assert best == max(0, int(bio.score(as_bio(a), as_bio(b)))), (a, b)
        if best <= 0:
            continue
        aln = build_alignment(
            trace_pair(PairTask(qa, sa, best), scoring), EncodedSequence("q", "", qa), EncodedSequence("s", "", sa), 0, 1, scoring
        )
        assert aln.score == best == rescore(aln.qseq, aln.sseq, scoring)
        assert aln.qseq.replace("-", "") == a[aln.qstart - 1 : aln.qend]
        assert aln.sseq.replace("-", "") == b[aln.sstart - 1 : aln.send]
        assert aln.identities + aln.mismatches + aln.gaps == aln.length
        assert aln.qseq[0] != "-" != aln.sseq[0] and aln.qseq[-1] != "-" != aln.sseq[-1]
        assert aln.cigar_m.replace("M", "").isalnum()


def test_tie_rule_first_end_and_shortest_start() -> None:
    scoring = Scoring.protein()
    # Two equal copies of the motif in the subject: the end cell is the first one in row-major
    # order (smallest query end, then smallest subject end), so the left copy wins.
    q = PROTEIN.encode("WCW")
    s = PROTEIN.encode("AWCWAAWCWA")
    tr = trace_pair(PairTask(q, s, 31), scoring)
    assert (tr.qstart, tr.qend, tr.sstart, tr.send) == (1, 3, 2, 4)
    # A/T scores 0 in BLOSUM62, so AW/TW and W/W both score 11: the start is the largest
    # (the shortest alignment), and no zero-scoring prefix is reported.
    q2, s2 = PROTEIN.encode("AW"), PROTEIN.encode("TW")
    tr2 = trace_pair(PairTask(q2, s2, 11), scoring)
    assert (tr2.qstart, tr2.qend, tr2.sstart, tr2.send) == (2, 2, 2, 2)


def test_tie_rule_diagonal_before_gaps() -> None:
    """Equal-scoring placements of one gap: the traceback takes the diagonal as late as it can."""
    scoring = Scoring.protein()
    q, s = PROTEIN.encode("WWAWW"), PROTEIN.encode("WWAAWW")
    aln = build_alignment(trace_pair(PairTask(q, s, 36), scoring), EncodedSequence("q", "", q), EncodedSequence("s", "", s), 0, 1, scoring)
    # From the end (W W) backwards: diagonal A/A is preferred over opening the gap, so the
    # gap lands at the leftmost A of the subject.
    assert (aln.qseq, aln.sseq, aln.cigar) == ("WW-AWW", "WWAAWW", "2=1D3=")


def test_strips_give_the_same_path_as_full_storage() -> None:
    scoring = Scoring.protein()
    rng = np.random.default_rng(7)
    for _ in range(20):
        a = "".join(rng.choice(LETTERS, rng.integers(30, 300)))
        qa, sa = PROTEIN.encode(a), PROTEIN.encode(mutate(rng, a))
        best, _, _ = forward_end(qa, sa, scoring.matrix, 11, 1)
        full = trace_pair(PairTask(qa, sa, best), scoring)
        for budget in (1, 16, 500):
            strip = trace_pair(PairTask(qa, sa, best), scoring, budget=budget)
            assert (strip.qstart, strip.qend, strip.sstart, strip.send) == (full.qstart, full.qend, full.sstart, full.send)
            assert np.array_equal(strip.ops, full.ops)


def test_long_pair_with_bounded_memory() -> None:
    scoring = Scoring.protein()
    rng = np.random.default_rng(3)
    a = "".join(rng.choice(LETTERS, 3000))
    qa, sa = PROTEIN.encode(a), PROTEIN.encode(mutate(rng, a))
    best, _, _ = forward_end(qa, sa, scoring.matrix, 11, 1)
    tr = trace_pair(PairTask(qa, sa, best), scoring, budget=64 << 10)  # forces ~80 strips
    aln = build_alignment(tr, EncodedSequence("q", "", qa), EncodedSequence("s", "", sa), 0, 1, scoring)
    assert aln.score == best == rescore(aln.qseq, aln.sseq, scoring)


def test_wrong_search_score_is_an_error() -> None:
    scoring = Scoring.protein()
    q = PROTEIN.encode("MKVLAAGW")
    with pytest.raises(TracebackError, match="search reported 99"):
        trace_pair(PairTask(q, q, 99), scoring)


def test_traceback_pairs_keeps_order_across_threads() -> None:
    scoring = Scoring.protein()
    rng = np.random.default_rng(5)
    tasks = []
    for _ in range(12):
        a = PROTEIN.encode("".join(rng.choice(LETTERS, rng.integers(20, 80))))
        tasks.append(PairTask(a, a, forward_end(a, a, scoring.matrix, 11, 1)[0]))
    traces = traceback_pairs(tasks, scoring, threads=2)
    assert [t.qend for t in traces] == [len(t.query) for t in tasks]
