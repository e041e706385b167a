"""Every bad input: a one-line error naming the file (and record), exit 2, nothing written."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def assert_one_line_error(rc: int, err: str, *fragments: str) -> None:
    assert rc == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err and "error:" in lines[0]
    for fragment in fragments:
        assert fragment in lines[0], f"{fragment!r} not in {lines[0]!r}"


def leftovers(directory: Path, keep: set[str]) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name not in keep)


BAD_FASTA = {
    "empty": (b"", ["empty file"]),
    "blank": (b"\n  \n\n", ["empty file"]),
    "text": (b"This is a README, not sequence data.\nACGT\n", ["text, not FASTA"]),
    "fastq": (b"@r1\nACGT\n+\nIIII\n", ["FASTQ, not FASTA"]),
    "binary": (bytes(range(256)) * 40, ["binary data"]),
    "no_residues": (b">a first\nMKV\n>b empty\n>c\nMKV\n", ["record 2 (b)", "no residues"]),
    "duplicate_id": (b">a\nMKV\n>b\nWW\n>a again\nMKV\n", ["record 3 (a)", "repeats the id of record 1"]),
    "bad_char": (b">a\nMKV\n>b\nMKV1QE\n", ["record 2 (b)", "unknown residue '1' at position 4"]),
    "gap_char": (b">a\nMK-VQ\n", ["record 1 (a)", "unknown residue '-' at position 3"]),
    "space": (b">a\nMK VQ\n", ["record 1 (a)", "unknown residue byte 0x20 at position 3"]),
}


@pytest.mark.parametrize("case", sorted(BAD_FASTA))
def test_makedb_rejects_bad_fasta(tmp_path: Path, swgpu, case: str) -> None:
    data, fragments = BAD_FASTA[case]
    fasta = tmp_path / f"{case}.fa"
    fasta.write_bytes(data)
    rc, out, err = swgpu("makedb", fasta, tmp_path / "out" / "db", "--quiet")
    assert_one_line_error(rc, err, str(fasta), *fragments)
    assert leftovers(tmp_path, {fasta.name}) == [], "nothing half-written"


def test_makedb_rejects_bad_gzip(tmp_path: Path, swgpu) -> None:
    fasta = tmp_path / "cut.fa.gz"
    fasta.write_bytes(gzip.compress(b">a\nMKV\n" * 1000)[:100])
    rc, out, err = swgpu("makedb", fasta, tmp_path / "db", "--quiet")
    assert_one_line_error(rc, err, str(fasta))
    assert leftovers(tmp_path, {fasta.name}) == []


def test_makedb_missing_input(tmp_path: Path, swgpu) -> None:
    rc, out, err = swgpu("makedb", tmp_path / "nope.fa", tmp_path / "db", "--quiet")
    assert_one_line_error(rc, err, str(tmp_path / "nope.fa"), "no such file")
    assert leftovers(tmp_path, set()) == []


def test_failed_rebuild_keeps_old_database(tmp_path: Path, swgpu) -> None:
    (tmp_path / "good.fa").write_text(">a\nMKV\n")
    (tmp_path / "bad.fa").write_text(">a\nMKV\n>a\nMKV\n")
    assert swgpu("makedb", tmp_path / "good.fa", tmp_path / "db", "--quiet")[0] == 0
    before = (tmp_path / "db" / "manifest.json").read_text()
    rc, out, err = swgpu("makedb", tmp_path / "bad.fa", tmp_path / "db", "--quiet")
    assert_one_line_error(rc, err, str(tmp_path / "bad.fa"), "record 2 (a)")
    assert (tmp_path / "db" / "manifest.json").read_text() == before
    assert leftovers(tmp_path, {"good.fa", "bad.fa", "db"}) == []


@pytest.fixture
def small_db(tmp_path: Path, swgpu) -> Path:
    (tmp_path / "db.fa").write_text(">s1\nMKVLAAGIVGLLLAQ\n>s2\nWWHHKKRRDDEE\n")
    (tmp_path / "q.fa").write_text(">q1\nMKVLAAG\n")
    assert swgpu("makedb", tmp_path / "db.fa", tmp_path / "db", "--quiet")[0] == 0
    return tmp_path / "db"


def corrupt(db: Path, how: str) -> str:
    """Damage ``db`` in one way; returns a fragment the error must contain."""
    manifest = db / "manifest.json"
    if how == "missing_dir":
        os.rename(db, db.with_name("elsewhere"))
        return "no such database directory"
    if how == "not_a_database":
        manifest.unlink()
        return "no manifest.json"
    if how == "garbage_manifest":
        manifest.write_text("{ not json")
        return "unreadable manifest"
    if how == "other_version":
        m = json.loads(manifest.read_text())
        m["format_version"] = 99
        manifest.write_text(json.dumps(m))
        return "format version 99"
    if how == "missing_file":
        (db / "lengths.i32.npy").unlink()
        return "missing lengths.i32.npy"
    if how == "truncated_residues":
        with open(db / "residues.u8", "r+b") as fh:
            fh.truncate(5)
        return "array sizes disagree"
    if how == "garbage_array":
        (db / "offsets.i64.npy").write_bytes(b"\x93NUMPY garbage")
        return "corrupt database"
    raise AssertionError(how)


@pytest.mark.parametrize(
    "how", ["missing_dir", "not_a_database", "garbage_manifest", "other_version", "missing_file", "truncated_residues", "garbage_array"]
)
@pytest.mark.parametrize("command", ["search", "dbstats"])
def test_bad_database(small_db: Path, swgpu, how: str, command: str) -> None:
    fragment = corrupt(small_db, how)
    out = small_db.parent / "hits.tsv"
    if command == "search":
        args = ("search", "--db", small_db, "--query", small_db.parent / "q.fa", "--backend", "cpu", "--out", out, "--quiet")
    else:
        args = ("dbstats", small_db, "--png", small_db.parent / "h.png", "--tsv", small_db.parent / "h.tsv")
    rc, _, err = swgpu(*args)
    assert_one_line_error(rc, err, str(small_db), fragment)
    assert not any(small_db.parent.glob("h*")), "no output written"


@pytest.mark.parametrize("case", ["empty", "text", "binary", "no_residues", "duplicate_id", "bad_char"])
def test_search_rejects_bad_query(small_db: Path, swgpu, case: str) -> None:
    data, fragments = BAD_FASTA[case]
    query = small_db.parent / f"{case}.fa"
    query.write_bytes(data)
    out = small_db.parent / "hits.tsv"
    rc, _, err = swgpu(
        "search", "--db", small_db, "--query", query, "--backend", "cpu", "--out", out, "--save-hits", out.with_suffix(".npz")
    )
    assert_one_line_error(rc, err, str(query), *fragments)
    assert not any(small_db.parent.glob("hits*"))


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--align", "-1"), "--align must be 0 or more"),
        (("--lambda", "0.3"), "--lambda and --kappa go together"),
        (("--outfmt", "6 qseqid nosuchfield"), "unknown field 'nosuchfield'"),
        (("--outfmt", "5"), "only the tabular formats 6 and 7"),
        (("--matrix", "BLOSUM99"), "unknown substitution matrix 'BLOSUM99'"),
        (("--gap-extend", "0"), "gap costs"),
        (("--top", "0"), "--top must be at least 1"),
        (("--chunks", "7"), "--chunks '7': index 7 out of range"),
        (("--chunks", "x"), "is not an index"),
        (("--threshold", "0"), "--threshold must be at least 1"),
        (("--gpu-memory", "lots"), "--gpu-memory 'lots': not a size"),
        (("--gpu-memory=0",), "must be positive"),
    ],
)
def test_search_rejects_bad_options(small_db: Path, swgpu, args: tuple[str, ...], fragment: str) -> None:
    out = small_db.parent / "hits.tsv"
    rc, _, err = swgpu("search", "--db", small_db, "--query", small_db.parent / "q.fa", "--backend", "cpu", "--out", out, *args)
    assert_one_line_error(rc, err, fragment)
    assert not out.exists()


def test_real_entry_point_prints_no_traceback(tmp_path: Path) -> None:
    """The installed command, in a fresh interpreter: one line on stderr, exit 2."""
    (tmp_path / "bad.fa").write_bytes(b">a\nMKV\n>b\n")
    proc = subprocess.run(
        [sys.executable, "-m", "swgpu_core", "makedb", str(tmp_path / "bad.fa"), str(tmp_path / "db"), "--quiet"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert_one_line_error(proc.returncode, proc.stderr, str(tmp_path / "bad.fa"), "record 2 (b) has no residues")
    assert not (tmp_path / "db").exists()


# -- FASTA corner cases and data verified to its end ------------------------------------------------
def _bgzip(data: bytes, path: Path) -> bytes:
    import pysam

    plain = path.with_suffix(".plain")
    plain.write_bytes(data)
    pysam.tabix_compress(str(plain), str(path), force=True)
    plain.unlink()
    return path.read_bytes()


def _bgzf_block_starts(blob: bytes) -> list[int]:
    starts, pos = [], 0
    while pos < len(blob):
        starts.append(pos)
        pos += int.from_bytes(blob[pos + 16 : pos + 18], "little") + 1
    return starts


def _many_records(n: int = 3000) -> bytes:
    import random

    rnd = random.Random(1)
    return b"".join(
        b">s%d protein %d\n%s\n" % (i, i, bytes(rnd.choice(b"ACDEFGHIKLMNPQRSTVWY") for _ in range(rnd.randint(20, 200)))) for i in range(n)
    )


def test_bgzip_cut_at_block_boundary_is_refused(tmp_path: Path, swgpu) -> None:
    blob = _bgzip(_many_records(), tmp_path / "full.fa.gz")
    starts = _bgzf_block_starts(blob)
    assert len(starts) > 5
    cut = tmp_path / "cut.fa.gz"
    cut.write_bytes(blob[: starts[len(starts) // 2]])  # what a killed bgzip leaves: whole blocks, no EOF block
    rc, _, err = swgpu("makedb", cut, tmp_path / "db", "--quiet")
    assert_one_line_error(rc, err, str(cut), "truncated bgzip")
    assert not (tmp_path / "db").exists()
    assert swgpu("makedb", tmp_path / "full.fa.gz", tmp_path / "db", "--quiet")[0] == 0


@pytest.mark.parametrize("where", ["inside", "trailer", "crc"])
def test_gzip_without_complete_final_member_is_refused(tmp_path: Path, swgpu, where: str) -> None:
    blob = bytearray(gzip.compress(_many_records(500)))
    path = tmp_path / "cut.fa.gz"
    if where == "inside":
        blob = blob[: len(blob) * 2 // 3]
    elif where == "trailer":
        blob = blob[:-3]  # the size field cut
    else:
        blob[-6] ^= 0x40  # the CRC is wrong
    path.write_bytes(bytes(blob))
    rc, _, err = swgpu("makedb", path, tmp_path / "db", "--quiet")
    assert_one_line_error(rc, err, str(path))
    assert not (tmp_path / "db").exists()


def test_at_line_inside_record_is_refused(tmp_path: Path, swgpu) -> None:
    path = tmp_path / "at.fa"
    path.write_bytes(b">a first\nMKVL\n@b\nKKKK\n")
    rc, _, err = swgpu("makedb", path, tmp_path / "db", "--quiet")
    assert_one_line_error(rc, err, str(path), "record 1 (a)", "line 3 starts with '@'")


def test_non_utf8_first_header_names_record_and_offset(tmp_path: Path, swgpu) -> None:
    path = tmp_path / "latin1.fa"
    path.write_bytes(b">prot\xe9ine one\nMKVL\n")
    rc, _, err = swgpu("makedb", path, tmp_path / "db", "--quiet")
    assert_one_line_error(rc, err, str(path), "record 1", "not UTF-8", "0xe9", "byte offset 5")
    later = tmp_path / "later.fa"
    later.write_bytes(b">a\nMKV\n>b caf\xe9\nMKV\n")
    rc, _, err = swgpu("makedb", later, tmp_path / "db", "--quiet")
    assert_one_line_error(rc, err, str(later), "record 2 (line 3)", "0xe9")


def test_query_from_a_pipe(tmp_path: Path, swgpu) -> None:
    """``--query /dev/stdin``: the file is opened once, so the check does not eat the records."""
    (tmp_path / "db.fa").write_text(">s1\nMKVLAAGIVGLLLAQ\n>s2\nWWHHKKRRDDEE\n")
    assert swgpu("makedb", tmp_path / "db.fa", tmp_path / "db", "--quiet")[0] == 0
    out = tmp_path / "hits.tsv"
    script = (
        "import sys; from swgpu_core import cli; "
        f"sys.exit(cli.main(['search', '--db', {str(tmp_path / 'db')!r}, '--query', '/dev/stdin', '--backend', 'cpu', '--quiet', '--out', {str(out)!r}]))"
    )
    proc = subprocess.run([sys.executable, "-c", script], input=">q1\nMKVLAAG\n", capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert out.read_text().startswith("q1\ts1\t")


# -- outputs: refused before the search, full disks are one line, nothing half-written -------------
@pytest.mark.parametrize("option", ["--out", "--save-hits"])
@pytest.mark.parametrize("where", ["directory", "under_a_file"])
def test_unwritable_output_refused_before_search(small_db: Path, swgpu, monkeypatch, option: str, where: str) -> None:
    import swgpu_core.api

    monkeypatch.setattr(swgpu_core.api, "search", lambda *a, **k: pytest.fail("searched before checking the output"))
    (small_db.parent / "afile").write_text("x")
    target = small_db.parent if where == "directory" else small_db.parent / "afile" / "hits.tsv"
    rc, _, err = swgpu("search", "--db", small_db, "--query", small_db.parent / "q.fa", "--backend", "cpu", option, target)
    assert_one_line_error(rc, err, str(target), "directory")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_dev_full_is_one_line(small_db: Path, swgpu) -> None:
    rc, _, err = swgpu("search", "--db", small_db, "--query", small_db.parent / "q.fa", "--backend", "cpu", "--quiet", "--out", "/dev/full")
    assert_one_line_error(rc, err, "/dev/full", "No space left on device")


def test_full_disk_leaves_no_temporary(tmp_path: Path) -> None:
    import errno

    from swgpu_core.atomic import atomic_output
    from swgpu_core.errors import InputError

    target = tmp_path / "out.tsv"
    with pytest.raises(InputError, match="out.tsv: cannot write .No space left"), atomic_output(target) as fh:
        fh.write("partial")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    assert list(tmp_path.iterdir()) == []


def test_full_disk_during_makedb(tmp_path: Path, swgpu, monkeypatch) -> None:
    import errno

    import swgpu_core.database as database

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "residues.u8")

    monkeypatch.setattr(database, "_gather", full)
    (tmp_path / "a.fa").write_text(">a\nMKV\n")
    rc, _, err = swgpu("makedb", tmp_path / "a.fa", tmp_path / "db", "--quiet")
    assert_one_line_error(rc, err, str(tmp_path / "db"), "No space left")
    assert leftovers(tmp_path, {"a.fa"}) == []


@pytest.mark.parametrize("message", ["Out of memory allocating 73,048,027,136 bytes\n(allocated so far: 147,253,282,304 bytes).", ""])
def test_out_of_memory_is_one_line(tmp_path: Path, swgpu, monkeypatch, message) -> None:
    """A GPU's (CuPy raises a MemoryError) or the host's exhausted memory: one line, exit 2,
    nothing half-written."""
    import swgpu_core.database as database

    def exhausted(*args, **kwargs):
        raise MemoryError(message)

    monkeypatch.setattr(database, "_gather", exhausted)
    (tmp_path / "a.fa").write_text(">a\nMKV\n")
    rc, _, err = swgpu("makedb", tmp_path / "a.fa", tmp_path / "db", "--quiet")
    assert_one_line_error(
        rc, err, "out of memory: " + ("Out of memory allocating 73,048,027,136 bytes (allocated" if message else "the host's memory")
    )
    assert leftovers(tmp_path, {"a.fa"}) == []


@pytest.mark.parametrize(
    ("args", "fragment"), [(("--gap-open", "2147483647"), "gap costs must be"), (("--gap-extend", "99999"), "gap costs must be")]
)
def test_scoring_bounds(small_db: Path, swgpu, args, fragment) -> None:
    rc, _, err = swgpu(
        "search", "--db", small_db, "--query", small_db.parent / "q.fa", "--backend", "cpu", "--out", small_db.parent / "o", *args
    )
    assert_one_line_error(rc, err, fragment)


def test_makedb_into_current_directory(tmp_path: Path, swgpu, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.fa").write_text(">a\nMKV\n")
    rc, _, err = swgpu("makedb", "a.fa", ".", "--quiet")
    assert_one_line_error(rc, err, "current directory")
    assert leftovers(tmp_path, {"a.fa"}) == []


# -- split-queries never deletes what it did not write -------------------------------------------
def test_split_queries_keeps_foreign_files(tmp_path: Path, swgpu) -> None:
    q = tmp_path / "q.fa"
    q.write_text(">a\nMKV\n>b\nWW\n>c\nKK\n")
    d = tmp_path / "d"
    (d / "sub").mkdir(parents=True)
    (d / "keep.txt").write_text("mine")
    rc, _, err = swgpu("split-queries", q, d, "--batch-size", "2")
    assert_one_line_error(rc, err, str(d), "not an output of split-queries")
    assert (d / "keep.txt").read_text() == "mine" and (d / "sub").is_dir()


def test_split_queries_replaces_its_own_output(tmp_path: Path, swgpu) -> None:
    q = tmp_path / "q.fa"
    q.write_text(">a\nMKV\n>b\nWW\n>c\nKK\n")
    d = tmp_path / "d"
    d.mkdir()  # an empty directory (as a workflow manager makes) is fine
    assert swgpu("split-queries", q, d, "--batch-size", "1")[0] == 0
    assert sorted(p.name for p in d.iterdir()) == [".swgpu-split-queries", "batch-0000.fasta", "batch-0001.fasta", "batch-0002.fasta"]
    assert swgpu("split-queries", q, d, "--batch-size", "2")[0] == 0
    assert sorted(p.name for p in d.glob("batch-*")) == ["batch-0000.fasta", "batch-0001.fasta"]
    (d / "notes.txt").write_text("mine")
    rc, _, err = swgpu("split-queries", q, d, "--batch-size", "2")
    assert_one_line_error(rc, err, "notes.txt")
    assert (d / "notes.txt").exists() and (d / "batch-0001.fasta").exists()
    assert leftovers(tmp_path, {"q.fa", "d"}) == []


def test_split_queries_refuses_current_directory(tmp_path: Path, swgpu, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "q.fa").write_text(">a\nMKV\n")
    for target in (".", ".."):
        rc, _, err = swgpu("split-queries", "q.fa", target)
        assert_one_line_error(rc, err, "current directory")
    assert leftovers(tmp_path, {"q.fa"}) == []


# -- malformed hit lists --------------------------------------------------------------------------
def _npz_edit(src: Path, dst: Path, change) -> None:
    import numpy as np

    with np.load(src) as data:
        arrays = {k: data[k] for k in data.files}
    meta = json.loads(str(arrays["meta"]))
    change(meta, arrays)
    arrays["meta"] = np.array(json.dumps(meta))
    with open(dst, "wb") as fh:
        np.savez(fh, **arrays)


HIT_DAMAGES = {
    "missing_key": (lambda m, a: a.pop("scores"), "no array 'scores'"),
    "subject_beyond_db": (lambda m, a: a["subjects"].__setitem__(0, 999), "subject 999 outside"),
    "negative_subject": (lambda m, a: a["subjects"].__setitem__(0, -1), "outside the database"),
    "reversed_offsets": (lambda m, a: a.__setitem__("hit_offsets", a["hit_offsets"][::-1].copy()), "'hit_offsets'"),
    "chunk_99_of_4": (lambda m, a: m.__setitem__("chunks", [99]), "chunk 99 of"),
    "top_string": (lambda m, a: m.__setitem__("top", "50"), "'top'"),
    "no_database_meta": (lambda m, a: m.pop("database"), "'database'"),
    "scores_short": (lambda m, a: a.__setitem__("scores", a["scores"][:-1]), "scores for"),
    "query_code": (lambda m, a: a["query_codes"].__setitem__(0, 250), "query residue code 250"),
}


@pytest.mark.parametrize("how", sorted(HIT_DAMAGES))
def test_malformed_hit_lists_refused(small_db: Path, swgpu, how: str) -> None:
    good = small_db.parent / "good.npz"
    assert (
        swgpu("search", "--db", small_db, "--query", small_db.parent / "q.fa", "--backend", "cpu", "--quiet", "--save-hits", good)[0] == 0
    )
    change, fragment = HIT_DAMAGES[how]
    bad = small_db.parent / f"{how}.npz"
    _npz_edit(good, bad, change)
    rc, _, err = swgpu("merge", bad, "--db", small_db, "--out", small_db.parent / "m.tsv")
    assert_one_line_error(rc, err, str(bad), fragment)
    assert not (small_db.parent / "m.tsv").exists()


# -- a read-only install with an unwritable HOME ---------------------------------------------------
def test_numba_cache_falls_back_to_temp(tmp_path: Path) -> None:
    from swgpu_core._numba_cache import configure

    env = {"HOME": "/dev/null/nohome"}  # cannot be created, not even by root
    ro = tmp_path / "pkg"
    ro.mkdir()
    if os.geteuid() == 0:
        # root may write anywhere: the package-directory check cannot fail, so point it at a file
        ro = tmp_path / "pkg-file"
        ro.write_text("")
        ro = ro / "sub"
    else:
        ro.chmod(0o555)
    chosen = configure(ro, env)
    assert chosen and env["NUMBA_CACHE_DIR"] == chosen and os.access(chosen, os.W_OK)
    assert configure(ro, {"NUMBA_CACHE_DIR": "/mine"}) is None  # the user's choice is kept


# -- align-long: the default --max-alignment-length follows from the query and the scoring ---------
def test_max_alignment_span_bounds_every_optimal_alignment() -> None:
    """Against Biopython's local alignments (an independent reference): no optimal alignment's
    target span exceeds the bound, and the bound is reached by the alignment it was derived from."""
    import numpy as np
    from Bio.Align import PairwiseAligner

    from swgpu_core.long.sections import max_alignment_span
    from swgpu_core.scoring import Scoring

    rng = np.random.default_rng(17)
    for match, mismatch, gap_open, gap_extend in ((5, -3, 8, 1), (2, -1, 0, 1), (1, -4, 2, 2)):
        scoring = Scoring.nucleotide(match, mismatch, gap_open, gap_extend)
        aligner = PairwiseAligner(mode="local", match_score=match, mismatch_score=mismatch)
        aligner.open_gap_score, aligner.extend_gap_score = -(gap_open + gap_extend), -gap_extend
        for _ in range(40):
            m, n = int(rng.integers(2, 14)), int(rng.integers(2, 80))
            q = "".join(rng.choice(list("ACGT"), m))
            t = "".join(rng.choice(list("ACGT"), n))
            if aligner.score(q, t) <= 0:
                continue
            for aln in list(aligner.align(q, t))[:20]:
                (t_lo, t_hi), (q_lo, q_hi) = aln.coordinates[1][[0, -1]], aln.coordinates[0][[0, -1]]
                assert t_hi - t_lo <= max_alignment_span(m, scoring) and q_hi - q_lo <= m
        # tight: all m residues matched, one gap of i target residues, score open + i*extend below m*match
        m = 10
        i = max_alignment_span(m, scoring) - m
        assert m * match - gap_open - i * gap_extend >= 1 > m * match - gap_open - (i + 1) * gap_extend


def test_align_long_default_overlap_is_the_derived_bound(tmp_path: Path, swgpu) -> None:
    import numpy as np

    from swgpu_core.long.sections import max_alignment_span
    from swgpu_core.scoring import Scoring

    rng = np.random.default_rng(2)
    q = "".join(rng.choice(list("ACGT"), 300))
    t = "".join(rng.choice(list("ACGT"), 2000))
    (tmp_path / "q.fa").write_text(f">q\n{q}\n")
    (tmp_path / "t.fa").write_text(f">t\n{t[:900]}{q}{t[900:]}\n")
    ends = tmp_path / "s.npz"
    rc, _, err = swgpu(
        "align-long", "--query", tmp_path / "q.fa", "--target", tmp_path / "t.fa", "--backend", "cpu", "--save-ends", ends, "--quiet"
    )
    assert rc == 0, err
    with np.load(ends) as data:
        overlap = int(data["overlap"])
    assert overlap == max_alignment_span(300, Scoring.nucleotide()) == 300 + (300 * 5 - 1 - 8)
    rc, out, err = swgpu(
        "align-long", "--query", tmp_path / "q.fa", "--target", tmp_path / "t.fa", "--backend", "cpu", "--quiet", "--top", "1"
    )
    assert rc == 0, err
    assert out.split()[7:11] == ["1", "300", "901", "1200"]


@pytest.mark.gpu
def test_align_long_default_succeeds_for_a_20kb_query(tmp_path: Path, swgpu) -> None:
    """The audit's case: 20 kb against 391 kb, one section. With the old fixed default
    (10,000) the traceback stopped with "raise it"; on CPU the run takes ~6 min, so GPU only."""
    sys.path.insert(0, str(Path(__file__).parent))
    from long_data import fasta, planted

    q, t, copy = planted(391_000, 20_005, 300_000)
    qf, tf = fasta(tmp_path / "q.fa", "q", q), fasta(tmp_path / "t.fa", "t", t)
    rc, out, err = swgpu("align-long", "--query", qf, "--target", tf, "--backend", "cuda", "--top", "3", "--quiet")
    assert rc == 0, err
    qstart, qend, sstart, send = map(int, out.splitlines()[0].split()[7:11])
    assert qend - qstart > 19_900 and abs(sstart - (300_001 + qstart - 1)) < 50 and send > 300_000 + copy.size - 100, out.splitlines()[0]


def test_sam_to_a_pipe_is_written_not_replaced(small_db: Path, swgpu) -> None:
    """A rename over a special file would put a regular file in its place (as root: /dev/full)."""
    import stat
    import threading

    hits = small_db.parent / "h.npz"
    assert (
        swgpu("search", "--db", small_db, "--query", small_db.parent / "q.fa", "--backend", "cpu", "--quiet", "--save-hits", hits)[0] == 0
    )
    fifo = small_db.parent / "pipe.sam"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(Path(fifo).read_bytes()), daemon=True)
    reader.start()
    rc, _, err = swgpu("align", "--hits", hits, "--db", small_db, "--out", fifo, "--format", "sam", "--quiet")
    reader.join(30)
    assert rc == 0, err
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and got and got[0].startswith(b"@HD")
    rc, _, err = swgpu("align", "--hits", hits, "--db", small_db, "--out", fifo, "--format", "bam", "--quiet")
    assert_one_line_error(rc, err, str(fifo), "regular file")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
