"""Database round trip: ids, descriptions, sequences, source order, chunks, manifest."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np

from swgpu_core.database import FORMAT_VERSION, Database, build_database


def test_round_trip_with_small_chunks(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    records = []
    for i in range(200):
        seq = "".join(rng.choice(list("ARNDCQEGHILKMFPSTWYVBZX*UOJ"), int(rng.integers(1, 90))))
        records.append((f"sp|P{i:05d}|N{i}", f"protein {i} with  spaces" if i % 3 else "", seq))
    text = "".join(f">{i} {d}\n{s.lower() if n % 5 == 0 else s}\n" for n, (i, d, s) in enumerate(records))
    with gzip.open(tmp_path / "in.fa.gz", "wt") as fh:
        fh.write(text)
    db = build_database(tmp_path / "in.fa.gz", tmp_path / "db", chunk_residues=500, show_progress=False)

    assert db.n_sequences == len(records) and db.n_residues == sum(len(s) for _, _, s in records)
    assert np.all(np.diff(db.lengths) >= 0), "sorted by length"
    back = [None] * len(records)
    for i in range(db.n_sequences):
        back[int(db.order[i])] = (*db.header(i), db.sequence(i))
    assert back == records  # ids, descriptions, upper-cased sequences, original order

    chunks = db.chunks
    assert len(chunks) > 10
    assert chunks[0].first == 0 and chunks[-1].stop == db.n_sequences
    for a, b in zip(chunks, chunks[1:]):
        assert a.stop == b.first and a.residue_stop == b.residue_start
    assert all(c.n_residues <= 500 or c.n_sequences == 1 for c in chunks)

    m = json.loads((tmp_path / "db" / "manifest.json").read_text())
    assert m["format_version"] == FORMAT_VERSION
    lengths = [len(s) for _, _, s in records]
    assert m["length_stats"] == {"min": min(lengths), "mean": float(np.mean(lengths)), "median": float(np.median(lengths)), "max": max(lengths)}
    assert sum(m["length_histogram"]["counts"]) == len(records)
    assert len(m["source"]["sha256"]) == 64
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "no temporary directory left"


def test_rebuild_replaces_database(tmp_path: Path) -> None:
    (tmp_path / "a.fa").write_text(">x\nACDE\n")
    (tmp_path / "b.fa").write_text(">y\nKLMNP\n>z\nW\n")
    build_database(tmp_path / "a.fa", tmp_path / "db", show_progress=False)
    db = build_database(tmp_path / "b.fa", tmp_path / "db", show_progress=False)
    assert [db.seq_id(i) for i in range(len(db))] == ["z", "y"]
    assert Database(tmp_path / "db").version_tag == db.version_tag
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.fa", "b.fa", "db"]
