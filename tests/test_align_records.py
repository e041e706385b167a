"""Alignment records and their outputs equal a plain reference, field by field and byte by byte.

The records are built many at once with numpy (:func:`~swgpu_core.align.alignment.build_alignments`)
and the writers format whole columns or one line per record; the reference implementations
below do it one column, one cell, one attribute at a time (as swgpu once did), so every
shortcut of the fast path is checked against the plain one: random paths (gaps at either
end, ambiguity codes and stops, DNA, one-residue sequences), real traced paths of a database
search and of pairs, and every output format written by both.
"""

from __future__ import annotations

import gzip
import json
import pickle
import re
import sys
from collections.abc import Callable
from copy import copy as shallow_copy
from dataclasses import fields, replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pysam
import pytest

from swgpu_core import __version__, outfmt
from swgpu_core.align import Alignment, PairTask, PairTrace, TracebackError, align_query_hits, build_alignment, trace_pair
from swgpu_core.align.alignment import build_alignments
from swgpu_core.align.traceback import OP_DEL, OP_INS, OP_PAIR, AlignedPairs, PairTasks, TracedPaths
from swgpu_core.api import align_pairs
from swgpu_core.database import Database
from swgpu_core.engine import get_engine
from swgpu_core.fasta import EncodedSequence, read_sequences
from swgpu_core.formats import Results, write_results
from swgpu_core.outfmt import FIELDS, STANDARD_FIELDS, accession, clean, title
from swgpu_core.pairs import align_pair_set, fasta_pairs
from swgpu_core.scoring import Scoring
from swgpu_core.search import QueryHits, search
from swgpu_core.significance import NO_STATISTICS, has_evalues, query_significance, statistics
from swgpu_core.stats import format_bitscore, format_evalue

PROTEIN = Scoring.protein()
DNA = Scoring.nucleotide()


# -- the reference records: one column at a time --------------------------------------------------


def reference_record(trace: PairTrace, query: EncodedSequence, subject: EncodedSequence, index: int, rank: int, scoring: Scoring) -> dict:
    """Every compared field of one path's record; a path off its ends is a TracebackError (the score is not checked)."""
    letters = scoring.alphabet.letters
    qi, si = trace.qstart - 1, trace.sstart - 1
    qseq, sseq, mid, cigar = [], [], [], []
    score = identities = positives = mismatches = opens = gaps = 0
    previous = None
    for op in trace.ops.tolist():
        if not (0 <= qi < len(query) or op == OP_DEL) or not (0 <= si < len(subject) or op == OP_INS):
            raise TracebackError("off the sequence")
        if op == OP_PAIR:
            a, b = int(query.codes[qi]), int(subject.codes[si])
            value = int(scoring.matrix[a, b])
            score += value
            qseq.append(letters[a])
            sseq.append(letters[b])
            identities += a == b
            positives += value > 0
            mismatches += a != b
            mid.append("|" if a == b else "+" if value > 0 else " ")
            cigar.append("=" if a == b else "X")
        else:
            opens += op != previous
            gaps += 1
            score -= scoring.gap_extend + (scoring.gap_open if op != previous else 0)
            qseq.append(letters[query.codes[qi]] if op == OP_INS else "-")
            sseq.append(letters[subject.codes[si]] if op == OP_DEL else "-")
            mid.append(" ")
            cigar.append("I" if op == OP_INS else "D")
        qi, si = qi + (op != OP_DEL), si + (op != OP_INS)
        previous = op
    if qi != trace.qend or si != trace.send or trace.qstart < 1 or trace.sstart < 1:
        raise TracebackError("off its ends")
    return dict(
        query_id=query.id, query_description=query.description, subject_id=subject.id, subject_description=subject.description,
        subject_index=index, rank=rank, score=score, qstart=trace.qstart, qend=trace.qend, sstart=trace.sstart, send=trace.send,
        qlen=len(query), slen=len(subject), length=len(qseq), qseq="".join(qseq), sseq="".join(sseq), midline="".join(mid),
        cigar=run_lengths("".join(cigar)),
        identities=identities, positives=positives, mismatches=mismatches, gap_opens=opens, gaps=gaps, evalue=None, bitscore=None,
    )  # fmt: skip


def run_lengths(letters: str) -> str:
    out, k = [], 0
    while k < len(letters):
        n = len(letters[k:]) - len(letters[k:].lstrip(letters[k]))
        out.append(f"{n}{letters[k]}")
        k += n
    return "".join(out)


def expand(cigar: str) -> str:
    return "".join(letter * int(n) for n, letter in re.findall(r"(\d+)(\D)", cigar))


def reference_btop(qseq: str, sseq: str) -> str:
    out, run = [], 0
    for a, b in zip(qseq, sseq):
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


