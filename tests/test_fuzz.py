"""Random damage (truncations, byte flips) of a FASTA, a gzip/bgzip file and a built database.

Every outcome must be a clean :class:`~swgpu_core.errors.SwgpuError` (exit 2 through the
CLI, one line) or a result identical to the undamaged input's; never a traceback and never
a silently different answer. Seeded and bounded so that it runs in well under a minute on
two cores; the seed and the damage are in every assertion message, so a failure replays.
"""

from __future__ import annotations

import gzip
import itertools
import random
import shutil
from pathlib import Path

import pytest

from swgpu_core import cli
from swgpu_core.database import build_database
from swgpu_core.errors import SwgpuError
from swgpu_core.fasta import read_fasta

RESOURCES = Path(__file__).resolve().parent.parent / "resources"
SEED = 20261123
N_FASTA, N_GZIP, N_DB = 40, 40, 60


@pytest.fixture(scope="module")
def fasta_text() -> bytes:
    """The first 60 records of the bundled database as plain FASTA, 60 residues a line."""
    out = []
    for rec in itertools.islice(read_fasta(RESOURCES / "db.fasta.gz"), 60):
        lines = [rec.sequence[i : i + 60] for i in range(0, len(rec.sequence), 60)]
        out.append(f">{rec.id} {rec.description}\n" + "\n".join(lines) + "\n")
    return "".join(out).encode()


def _records(path: Path) -> list[tuple[str, str, str]] | SwgpuError:
    try:
        return [(r.id, r.description, r.sequence) for r in read_fasta(path)]
    except SwgpuError as exc:
        assert "\n" not in str(exc), str(exc)
        return exc


def _truncate(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    cut = rng.randrange(0, len(data))
    return f"truncated at {cut}", data[:cut]


def _flip(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    blob = bytearray(data)
    where = sorted(rng.randrange(len(data)) for _ in range(rng.randint(1, 3)))
    for at in where:
        blob[at] ^= rng.randrange(1, 256)
    return f"bytes flipped at {where}", bytes(blob)


def _damages(data: bytes, rng: random.Random, count: int) -> list[tuple[str, bytes]]:
    """``count`` damaged copies: half truncations, half flips of 1-3 bytes."""
    return [(_truncate if k % 2 == 0 else _flip)(data, rng) for k in range(count)]


def test_fuzz_fasta(tmp_path: Path, fasta_text: bytes, capsys) -> None:
    """Plain FASTA: any damage gives records or a one-line error; makedb never tracebacks."""
    rng = random.Random(SEED)
    for n, (what, blob) in enumerate(_damages(fasta_text, rng, N_FASTA)):
        path = tmp_path / f"f{n}.fa"
        path.write_bytes(blob)
        _records(path)  # either way, no other exception
        rc = cli.main(["makedb", str(path), str(tmp_path / f"db{n}"), "--quiet"])
        err = capsys.readouterr().err
        assert rc in (0, 2), f"{what}: rc {rc}"
        if rc == 2:
            assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, f"{what}: {err}"
            assert not (tmp_path / f"db{n}").exists(), f"{what}: a database was left"
        shutil.rmtree(tmp_path / f"db{n}", ignore_errors=True)


@pytest.mark.parametrize("kind", ["gzip", "bgzip"])
def test_fuzz_compressed(tmp_path: Path, fasta_text: bytes, kind: str) -> None:
    """gzip/bgzip: every truncation is refused; a flip is refused or changes nothing."""
    if kind == "gzip":
        blob = gzip.compress(fasta_text, mtime=0)
    else:
        import pysam

        (tmp_path / "plain.fa").write_text(fasta_text.decode())
        pysam.tabix_compress(str(tmp_path / "plain.fa"), str(tmp_path / "x.fa.gz"), force=True)
        blob = (tmp_path / "x.fa.gz").read_bytes()
    (tmp_path / "good.fa.gz").write_bytes(blob)
    good = _records(tmp_path / "good.fa.gz")
    assert isinstance(good, list) and len(good) == 60
    rng = random.Random(SEED + (kind == "bgzip"))
    for n, (what, damaged) in enumerate(_damages(blob, rng, N_GZIP)):
        path = tmp_path / f"d{n}.fa.gz"
        path.write_bytes(damaged)
        got = _records(path)
        if what.startswith("truncated") and len(damaged) >= 2:
            assert isinstance(got, SwgpuError), f"{kind} {what}: accepted as complete ({len(got)} records)"
        else:
            assert isinstance(got, SwgpuError) or got == good, f"{kind} {what}: silently different records"


def _search(db: Path, query: Path, out: Path, capsys) -> tuple[int, str, str]:
    """Every query against every subject, with scores and whole titles: any change of a residue
    (it changes at least the subject's self-hit score) or of a header shows in the table."""
    rc = cli.main(
        ["search", "--db", str(db), "--query", str(query), "--backend", "cpu", "--threads", "1", "--quiet", "--top", "60", "--evalue", "1e300",
         "--outfmt", "6 qseqid sseqid score qstart qend sstart send stitle", "--out", str(out)]
    )  # fmt: skip
    err = capsys.readouterr().err
    return rc, (out.read_text() if rc == 0 else ""), err


def test_fuzz_database(tmp_path: Path, fasta_text: bytes, capsys) -> None:
    """A built database: damage any file; search refuses (one line, exit 2) or answers exactly as before."""
    (tmp_path / "db.fa").write_bytes(fasta_text)
    pristine = tmp_path / "pristine"
    build_database(tmp_path / "db.fa", pristine, chunk_residues=4000, show_progress=False)
    rc, baseline, err = _search(pristine, tmp_path / "db.fa", tmp_path / "base.tsv", capsys)
    assert rc == 0 and baseline.count("\n") == 60 * 60, err

    files = sorted(p.name for p in pristine.iterdir())
    rng = random.Random(SEED + 2)
    outcomes = {"refused": 0, "same": 0}
    for n in range(N_DB):
        name = rng.choice(files)
        db = tmp_path / f"db{n}"
        shutil.copytree(pristine, db)
        data = (db / name).read_bytes()
        what, damaged = (_flip if n % 2 else _truncate)(data, rng)
        (db / name).write_bytes(damaged)
        rc, result, err = _search(db, tmp_path / "db.fa", tmp_path / f"o{n}.tsv", capsys)
        label = f"{name} {what}"
        assert rc in (0, 2), f"{label}: rc {rc}"
        if rc == 2:
            assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, f"{label}: {err}"
            outcomes["refused"] += 1
        else:
            assert result == baseline, f"{label}: silently different result"
            outcomes["same"] += 1
        shutil.rmtree(db)
    assert outcomes["refused"] > N_DB // 2, outcomes  # most damage matters, and is found
