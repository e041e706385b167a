"""Alignment outputs read back: tabular by Bio.SearchIO, SAM/BAM by pysam, JSON lines; the align command."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pysam
import pytest
from Bio import SearchIO

from swgpu_core.align import align_query_hits
from swgpu_core.database import Database
from swgpu_core.engine import get_engine
from swgpu_core.fasta import read_sequences
from swgpu_core.formats import Results, choose_format, write_results
from swgpu_core.outfmt import STANDARD_FIELDS, accession
from swgpu_core.scoring import Scoring
from swgpu_core.search import search
from swgpu_core.significance import statistics
from swgpu_core.stats import format_evalue

TOP = 6


@pytest.fixture(scope="module")
def searched(bundled_db: Database, resources: Path):
    scoring = Scoring.protein()
    queries = read_sequences(resources / "queries.fasta")
    result = search(bundled_db, queries, scoring, get_engine("cpu").scanner(scoring), top=TOP, show_progress=False)
    return result, align_query_hits(bundled_db, result.hits, scoring, statistics=statistics(scoring))


def _results(result, aligned) -> Results:
    return Results(result.db, result.hits, aligned.alignments, statistics(result.scoring), "BLOSUM62 gap 11/1")


def test_alignments_agree_with_search(searched) -> None:
    result, aligned = searched
    for qh, alns in zip(result.hits, aligned.alignments):
        assert [a.score for a in alns] == qh.scores.tolist()
        assert [a.subject_index for a in alns] == qh.subjects.tolist()
        for a in alns:
            q = result.db.alphabet.decode(qh.query.codes)
            s = result.db.sequence(a.subject_index)
            assert a.qseq.replace("-", "") == q[a.qstart - 1 : a.qend] and a.sseq.replace("-", "") == s[a.sstart - 1 : a.send]
            assert a.evalue > 0 and a.bitscore > 0


@pytest.mark.parametrize("kind", [6, 7])
def test_tabular_reads_back_with_searchio(searched, tmp_path: Path, kind: int) -> None:
    result, aligned = searched
    fields = "std qlen slen nident positive gaps score"
    path = tmp_path / "hits.tsv"
    write_results(path, _results(result, aligned), outfmt=f"{kind} {fields}")
    # Biopython's "std" is BLAST's old one (qseqid sseqid ...); blastp 2.12's starts with qaccver saccver
    kwargs = {"comments": True} if kind == 7 else {"fields": " ".join(STANDARD_FIELDS) + fields.removeprefix("std")}
    qresults = list(SearchIO.parse(str(path), "blast-tab", **kwargs))
    assert [q.id for q in qresults] == [qh.query.id for qh in result.hits]
    for qres, alns in zip(qresults, aligned.alignments):
        assert len(qres.hits) == len(alns)
        for hit, a in zip(qres.hits, alns):
            hsp = hit.hsps[0]
            assert hit.id == accession(a.subject_id, keep_version=True) and hsp.bitscore_raw == a.score
            assert (hsp.query_start + 1, hsp.query_end, hsp.hit_start + 1, hsp.hit_end) == (a.qstart, a.qend, a.sstart, a.send)
            assert hsp.ident_num == a.identities and hsp.gapopen_num == a.gap_opens and hsp.aln_span == a.length
            assert hsp.evalue == float(format_evalue(a.evalue))


def test_sam_and_bam_read_back(searched, tmp_path: Path) -> None:
    result, aligned = searched
    db = result.db
    n = aligned.count
    for name in ("out.sam", "out.bam"):
        path = tmp_path / name
        write_results(path, _results(result, aligned))
        with pysam.AlignmentFile(str(path)) as fh:
            records = list(fh)
            refs = set(fh.references)
        assert len(records) == n and refs == {a.subject_id for alns in aligned.alignments for a in alns}
        by_key = {(a.query_id, a.subject_id): a for alns in aligned.alignments for a in alns}
        for rec in records:
            a = by_key[(rec.query_name, rec.reference_name)]
            assert rec.reference_start == a.sstart - 1 and rec.reference_end == a.send
            assert rec.query_alignment_start == a.qstart - 1 and rec.query_alignment_end == a.qend
            assert rec.get_tag("AS") == a.score and rec.get_tag("ZR") == a.rank
            assert rec.get_tag("ZB") == pytest.approx(a.bitscore, rel=1e-5)
            assert rec.is_secondary == (a.rank > 1)
            assert rec.get_tag("ZQ") == db.alphabet.decode(result.hits[[q.query.id for q in result.hits].index(a.query_id)].query.codes)
        if name.endswith(".bam"):
            positions = [(r.reference_id, r.reference_start) for r in records]
            assert positions == sorted(positions)
            assert Path(f"{path}.bai").is_file()
            with pysam.AlignmentFile(str(path)) as fh:
                first = records[0]
                assert any(r.query_name == first.query_name for r in fh.fetch(first.reference_name))


def test_jsonl_and_pairwise(searched, tmp_path: Path) -> None:
    result, aligned = searched
    write_results(tmp_path / "a.jsonl", _results(result, aligned))
    rows = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert len(rows) == aligned.count and rows[0]["score"] == aligned.alignments[0][0].score
    assert rows[0]["cigar"] == aligned.alignments[0][0].cigar
    write_results(tmp_path / "a.txt", _results(result, aligned))
    text = (tmp_path / "a.txt").read_text()
    assert text.count("Query= ") == len(result.hits) and text.count(" Score = ") == aligned.count
    a = aligned.alignments[0][0]
    assert f"Query  {a.qstart}" in text and "Identities = " in text


def test_choose_format() -> None:
    assert [choose_format(p) for p in ("x.sam", "x.BAM", "x.jsonl", "x.txt", "x.tsv", "-")] == [
        "sam",
        "bam",
        "jsonl",
        "pairwise",
        "tsv",
        "tsv",
    ]
    assert choose_format("x.tsv", "jsonl") == "jsonl"


def test_align_command(bundled_db: Database, resources: Path, swgpu, tmp_path: Path) -> None:
    q = resources / "queries.fasta"
    parts = []
    for k, chunks in enumerate(["0-1", f"2-{len(bundled_db.chunks) - 1}"]):
        parts.append(tmp_path / f"p{k}.npz")
        rc, _, err = swgpu(
            "search",
            "--db",
            bundled_db.path,
            "--query",
            q,
            "--backend",
            "cpu",
            "--top",
            "4",
            "--quiet",
            "--chunks",
            chunks,
            "--save-hits",
            parts[-1],
        )
        assert rc == 0, err
    rc, out, err = swgpu("align", "--db", bundled_db.path, "--hits", *parts, "--query", q, "--align", "2", "--quiet")
    assert rc == 0, err
    rows = [line.split("\t") for line in out.splitlines()]
    assert len(rows) == 10 and all(len(r) == 12 for r in rows)
    rc, _, err = swgpu("align", "--db", bundled_db.path, "--hits", *parts, "--out", tmp_path / "a.bam", "--evalue", "1e-3")
    assert rc == 0, err
    with pysam.AlignmentFile(str(tmp_path / "a.bam")) as fh:
        assert all(r.get_tag("ZE") <= 1e-3 for r in fh if not r.is_unmapped)
    rc, _, err = swgpu("align", "--db", bundled_db.path, "--hits", parts[0])
    assert rc == 2 and "missing chunks" in err
    rc, _, err = swgpu("align", "--db", bundled_db.path, "--hits", *parts, "--lambda", "0.3")
    assert rc == 2 and "go together" in err
    rc, out, err = swgpu(
        "search",
        "--db",
        bundled_db.path,
        "--query",
        q,
        "--backend",
        "cpu",
        "--top",
        "4",
        "--quiet",
        "--align",
        "1",
        "--outfmt",
        "6 qseqid sseqid evalue cigar",
    )
    assert rc == 0, err
    assert len(out.splitlines()) == 5 and all(len(line.split("\t")) == 4 for line in out.splitlines())


@pytest.mark.parametrize("kind", [6, 7])
def test_fitted_tables_read_back_with_searchio(bundled_db: Database, resources: Path, tmp_path: Path, kind: int) -> None:
    """A run with fitted statistics (a scoring system BLAST has no parameters for): every E-value a number SearchIO reads."""
    import swgpu_core as sw

    scoring = Scoring.protein("BLOSUM62", 12, 2)
    result = sw.search(bundled_db, resources / "queries.fasta", scoring, backend="cpu", top=TOP)
    stats = result.statistics
    assert stats.kind == "fit"
    hits = sw.select_hits(bundled_db, result.hits, stats)
    path = tmp_path / "fit.tsv"
    sw.write_results(
        path, sw.Results(bundled_db, hits, None, stats, scoring.describe()), outfmt=f"{kind} qaccver saccver score evalue bitscore"
    )
    assert "*" not in path.read_text()
    kwargs = {"comments": True} if kind == 7 else {"fields": ["qaccver", "saccver", "score", "evalue", "bitscore"]}
    qresults = {q.id: q for q in SearchIO.parse(str(path), "blast-tab", **kwargs)}
    assert sum(len(qh) for qh in hits) > 5
    for qi, qh in enumerate(hits):
        e = stats.evalue(qi, len(qh.query), qh.scores, np.asarray(bundled_db.lengths)[qh.subjects])
        got = [hsp.evalue for hit in qresults[qh.query.id] for hsp in hit.hsps] if len(qh) else []
        assert got == [float(format_evalue(x)) for x in e] and all(x <= 10 for x in got)