def as_dict(aln: Alignment) -> dict:
    return {f.name: getattr(aln, f.name) for f in fields(Alignment) if f.compare}


def random_path(rng: np.random.Generator, scoring: Scoring, max_len: int, name: str) -> tuple[PairTrace, EncodedSequence, EncodedSequence]:
    """A random path of pairs and gaps (at either end too) through two random sequences (``q<name>``, ``s<name>``), scored as it is."""
    n = int(rng.integers(1, max_len + 1))
    ops = rng.choice(np.array([OP_PAIR, OP_PAIR, OP_PAIR, OP_DEL, OP_INS], np.uint8), n)
    for k in np.flatnonzero(rng.random(n) < 0.5):  # longer gaps and pair runs: repeat the previous op
        ops[k] = ops[k - 1] if k else ops[k]
    nq, ns = int(np.count_nonzero(ops != OP_DEL)), int(np.count_nonzero(ops != OP_INS))
    q0, s0 = int(rng.integers(0, 3)), int(rng.integers(0, 3))
    q = rng.integers(0, scoring.alphabet.size, q0 + nq + int(rng.integers(0, 3))).astype(np.uint8)
    s = rng.integers(0, scoring.alphabet.size, s0 + ns + int(rng.integers(0, 3))).astype(np.uint8)
    qi, si = q0, s0
    for op, copy in zip(ops.tolist(), (rng.random(n) < 0.5).tolist()):  # runs of identities
        if op == OP_PAIR and copy:
            s[si] = q[qi]
        qi, si = qi + (op != OP_DEL), si + (op != OP_INS)
    query, subject = EncodedSequence(f"q{name}", "a query", q), EncodedSequence(f"s{name}", "", s)
    trace = PairTrace(0, q0 + 1, q0 + nq, s0 + 1, s0 + ns, ops)
    score = reference_record(trace, query, subject, 0, 1, scoring)["score"]
    return PairTrace(score, q0 + 1, q0 + nq, s0 + 1, s0 + ns, ops), query, subject


