"""The :class:`Alignment` record and its construction from a traced path.

Everything a report needs (aligned strings, CIGAR, BTOP, identities, positives, gap
counts) is derived once from the path and the two sequences, and the score is recomputed
from the path: :func:`build_alignment` refuses a path whose own score differs from the
search score, so no output ever shows an alignment that does not explain its score.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..fasta import EncodedSequence
from ..scoring import Scoring
from .traceback import OP_DEL, OP_INS, OP_PAIR, PairTrace, TracebackError

GAP = ord("-")


@dataclass
class Alignment:
    """One optimal local alignment of a query and a database sequence.

    Coordinates are 1-based and inclusive, as in BLAST. ``qseq``/``sseq`` are the aligned
    residues with ``-`` for gaps; in the CIGAR the query is the read and the subject the
    reference, so ``I`` is a query residue against a gap and ``D`` a subject residue
    against a gap.
    """

    query_id: str
    query_description: str
    subject_id: str
    subject_description: str
    subject_index: int  # sorted-numbering database index
    rank: int  # 1 = the query's best hit
    score: int
    qstart: int
    qend: int
    sstart: int
    send: int
    qlen: int
    slen: int
    qseq: str
    sseq: str
    midline: str  # '|' identical, '+' positive score, ' ' otherwise
    cigar: str  # =/X/I/D
    identities: int
    positives: int
    mismatches: int
    gap_opens: int
    gaps: int  # gap residues
    evalue: float | None = None
    bitscore: float | None = None
    ops: np.ndarray = field(default=None, repr=False, compare=False)

    @property
    def length(self) -> int:
        """Alignment columns (pairs plus gap residues)."""
        return len(self.qseq)

    @property
    def pident(self) -> float:
        return 100.0 * self.identities / self.length

    @property
    def ppos(self) -> float:
        return 100.0 * self.positives / self.length

    @property
    def qcovhsp(self) -> int:
        """Percent of the query inside the alignment, rounded like BLAST's."""
        return int(100.0 * (self.qend - self.qstart + 1) / self.qlen + 0.5)

    @property
    def cigar_m(self) -> str:
        """The CIGAR with ``=`` and ``X`` merged into ``M``."""
        return _run_length(np.frombuffer(self.cigar_ops, dtype=np.uint8).copy(), merge_m=True)

    @property
    def cigar_ops(self) -> bytes:
        """One CIGAR letter per column."""
        return _expand(self.cigar)

    @property
    def btop(self) -> str:
        """BLAST's trace-back operations: identical run lengths, else query+subject letters."""
        out, run = [], 0
        for a, b in zip(self.qseq, self.sseq):
            if a == b:
                run += 1
                continue
            if run:
                out.append(str(run))
                run = 0
            out.append(a + b)
        if run:
            out.append(str(run))
        return "".join(out)


def _expand(cigar: str) -> bytes:
    out, num = bytearray(), ""
    for ch in cigar:
        if ch.isdigit():
            num += ch
        else:
            out += ch.encode() * int(num)
            num = ""
    return bytes(out)


def _run_length(letters: np.ndarray, merge_m: bool = False) -> str:
    """Run-length code of a uint8 letter array, e.g. ``5=1X2I``."""
    if merge_m:
        letters = np.where((letters == ord("=")) | (letters == ord("X")), ord("M"), letters).astype(np.uint8)
    if letters.size == 0:
        return ""
    starts = np.flatnonzero(np.concatenate(([True], letters[1:] != letters[:-1])))
    lengths = np.diff(np.concatenate((starts, [letters.size])))
    return "".join(f"{n}{chr(letters[s])}" for s, n in zip(starts.tolist(), lengths.tolist()))


def build_alignment(
    trace: PairTrace,
    query: EncodedSequence,
    subject: EncodedSequence,
    subject_index: int,
    rank: int,
    scoring: Scoring,
) -> Alignment:
    """Derive every reported quantity from a traced path; checks the path's own score."""
    ops = trace.ops
    on_q = ops != OP_DEL
    on_s = ops != OP_INS
    qpos = trace.qstart - 1 + np.cumsum(on_q) - 1
    spos = trace.sstart - 1 + np.cumsum(on_s) - 1
    if qpos[-1] != trace.qend - 1 or spos[-1] != trace.send - 1:
        raise TracebackError(f"path of {query.id} vs {subject.id} does not span its end coordinates")
    decode = scoring.alphabet.decode_table
    qletters = np.where(on_q, decode[query.codes[qpos.clip(0)]], GAP).astype(np.uint8)
    sletters = np.where(on_s, decode[subject.codes[spos.clip(0)]], GAP).astype(np.uint8)
    pairs = ops == OP_PAIR
    qc, sc = query.codes[qpos[pairs]], subject.codes[spos[pairs]]
    sub = scoring.matrix[qc, sc]
    same = qc == sc
    positive = sub > 0
    gapped = ~pairs
    opens = int(np.count_nonzero(gapped & np.concatenate(([True], ops[1:] != ops[:-1]))))
    score = int(sub.sum()) - opens * scoring.gap_open - int(gapped.sum()) * scoring.gap_extend
    if score != trace.score:
        raise TracebackError(f"alignment of {query.id} vs {subject.id} scores {score}, the search found {trace.score}")
    mid = np.full(ops.size, ord(" "), np.uint8)
    mid[np.flatnonzero(pairs)[positive]] = ord("+")
    mid[np.flatnonzero(pairs)[same]] = ord("|")
    cig = np.where(ops == OP_DEL, ord("D"), ord("I")).astype(np.uint8)
    cig[np.flatnonzero(pairs)] = np.where(same, ord("="), ord("X"))
    return Alignment(
        query_id=query.id,
        query_description=query.description,
        subject_id=subject.id,
        subject_description=subject.description,
        subject_index=int(subject_index),
        rank=int(rank),
        score=score,
        qstart=trace.qstart,
        qend=trace.qend,
        sstart=trace.sstart,
        send=trace.send,
        qlen=len(query),
        slen=len(subject),
        qseq=qletters.tobytes().decode("ascii"),
        sseq=sletters.tobytes().decode("ascii"),
        midline=mid.tobytes().decode("ascii"),
        cigar=_run_length(cig),
        identities=int(same.sum()),
        positives=int(positive.sum()),
        mismatches=int(pairs.sum() - same.sum()),
        gap_opens=opens,
        gaps=int(gapped.sum()),
        ops=ops,
    )
