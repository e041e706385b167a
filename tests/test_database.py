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
    many = [7, 199, 0, 7, 120, 3]  # any order, repeats, across chunks
    assert db.headers(many) == [db.header(i) for i in many] and db.headers([]) == []

    chunks = db.chunks
    assert len(chunks) > 10
    assert chunks[0].first == 0 and chunks[-1].stop == db.n_sequences
    for a, b in zip(chunks, chunks[1:]):
        assert a.stop == b.first and a.residue_stop == b.residue_start
    assert all(c.n_residues <= 500 or c.n_sequences == 1 for c in chunks)

    m = json.loads((tmp_path / "db" / "manifest.json").read_text())
    assert m["format_version"] == FORMAT_VERSION
    lengths = [len(s) for _, _, s in records]
    assert m["length_stats"] == {
        "min": min(lengths),
        "mean": float(np.mean(lengths)),
        "median": float(np.median(lengths)),
        "max": max(lengths),
    }
    assert sum(m["length_histogram"]["counts"]) == len(records)
    assert len(m["source"]["sha256"]) == 64
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "no temporary directory left"


def test_the_sort_pass_in_steps_writes_what_one_step_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sort pass copies a sequence (and a header) at a time in steps of _BAR_STEP sequences:
    steps of 3 (the last one short) write the same files as one step, in length order."""
    from swgpu_core import database

    rng = np.random.default_rng(11)
    lengths = rng.integers(1, 60, 50)
    (tmp_path / "in.fa").write_text("".join(f">s{k} d{k}\n{'ACDEFGHIKLMNPQRSTVWY'[k % 20] * int(n)}\n" for k, n in enumerate(lengths)))
    one = build_database(tmp_path / "in.fa", tmp_path / "one", show_progress=False)
    monkeypatch.setattr(database, "_BAR_STEP", 3)
    steps = build_database(tmp_path / "in.fa", tmp_path / "steps", show_progress=False)
    for name in ("residues.u8", "headers.bin"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "steps" / name).read_bytes(), name
    order = np.argsort(lengths, kind="stable")
    assert [steps.sequence(i) for i in range(50)] == ["ACDEFGHIKLMNPQRSTVWY"[k % 20] * int(lengths[k]) for k in order]
    assert [steps.header(i) for i in range(50)] == [(f"s{k}", f"d{k}") for k in order] and one.n_residues == int(lengths.sum())


def test_ids_are_found_in_batches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """find_ids: the number of each id the database holds, over batches of 8 headers (the last
    one short), ids it lacks left out; nothing read for no ids."""
    from swgpu_core import database

    (tmp_path / "in.fa").write_text("".join(f">id{k} d\n{'MKV' * (k % 7 + 1)}\n" for k in range(30)))
    db = build_database(tmp_path / "in.fa", tmp_path / "db", show_progress=False)
    monkeypatch.setattr(database, "HEADER_BATCH", 1)
    every = {db.seq_id(i): i for i in range(db.n_sequences)}
    wanted = ["id0", "id29", "id17", "nosuch", "id8"]
    assert db.find_ids(wanted) == {k: every[k] for k in wanted if k in every}
    assert db.find_ids(list(every)) == every
    monkeypatch.setattr(db, "headers", lambda indices: pytest.fail("read headers for no ids"))
    assert db.find_ids([]) == {}


def test_rebuild_replaces_database(tmp_path: Path) -> None:
    (tmp_path / "a.fa").write_text(">x\nACDE\n")
    (tmp_path / "b.fa").write_text(">y\nKLMNP\n>z\nW\n")
    build_database(tmp_path / "a.fa", tmp_path / "db", show_progress=False)
    db = build_database(tmp_path / "b.fa", tmp_path / "db", show_progress=False)
    assert [db.seq_id(i) for i in range(len(db))] == ["z", "y"]
    assert Database(tmp_path / "db").version_tag == db.version_tag
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.fa", "b.fa", "db"]


# -- damaged databases: every damage is a one-line DatabaseError naming the file ---------------
import os  # noqa: E402

import pytest  # noqa: E402

from swgpu_core import cli  # noqa: E402
from swgpu_core.database import check_database  # noqa: E402
from swgpu_core.errors import DatabaseError  # noqa: E402


@pytest.fixture
def built(tmp_path: Path) -> Path:
    rng = np.random.default_rng(3)
    text = "".join(f">s{i} protein {i}\n{''.join(rng.choice(list('ACDEFGHIKLMNPQRSTVWY'), int(rng.integers(5, 60))))}\n" for i in range(60))
    (tmp_path / "in.fa").write_text(text)
    (tmp_path / "q.fa").write_text(">q\nMKVLAAGIVGLLLAQWWHHKK\n")
    build_database(tmp_path / "in.fa", tmp_path / "db", chunk_residues=400, show_progress=False)
    return tmp_path / "db"


def _edit_manifest(db: Path, change) -> None:
    m = json.loads((db / "manifest.json").read_text())
    change(m)
    (db / "manifest.json").write_text(json.dumps(m))


def _append(path: Path, data: bytes) -> None:
    with open(path, "ab") as fh:
        fh.write(data)


def _edit_array(db: Path, name: str, change) -> None:
    a = np.load(db / name)
    a = change(a)
    np.save(db / name, a)


def _poke(db: Path, name: str, at: int, value: int) -> None:
    with open(db / name, "r+b") as fh:
        fh.seek(at)
        fh.write(bytes([value]))


def _truncate(db: Path, name: str, size: int) -> None:
    with open(db / name, "r+b") as fh:
        fh.truncate(size)


# the audit's six silent-wrong-answer damages, then the twelve that gave tracebacks
DAMAGES = {
    "chunks_emptied": (lambda db: _edit_manifest(db, lambda m: m.update(chunks=[])), "manifest.json", "chunk"),
    "chunk_cut_short": (
        lambda db: _edit_manifest(db, lambda m: m["chunks"][0].update(stop=m["chunks"][0]["stop"] - 1)),
        "manifest.json",
        "chunk",
    ),
    "offsets_scrambled": (
        lambda db: _edit_array(db, "offsets.i64.npy", lambda a: np.concatenate([a[:1], a[1:-1][::-1], a[-1:]])),
        "offsets.i64.npy",
        "",
    ),
    "lengths_overwritten": (lambda db: _edit_array(db, "lengths.i32.npy", lambda a: np.full_like(a, 7)), "", ""),
    "header_offsets_shifted": (lambda db: _edit_array(db, "header_offsets.i64.npy", lambda a: a + 3), "header_offsets.i64.npy", ""),
    "order_overwritten": (lambda db: _edit_array(db, "order.i64.npy", lambda a: np.zeros_like(a)), "order.i64.npy", "permutation"),
    "residue_out_of_range": (lambda db: _poke(db, "residues.u8", 10, 200), "residues.u8", "outside the protein alphabet"),
    "headers_truncated": (lambda db: _truncate(db, "headers.bin", 100), "", ""),
    "manifest_key_missing": (lambda db: _edit_manifest(db, lambda m: m.pop("n_residues")), "manifest.json", "n_residues"),
    "manifest_chunks_missing": (lambda db: _edit_manifest(db, lambda m: m.pop("chunks")), "manifest.json", "chunks"),
    "manifest_wrong_type": (lambda db: _edit_manifest(db, lambda m: m.update(n_sequences="60")), "manifest.json", "n_sequences"),
    "manifest_not_object": (lambda db: (db / "manifest.json").write_text("[1, 2]"), "", "format version"),
    "chunk_wrong_type": (lambda db: _edit_manifest(db, lambda m: m["chunks"][0].update(first="0")), "manifest.json", "chunk 0"),
    "chunk_extra_key": (lambda db: _edit_manifest(db, lambda m: m["chunks"][0].update(extra=1)), "manifest.json", "chunk 0"),
    "chunk_out_of_range": (lambda db: _edit_manifest(db, lambda m: m["chunks"][-1].update(stop=10**9)), "manifest.json", "chunk"),
    "alphabet_rna": (lambda db: _edit_manifest(db, lambda m: m.update(alphabet="rna")), "manifest.json", "alphabet 'rna'"),
    "length_stats_missing": (lambda db: _edit_manifest(db, lambda m: m["length_stats"].pop("max")), "manifest.json", "max"),
    "source_wrong_type": (lambda db: _edit_manifest(db, lambda m: m.update(source="x")), "manifest.json", "source"),
    "offsets_dtype": (lambda db: _edit_array(db, "offsets.i64.npy", lambda a: a.astype(np.int32)), "offsets.i64.npy", "int32"),
    "order_2d": (lambda db: _edit_array(db, "order.i64.npy", lambda a: a.reshape(-1, 1)), "order.i64.npy", ""),
    "pickled_array": (lambda db: np.save(db / "lengths.i32.npy", np.array([object()] * 3)), "lengths.i32.npy", ""),
    "residues_grown": (lambda db: _append(db / "residues.u8", b"\0"), "residues.u8", "n_residues"),
}


@pytest.mark.parametrize("how", sorted(DAMAGES))
def test_damaged_database_is_refused(built: Path, capsys, how: str) -> None:
    damage, name, fragment = DAMAGES[how]
    damage(built)
    q = built.parent / "q.fa"
    rc = cli.main(["search", "--db", str(built), "--query", str(q), "--backend", "cpu", "--quiet", "--out", str(built.parent / "o.tsv")])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert str(built / name) in err and fragment in err, err
    assert not (built.parent / "o.tsv").exists()
    with pytest.raises(DatabaseError):
        check_database(built)


def test_inner_header_offset_is_caught_when_read(built: Path) -> None:
    """Checking every header on open would read all of headers.bin; a header is checked when read."""
    _edit_array(built, "header_offsets.i64.npy", lambda a: np.concatenate([a[:5], a[5:6] + 2, a[6:]]))
    db = Database(built)
    assert db.header(3) and db.header(6)
    for i in (4, 5):
        with pytest.raises(DatabaseError, match=f"headers.bin: corrupt database \\(header of sequence {i}"):
            db.header(i)
        with pytest.raises(DatabaseError, match=f"headers.bin: corrupt database \\(header of sequence {i}"):
            db.headers([3, i, 6])
    with pytest.raises(DatabaseError, match="header_offsets.i64.npy: corrupt database \\(sha256"):
        check_database(built)
    _edit_manifest(built, lambda m: m.pop("files"))
    with pytest.raises(DatabaseError, match="headers.bin: corrupt database \\(header of sequence 4"):
        check_database(built)


def test_headers_at_once_equal_one_by_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """:meth:`Database.headers` parses many headers at once (HEADER_BATCH at a time): the same
    (id, description) pairs as :meth:`Database.header`, for repeated and unordered numbers,
    empty descriptions, non-ASCII text and batches that end mid-list; a header whose bytes
    no longer decode is reported by its number, as :meth:`header` reports it."""
    import swgpu_core.database as database

    names = ["plain one", "empty", "caf\u00e9 \u03b1-helix", "x", "tab\there", "\u6f22\u5b57 protein"]
    text = "".join(f">s{i}{' ' + d if d != 'empty' else ''}\nMKV{'L' * i}\n" for i, d in enumerate(names * 3))
    (tmp_path / "in.fa").write_text(text, encoding="utf-8")
    db = build_database(tmp_path / "in.fa", tmp_path / "db", chunk_residues=20, show_progress=False)
    wanted = [5, 0, 17, 5, 2, 9, 9, 1, 16, 3, 11, 4]
    monkeypatch.setattr(database, "HEADER_BATCH", 5)
    got = db.headers(wanted)
    assert got == [db.header(i) for i in wanted] and got[1] == ("s0", "plain one") and got[7] == ("s1", "")
    assert db.headers([]) == []
    _edit_manifest(db.path, lambda m: m.pop("chunk_checksums"))  # so that only the parse meets the damage
    start = int(np.load(db.path / "header_offsets.i64.npy")[2])
    _poke(db.path, "headers.bin", start + 1, 0xFF)  # inside sequence 2's id: no longer UTF-8
    damaged = Database(db.path)
    with pytest.raises(DatabaseError, match="headers.bin: corrupt database \\(header of sequence 2"):
        damaged.header(2)
    with pytest.raises(DatabaseError, match="headers.bin: corrupt database \\(header of sequence 2"):
        damaged.headers([0, 1, 2, 3])
    assert damaged.headers([0, 1, 3]) == [db.header(0), db.header(1), db.header(3)]


def test_check_verifies_checksums(built: Path, capsys) -> None:
    assert cli.main(["check", str(built)]) == 0
    assert "sha256 of 6 files ok" in capsys.readouterr().out
    # a flip that keeps every structure intact (one residue code for another) is found only by the checksum
    data = bytearray((built / "residues.u8").read_bytes())
    data[3] = (data[3] + 1) % 20
    (built / "residues.u8").write_bytes(bytes(data))
    Database(built)  # opens: structurally sound
    assert cli.main(["check", str(built)]) == 2
    err = capsys.readouterr().err
    assert str(built / "residues.u8") in err and "sha256" in err and len(err.strip().splitlines()) == 1


def test_check_without_checksums_says_so(built: Path, capsys) -> None:
    _edit_manifest(built, lambda m: m.pop("files"))
    assert cli.main(["check", str(built)]) == 0
    assert "no checksums recorded" in capsys.readouterr().out
    _poke(built, "headers.bin", 0, 0xFF)
    assert cli.main(["check", str(built)]) == 2
    assert "headers.bin" in capsys.readouterr().err


# -- no data loss ----------------------------------------------------------------------------------
def test_makedb_refuses_source_inside_database(tmp_path: Path, capsys) -> None:
    (tmp_path / "a.fa").write_text(">x\nACDE\n")
    build_database(tmp_path / "a.fa", tmp_path / "db", show_progress=False)
    os.replace(tmp_path / "a.fa", tmp_path / "db" / "a.fa")
    assert cli.main(["makedb", str(tmp_path / "db" / "a.fa"), str(tmp_path / "db"), "--quiet"]) == 2
    assert "lies inside the database directory" in capsys.readouterr().err
    assert (tmp_path / "db" / "a.fa").read_text() == ">x\nACDE\n"


def test_makedb_refuses_current_and_parent_directory(tmp_path: Path, capsys, monkeypatch) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.fa").write_text(">x\nACDE\n")
    (work / "manifest.json").write_text("{}")  # looks like a database: still never the working directory
    monkeypatch.chdir(work)
    for target in (".", "..", str(work)):
        assert cli.main(["makedb", "a.fa", target, "--quiet"]) == 2
        assert "current directory" in capsys.readouterr().err
    assert sorted(p.name for p in work.iterdir()) == ["a.fa", "manifest.json"]


def test_makedb_refuses_database_with_foreign_files(tmp_path: Path, capsys) -> None:
    (tmp_path / "a.fa").write_text(">x\nACDE\n")
    build_database(tmp_path / "a.fa", tmp_path / "db", show_progress=False)
    (tmp_path / "db" / "notes.txt").write_text("mine")
    assert cli.main(["makedb", str(tmp_path / "a.fa"), str(tmp_path / "db"), "--quiet"]) == 2
    assert "notes.txt" in capsys.readouterr().err
    assert (tmp_path / "db" / "notes.txt").read_text() == "mine"


def test_stale_build_temporaries_are_swept(tmp_path: Path) -> None:
    import socket
    import subprocess

    (tmp_path / "a.fa").write_text(">x\nACDE\n")
    dead = subprocess.Popen(["true"])
    dead.wait()
    host = socket.gethostname()
    stale = tmp_path / f".db.tmp-{host}-{dead.pid}-abc"
    live = tmp_path / f".db.tmp-{host}-{os.getppid()}-abc"  # a live process's temporary
    other = tmp_path / f".db.tmp-otherhost-{dead.pid}-abc"  # another node's: cannot tell, keep
    for d in (stale, live, other):
        d.mkdir()
        (d / "residues.u8").write_bytes(b"x")
    build_database(tmp_path / "a.fa", tmp_path / "db", show_progress=False)
    assert not stale.exists() and live.exists() and other.exists()


def test_verify_ahead_checks_each_chunk_once_and_leaves_errors_to_the_reader(tmp_path: Path, monkeypatch) -> None:
    """The background check covers the first chunks up to its residue bound, a reader then finds
    them done (each chunk is checked once, by whichever thread comes first), and a damaged
    chunk is reported by the reader, not lost in the thread."""
    rng = np.random.default_rng(3)
    fasta = tmp_path / "db.fa"
    fasta.write_text("".join(f">s{i}\n{''.join(rng.choice(list('ACDEFGHIKLMNPQRSTVWY'), 50 + i))}\n" for i in range(60)))
    path = tmp_path / "db"
    build_database(fasta, path, chunk_residues=800, show_progress=False)
    calls: list[tuple[int, str]] = []
    check = Database._check_chunk
    monkeypatch.setattr(Database, "_check_chunk", lambda self, i, part: (calls.append((i, part)), check(self, i, part))[1])
    db = Database(path)
    assert len(db.chunks) > 3
    thread = db.verify_ahead(residues=db.chunks[0].n_residues + 1)
    thread.join()
    assert calls == [(0, "residues"), (1, "residues")]
    assert db.verify_ahead([3, 2]) is thread and calls == [(0, "residues"), (1, "residues")]  # once per Database: the first call's
    for c in db.chunks:
        db.chunk_residues(c)
    assert sorted(calls) == [(i, "residues") for i in range(len(db.chunks))]

    damaged = db.chunks[2]
    data = bytearray((path / "residues.u8").read_bytes())
    data[damaged.residue_start] = (data[damaged.residue_start] + 1) % 20  # only the checksum can tell
    (path / "residues.u8").write_bytes(bytes(data))
    db = Database(path)
    db.verify_ahead().join()
    db.chunk_residues(db.chunks[1])
    assert db.chunk_residues(db.chunks[2], verify=False).size == damaged.n_residues  # unchecked: the caller checks before use
    for read in (db.verify_residues, db.chunk_residues):
        with pytest.raises(DatabaseError, match="residues.u8: corrupt database \\(chunk 2 does not match its checksum"):
            read(db.chunks[2])
