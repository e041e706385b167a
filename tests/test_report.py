"""``swgpu report``: one self-contained HTML file with every section, from batched, chunked hit lists."""

from __future__ import annotations

import json
from pathlib import Path

from swgpu_core.database import Database
from swgpu_core.fasta import read_fasta


def test_report_from_batches_and_chunks(bundled_db: Database, resources: Path, swgpu, tmp_path: Path) -> None:
    records = list(read_fasta(resources / "queries.fasta"))
    batches = [records[:2], records[2:]]
    lists = []
    last = len(bundled_db.chunks) - 1
    for b, batch in enumerate(batches):
        fasta = tmp_path / f"batch-{b}.fasta"
        fasta.write_text("".join(f">{r.id} {r.description}\n{r.sequence}\n" for r in batch))
        for chunks in ("0", f"1-{last}"):
            lists.append(tmp_path / f"b{b}-{chunks}.npz")
            rc, _, err = swgpu("search", "--db", bundled_db.path, "--query", fasta, "--backend", "cpu", "--top", "5", "--quiet",
                               "--chunks", chunks, "--save-hits", lists[-1])  # fmt: skip
            assert rc == 0, err
    plan = tmp_path / "plan.json"
    rc, _, err = swgpu("plan", bundled_db.path, "--threshold", "1234", "--json", plan, "--no-gpu")
    assert rc == 0, err
    out = tmp_path / "report.html"
    rc, _, err = swgpu("report", "--db", bundled_db.path, "--hits", *lists, "--out", out, "--plan", plan, "--backend", "cpu")
    assert rc == 0, err
    text = out.read_text()
    for section in ("Search parameters", "Timings", "Distributions", "Database length histogram", "Top hits per query", "Alignments"):
        assert f"<h2>{section}</h2>" in text
    assert text.count("data:image/png;base64,") == 3 and "<script" not in text and "<link" not in text and "src=\"http" not in text
    assert all(r.id in text for r in records)
    assert "BLOSUM62 gap 11/1" in text and bundled_db.version_tag in text and "GCUPS" in text
    assert text.count(" Score = ") == 3 * len(records)  # three alignments shown per query
