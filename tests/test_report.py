"""``swgpu report``: a self-contained HTML report read from hit lists and the align step's JSON lines.

The report is checked for what a reader needs (summary first, links, BLAST's 60-column
pairwise rows, whole descriptions, the engine last) and for reading only: alignments of
another search are refused.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from swgpu_core import cli
from swgpu_core.database import Database
from swgpu_core.errors import InputError
from swgpu_core.fasta import read_fasta
from swgpu_core.hitlist import load_hits, merge_hits
from swgpu_core.report import (
    RunInfo,
    accession_link,
    read_alignments,
    render,
    short_name,
    split_description,
)
from swgpu_core.scoring import Scoring

TOP = 15


def _cli(*args: str | Path) -> None:
    assert cli.main([str(a) for a in args]) == 0


@pytest.fixture(scope="module")
def run(bundled_db: Database, resources: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Two query batches, each searched in two chunk jobs and aligned to JSON lines, then one report."""
    tmp = tmp_path_factory.mktemp("report")
    records = list(read_fasta(resources / "queries.fasta"))
    lists, jsonl = [], []
    last = len(bundled_db.chunks) - 1
    for b, batch in enumerate([records[:2], records[2:]]):
        fasta = tmp / f"batch-{b}.fasta"
        fasta.write_text("".join(f">{r.id} {r.description}\n{r.sequence}\n" for r in batch))
        parts = []
        for chunks in ("0", f"1-{last}"):
            parts.append(tmp / f"b{b}-{chunks}.npz")
            _cli("search", "--db", bundled_db.path, "--query", fasta, "--backend", "cpu", "--threads", "1", "--top", TOP, "--quiet",
                 "--chunks", chunks, "--save-hits", parts[-1])  # fmt: skip
        jsonl.append(tmp / f"b{b}.jsonl")
        # --evalue 1e6 keeps the chance hits too (align's default cutoff is 10): the report must keep them out of its tables
        _cli("align", "--db", bundled_db.path, "--hits", *parts, "--out", jsonl[-1], "--backend", "cpu", "--quiet", "--evalue", "1e6")
        lists += parts
    plan = tmp / "plan.json"
    _cli("plan", bundled_db.path, "--threshold", "1234", "--json", plan, "--no-gpu")
    out = tmp / "report.html"
    _cli("report", "--db", bundled_db.path, "--hits", *lists, "--alignments", *jsonl, "--out", out, "--plan", plan, "--quiet")
    rows = [json.loads(line) for path in jsonl for line in path.read_text().splitlines()]
    return {"html": out.read_text(), "records": records, "rows": rows, "lists": lists, "jsonl": jsonl, "tmp": tmp}


def _h2(text: str) -> list[str]:
    return re.findall(r"<h2>(.*?)</h2>", text)


def test_summary_first_run_details_last(run: dict) -> None:
    text = run["html"]
    assert _h2(text) == ["Summary", "Score and E-value distributions", "Hits and alignments per query", "Run details"]
    summary = text[text.index("<h2>Summary</h2>") : text.index("<h2>Score and E-value")]
    for r in run["records"]:  # one summary row per query, linking to its section
        assert f'title="{html.escape(r.id)}">{accession_link(r.id)[0]}</a>' in summary
    best = {row["query_id"]: row for row in run["rows"] if row["rank"] == 1}
    for row in best.values():  # the best hit's organism from UniProt's OS= field, its identity and coverage
        name, organism = split_description(row["subject_description"])
        assert organism and html.escape(organism) in summary and html.escape(name) in summary
        assert f"{100 * row['identities'] / len(row['qseq']):.1f}%" in summary and f"{row['qcovhsp']}%" in summary
    engine = text[text.index("<h2>Run details</h2>") :]
    assert "GCUPS" in engine and "1,234 residues" in engine and "BLOSUM62 gap 11/1" in engine and "cpu" in engine
    assert "GCUPS" not in text[: text.index("<h2>Run details</h2>")]  # engine figures only at the end
    assert text.count("data:image/png;base64,") == 3 and "<script" not in text and "<link" not in text and 'src="http' not in text


