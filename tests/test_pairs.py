"""``swgpu pairs``: each pair's output is the CPU reference's alignment of that pair.

Covers both inputs (two FASTA files in step, an id table against a database), the output
formats, the E-values of a one-subject search space and one-line errors for bad input.
The last test, marked ``gpu``, checks the CUDA backend against the CPU one.
"""

from __future__ import annotations

import json

import numpy as np
import pysam
import pytest

from swgpu_core.align import PairTask, build_alignment, trace_pair
from swgpu_core.align.traceback import forward_end
from swgpu_core.alphabet import PROTEIN
from swgpu_core.fasta import EncodedSequence
from swgpu_core.pairs import align_pair_set, fasta_pairs
from swgpu_core.scoring import Scoring
from swgpu_core.significance import statistics
from swgpu_core.stats import format_bitscore, karlin_altschul

LETTERS = "ACDEFGHIKLMNPQRSTVWY"


def _fasta(path, records) -> str:
    path.write_text("".join(f">{name}\n{seq}\n" for name, seq in records))
    return str(path)


@pytest.fixture
def pair_files(tmp_path):
    """Related, unrelated, repeated and residue-less pairs; a query used twice, a subject used twice."""
    rng = np.random.default_rng(2)
    base = "".join(rng.choice(list(LETTERS), 300))
    rel = "".join(c if rng.random() > 0.2 else str(rng.choice(list(LETTERS))) for c in base[20:280])
    queries = [("qa", base), ("qb", "".join(rng.choice(list(LETTERS), 80))), ("qc", "AAAA"), ("qa", base), ("qd", "W")]
    subjects = [("sa", rel), ("sb", "".join(rng.choice(list(LETTERS), 120))), ("sc", "AAAAAAA"), ("sc", "AAAAAAA"), ("sd", "P")]
    return _fasta(tmp_path / "q.fasta", queries), _fasta(tmp_path / "s.fasta", subjects), queries, subjects


def _reference(q: str, s: str, scoring: Scoring):
    """The CPU reference's alignment of one pair (None without a positive score)."""
    qc, sc = PROTEIN.encode(q), PROTEIN.encode(s)
    best = forward_end(qc, sc, np.require(scoring.matrix, np.int32, ["C", "W"]), scoring.gap_open, scoring.gap_extend)[0]
    if best <= 0:
        return None
    trace = trace_pair(PairTask(qc, sc, int(best)), scoring)
    return build_alignment(trace, EncodedSequence("q", "", qc), EncodedSequence("s", "", sc), 0, 1, scoring)


def test_api_equals_cpu_reference(pair_files):
    qpath, spath, queries, subjects = pair_files
    scoring = Scoring.protein()
    pairs = fasta_pairs(qpath, spath)
    assert pairs.subjects.n_sequences == 4  # "sc" twice is one subject
    params, _ = karlin_altschul(scoring)
    hits, alignments, backend = align_pair_set(pairs, scoring, "cpu", statistics(scoring))
    assert backend == "cpu" and len(hits) == len(alignments) == 5
    for k, ((_, q), (sid, s), alns) in enumerate(zip(queries, subjects, alignments)):
        want = _reference(q, s, scoring)
        assert hits[k].query is pairs.queries[k] and hits[k].subjects.dtype == np.int64 and hits[k].scores.dtype == np.int32
        if want is None:
            assert alns == [] and len(hits[k]) == 0
            continue
        (got,) = alns
        assert hits[k].subjects.tolist() == [pairs.subject_index[k]] and hits[k].scores.tolist() == [want.score]
        assert got.subject_id == sid and got.rank == 1
        assert (got.score, got.qstart, got.qend, got.sstart, got.send, got.cigar) == (
            want.score,
            want.qstart,
            want.qend,
            want.sstart,
            want.send,
            want.cigar,
        )
        assert got.evalue == pytest.approx(params.evalue(got.score, len(q), len(s), len(s)))


@pytest.mark.parametrize("given", [{}, {"lam": 0.267, "kappa": 0.041}], ids=["blast", "lambda-kappa"])
def test_evalues_in_one_call_equal_each_pair_alone(tmp_path, given):
    """All pairs' E-values come from one call: each equals the pair's own (query number k
    against its subject alone), bit for bit, pairs without an alignment skipped."""
    from swgpu_core.significance import hit_significance

    rng = np.random.default_rng(9)
    letters = [c for c in LETTERS if c not in "WYF"]  # nothing here scores above 0 against W
    queries, subjects = [], []
    for k in range(60):
        q = "".join(rng.choice(letters, int(rng.integers(1, 400))))
        s = q[int(rng.integers(0, len(q))) :] + "".join(rng.choice(letters, int(rng.integers(0, 300))))
        queries.append((f"q{k % 7}", q))  # ids repeat: the numbers are the pairs'
        subjects.append((f"s{k}", s if rng.random() < 0.8 else "W"))
    pairs = fasta_pairs(_fasta(tmp_path / "q.fasta", queries), _fasta(tmp_path / "s.fasta", subjects))
    scoring = Scoring.protein()
    stats = statistics(scoring, **given)
    hits, alignments, _ = align_pair_set(pairs, scoring, "cpu", stats)
    assert sum(map(len, alignments)) < len(alignments)  # some pairs have no alignment
    for k, alns in enumerate(alignments):
        for aln in alns:
            want = hit_significance(stats, k, pairs.queries[k], aln.score, len(pairs.subject(k)))
            assert (aln.evalue, aln.bitscore) == want, k


