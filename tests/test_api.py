"""The public API and the one output path: the docs example runs, E-values cost no traceback,
every command writes through one writer, Biopython and pysam read what the tool writes."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pysam
import pytest
from Bio import SearchIO

import swgpu_core as sw
from swgpu_core.database import Database
from swgpu_core.errors import InputError

ROOT = Path(__file__).resolve().parent.parent


def test_docs_example_runs() -> None:
    """The example of docs/api.md, run as a user would, from the repository root."""
    code = re.search(r"```python\n(.*?)```", (ROOT / "docs" / "api.md").read_text(), re.S).group(1)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1] == "True True" and len(lines) > 3
    assert all(float(line.split("\tE ")[1].split("\t")[0]) <= 1e-5 for line in lines[:-1])


def test_import_is_cheap_and_names_are_public() -> None:
    code = (
        "import sys, swgpu_core as sw; heavy = [m for m in ('numba', 'cupy', 'pysam', 'matplotlib') if m in sys.modules];"
        "import swgpu_core.search, swgpu_core.align; print(heavy, callable(sw.search), callable(sw.align), sw.Alignment.__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.strip() == "[] True True Alignment"
    assert (ROOT / "swgpu_core" / "py.typed").is_file()
    from swgpu_core import api

    assert sw.__all__ == api.__all__
    for name in sw.__all__:
        assert getattr(sw, name) is getattr(api, name)


@pytest.fixture
def tracebacks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Pairs traced, per traceback call (the one traceback call site is the engine's ``traceback``)."""
    from swgpu_core import engine

    calls: list[int] = []
    real = engine.CpuEngine.traceback

    def counting(self, tasks, scoring, **options):
        calls.append(len(tasks))
        return real(self, tasks, scoring, **options)

    monkeypatch.setattr(engine.CpuEngine, "traceback", counting)
    return calls


