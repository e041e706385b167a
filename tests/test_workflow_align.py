"""``swgpu align`` with several ``--out``: what the workflow's one align job per query batch runs.

One traceback, every format written from it: each output equals the one a single-output
run writes, and the traceback runs once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from swgpu_core.commands import align as align_command


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
    traced = align_command.alignments_for

    def counting(*args, **kwargs):
        calls.append(1)
        return traced(*args, **kwargs)

    monkeypatch.setattr(align_command, "alignments_for", counting)
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


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--out", "a.tsv", "--out", "b.sam", "--format", "tsv"], "--format applies to one --out"),
        (["--out", "a.tsv", "--out", "a.tsv"], "given twice"),
    ],
)
def test_several_outs_refuse_ambiguous_requests(saved_hits, swgpu, tmp_path, monkeypatch, extra, message) -> None:
    db, hits = saved_hits
    monkeypatch.chdir(tmp_path)
    rc, _, err = swgpu("align", "--db", db, "--hits", hits, *extra)
    assert rc == 2 and message in err and "Traceback" not in err
    assert not list(tmp_path.iterdir())  # nothing written