def test_cli_round_trip(pair_files, swgpu, tmp_path):
    qpath, spath, queries, subjects = pair_files
    scoring = Scoring.protein()
    out = tmp_path / "pairs.jsonl"
    rc, _, err = swgpu("pairs", "--query", qpath, "--subject", spath, "--out", out, "--backend", "cpu")
    assert rc == 0 and "4 of 5 pairs aligned" in err
    records = [json.loads(line) for line in out.read_text().splitlines()]
    expected = [(qid, sid, _reference(q, s, scoring)) for (qid, q), (sid, s) in zip(queries, subjects)]
    expected = [(qid, sid, a) for qid, sid, a in expected if a is not None]
    assert [(r["query_id"], r["subject_id"]) for r in records] == [(q, s) for q, s, _ in expected]
    for r, (_, _, a) in zip(records, expected):
        assert (r["score"], r["qstart"], r["qend"], r["sstart"], r["send"], r["cigar"], r["qseq"], r["sseq"]) == (
            a.score,
            a.qstart,
            a.qend,
            a.sstart,
            a.send,
            a.cigar,
            a.qseq,
            a.sseq,
        )
    rc, table, _ = swgpu(
        "pairs", "--query", qpath, "--subject", spath, "--backend", "cpu", "--outfmt", "6 qseqid sseqid score qstart send cigar"
    )
    assert rc == 0
    rows = [line.split("\t") for line in table.splitlines()]
    assert [(r[0], r[1], int(r[2]), r[5]) for r in rows] == [(q, s, a.score, a.cigar) for q, s, a in expected]
    sam = tmp_path / "pairs.sam"
    assert swgpu("pairs", "--query", qpath, "--subject", spath, "--out", sam, "--backend", "cpu")[0] == 0
    with pysam.AlignmentFile(str(sam)) as fh:
        recs = list(fh)
        refs = fh.references
    assert set(refs) == {sid for _, sid, _ in expected}
    assert [r.get_tag("AS") for r in recs if not r.is_unmapped] == [a.score for _, _, a in expected]
    assert sum(r.is_unmapped for r in recs) == 1


def test_table_against_database(bundled_db, swgpu, tmp_path, resources):
    db = bundled_db
    scoring = Scoring.protein()
    index = (0, 5, 17, 100, 2999)
    ids = [db.seq_id(i) for i in index]
    table = tmp_path / "pairs.tsv"
    table.write_text(f"# query subject\n{ids[0]}\t{ids[1]}\n\n{ids[2]} {ids[3]}\n{ids[4]}\t{ids[4]}\n")
    rc, out, _ = swgpu("pairs", "--pairs", table, "--db", db.path, "--backend", "cpu", "--outfmt", "6 qseqid sseqid score slen")
    assert rc == 0
    rows = [line.split("\t") for line in out.splitlines()]
    for (q, s), row in zip([(0, 1), (2, 3), (4, 4)], rows):
        i, j = index[q], index[s]
        want = _reference(db.sequence(i), db.sequence(j), scoring)
        assert row == [ids[q], ids[s], str(want.score), str(db.lengths[j])]
    qfile = _fasta(tmp_path / "q.fasta", [("myq", db.sequence(5))])
    table.write_text(f"myq\t{ids[1]}\n")
    rc, out, _ = swgpu(
        "pairs", "--pairs", table, "--db", db.path, "--query", qfile, "--backend", "cpu", "--outfmt", "6 qseqid sseqid pident"
    )
    assert rc == 0 and out == f"myq\t{ids[1]}\t100.000\n"