def test_links_and_whole_descriptions(run: dict) -> None:
    text = run["html"]
    for row in run["rows"]:
        acc = row["subject_id"].split("|")[1]
        if row["evalue"] <= 10:
            assert f'href="https://www.uniprot.org/uniprotkb/{acc}/entry"' in text
            name, _ = split_description(row["subject_description"])
            assert html.escape(name) in text  # never cut (the old report cut at 60 characters, mid-word)


def test_pairwise_rows_wrap_at_60(run: dict) -> None:
    blocks = re.findall(r"<pre>(.*?)</pre>", run["html"], re.DOTALL)
    assert blocks
    rows = {(r["subject_id"], r["query_id"]): r for r in run["rows"]}
    for block in blocks:
        lines = html.unescape(block).split("\n")
        q = [line for line in lines if line.startswith("Query  ")]
        s = [line for line in lines if line.startswith("Sbjct  ")]
        assert q and len(q) == len(s)
        seqs = [line.split()[2] for line in q]
        assert all(len(x) == 60 for x in seqs[:-1]) and 0 < len(seqs[-1]) <= 60
        assert max(len(line) for line in lines) < 90  # fits a laptop's width without scrolling
        for k in range(0, len(lines) - 2, 4):  # BLAST's match line: the residue where identical, + where positive
            q, m, s = lines[k].split()[2], lines[k + 1][lines[k].index(lines[k].split()[2]) :], lines[k + 2].split()[2]
            assert all(c == a if a == b else c in "+ " for a, b, c in zip(q, s, m.ljust(len(q))))
    # every shown alignment is the JSON line's, residue for residue
    for block in blocks:
        lines = html.unescape(block).split("\n")
        qseq = "".join(line.split()[2] for line in lines if line.startswith("Query  "))
        assert any(r["qseq"] == qseq for r in rows.values())


def test_weak_hits_apart(run: dict) -> None:
    text = run["html"]
    sections = re.split(r"<h3 id=q\d+>", text)[1:]
    assert len(sections) == len(run["records"])
    assert any(r["evalue"] > 10 for r in run["rows"]) and any(r["evalue"] <= 1e-3 for r in run["rows"])
    for section, record in zip(sections, run["records"]):
        rows = [r for r in run["rows"] if r["query_id"] == record.id]
        first_table = section.split("<details>")[0]
        for r in rows:
            acc = r["subject_id"].split("|")[1]
            in_first = f"/{acc}/entry" in first_table.split("<h4>")[0]
            if r["evalue"] <= 1e-3:
                assert in_first
            elif r["evalue"] > 10:
                assert f"/{acc}/entry" not in section  # beyond E 10: counted, not tabulated


def test_reads_a_subset_and_refuses_alignments_of_another_search(run: dict, bundled_db: Database, tmp_path: Path) -> None:
    hits = merge_hits([load_hits(p) for p in run["lists"][:2]], bundled_db)
    rows = run["jsonl"][0].read_text().splitlines()
    counts = [sum(json.loads(r)["query_id"] == qh.query.id for r in rows) for qh in hits]
    assert [len(a) for a in read_alignments(run["jsonl"][:1], bundled_db, hits)] == counts
    # a subset (what an E-value cutoff or --align leaves), in any order, matched by subject
    subset = tmp_path / "subset.jsonl"
    subset.write_text("\n".join(rows[3:][::-1]) + "\n")
    got = read_alignments([subset], bundled_db, hits)
    expected = [json.loads(r) for r in rows[3:]]
    assert [(a.query_id, a.subject_id) for alns in got for a in alns] == [(r["query_id"], r["subject_id"]) for r in expected]
    for alns in got:
        assert all(bundled_db.seq_id(a.subject_index) == a.subject_id for a in alns)
    changed = json.loads(rows[1])
    changed["score"] += 1
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([rows[0], json.dumps(changed)]) + "\n")
    with pytest.raises(
        InputError, match=r"bad.jsonl: line 2: .* score \d+ is score \d+ there in the hit lists \(alignments of another search"
    ):
        read_alignments([bad], bundled_db, hits)
    with pytest.raises(InputError, match=r"is in none of the hit lists"):
        read_alignments(run["jsonl"][1:], bundled_db, hits)
    bad.write_text(rows[0] + "\n" + rows[0] + "\n")
    with pytest.raises(InputError, match=r"bad.jsonl: line 2: .* appears twice"):
        read_alignments([bad], bundled_db, hits)
    bad.write_text("{}\n")
    with pytest.raises(InputError, match=r"bad.jsonl: line 1: not an alignment"):
        read_alignments([bad], bundled_db, hits)