@pytest.fixture(scope="module")
def saved(bundled_db: Database, resources: Path, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    from swgpu_core import cli

    out = tmp_path_factory.mktemp("saved")
    parts = []
    for k, chunks in enumerate(["0-1", f"2-{len(bundled_db.chunks) - 1}"]):
        parts.append(out / f"p{k}.npz")
        args = ["search", "--db", str(bundled_db.path), "--query", str(resources / "queries.fasta"), "--backend", "cpu"]
        assert cli.main([*args, "--top", "20", "--quiet", "--chunks", chunks, "--save-hits", str(parts[-1])]) == 0
    return parts


def test_evalues_cost_no_traceback(bundled_db: Database, resources: Path, saved: list[Path], swgpu, tracebacks: list[int]) -> None:
    fields = "6 qseqid sseqid evalue bitscore"
    rc, out, err = swgpu("merge", *saved, "--db", bundled_db.path, "--outfmt", fields)
    assert rc == 0, err
    rows = [line.split("\t") for line in out.splitlines()]
    assert rows and all(float(r[2]) <= 10 for r in rows) and tracebacks == []
    common = ("--db", bundled_db.path, "--query", resources / "queries.fasta", "--backend", "cpu", "--top", "20", "--quiet")
    rc, out, err = swgpu("search", *common, "--evalue", "1e-5", "--outfmt", fields)
    assert rc == 0, err
    assert out and all(float(line.split("\t")[2]) <= 1e-5 for line in out.splitlines()) and tracebacks == []
    # the same E-values as the traced alignments carry, and a field that needs alignments does trace
    rc, traced, err = swgpu("search", *common, "--evalue", "1e-5", "--outfmt", "6 qseqid sseqid evalue bitscore pident")
    assert rc == 0, err
    assert [line.rsplit("\t", 1)[0] for line in traced.splitlines()] == out.splitlines()
    assert sum(tracebacks) == len(out.splitlines())


def test_search_writes_bam_sam_jsonl(bundled_db: Database, resources: Path, swgpu, tmp_path: Path) -> None:
    common = ("--db", bundled_db.path, "--query", resources / "queries.fasta", "--backend", "cpu", "--top", "5", "--quiet")
    rc, table, err = swgpu("search", *common, "--outfmt", "6 qseqid sseqid score")
    assert rc == 0, err
    for name in ("hits.bam", "hits.sam"):
        rc, _, err = swgpu("search", *common, "--out", tmp_path / name)
        assert rc == 0, err
        with pysam.AlignmentFile(str(tmp_path / name)) as fh:
            got = sorted((r.query_name, r.reference_name, r.get_tag("AS")) for r in fh if not r.is_unmapped)
        want = sorted((q, s, int(sc)) for q, s, sc in (line.split("\t") for line in table.splitlines()))
        assert got == want
    rc, _, err = swgpu("search", *common, "--out", tmp_path / "x.tsv", "--format", "jsonl")
    assert rc == 0, err
    assert len([json.loads(line) for line in (tmp_path / "x.tsv").read_text().splitlines()]) == len(table.splitlines())


def test_align_writes_several_outputs_from_one_traceback(
    bundled_db: Database, saved: list[Path], swgpu, tmp_path: Path, tracebacks: list[int]
) -> None:
    outs = [tmp_path / "a.tsv", tmp_path / "a.bam", tmp_path / "a.jsonl", tmp_path / "a.txt"]
    rc, _, err = swgpu(
        "align", "--db", bundled_db.path, "--hits", *saved, "--align", "3", "--out", *outs, "--outfmt", "7 std", "--backend", "cpu"
    )
    assert rc == 0, err
    assert len(tracebacks) == 1  # one traceback, four files
    n = tracebacks[0]
    assert sum(1 for line in outs[0].read_text().splitlines() if not line.startswith("#")) == n
    with pysam.AlignmentFile(str(outs[1])) as fh:
        assert sum(1 for r in fh if not r.is_unmapped) == n
    assert len(outs[2].read_text().splitlines()) == n and outs[3].read_text().count(" Score = ") == n
    rc, _, err = swgpu("align", "--db", bundled_db.path, "--hits", *saved, "--out", outs[0], outs[0])
    assert rc == 2 and "twice" in err


def _searchio(path: Path, fields: str) -> list:
    kind, names = fields.split(" ", 1)
    if kind == "7":
        return list(SearchIO.parse(str(path), "blast-tab", comments=True))
    expanded = names.replace("std", " ".join(sw.STANDARD_FIELDS))
    return list(SearchIO.parse(str(path), "blast-tab", fields=expanded.split()))


@pytest.mark.parametrize(
    "fields", ["6 std", "7 std", "6 qseqid sseqid evalue bitscore score", "7 qaccver sacc stitle slen qlen evalue bitscore pident length"]
)
def test_searchio_reads_every_table(bundled_db: Database, resources: Path, saved: list[Path], swgpu, tmp_path: Path, fields: str) -> None:
    path = tmp_path / "t.tsv"
    for command in (("merge", *saved, "--db", bundled_db.path), ("align", "--db", bundled_db.path, "--hits", *saved, "--backend", "cpu")):
        rc, _, err = swgpu(*command, "--outfmt", fields, "--out", path)
        assert rc == 0, err
        qresults = _searchio(path, fields)
        assert len(qresults) == 5 and sum(len(q) for q in qresults) > 5
        for q in qresults:
            assert all(hsp.evalue <= 10 for hit in q for hsp in hit.hsps)
        text = path.read_text()
        if fields.startswith("7"):
            assert text.startswith("# BLASTP ") and "# Query: " in text and f"# Database: {bundled_db.path}" in text
            assert "# Fields: " in text and " hits found" in text and text.endswith("# BLAST processed 5 queries\n")
        assert "*" not in text


def test_tabs_in_headers_stay_in_their_column(tmp_path: Path, swgpu) -> None:
    fasta = tmp_path / "t.fasta"
    fasta.write_text(
        ">sp|P1|A_HUMAN first\tsecond\tthird\nMKVLAAGIVGLLLAAGCSSSKEETAPVVAQHWWKLLPQ\n>b\tdesc\nMKVLAAGIVGLLLAAGCSSSKEETAPVVAQ\n"
    )
    assert swgpu("makedb", fasta, tmp_path / "db", "--quiet")[0] == 0
    rc, out, err = swgpu(
        "search",
        "--db",
        tmp_path / "db",
        "--query",
        fasta,
        "--backend",
        "cpu",
        "--quiet",
        "--outfmt",
        "6 qseqid qtitle sseqid stitle score evalue",
    )
    assert rc == 0, err
    rows = [line.split("\t") for line in out.splitlines()]
    assert rows and all(len(r) == 6 for r in rows)
    assert rows[0][:4] == ["sp|P1|A_HUMAN", "sp|P1|A_HUMAN first second third", "sp|P1|A_HUMAN", "first second third"]


def test_library_takes_plain_values() -> None:
    """No argparse in the library: only command modules may import it."""
    for path in (ROOT / "swgpu_core").rglob("*.py"):
        if "commands" in path.parts or path.name == "cli.py":
            continue
        assert "argparse" not in path.read_text(), path


def test_pairs_and_align_long_through_the_api(tmp_path: Path) -> None:
    import numpy as np

    rng = np.random.default_rng(7)
    target = "".join(rng.choice(list("ACGT"), 5000))
    query = target[1200:1500]
    (tmp_path / "q.fa").write_text(f">q\n{query}\n")
    (tmp_path / "t.fa").write_text(f">t long target\n{target}\n")
    long = sw.align_long(tmp_path / "q.fa", tmp_path / "t.fa", sw.Scoring.nucleotide(), top=1, backend="cpu")
    best = long.alignments[0]
    assert (best.sstart, best.send, best.score) == (1201, 1500, 5 * 300)
    sw.write_results(tmp_path / "long.sam", long.results)
    with pysam.AlignmentFile(str(tmp_path / "long.sam")) as fh:
        assert [r.reference_start for r in fh] == [1200]

    (tmp_path / "a.fa").write_text(">a\nMKVLAAGIVGLLLAAGCSSSKEETAPVVAQ\n>b\nMKVLAAGIVG\n")
    (tmp_path / "b.fa").write_text(">x\nMKVLAAGIVGLLLAAGCSSSKEETAPVVAQ\n>y\nWWWWWWWWWW\n")
    scoring = sw.Scoring.protein()
    results, backend = sw.align_pairs(
        sw.fasta_pairs(tmp_path / "a.fa", tmp_path / "b.fa"), scoring, backend="cpu", statistics=sw.statistics(scoring)
    )
    sw.write_results(tmp_path / "pairs.tsv", results, outfmt="6 qseqid sseqid score evalue")
    rows = [line.split("\t") for line in (tmp_path / "pairs.tsv").read_text().splitlines()]
    assert backend == "cpu" and rows[0][:2] == ["a", "x"] and float(rows[0][3]) < 1e-5


@pytest.mark.skipif(not (shutil.which("blastp") and shutil.which("makeblastdb")), reason="NCBI BLAST+ not installed")
def test_std_tables_match_blastp(resources: Path, tmp_path: Path, swgpu) -> None:
    """Ids, titles and the format 7 comment lines as blastp 2.12 writes them (against a -parse_seqids database)."""
    import gzip

    with gzip.open(resources / "db.fasta.gz", "rt") as fh:
        records = fh.read().split(">")[1:301]
    fasta = tmp_path / "db.fasta"
    fasta.write_text("".join(">" + r for r in records))
    queries = tmp_path / "q.fasta"
    queries.write_text("".join(">" + r for r in records[:3]))
    subprocess.run(
        ["makeblastdb", "-in", fasta, "-dbtype", "prot", "-parse_seqids", "-out", tmp_path / "bdb"], check=True, capture_output=True
    )
    assert swgpu("makedb", fasta, tmp_path / "sdb", "--quiet")[0] == 0
    fields = "7 std qseqid sseqid qacc sacc stitle slen qlen"
    blast = subprocess.run(
        [
            "blastp",
            "-query",
            queries,
            "-db",
            tmp_path / "bdb",
            "-outfmt",
            fields,
            "-comp_based_stats",
            "0",
            "-seg",
            "no",
            "-max_target_seqs",
            "1",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    rc, ours, err = swgpu(
        "search", "--db", tmp_path / "sdb", "--query", queries, "--backend", "cpu", "--top", "1", "--quiet", "--outfmt", fields
    )
    assert rc == 0, err

    def comments(text: str) -> list[str]:
        return [line for line in text.splitlines() if line.startswith(("# Query:", "# Fields:")) or line.endswith("hits found")]

    def ids(text: str) -> list[list[str]]:  # the self hits: every column but the alignment numbers, E-value and bit score
        rows = [line.split("\t") for line in text.splitlines() if not line.startswith("#")]
        return [r[:2] + r[12:] for r in rows]

    assert len(ids(ours)) == 3 and comments(ours) == comments(blast)
    assert ids(ours) == ids(blast)
    assert ours.splitlines()[-1] == blast.splitlines()[-1] == "# BLAST processed 3 queries"


@pytest.mark.gpu
def test_gpu_api_and_commands_equal_cpu(bundled_db: Database, resources: Path, swgpu, tmp_path: Path) -> None:
    """The API on CUDA gives the CPU's hits, alignments and files (search, align, every writer)."""
    scoring = sw.Scoring.protein()
    stats = sw.statistics(scoring)
    by = {}
    for backend in ("cpu", "cuda"):
        result = sw.search(bundled_db, resources / "queries.fasta", scoring, backend=backend, top=10)
        assert result.backend == backend
        hits = sw.select_hits(bundled_db, result.hits, stats)
        aligned = sw.align(bundled_db, hits, scoring, backend=backend, statistics=stats)
        results = sw.Results(bundled_db, hits, aligned.alignments, stats, scoring.describe())
        for name in ("t.tsv", "t.jsonl"):
            sw.write_results(tmp_path / f"{backend}-{name}", results)
        by[backend] = [(tmp_path / f"{backend}-{name}").read_text() for name in ("t.tsv", "t.jsonl")]
        rc, _, err = swgpu("search", "--db", bundled_db.path, "--query", resources / "queries.fasta", "--backend", backend, "--top", "10",
                           "--quiet", "--out", tmp_path / f"{backend}.sam")  # fmt: skip
        assert rc == 0, err
    assert by["cpu"] == by["cuda"]
    assert (tmp_path / "cpu.sam").read_text() == (tmp_path / "cuda.sam").read_text()


def test_statistics_are_decided_once_and_asked_per_query(bundled_db: Database, resources: Path, saved: list[Path]) -> None:
    """sw.search attaches its statistics (stats_mode); filters and single hits agree with them; saved lists fit as the search."""
    import numpy as np

    from swgpu_core.hitlist import load_hits, merge_hits

    scoring = sw.Scoring.protein()
    queries = sw.read_queries(resources / "queries.fasta")
    blast = sw.search(bundled_db, queries, scoring, backend="cpu", top=20)
    fit = sw.search(bundled_db, queries, scoring, backend="cpu", top=20, stats_mode="fit")
    assert blast.statistics.kind == "blast" and fit.statistics.kind == "fit"
    user = sw.statistics(scoring, bundled_db, lam=0.3, kappa=0.1)
    assert user.kind == "user" and sw.statistics(scoring).kind == "blast"  # no database: each subject its own (pairs)
    part = sw.search(bundled_db, queries, scoring, backend="cpu", top=20, chunks=[0], stats_mode="fit")
    assert part.statistics.kind == "none"  # a part of the database's scores: no fit, and why
    assert "of the database's 3,000 subjects" in part.statistics.description
    with pytest.raises(InputError, match="--stats blast"):
        sw.search(bundled_db, queries, sw.Scoring.protein("BLOSUM62", 12, 2), backend="cpu", stats_mode="blast")
    lengths = np.asarray(bundled_db.lengths)
    for stats in (blast.statistics, fit.statistics, user):
        kept = sw.select_hits(bundled_db, fit.hits, stats, max_evalue=1e-3)
        for qi, (qh, k) in enumerate(zip(fit.hits, kept)):
            one = [sw.hit_significance(stats, qi, qh.query, s, lengths[j]) for j, s in zip(qh.subjects.tolist(), qh.scores.tolist())]
            assert k.subjects.tolist() == [j for j, (e, _) in zip(qh.subjects.tolist(), one) if e <= 1e-3]
    # hit lists of two chunk groups: their summed histograms fit exactly as the whole search did
    lists = [load_hits(p) for p in saved]
    stats = sw.saved_statistics(scoring, bundled_db, [lists], stats_mode="fit")
    merged = merge_hits(lists, bundled_db)
    for qi, qh in enumerate(merged):
        e = stats.evalue(qi, len(qh.query), qh.scores, lengths[qh.subjects])
        assert np.array_equal(e, fit.statistics.evalue(qi, len(qh.query), qh.scores, lengths[qh.subjects]))
    assert sw.saved_statistics(scoring, bundled_db, [lists[:1]], stats_mode="fit").kind == "none"


@pytest.mark.parametrize("show_progress", [True, False])
def test_search_imports_its_bar_before_it_waits_for_the_scanner(
    bundled_db: Database, resources: Path, monkeypatch: pytest.MonkeyPatch, show_progress: bool
) -> None:
    """With a progress bar, tqdm is imported before the scanner is asked for: on a GPU the
    scanner waits for the device's set-up, and the import then costs nothing (after it, it lay
    between the set-up and the first scan). Without a bar, tqdm is not imported there."""
    from swgpu_core.engine import get_engine

    for name in [m for m in sys.modules if m == "tqdm" or m.startswith("tqdm.")]:
        monkeypatch.delitem(sys.modules, name)
    engine = get_engine("cpu")
    seen: list[bool] = []
    make = type(engine).scanner
    monkeypatch.setattr(type(engine), "scanner", lambda *a, **k: (seen.append("tqdm" in sys.modules), make(*a, **k))[1])
    queries = sw.read_queries(resources / "queries.fasta")
    sw.search(bundled_db, queries, sw.Scoring.protein(), backend=engine, top=3, show_progress=show_progress)
    assert seen == [show_progress]