@pytest.mark.parametrize(
    "case, message",
    [
        ("short_subject", "q.fasta: record 3 (q3) has no partner: "),
        ("unknown_subject", "line 2: subject 'nosuch' is not in the database"),
        ("unknown_query", "line 1: query 'nobody' is not in "),
        ("bad_line", "line 1: expected 'query_id subject_id', found 3 fields"),
        ("no_db", "--pairs takes --db"),
        ("nothing", "give --query A.fasta --subject B.fasta"),
        ("clash", "s.fasta: record 2 (s1) repeats an id with other residues"),
    ],
)
def test_bad_input(case, message, bundled_db, swgpu, tmp_path):
    q = _fasta(tmp_path / "q.fasta", [("q1", "MKV"), ("q2", "WWA"), ("q3", "AC")])
    s = _fasta(tmp_path / "s.fasta", [("s1", "MKV"), ("s2", "WWA")])
    table = tmp_path / "t.tsv"
    sid = bundled_db.seq_id(0)
    args = {
        "short_subject": ["--query", q, "--subject", s],
        "unknown_subject": ["--pairs", table, "--db", bundled_db.path],
        "unknown_query": ["--pairs", table, "--db", bundled_db.path, "--query", q],
        "bad_line": ["--pairs", table, "--db", bundled_db.path],
        "no_db": ["--pairs", table],
        "nothing": ["--query", q],
        "clash": [
            "--query",
            _fasta(tmp_path / "q2.fasta", [("a", "MKV"), ("b", "MKV")]),
            "--subject",
            _fasta(tmp_path / "s.fasta", [("s1", "MKV"), ("s1", "MKW")]),
        ],
    }[case]
    table.write_text(
        {"unknown_subject": f"{sid}\t{sid}\n{sid}\tnosuch\n", "unknown_query": f"nobody\t{sid}\n", "bad_line": "a b c\n"}.get(
            case, f"{sid}\t{sid}\n"
        )
    )
    rc, out, err = swgpu("pairs", *args, "--backend", "cpu")
    assert rc == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err, err


def test_a_tables_first_bad_line_is_named_whatever_is_wrong_with_it(bundled_db, tmp_path):
    """The table's lines are checked in order: the first bad one is named, a wrong field count
    or an id the database lacks alike; a good table's pairs come in its order."""
    from swgpu_core.errors import InputError
    from swgpu_core.pairs import table_pairs

    a, b = bundled_db.seq_id(0), bundled_db.seq_id(5)
    table = tmp_path / "t.tsv"
    for text, message in [
        (f"{a} {b}\n{a} nosuch\n{a} {b} x\n", "line 2: subject 'nosuch' is not in the database"),
        (f"# pairs\n{a} {b} x\n{a} nosuch\n", "line 2: expected 'query_id subject_id', found 3 fields"),
        (f"{a} {b}\nnobody {b}\n", "line 2: query 'nobody' is not in the database"),
    ]:
        table.write_text(text)
        with pytest.raises(InputError, match=message):
            table_pairs(str(table), bundled_db)
    table.write_text(f"{b} {a}  # a comment\n\n{a} {b}\n")
    pairs = table_pairs(str(table), bundled_db)
    assert [q.id for q in pairs.queries] == [b, a] and pairs.subject_index == [0, 5]


@pytest.mark.gpu
def test_cuda_backend_equals_cpu(pair_files, swgpu, tmp_path):
    qpath, spath, _, _ = pair_files
    outs = []
    for backend in ("cpu", "cuda"):
        out = tmp_path / f"{backend}.jsonl"
        rc, _, err = swgpu("pairs", "--query", qpath, "--subject", spath, "--out", out, "--backend", backend)
        assert rc == 0 and f"on {backend}" in err
        outs.append(out.read_text())
    assert outs[0] == outs[1]


def test_statistics_of_pairs(pair_files, swgpu, tmp_path):
    """Pairs have BLAST's statistics or the given lambda and K, never a fit; without any, no E-value columns (not '*')."""
    qpath, spath, _, _ = pair_files
    common = ("pairs", "--query", qpath, "--subject", spath, "--backend", "cpu", "--quiet")
    untabulated = ("--matrix", "BLOSUM62", "--gap-open", "12", "--gap-extend", "2")

    def error(*args) -> str:
        rc, out, err = swgpu(*common, *args)
        assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1, err
        return err

    assert "--stats fit" in error("--stats", "fit") and "pairs have none" in error("--stats", "fit")
    assert "--outfmt evalue/bitscore: no E-values" in error(*untabulated)  # the default table has evalue, bitscore
    assert "--lambda and --kappa" in error(*untabulated)
    assert "--stats blast: no BLAST parameters" in error(*untabulated, "--stats", "blast")
    rc, out, err = swgpu(*common, *untabulated, "--outfmt", "6 qseqid sseqid score")
    assert rc == 0 and len(out.splitlines()) == 4, err
    rc, out, err = swgpu(*common, *untabulated, "--out", tmp_path / "p.jsonl")  # other formats simply carry no E-value
    assert rc == 0 and all(json.loads(line)["evalue"] is None for line in (tmp_path / "p.jsonl").read_text().splitlines())
    rc, out, err = swgpu(*common, *untabulated, "--lambda", "0.25", "--kappa", "0.04", "--outfmt", "6 qseqid sseqid score evalue bitscore")
    assert rc == 0 and "*" not in out, err
    for row in (line.split("\t") for line in out.splitlines()):
        assert float(row[3]) > 0 and row[4] == format_bitscore((0.25 * int(row[2]) - np.log(0.04)) / np.log(2))
    rc, blast, err = swgpu(*common, "--stats", "blast", "--outfmt", "6 qseqid sseqid score evalue")
    rc2, auto, _ = swgpu(*common, "--outfmt", "6 qseqid sseqid score evalue")
    assert rc == rc2 == 0 and blast == auto and "*" not in blast, err