@pytest.mark.parametrize(
    "description, expected",
    [
        ("Alcohol dehydrogenase 1A OS=Homo sapiens OX=9606 GN=ADH1A PE=1 SV=2", ("Alcohol dehydrogenase 1A", "Homo sapiens")),
        ("50S ribosomal protein L9 OS=Persephonella marina (strain DSM 14350 / EX-H1) GN=rplI PE=3 SV=1 Split=0",
         ("50S ribosomal protein L9", "Persephonella marina (strain DSM 14350 / EX-H1)")),
        ("alcohol dehydrogenase 1A [Homo sapiens]", ("alcohol dehydrogenase 1A", "Homo sapiens")),
        ("RecName: Full=Leghemoglobin-1; AltName: Full=Leghemoglobin I", ("RecName: Full=Leghemoglobin-1; AltName: Full=Leghemoglobin I", "")),
        ("", ("", "")),
    ],
)  # fmt: skip
def test_split_description(description: str, expected: tuple[str, str]) -> None:
    assert split_description(description) == expected


def test_short_name() -> None:
    assert short_name("RecName: Full=Leghemoglobin-1; AltName: Full=Leghemoglobin I") == "Leghemoglobin-1"
    assert short_name("Alcohol dehydrogenase 1A OS=Homo sapiens OX=9606") == "Alcohol dehydrogenase 1A"


@pytest.mark.parametrize(
    "ident, expected",
    [
        ("sp|P07327|ADH1A_HUMAN", ("P07327", "https://www.uniprot.org/uniprotkb/P07327/entry")),
        ("tr|W0FSK4|W0FSK4_9FLAV", ("W0FSK4", "https://www.uniprot.org/uniprotkb/W0FSK4/entry")),
        ("gi|122087146|sp|P02232.2|LGB1_VICFA", ("P02232", "https://www.uniprot.org/uniprotkb/P02232/entry")),
        ("UniRef50_P07327", ("UniRef50_P07327", "https://www.uniprot.org/uniref/UniRef50_P07327")),
        ("gi|4501867|ref|NP_000658.1|", ("NP_000658.1", "https://www.ncbi.nlm.nih.gov/protein/NP_000658.1")),
        ("XP_011520123.1", ("XP_011520123.1", "https://www.ncbi.nlm.nih.gov/protein/XP_011520123.1")),
    ],
)  # fmt: skip
def test_accession_link(ident: str, expected: tuple[str, str]) -> None:
    assert accession_link(ident) == expected


def test_report_needs_alignments(bundled_db: Database, run: dict, capsys: pytest.CaptureFixture) -> None:
    """The report traces nothing: without the align step's alignments it refuses to start."""
    with pytest.raises(SystemExit) as exc:
        cli.main(["report", "--db", str(bundled_db.path), "--hits", *map(str, run["lists"]), "--out", str(run["tmp"] / "x.html")])
    assert exc.value.code == 2 and "--alignments" in capsys.readouterr().err and not (run["tmp"] / "x.html").exists()


def test_report_without_evalues(run: dict, bundled_db: Database) -> None:
    """A scoring system without statistics: one table per query ranked by score, nothing called significant."""
    hits = merge_hits([load_hits(p) for p in run["lists"][:2]], bundled_db)
    alignments = read_alignments(run["jsonl"][:1], bundled_db, hits)
    for alns in alignments:
        for a in alns:
            a.evalue = a.bitscore = None
    info = RunInfo(scoring=Scoring.protein("BLOSUM62", 11, 1), statistics="no E-values: none for this test")
    text = render(bundled_db, hits, alignments, info)
    assert "ranked by score (no E-values" in text and "significant hit" not in text and "E = 0.001" not in text
    assert text.count("<pre>") == sum(min(len(a), 5) for a in alignments)