def check_records(traces: list[PairTrace], queries: list, subjects: list, scoring: Scoring) -> list[Alignment]:
    """The batch equals the reference for every path, and so does each path built alone."""
    indices, ranks = list(range(7, 7 + len(traces))), [k % 5 + 1 for k in range(len(traces))]
    built = build_alignments(traces, queries, subjects, indices, ranks, scoring)
    assert len(built) == len(traces)
    for k, aln in enumerate(built):
        want = reference_record(traces[k], queries[k], subjects[k], indices[k], ranks[k], scoring)
        assert as_dict(aln) == want, f"path {k}"
        assert aln.length == len(want["qseq"]) and aln.ops is traces[k].ops
        assert aln.btop == reference_btop(want["qseq"], want["sseq"])
        assert aln.cigar_m == run_lengths(expand(want["cigar"]).translate(str.maketrans("=X", "MM")))
    for k in range(0, len(traces), max(1, len(traces) // 10)):
        assert as_dict(build_alignment(traces[k], queries[k], subjects[k], indices[k], ranks[k], scoring)) == as_dict(built[k])
    for paths in (TracedPaths.of(traces), scattered(traces)):  # the paths as arrays, as the engines return them
        again = build_alignments(paths, queries, subjects, indices, ranks, scoring)
        assert [as_dict(a) for a in again] == [as_dict(a) for a in built]
        assert all(np.array_equal(a.ops, t.ops) and a.ops.base is not None for a, t in zip(again, traces))  # views of the paths
    return built


def scattered(traces: list[PairTrace]) -> TracedPaths:
    """:meth:`TracedPaths.gather` of the paths laid out as the GPU leaves them: each at the end of
    a slot longer than itself, the slots in another order than the pairs."""
    rng = np.random.default_rng(len(traces))
    slots = [t.ops.size + int(rng.integers(0, 5)) for t in traces]
    order = rng.permutation(len(traces))
    buffer, starts, at = np.full(sum(slots), 9, np.uint8), np.zeros(len(traces), np.int64), 0
    for k in order.tolist():
        starts[k] = at + slots[k] - traces[k].ops.size
        buffer[starts[k] : at + slots[k]] = traces[k].ops
        at += slots[k]
    ends = [np.array([getattr(t, f) for t in traces], np.int32) for f in ("score", "qstart", "qend", "sstart", "send")]
    return TracedPaths.gather(ends, buffer, starts, [t.ops.size for t in traces])


def test_records_built_in_parts_side_by_side_equal_those_built_at_once(monkeypatch) -> None:
    """Parts of whole records on threads: the same records in the same order, each part's texts
    its own; the first bad path is the one named, whichever part holds it and whatever fails after."""
    from swgpu_core.align import alignment

    rng = np.random.default_rng(8)
    traces, queries, subjects = (list(x) for x in zip(*(random_path(rng, PROTEIN, 80, str(k)) for k in range(300))))
    whole = build_alignments(TracedPaths.of(traces), queries, subjects, range(300), [1] * 300, PROTEIN, threads=1)
    monkeypatch.setattr(alignment, "PART_COLUMNS", 500)
    assert len(alignment.record_parts(TracedPaths.of(traces).bounds, 4)) == 4
    for given in (traces, TracedPaths.of(traces), scattered(traces)):
        parts = build_alignments(given, queries, subjects, range(300), [1] * 300, PROTEIN, threads=4)
        assert [as_dict(a) for a in parts] == [as_dict(a) for a in whole]
        assert [a.texts[0] for a in parts[::75]] != [parts[0].texts[0]] * 4  # a _Texts per part
        assert [(a.qseq, a.cigar) for a in parts] == [(a.qseq, a.cigar) for a in whole]
        if given is traces:
            assert all(a.ops is t.ops for a, t in zip(parts, traces))
    bad = list(traces)
    bad[290], bad[200] = replace(traces[290], score=traces[290].score + 1), replace(traces[200], qend=traces[200].qend - 1)
    with pytest.raises(TracebackError, match="path of q200 vs s200 does not span"):
        build_alignments(bad, queries, subjects, range(300), [1] * 300, PROTEIN, threads=4)
    bad[20] = replace(traces[20], score=0)
    with pytest.raises(TracebackError, match="alignment of q20 vs s20 scores"):
        build_alignments(TracedPaths.of(bad), queries, subjects, range(300), [1] * 300, PROTEIN, threads=4)


@pytest.mark.parametrize("threads", [1, 2, 3, 8, 64])
def test_record_parts_cover_every_record_once_in_about_equal_columns(threads: int) -> None:
    from swgpu_core.align.alignment import MAX_PARTS, PART_COLUMNS, record_parts

    rng = np.random.default_rng(threads)
    for lengths in (rng.integers(1, 3000, 9000), np.full(3, 4 * PART_COLUMNS), np.array([1, 9 * PART_COLUMNS, 1]), np.array([5])):
        bounds = np.concatenate(([0], np.cumsum(lengths)))
        parts = record_parts(bounds, threads)
        assert parts[0][0] == 0 and parts[-1][1] == lengths.size and all(a < b for a, b in parts)
        assert all(b == c for (_, b), (c, _) in zip(parts, parts[1:]))
        assert len(parts) <= min(threads, MAX_PARTS, max(1, int(bounds[-1]) // PART_COLUMNS))
        columns = [int(bounds[b] - bounds[a]) for a, b in parts]
        if lengths.size == 9000:  # short records: the parts differ by less than a record or two
            assert len(parts) == min(threads, MAX_PARTS, int(bounds[-1]) // PART_COLUMNS)
            assert max(columns) - min(columns) < 6000


def test_pair_tasks_hold_each_sequence_once_and_index_as_a_list() -> None:
    rng = np.random.default_rng(3)
    sequences = [rng.integers(0, 25, int(n)).astype(np.uint8) for n in rng.integers(1, 40, 9)]
    queries, subjects = rng.integers(0, 3, 30), rng.integers(3, 9, 30)
    scores = rng.integers(1, 1 << 20, 30)
    tasks = PairTasks.of(sequences, queries, subjects, scores)
    assert len(tasks) == 30 and tasks.residues.size == sum(s.size for s in sequences)
    for k, task in enumerate(tasks):
        assert np.array_equal(task.query, sequences[queries[k]]) and np.array_equal(task.subject, sequences[subjects[k]])
        assert task.score == scores[k] and task.query.base is not None  # a view of the residues
    assert np.array_equal(tasks[-1].subject, sequences[subjects[-1]])
    with pytest.raises(IndexError):
        tasks[30]
    assert len(PairTasks.of([], [], [], [])) == 0


def test_traced_paths_index_slice_and_iterate_as_a_list() -> None:
    rng = np.random.default_rng(4)
    traces = [random_path(rng, PROTEIN, 30, str(k))[0] for k in range(12)]
    key = lambda t: (t.score, t.qstart, t.qend, t.sstart, t.send, t.ops.tobytes())  # noqa: E731
    for paths in (TracedPaths.of(traces), scattered(traces)):
        assert len(paths) == 12 and [key(t) for t in paths] == [key(t) for t in traces]
        assert key(paths[-1]) == key(traces[-1]) and isinstance(paths[3].score, int)
        for a, b in ((0, 12), (3, 7), (5, 5), (10, 40), (-4, None)):
            part = paths[a:b]
            assert isinstance(part, TracedPaths) and [key(t) for t in part] == [key(t) for t in traces[a:b]]
            assert part.bounds[0] == 0 and part.bounds[-1] == part.ops.size
        with pytest.raises(IndexError):
            paths[12]
    empty = TracedPaths.of([])
    assert len(empty) == 0 and list(empty) == [] and empty.ops.dtype == np.uint8
    assert build_alignments(empty, [], [], [], [], PROTEIN) == []


def test_aligned_pairs_index_and_iterate_as_a_list_with_none_where_no_alignment() -> None:
    rng = np.random.default_rng(5)
    traces = [random_path(rng, PROTEIN, 30, str(k))[0] if rng.random() < 0.6 else None for k in range(40)]
    traces[0], traces[-1] = None, random_path(rng, PROTEIN, 30, "last")[0]
    key = lambda t: None if t is None else (t.score, t.qstart, t.qend, t.sstart, t.send, t.ops.tobytes())  # noqa: E731
    found = AlignedPairs.of(traces)
    assert len(found) == 40 and found.aligned.tolist() == [k for k, t in enumerate(traces) if t is not None]
    assert len(found.paths) == found.aligned.size and [key(t) for t in found.paths] == [key(t) for t in traces if t is not None]
    assert [key(t) for t in found] == [key(t) for t in traces]
    assert found.mask.tolist() == [t is not None for t in traces]
    assert [key(found[k]) for k in range(-40, 40)] == [key(t) for t in traces + traces]
    with pytest.raises(IndexError):
        found[40]
    none = AlignedPairs.of([None, None])
    assert list(none) == [None, None] and none.aligned.dtype == np.int64 and len(none.paths) == 0


@pytest.mark.parametrize("scoring", [PROTEIN, DNA], ids=["protein", "dna"])
def test_random_paths_equal_the_reference(scoring: Scoring) -> None:
    rng = np.random.default_rng(5)
    lengths = [1] * 40 + [3] * 40 + [40] * 300 + [400] * 20
    paths = [random_path(rng, scoring, max_len, str(k)) for k, max_len in enumerate(lengths)]
    built = check_records(*(list(x) for x in zip(*paths)), scoring)
    assert {a.length for a in built} >= {1, 2, 3} and any(a.gap_opens > 2 for a in built)
    assert any(a.cigar[-1] in "ID" for a in built) and any(a.cigar[1] in "ID" for a in built)  # gaps at either end
    unknown = "X" if scoring is PROTEIN else "N"  # identical and not positive: '|' in the midline, not a positive
    assert any(a.qseq[k] == a.sseq[k] == unknown and a.midline[k] == "|" for a in built for k in range(a.length))


def test_the_texts_are_made_on_first_read_for_the_whole_call(tmp_path: Path, monkeypatch) -> None:
    """BLAST's twelve columns make no aligned text; the first text read makes those of every record
    of the call, once, equal to the reference; a record made by hand needs its texts; copies,
    pickles and dataclasses.replace carry them, read or not."""
    from swgpu_core.align import alignment

    made: list[int] = []
    make = alignment._Texts._make
    monkeypatch.setattr(alignment._Texts, "_make", lambda self: made.append(1) or make(self))
    rng = np.random.default_rng(10)
    traces, queries, subjects = (list(x) for x in zip(*(random_path(rng, PROTEIN, 60, str(k)) for k in range(50))))
    built = build_alignments(traces, queries, subjects, range(50), [1] * 50, PROTEIN)
    hits = [QueryHits(q, np.array([k]), np.array([t.score], np.int32)) for k, (q, t) in enumerate(zip(queries, traces))]
    db = SimpleNamespace(lengths=[len(s) for s in subjects], headers=lambda ids: [(subjects[i].id, subjects[i].description) for i in ids])
    results = Results(db, hits, [[a] for a in built], NO_STATISTICS, "BLOSUM62 gap 11/1")
    write_results(tmp_path / "std.tsv", results, outfmt="6 qaccver saccver pident length mismatch gapopen qstart qend sstart send score")
    assert made == [] and len((tmp_path / "std.tsv").read_text().splitlines()) == 50
    assert built[7].qseq  # one record's text makes every record's
    assert made == [1]
    for k, aln in enumerate(built):
        want = reference_record(traces[k], queries[k], subjects[k], k, 1, PROTEIN)
        assert (aln.qseq, aln.sseq, aln.midline, aln.cigar) == (want["qseq"], want["sseq"], want["midline"], want["cigar"])
        assert aln.texts == (aln.qseq, aln.sseq, aln.midline, aln.cigar)
        assert replace(aln, evalue=1.0) == replace(built[k], evalue=1.0) != aln
    assert made == [1]
    by_hand = Alignment("q", "", "s", "", 0, 1, 8, 1, 2, 1, 2, 2, 2, 2, 2, 2, 0, 0, 0, texts=("AW", "AW", "||", "2="))
    assert (by_hand.qseq, by_hand.sseq, by_hand.midline, by_hand.cigar) == ("AW", "AW", "||", "2=") and by_hand.btop == "2"
    assert replace(by_hand, rank=2).cigar == "2="
    with pytest.raises(TypeError, match="texts"):
        Alignment("q", "", "s", "", 0, 1, 8, 1, 2, 1, 2, 2, 2, 2, 2, 2, 0, 0, 0)  # type: ignore[call-arg]
    unread = build_alignments(traces[:4], queries[:4], subjects[:4], range(4), [1] * 4, PROTEIN)
    assert pickle.loads(pickle.dumps(unread[1])) == built[1] and shallow_copy(unread[2]) == built[2]
    assert replace(unread[3], evalue=2.0).midline == built[3].midline and unread[0].cigar and unread[0].texts == built[0].texts


def test_traced_paths_equal_the_reference() -> None:
    rng = np.random.default_rng(6)
    pairs = [(np.array([k], np.uint8), np.array([k], np.uint8)) for k in (0, 17, 23)]  # one residue: A, W, *
    for _ in range(60):
        q = rng.integers(0, PROTEIN.alphabet.size, int(rng.integers(1, 300))).astype(np.uint8)
        s = np.concatenate([rng.integers(0, 27, 5), q[::2], rng.integers(0, 27, 9), q[5:]]).astype(np.uint8)
        pairs.append((q, np.where(rng.random(s.size) < 0.3, rng.integers(0, 27, s.size), s).astype(np.uint8)))
    tasks = [PairTask(q, s, 0) for q, s in pairs]
    traces = [trace_pair(PairTask(t.query, t.subject, score_of(t)), PROTEIN) for t in tasks if score_of(t) > 0]
    queries = [EncodedSequence(f"q{k}", "", t.query) for k, t in enumerate(tasks) if score_of(t) > 0]
    subjects = [EncodedSequence(f"s{k}", "d", t.subject) for k, t in enumerate(tasks) if score_of(t) > 0]
    built = check_records(traces, queries, subjects, PROTEIN)
    assert [(a.cigar, a.midline, a.score) for a in built[:3]] == [("1=", "|", 4), ("1=", "|", 11), ("1=", "|", 1)]
    assert all(a.score == t.score for a, t in zip(built, traces))


def score_of(task: PairTask) -> int:
    from swgpu_core.align.traceback import forward_end

    mat = np.require(PROTEIN.matrix, np.int32, ["C", "W"])
    return int(forward_end(np.ascontiguousarray(task.query), np.ascontiguousarray(task.subject), mat, 11, 1)[0])


def test_paths_that_do_not_explain_their_score_are_refused() -> None:
    """The invariant of alignment.py: the first path off its ends or whose own score differs is named; no record is made."""
    rng = np.random.default_rng(7)
    traces, queries, subjects = (list(x) for x in zip(*(random_path(rng, PROTEIN, 30, str(k)) for k in range(20))))
    t, q = traces[12], queries[12]
    wrong = {
        "scores": replace(t, score=t.score + 1),
        "ends early": replace(t, qend=t.qend - 1),
        "ends late": replace(t, send=t.send + 1),
        "starts before the query": replace(t, qstart=0, qend=t.qend - t.qstart),
        "ends after the query": replace(t, qstart=t.qstart + len(q) - t.qend + 1, qend=len(q) + 1),
        "has no columns": replace(t, ops=t.ops[:0]),
    }
    for what, bad in wrong.items():
        message = f"scores {t.score}, the search found {t.score + 1}" if what == "scores" else "does not span its end coordinates"
        for batch in (traces[:12] + [bad] + traces[13:], [bad]):
            k = batch.index(bad)
            for given in (batch, TracedPaths.of(batch)):
                with pytest.raises(TracebackError, match=f"of q12 vs s12 {message}"):
                    build_alignments(given, queries[12 - k :], subjects[12 - k :], range(20), range(20), PROTEIN)
    with pytest.raises(TracebackError, match="of q3 vs s3"):  # the first of two
        build_alignments(
            [*traces[:3], replace(traces[3], score=0), *traces[4:12], wrong["ends late"]], queries, subjects, range(20), range(20), PROTEIN
        )


@pytest.fixture(scope="module")
def searched(bundled_db: Database, resources: Path) -> tuple:
    """The bundled queries' 40 best hits in the bundled database, aligned, with E-values."""
    queries = read_sequences(resources / "queries.fasta")
    result = search(bundled_db, queries, PROTEIN, get_engine("cpu").scanner(PROTEIN), top=40, show_progress=False)
    stats = statistics(PROTEIN, bundled_db)
    return result.hits, stats, align_query_hits(bundled_db, result.hits, PROTEIN, statistics=stats).alignments


def test_database_hits_equal_the_reference(bundled_db: Database, searched: tuple) -> None:
    hits, stats, alignments = searched
    for qi, (qh, alns) in enumerate(zip(hits, alignments)):
        evalues, bitscores = query_significance(stats, qi, len(qh.query), qh.scores, bundled_db.lengths[qh.subjects])
        assert len(alns) == len(qh) == 40
        for k, (aln, index, score) in enumerate(zip(alns, qh.subjects.tolist(), qh.scores.tolist())):
            subject = EncodedSequence(*bundled_db.header(index), bundled_db.codes(index))
            trace = PairTrace(score, aln.qstart, aln.qend, aln.sstart, aln.send, aln.ops)
            want = reference_record(trace, qh.query, subject, index, k + 1, PROTEIN)
            assert as_dict(aln) == {**want, "evalue": float(evalues[k]), "bitscore": float(bitscores[k])}


def test_pairs_equal_the_reference(tmp_path: Path) -> None:
    """``swgpu pairs`` builds its records in one batch too; a pair without an alignment keeps its place."""
    rng = np.random.default_rng(8)
    letters = PROTEIN.alphabet.letters
    queries = ["".join(rng.choice(list(letters[:20]), int(rng.integers(1, 80)))) for _ in range(30)]
    subjects = [q[::-1][:5] + q[3:] if k % 3 else q for k, q in enumerate(queries)]
    queries[4], subjects[4] = "W", "P"  # no positive alignment
    (tmp_path / "q.fa").write_text("".join(f">q{k} query {k}\n{q}\n" for k, q in enumerate(queries)))
    (tmp_path / "s.fa").write_text("".join(f">s{k}\n{s}\n" for k, s in enumerate(subjects)))
    pairs = fasta_pairs(str(tmp_path / "q.fa"), str(tmp_path / "s.fa"))
    hits, alignments, _ = align_pair_set(pairs, PROTEIN, "cpu", NO_STATISTICS)
    assert alignments[4] == [] and len(hits[4]) == 0
    for k, alns in enumerate(alignments):
        for aln in alns:
            subject = pairs.subject(k)
            trace = PairTrace(aln.score, aln.qstart, aln.qend, aln.sstart, aln.send, aln.ops)
            assert as_dict(aln) == reference_record(trace, pairs.queries[k], subject, pairs.subject_index[k], 1, PROTEIN)


# -- the reference writers: one cell, one attribute at a time -------------------------------------

REFERENCE_CELLS: dict[str, Callable] = {
    "qseqid": lambda h: clean(h.query.id),
    "qacc": lambda h: clean(h.query.id),
    "qaccver": lambda h: clean(h.query.id),
    "qtitle": lambda h: clean(title(h.query.id, h.query.description)),
    "qlen": lambda h: str(len(h.query)),
    "sseqid": lambda h: clean(h.sid),
    "sallseqid": lambda h: clean(h.sid),
    "sacc": lambda h: clean(accession(h.sid)),
    "saccver": lambda h: clean(accession(h.sid, keep_version=True)),
    "sallacc": lambda h: clean(accession(h.sid)),
    "stitle": lambda h: clean(h.sdesc),
    "salltitles": lambda h: clean(h.sdesc),
    "slen": lambda h: str(h.slen),
    "score": lambda h: str(h.score),
    "evalue": lambda h: format_evalue(h.evalue),
    "bitscore": lambda h: format_bitscore(h.bitscore),
    "rank": lambda h: str(h.rank),
    "pident": lambda h: f"{100.0 * h.aln.identities / len(h.aln.qseq):.3f}",
    "nident": lambda h: str(h.aln.identities),
    "positive": lambda h: str(h.aln.positives),
    "ppos": lambda h: f"{100.0 * h.aln.positives / len(h.aln.qseq):.2f}",
    "length": lambda h: str(len(h.aln.qseq)),
    "mismatch": lambda h: str(h.aln.mismatches),
    "gapopen": lambda h: str(h.aln.gap_opens),
    "gaps": lambda h: str(h.aln.gaps),
    "qstart": lambda h: str(h.aln.qstart),
    "qend": lambda h: str(h.aln.qend),
    "sstart": lambda h: str(h.aln.sstart),
    "send": lambda h: str(h.aln.send),
    "qseq": lambda h: h.aln.qseq,
    "sseq": lambda h: h.aln.sseq,
    "btop": lambda h: reference_btop(h.aln.qseq, h.aln.sseq),
    "cigar": lambda h: h.aln.cigar,
    "qcovhsp": lambda h: str(int(100.0 * (h.aln.qend - h.aln.qstart + 1) / h.aln.qlen + 0.5)),
}


def reference_table(results: Results, spec: str) -> str:
    words = spec.split()
    names = [n for w in words[1:] for n in (STANDARD_FIELDS if w == "std" else [w])]
    out = []
    for qi, qh in enumerate(results.hits):
        if words[0] == "7":
            out.append(f"# BLASTP swgpu-{__version__} ({results.program}: exact Smith-Waterman)\n")
            out.append(f"# Query: {clean(title(qh.query.id, qh.query.description))}\n# Database: {results.db.path}\n")
            if len(qh):
                out.append(f"# Fields: {', '.join(FIELDS[n].title for n in names)}\n")
            out.append(f"# {len(qh)} hits found\n")
        lengths = np.asarray(results.db.lengths)[qh.subjects]
        significance = query_significance(results.statistics, qi, len(qh.query), qh.scores, lengths)
        for k, (subject, score) in enumerate(zip(qh.subjects.tolist(), qh.scores.tolist())):
            sid, sdesc = results.db.header(subject)
            hit = SimpleNamespace(
                query=qh.query, sid=sid, sdesc=sdesc, slen=int(lengths[k]), score=score, rank=k + 1,
                evalue=significance and float(significance[0][k]), bitscore=significance and float(significance[1][k]),
                aln=results.alignments[qi][k] if results.alignments is not None else None,
            )  # fmt: skip
            out.append("\t".join(REFERENCE_CELLS[n](hit) for n in names) + "\n")
    if words[0] == "7":
        out.append(f"# BLAST processed {len(results.hits)} queries\n")
    return "".join(out)


def reference_sam(path: Path, results: Results, mode: str) -> None:
    db, alignments = results.db, results.alignments
    subjects = sorted({a.subject_index for alns in alignments for a in alns}, key=lambda i: int(db.order[i]))
    header = pysam.AlignmentHeader.from_dict({
        "HD": {"VN": "1.6", "SO": "unsorted"},
        "SQ": [{"SN": db.seq_id(i), "LN": int(db.lengths[i])} for i in subjects],
        "PG": [{"ID": "swgpu", "PN": "swgpu", "VN": __version__, "CL": " ".join(sys.argv)}],
        "CO": [f"database: {db.path} version {db.version_tag}", f"scoring: {results.scoring}"],
    })  # fmt: skip
    with pysam.AlignmentFile(str(path), mode, header=header) as out:
        for qh, alns in zip(results.hits, alignments):
            residues = db.alphabet.decode(qh.query.codes)
            for aln in alns or [None]:
                rec = pysam.AlignedSegment(header)
                rec.query_name = qh.query.id
                rec.query_sequence = residues
                rec.set_tag("ZQ", residues, "Z")
                if aln is None:
                    rec.flag = 4
                else:
                    rec.flag = 0 if aln.rank == 1 else 256
                    rec.reference_id = subjects.index(aln.subject_index)
                    rec.reference_start = aln.sstart - 1
                    rec.mapping_quality = 255
                    clip5, clip3 = aln.qstart - 1, aln.qlen - aln.qend
                    rec.cigarstring = (f"{clip5}S" if clip5 else "") + aln.cigar + (f"{clip3}S" if clip3 else "")
                    rec.set_tag("AS", aln.score, "i")
                    if aln.evalue is not None:
                        rec.set_tag("ZE", aln.evalue, "f")
                        rec.set_tag("ZB", aln.bitscore, "f")
                    rec.set_tag("NM", aln.mismatches + aln.gaps, "i")
                    rec.set_tag("ZR", aln.rank, "i")
                out.write(rec)
    if mode == "wb":
        pysam.sort("-o", str(path) + ".sorted", str(path))
        Path(str(path) + ".sorted").replace(path)


def bam_content(path: Path) -> bytes:
    """A BAM file's bytes decompressed, without samtools sort's @PG line (it names a temporary file)."""
    raw = gzip.decompress(path.read_bytes())
    size = int.from_bytes(raw[4:8], "little")
    text = b"".join(line for line in raw[8 : 8 + size].splitlines(keepends=True) if not line.startswith(b"@PG\tID:samtools"))
    return text + raw[8 + size :]


def reference_jsonl(results: Results) -> str:
    keys = (
        "query_id", "query_description", "subject_id", "subject_description", "rank", "score", "evalue", "bitscore", "qstart", "qend",
        "sstart", "send", "qlen", "slen",
    )  # fmt: skip
    lines = []
    for aln in (a for alns in results.alignments for a in alns):
        record = {key: getattr(aln, key) for key in keys}
        record |= {"length": len(aln.qseq), "identities": aln.identities, "positives": aln.positives, "mismatches": aln.mismatches}
        record |= {"gap_opens": aln.gap_opens, "gaps": aln.gaps, "pident": round(100.0 * aln.identities / len(aln.qseq), 3)}
        record |= {"qcovhsp": int(100.0 * (aln.qend - aln.qstart + 1) / aln.qlen + 0.5), "cigar": aln.cigar, "qseq": aln.qseq}
        record |= {"sseq": aln.sseq, "midline": aln.midline}
        lines.append(json.dumps(record) + "\n")
    return "".join(lines)


@pytest.fixture(scope="module")
def database_results(bundled_db: Database, searched: tuple) -> Results:
    """The database hits with E-values, and a query without hits among them."""
    hits, stats, alignments = searched
    lonely = QueryHits(EncodedSequence("lonely", "no hits at all", hits[0].query.codes[:5]), np.zeros(0, np.int64), np.zeros(0, np.int32))
    return Results(bundled_db, [*hits[:2], lonely, *hits[2:]], [*alignments[:2], [], *alignments[2:]], stats, "BLOSUM62 gap 11/1")


@pytest.fixture(scope="module")
def pair_results(tmp_path_factory: pytest.TempPathFactory) -> Results:
    """Pairs without E-values whose headers hold tabs, quotes, backslashes and non-ASCII letters."""
    tmp = tmp_path_factory.mktemp("pairs")
    rng = np.random.default_rng(9)
    letters = list(PROTEIN.alphabet.letters)
    queries = ["".join(rng.choice(letters[:20], int(rng.integers(20, 120)))) for _ in range(12)]
    titles = [
        'tab\there "quoted" \\back',
        "caf\u00e9 \u00b5-protein",
        "",
        "ref|NP_000549.1| x",
        "gi|12|ref|NP_1.2| y",
        "sp|P69905|HBA_HUMAN z",
    ]
    (tmp / "q.fa").write_text("".join(f">q{k} {titles[k % 6]}\n{q}\n" for k, q in enumerate(queries)), encoding="utf-8")
    (tmp / "s.fa").write_text(
        "".join(
            f">{titles[k % 6].split()[0] if k % 6 > 2 else 's'}{k} {titles[(k + 1) % 6]}\n{q[7:] + q[:30]}\n" for k, q in enumerate(queries)
        ),
        encoding="utf-8",
    )
    results, _ = align_pairs(fasta_pairs(tmp / "q.fa", tmp / "s.fa"), PROTEIN, backend="cpu")
    assert results.statistics is NO_STATISTICS or not has_evalues(results.statistics)
    return results


ALL_FIELDS = " ".join(FIELDS)
NO_EVALUES = " ".join(name for name in FIELDS if name not in ("evalue", "bitscore"))


@pytest.mark.parametrize("block_rows", [1, 7, 4096])
@pytest.mark.parametrize("spec", [f"6 {ALL_FIELDS}", f"7 {ALL_FIELDS}", "6 std", "7 qseqid sseqid score evalue slen rank"])
def test_database_tables_equal_the_reference(database_results: Results, spec: str, block_rows: int, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(outfmt, "BLOCK_ROWS", block_rows)  # rows made in blocks of whole queries: any size gives the same table
    path = tmp_path / "t.tsv"
    write_results(path, database_results, outfmt=spec)
    assert path.read_text() == reference_table(database_results, spec)
    if not outfmt.parse_outfmt(spec).needs_alignment:  # a table of scores needs no alignments
        write_results(path, replace(database_results, alignments=None), outfmt=spec)
        assert path.read_text() == reference_table(database_results, spec)


@pytest.mark.parametrize("spec", [f"6 {NO_EVALUES}", f"7 {NO_EVALUES}"])
def test_pair_tables_equal_the_reference(pair_results: Results, spec: str, tmp_path: Path) -> None:
    write_results(tmp_path / "t.tsv", pair_results, outfmt=spec)
    text = (tmp_path / "t.tsv").read_text()
    assert text == reference_table(pair_results, spec)
    rows = [line for line in text.splitlines() if not line.startswith("#")]
    assert len(rows) == 12 and all(line.count("\t") == len(FIELDS) - 3 for line in rows)  # the tabs of titles are spaces


@pytest.mark.parametrize("which", ["database_results", "pair_results"])
def test_sam_bam_and_jsonl_equal_the_reference(which: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    results = request.getfixturevalue(which)
    write_results(tmp_path / "a.sam", results)
    reference_sam(tmp_path / "want.sam", results, "w")
    assert (tmp_path / "a.sam").read_bytes() == (tmp_path / "want.sam").read_bytes()
    write_results(tmp_path / "a.bam", results)
    reference_sam(tmp_path / "want.bam", results, "wb")
    assert bam_content(tmp_path / "a.bam") == bam_content(tmp_path / "want.bam")
    write_results(tmp_path / "a.jsonl", results)
    assert (tmp_path / "a.jsonl").read_text() == reference_jsonl(results)
