"""``swgpu align`` with several ``--out``: what the workflow's one align job per query batch runs.

One traceback, every format written from it: each output equals the one a single-output
run writes, and the traceback runs once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from swgpu_core import api


@pytest.fixture(scope="module")
def saved_hits(tmp_path_factory: pytest.TempPathFactory, resources: Path) -> tuple[Path, Path]:
    """The bundled database (3 chunks) and the hit list of a 2-query search, through the CLI."""
    from swgpu_core import cli

    work = tmp_path_factory.mktemp("align_outs")
    db = work / "db"
    queries = work / "q.fasta"
    queries.write_text("".join(">" + r for r in (resources / "queries.fasta").read_text().split(">")[1:3]))
    assert cli.main(["makedb", str(resources / "db.fasta.gz"), str(db), "--chunk-residues", "500000", "--quiet"]) == 0
    hits = work / "hits.npz"
    args = ["search", "--db", str(db), "--query", str(queries), "--backend", "cpu", "--top", "5", "--save-hits", str(hits), "--quiet"]
    assert cli.main(args) == 0
    return db, hits


def test_several_outs_write_every_format_from_one_traceback(saved_hits, swgpu, tmp_path, monkeypatch) -> None:
    db, hits = saved_hits
    calls = []
    traced = api.align

    def counting(*args, **kwargs):
        calls.append(1)
        return traced(*args, **kwargs)

    monkeypatch.setattr(api, "align", counting)
    together = [tmp_path / "all.tsv", tmp_path / "all.jsonl", tmp_path / "all.sam", tmp_path / "all.txt"]
    rc, _, err = swgpu("align", "--db", db, "--hits", hits, "--backend", "cpu", *[a for p in together for a in ("--out", p)])
    assert rc == 0, err
    assert len(calls) == 1  # one traceback for four outputs
    assert "tsv, jsonl, sam, pairwise" in err
    for path in together:
        alone = tmp_path / f"alone{path.suffix}"
        rc, _, err = swgpu("align", "--db", db, "--hits", hits, "--backend", "cpu", "--out", alone)
        assert rc == 0, err
        assert path.read_text() == alone.read_text(), path.suffix
    assert len(calls) == 5
    assert len((tmp_path / "all.jsonl").read_text().splitlines()) == 10  # 2 queries x 5 hits


def test_several_outs_refuse_a_file_named_twice(saved_hits, swgpu, tmp_path, monkeypatch) -> None:
    db, hits = saved_hits
    monkeypatch.chdir(tmp_path)
    rc, _, err = swgpu("align", "--db", db, "--hits", hits, "--out", "a.tsv", "--out", "a.tsv")
    assert rc == 2 and "twice" in err and "Traceback" not in err
    assert not list(tmp_path.iterdir())  # nothing written


def test_search_writes_what_align_writes_from_its_saved_hits(saved_hits, swgpu, tmp_path, monkeypatch) -> None:
    """``swgpu search --save-hits H --out A --out B ...``, the workflow's one job per batch over
    the whole database: one traceback, and every output what ``swgpu align --hits H`` writes."""
    db, hits = saved_hits
    calls = []
    traced = api.align

    def counting(*args, **kwargs):
        calls.append(1)
        return traced(*args, **kwargs)

    monkeypatch.setattr(api, "align", counting)
    outs = [tmp_path / "all.tsv", tmp_path / "all.jsonl", tmp_path / "all.sam", tmp_path / "all.txt"]
    query = db.parent / "q.fasta"
    common = ["--db", db, "--query", query, "--backend", "cpu", "--top", "5"]
    rc, _, err = swgpu("search", *common, "--save-hits", tmp_path / "h.npz", *[a for p in outs for a in ("--out", p)])
    assert rc == 0, err
    assert len(calls) == 1 and "10 alignments traced in" in err and "tsv, jsonl, sam, pairwise written" in err
    for path in outs:
        alone = tmp_path / f"align{path.suffix}"
        rc, _, err = swgpu("align", "--db", db, "--hits", tmp_path / "h.npz", "--backend", "cpu", "--out", alone)
        assert rc == 0, err

        def body(p: Path) -> list[str]:
            return [line for line in p.read_text().splitlines() if not line.startswith("@PG")]  # @PG: the command line

        assert body(path) == body(alone) and body(path), path.suffix
    rc, _, err = swgpu("search", *common, "--out", tmp_path / "x.tsv", "--out", tmp_path / "x.tsv")
    assert rc == 2 and "twice" in err and "Traceback" not in err
