"""The CLI end to end: makedb -> dbstats -> search -> output formats; chunked search + merge."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from Bio import SearchIO

from swgpu_core.database import Database
from swgpu_core.dbstats import default_threshold
from swgpu_core.hitlist import load_hits
from swgpu_core.outfmt import STANDARD_FIELDS


@pytest.fixture(scope="module")
def cli_db(tmp_path_factory: pytest.TempPathFactory, resources: Path) -> Path:
    """The bundled database built through the CLI (a module-scoped capsys is not available)."""
    from swgpu_core import cli

    path = tmp_path_factory.mktemp("cli") / "db"
    assert cli.main(["makedb", str(resources / "db.fasta.gz"), str(path), "--chunk-residues", "300000", "--quiet"]) == 0
    return path


def test_makedb_and_dbstats(cli_db: Path, swgpu, tmp_path: Path) -> None:
    db = Database(cli_db)
    assert db.n_sequences == 3000 and len(db.chunks) == 5
    rc, out, err = swgpu("dbstats", cli_db, "--png", tmp_path / "h.png", "--tsv", tmp_path / "h.tsv")
    assert rc == 0, err
    threshold = default_threshold(db)  # the planner's
    assert "sequences:       3,000" in out and f"long threshold:  {threshold:,}" in out
    n_long = int((np.asarray(db.lengths) > threshold).sum())
    assert n_long >= 1 and f"long sequences:  {n_long} " in out
    assert (tmp_path / "h.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = [line.split("\t") for line in (tmp_path / "h.tsv").read_text().splitlines()[2:]]
    assert sum(int(r[2]) for r in rows) == 3000 and sum(int(r[3]) for r in rows) == db.n_residues
    assert sum(int(r[4]) for r in rows) == n_long

    rc, out, err = swgpu("dbstats", cli_db, "--threshold", "1000", "--png", tmp_path / "h.png", "--tsv", tmp_path / "h.tsv")
    assert f"long sequences:  {int((np.asarray(db.lengths) > 1000).sum())} " in out


def test_search_default_output(cli_db: Path, swgpu, resources: Path) -> None:
    rc, out, err = swgpu("search", "--db", cli_db, "--query", resources / "queries.fasta", "--backend", "cpu", "--top", "15")
    assert rc == 0, err
    rows = [line.split("\t") for line in out.splitlines()]
    assert all(len(r) == 12 for r in rows)  # BLAST's standard columns
    assert 0 < len(rows) < 75 and all(float(r[10]) <= 10 for r in rows)  # BLAST's default cutoff E <= 10
    rc, out, err = swgpu(
        "search", "--db", cli_db, "--query", resources / "queries.fasta", "--backend", "cpu", "--top", "15", "--evalue", "1e6"
    )
    every = [line.split("\t") for line in out.splitlines()]
    cut = [r for r in every if r not in rows]  # E printed "10" may be just above the cutoff
    assert len(every) == 75 and [r for r in every if r in rows] == rows and cut and all(float(r[10]) >= 10 for r in cut)
    first = rows[0]
    assert first[0] == "tr|V5R462|V5R462_9CAUD" and first[6:8] == ["1", "49"]
    for qid in {r[0] for r in rows}:
        scores = [float(r[11]) for r in rows if r[0] == qid]
        assert scores == sorted(scores, reverse=True)
    assert "GCUPS on cpu" in err


@pytest.mark.parametrize(("extra", "order"), [((), [0, 1, 2, 3, 4]), (("--mode", "fast", "--chunks", "1,3"), [3, 1])])
def test_search_checks_its_database_before_it_waits_for_the_gpu(cli_db: Path, swgpu, resources: Path, monkeypatch, extra, order) -> None:
    """The command starts the background check of its residues as soon as it has opened the
    database, before it asks for the GPU (whose start it would otherwise overlap on a
    several-GPU machine), in the order the scan takes the chunks, and the search it then runs
    starts no second one."""
    from swgpu_core import engine

    events: list = []
    threads: set = set()
    ahead = Database.verify_ahead

    def verify_ahead(self, chunks=None):
        events.append(list(chunks))
        threads.add(ahead(self, chunks))
        return next(iter(threads))

    monkeypatch.setattr(Database, "verify_ahead", verify_ahead)
    get = engine.get_engine
    monkeypatch.setattr(engine, "get_engine", lambda *a, **k: (events.append("engine"), get(*a, **k))[1])
    rc, _, err = swgpu("search", "--db", cli_db, "--query", resources / "queries.fasta", "--backend", "cpu", "--top", "3", *extra)
    assert rc == 0, err
    assert events[:2] == [order, "engine"] and events.count(order) == 2  # the search asks again ...
    assert len(threads) == 1  # ... and gets the same thread: one check per Database


def test_search_outfmt_7_and_fields(cli_db: Path, swgpu, resources: Path, tmp_path: Path) -> None:
    out = tmp_path / "sub" / "hits.tsv"
    rc, _, err = swgpu(
        "search", "--db", cli_db, "--query", resources / "queries.fasta", "--backend", "cpu", "--top", "2", "--quiet",
        "--out", out, "--outfmt", "7 qacc sacc saccver score slen stitle rank",
    )  # fmt: skip
    assert rc == 0, err
    text = out.read_text()
    assert text.count("# Query: ") == 5 and text.count("# 2 hits found") == 5
    assert "# Fields: query acc., subject acc., subject acc.ver, score, subject length, subject title, rank" in text
    rows = [line.split("\t") for line in text.splitlines() if not line.startswith("#")]
    # as blastp 2.12 writes them: query ids unparsed, subject accessions, stitle without the id
    assert len(rows) == 10 and rows[0][0] == "tr|V5R462|V5R462_9CAUD" and rows[0][6] == "1"
    assert rows[0][1] == rows[0][2] == "G8IC53" and rows[0][5].startswith("Gp66 OS=Mycobacterium phage Jeffabunny")
    assert text.startswith("# BLASTP swgpu-") and text.endswith("# BLAST processed 5 queries\n")


def test_one_search_writes_tables_of_different_fields(cli_db: Path, swgpu, resources: Path, tmp_path: Path) -> None:
    """--outfmt once per table, in the order of --out: a score table and an alignment table from
    one run, each what a run writing it alone gives; a count that pairs with no table is refused."""
    common = ("search", "--db", cli_db, "--query", resources / "queries.fasta", "--backend", "cpu", "--top", "3", "--quiet")
    scores, aligned = "7 qseqid sseqid score evalue", "6 qseqid sseqid pident qstart qend"
    out = {name: tmp_path / f"{name}.tsv" for name in ("scores", "aligned", "alone_scores", "alone_aligned")}
    rc, _, err = swgpu(*common, "--out", out["scores"], tmp_path / "hits.jsonl", out["aligned"], "--outfmt", scores, "--outfmt", aligned)
    assert rc == 0, err
    assert swgpu(*common, "--out", out["alone_scores"], "--outfmt", scores)[0] == 0
    assert swgpu(*common, "--out", out["alone_aligned"], "--outfmt", aligned)[0] == 0
    assert out["scores"].read_text() == out["alone_scores"].read_text()
    assert out["aligned"].read_text() == out["alone_aligned"].read_text()
    rc, _, err = swgpu(*common, "--out", out["scores"], "--outfmt", scores, "--outfmt", aligned)
    assert rc == 2 and "--outfmt is given 2 times for 1 table(s)" in err and err.count("\n") == 1


def test_chunked_search_and_merge_equal_full_search(cli_db: Path, swgpu, resources: Path, tmp_path: Path) -> None:
    common = ("--db", cli_db, "--query", resources / "queries.fasta", "--backend", "cpu", "--top", "20", "--quiet")
    fmt = ("--outfmt", "6 qseqid sseqid score qlen slen")
    assert swgpu("search", *common, *fmt, "--out", tmp_path / "full.tsv")[0] == 0
    for part, chunks in enumerate(["0,3", "1-2", "4"]):
        rc, out, err = swgpu("search", *common, "--chunks", chunks, "--save-hits", tmp_path / f"part{part}.npz")
        assert rc == 0 and out == "", err  # with --save-hits and no --out, no table
    parts = [tmp_path / f"part{i}.npz" for i in range(3)]
    assert load_hits(parts[1]).chunks == [1, 2]
    rc, _, err = swgpu("merge", *parts, "--db", cli_db, *fmt, "--out", tmp_path / "merged.tsv")
    assert rc == 0, err
    full = (tmp_path / "full.tsv").read_text()
    assert (tmp_path / "merged.tsv").read_text() == full
    rc, out, err = swgpu("merge", *reversed(parts), "--top", "5", *fmt)  # database path from the hit lists
    assert rc == 0, err
    by_query: dict[str, list[str]] = {}
    for line in full.splitlines():
        by_query.setdefault(line.split("\t")[0], []).append(line)
    assert out.splitlines() == [line for lines in by_query.values() for line in lines[:5]]


def test_merge_refuses_mismatched_lists(cli_db: Path, swgpu, resources: Path, tmp_path: Path) -> None:
    common = ("--db", cli_db, "--query", resources / "queries.fasta", "--backend", "cpu", "--top", "5", "--quiet")
    a, b, c = tmp_path / "a.npz", tmp_path / "b.npz", tmp_path / "c.npz"
    assert swgpu("search", *common, "--chunks", "0-1", "--save-hits", a)[0] == 0
    assert swgpu("search", *common, "--chunks", "1-4", "--save-hits", b)[0] == 0
    assert (
        swgpu("search", *common, "--chunks", "2-4", "--matrix", "BLOSUM45", "--gap-open", "14", "--gap-extend", "2", "--save-hits", c)[0]
        == 0
    )

    def error(*args: str | Path) -> str:
        rc, out, err = swgpu("merge", *args)
        assert rc == 2 and len(err.strip().splitlines()) == 1 and not out, err
        return err

    assert f"chunk 1 was also searched in {a}" in error(a, b, "--db", cli_db)
    assert "BLOSUM45 gap 14/2 differs" in error(a, c, "--db", cli_db)
    assert "missing chunks 2,3,4 (pass --partial" in error(a, "--db", cli_db)
    assert "exceeds the 5 hits" in error(a, "--db", cli_db, "--partial", "--top", "6")
    rc, out, _ = swgpu("merge", a, "--db", cli_db, "--partial", "--evalue", "1e6")
    assert rc == 0 and len(out.splitlines()) == 25

    other = tmp_path / "other"
    (tmp_path / "o.fa").write_text(">x\nMKV\n")
    assert swgpu("makedb", tmp_path / "o.fa", other, "--quiet")[0] == 0
    assert "not " + str(other) in error(a, "--db", other, "--partial")
    (tmp_path / "junk.npz").write_bytes(b"PK junk")
    assert "not a readable swgpu hit list" in error(tmp_path / "junk.npz", "--db", cli_db)
    meta = dict(np.load(a))
    meta["meta"] = np.array(json.dumps({**json.loads(str(meta["meta"])), "format_version": 9}))
    np.savez(tmp_path / "v9.npz", **meta)
    assert "hit list format version 9" in error(tmp_path / "v9.npz", "--db", cli_db)


@pytest.mark.gpu
def test_gpu_chunked_search_and_merge_equal_cpu_search(cli_db: Path, swgpu, resources: Path, tmp_path: Path) -> None:
    """Hit lists saved by the CUDA backend merge into exactly the CPU backend's table."""
    common = ("--db", cli_db, "--query", resources / "queries.fasta", "--top", "20", "--quiet")
    fmt = ("--outfmt", "6 qseqid sseqid score qlen slen")
    assert swgpu("search", *common, *fmt, "--backend", "cpu", "--out", tmp_path / "cpu.tsv")[0] == 0
    for name, chunks in (("a", "0-2"), ("b", "3,4")):
        rc, _, err = swgpu("search", *common, "--backend", "cuda", "--chunks", chunks, "--save-hits", tmp_path / f"{name}.npz")
        assert rc == 0, err
    assert load_hits(tmp_path / "a.npz").meta["backend"] == "cuda"
    rc, _, err = swgpu("merge", tmp_path / "a.npz", tmp_path / "b.npz", *fmt, "--out", tmp_path / "gpu.tsv")
    assert rc == 0, err
    assert (tmp_path / "gpu.tsv").read_text() == (tmp_path / "cpu.tsv").read_text()


#: A scoring system BLAST has no parameters for (BLOSUM62 9/2, say, is in BLAST's table): auto fits.
UNTABULATED = ("--matrix", "BLOSUM62", "--gap-open", "12", "--gap-extend", "2")


def test_untabulated_scoring_has_no_blast_parameters() -> None:
    from swgpu_core.scoring import Scoring
    from swgpu_core.stats import blast_parameters

    assert blast_parameters(Scoring.protein("BLOSUM62", 12, 2)) is None
    assert blast_parameters(Scoring.protein("BLOSUM62", 9, 2)) is not None and blast_parameters(Scoring.protein()) is not None


@pytest.mark.parametrize("stats", [("--stats", "fit"), UNTABULATED], ids=["fit", "untabulated"])
def test_chunked_fit_equals_one_search(cli_db: Path, swgpu, resources: Path, tmp_path: Path, stats: tuple[str, ...]) -> None:
    """Fitted E-values of hit lists merged (merge, align) from the histograms summed over chunks: exactly one search's table."""
    common = ("--db", cli_db, "--query", resources / "queries.fasta", "--backend", "cpu", "--top", "20", "--quiet", *stats)
    fmt = ("--outfmt", "6 std score")
    rc, _, err = swgpu("search", *common, *fmt, "--out", tmp_path / "full.tsv")
    assert rc == 0, err
    for part, chunks in enumerate(["0,3", "1-2", "4"]):
        assert swgpu("search", *common, "--chunks", chunks, "--save-hits", tmp_path / f"part{part}.npz")[0] == 0
    parts = [tmp_path / f"part{i}.npz" for i in range(3)]
    flags = ("--stats", "fit") if stats[0] == "--stats" else ()
    rc, _, err = swgpu("merge", *parts, "--db", cli_db, *fmt, *flags, "--out", tmp_path / "merged.tsv")
    assert rc == 0, err
    rc, _, err = swgpu(
        "align", "--db", cli_db, "--hits", *reversed(parts), *fmt, *flags, "--backend", "cpu", "--quiet", "--out", tmp_path / "aligned.tsv"
    )
    assert rc == 0, err
    full = (tmp_path / "full.tsv").read_text()
    assert (tmp_path / "merged.tsv").read_text() == full and (tmp_path / "aligned.tsv").read_text() == full
    rows = [line.split("\t") for line in full.splitlines()]
    assert rows and "*" not in full and all(float(r[10]) <= 10 and float(r[11]) > 0 for r in rows)
    qresults = list(SearchIO.parse(str(tmp_path / "full.tsv"), "blast-tab", fields=[*STANDARD_FIELDS, "score"]))
    assert sum(len(q) for q in qresults) > 5 and all(hsp.evalue <= 10 for q in qresults for hit in q for hsp in hit.hsps)
    if stats[0] == "--stats":  # the fit is used, not BLAST's parameters: other E-values for the same hits
        rc, blast, _ = swgpu("search", *common[:-2], "--stats", "blast", "--evalue", "1e6", *fmt)
        e_blast = {(r[0], r[1]): r[10] for r in (line.split("\t") for line in blast.splitlines())}
        assert sum(e_blast[r[0], r[1]] != r[10] for r in rows) > len(rows) / 2
    rc, _, err = swgpu("merge", *parts[:2], "--db", cli_db, "--partial", *fmt, *flags)  # chunk 4 missing: no fit
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "of the database's 3,000 subjects" in err, err


def test_statistics_options_fail_before_the_scan(cli_db: Path, swgpu, resources: Path) -> None:
    common = ("--db", cli_db, "--query", resources / "queries.fasta", "--backend", "cpu", "--quiet")

    def error(*args: str) -> str:
        rc, out, err = swgpu("search", *common, *args)
        assert rc == 2 and not out and len(err.strip().splitlines()) == 1, err
        assert "GCUPS" not in err
        return err

    assert "--stats blast: no BLAST parameters" in error(*UNTABULATED, "--stats", "blast")
    assert "a search of some chunks" in error("--stats", "fit", "--chunks", "0")  # a fit needs every chunk's scores
    assert "a search of some chunks" in error(*UNTABULATED, "--chunks", "0-3")
    assert "go together" in error("--kappa", "0.1")
    rc, out, err = swgpu("search", *common, *UNTABULATED, "--chunks", "0", "--outfmt", "6 qseqid sseqid score")  # no E-value column
    assert rc == 0 and out, err


@pytest.mark.gpu
def test_gpu_fitted_evalues_equal_cpu(cli_db: Path, swgpu, resources: Path, tmp_path: Path) -> None:
    """Histograms counted on the GPU fit exactly as the CPU's: the same fitted table, whole or chunked and merged."""
    common = ("--db", cli_db, "--query", resources / "queries.fasta", "--top", "20", "--quiet", *UNTABULATED, "--outfmt", "6 std score")
    assert swgpu("search", *common, "--backend", "cpu", "--out", tmp_path / "cpu.tsv")[0] == 0
    assert swgpu("search", *common, "--backend", "cuda", "--out", tmp_path / "gpu.tsv")[0] == 0
    for name, chunks in (("a", "0-2"), ("b", "3,4")):
        rc, _, err = swgpu("search", *common[:-2], "--backend", "cuda", "--chunks", chunks, "--save-hits", tmp_path / f"{name}.npz")
        assert rc == 0, err
    rc, _, err = swgpu("merge", tmp_path / "a.npz", tmp_path / "b.npz", "--outfmt", "6 std score", "--out", tmp_path / "merged.tsv")
    assert rc == 0, err
    cpu = (tmp_path / "cpu.tsv").read_text()
    assert cpu and "*" not in cpu and (tmp_path / "gpu.tsv").read_text() == cpu and (tmp_path / "merged.tsv").read_text() == cpu


def test_the_executable_ends_at_once_with_everything_written(cli_db: Path, resources: Path, swgpu, tmp_path: Path) -> None:
    """``python -m swgpu_core`` (as the ``swgpu`` script, :func:`swgpu_core.cli.console`) skips
    Python's teardown: its piped output and its files must still be whole, its exit codes main's."""
    import subprocess
    import sys

    args = ["search", "--db", str(cli_db), "--query", str(resources / "queries.fasta"), "--backend", "cpu", "--top", "5", "--quiet"]
    rc, expected, _ = swgpu(*args)
    assert rc == 0 and expected.count("\n") > 10
    root = str(Path(__file__).resolve().parent.parent)
    run = subprocess.run([sys.executable, "-m", "swgpu_core", *args], capture_output=True, text=True, cwd=root, check=False)
    assert run.returncode == 0 and run.stdout == expected
    out = tmp_path / "hits.tsv"
    run = subprocess.run(
        [sys.executable, "-m", "swgpu_core", *args, "--out", str(out)], capture_output=True, text=True, cwd=root, check=False
    )
    assert run.returncode == 0 and out.read_text() == expected
    run = subprocess.run([sys.executable, "-m", "swgpu_core", "search", "--db", str(tmp_path / "none"), "--query", str(resources / "queries.fasta")],
                         capture_output=True, text=True, cwd=root, check=False)  # fmt: skip
    assert run.returncode == 2 and run.stderr.startswith("swgpu search: error:") and run.stderr.count("\n") == 1
    prof = tmp_path / "search.prof"  # a profiler's results are written at exit: there, the normal exit
    run = subprocess.run(
        [sys.executable, "-m", "cProfile", "-o", str(prof), "-m", "swgpu_core", *args],
        capture_output=True,
        text=True,
        cwd=root,
        check=False,
    )
    assert run.returncode == 0 and run.stdout == expected and prof.stat().st_size > 0


def test_gpu_commands_let_go_of_their_gpus_before_writing_only_where_the_process_ends(
    cli_db: Path, resources: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``swgpu`` (process_ends) has each GPU command release its GPUs after its last GPU work
    and before its first output is written, holding the search's engine; a ``main`` that the
    process outlives (a caller's, these tests'), or ``--backend cpu``, releases nothing."""
    from swgpu_core import cli, cuda_driver
    from swgpu_core.engine import CpuEngine

    calls: list[tuple[object, bool]] = []
    out = tmp_path / "hits.tsv"
    monkeypatch.setattr(cuda_driver, "release", lambda keep=None: calls.append((keep, out.exists())))
    search = ["search", "--db", str(cli_db), "--query", str(resources / "queries.fasta"), "--top", "3", "--quiet", "--out", str(out)]
    assert cli.main([*search, "--backend", "auto"], process_ends=True) == 0
    assert len(calls) == 1 and isinstance(calls[0][0], CpuEngine) and calls[0][1] is False  # before the output existed
    assert cli.main([*search, "--backend", "auto"]) == 0 and cli.main([*search, "--backend", "cpu"], process_ends=True) == 0
    assert len(calls) == 1
    pairs = tmp_path / "pairs.tsv"
    queries = str(resources / "queries.fasta")
    assert cli.main(["pairs", "--query", queries, "--subject", queries, "--out", str(pairs), "--quiet"], process_ends=True) == 0
    assert len(calls) == 2 and pairs.exists()


@pytest.mark.parametrize("why", ["no device file open", "no interpreter to start"])
def test_release_without_a_keeper_resets_only_the_active_contexts_and_stops_collection(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, why: str
) -> None:
    """:func:`swgpu_core.cuda_driver.release` (through a stand-in driver) where no keeper takes the
    GPU device files (none is open, or no keeper can be started: then no descriptor is left
    open by the attempt): of three devices, the two with an active primary context are reset,
    in a thread :func:`wait_released` joins; what it keeps is held; the garbage collector is
    off; a second call does nothing."""
    import gc
    import os
    import sys

    from swgpu_core import collector, cuda_driver

    active = {0: True, 1: False, 2: True}
    reset: list[int] = []

    def value(ref):  # the ctypes object behind byref()
        return ref._obj

    class Driver:
        def cuDeviceGetCount(self, count):
            value(count).value = len(active)
            return 0

        def cuDeviceGet(self, device, ordinal):
            value(device).value = ordinal
            return 0

        def cuDevicePrimaryCtxGetState(self, device, flags, state):
            value(state).value = int(active[device.value])
            return 0

        def cuDevicePrimaryCtxReset_v2(self, device):
            reset.append(device.value)
            return 0

    monkeypatch.setattr(cuda_driver, "_driver", Driver)
    monkeypatch.setattr(cuda_driver, "_RELEASING", [])
    monkeypatch.setattr(cuda_driver, "_KEEPERS", [])
    monkeypatch.setattr(cuda_driver, "_KEPT", [])
    monkeypatch.setattr(collector, "_OFF", False)  # off for good in this test only
    monkeypatch.setattr(cuda_driver, "DEVICE_FILES", str(tmp_path / "nvidia"))
    device = os.open(tmp_path / "nvidiactl", os.O_RDWR | os.O_CREAT) if why == "no interpreter to start" else None
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-python"))
    kept = object()
    assert gc.isenabled()
    try:
        before = sorted(os.listdir("/proc/self/fd"))
        cuda_driver.release(kept)
        cuda_driver.wait_released()
        assert reset == [0, 2] and [kept] == cuda_driver._KEPT and not gc.isenabled() and not cuda_driver._KEEPERS
        assert sorted(os.listdir("/proc/self/fd")) == before
        cuda_driver.release(object())
        cuda_driver.wait_released()
        assert reset == [0, 2] and [kept] == cuda_driver._KEPT
    finally:
        gc.enable()
        if device is not None:
            os.close(device)


#: a process that opens stand-ins of GPU device files (names starting with argv[1]) and an output
#: file, releases its GPUs through a stand-in driver, prints what its keeper holds, and ends
_HANDING_OVER = r"""
import gc, json, os, sys
from swgpu_core import cuda_driver

cuda_driver.DEVICE_FILES = sys.argv[1]
cuda_driver._driver = lambda: object()
devices = [os.open(sys.argv[1] + name, os.O_RDWR | os.O_CREAT) for name in ("ctl", "0", "-uvm")]
output = open(sys.argv[2], "w")
cuda_driver.release()
cuda_driver.release()
cuda_driver.wait_released()
(keeper, _), = cuda_driver._KEEPERS
held = {int(fd): os.readlink(f"/proc/{keeper.pid}/fd/{fd}") for fd in os.listdir(f"/proc/{keeper.pid}/fd")}
mine = {fd: os.readlink(f"/proc/self/fd/{fd}") for fd in devices}
print(json.dumps({"keeper": keeper.pid, "held": held, "devices": mine, "collecting": gc.isenabled()}), flush=True)
os._exit(0)
"""


def test_release_hands_the_device_files_to_a_keeper_that_ends_with_the_process(tmp_path: Path) -> None:
    """:func:`swgpu_core.cuda_driver.release` in a process that ends with ``os._exit``: one keeper
    holds exactly the process's GPU device files (the same descriptors), besides a pipe for its
    input and /dev/null for its output and errors, so no output file or pipe of the command's;
    it ends once the process has ended; a second release starts none."""
    import subprocess
    import sys
    import time

    prefix = str(tmp_path / "nvidia")
    root = str(Path(__file__).resolve().parent.parent)
    run = subprocess.run(
        [sys.executable, "-c", _HANDING_OVER, prefix, str(tmp_path / "hits.tsv")],
        capture_output=True,
        text=True,
        cwd=root,
        timeout=60,
        check=False,
    )
    assert run.returncode == 0 and run.stderr == "", run.stderr
    seen = json.loads(run.stdout)
    held = {int(fd): path for fd, path in seen["held"].items()}
    devices = {int(fd): path for fd, path in seen["devices"].items()}
    assert sorted(devices.values()) == [prefix + "-uvm", prefix + "0", prefix + "ctl"]
    assert held.pop(0).startswith("pipe:") and held.pop(1) == "/dev/null" and held.pop(2) == "/dev/null"
    assert held == devices and seen["collecting"] is False
    deadline = time.monotonic() + 30
    while _running(seen["keeper"]) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _running(seen["keeper"]), "the keeper outlived its process"


def _running(pid: int) -> bool:
    """Whether process ``pid`` runs (neither gone nor a zombie waiting to be reaped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


#: runs ``swgpu`` (:func:`swgpu_core.cli.console`) with a note on stderr of how many GPU device files it handed to which keeper
_COUNTING_CONSOLE = """
import sys
from swgpu_core import cli, cuda_driver

inner = cuda_driver._hand_over


def counted():
    n = len(cuda_driver.device_files())
    handed = inner()
    keeper = cuda_driver._KEEPERS[0][0].pid if handed else None
    print(f"handed {n} device file(s) to keeper {keeper}", file=sys.stderr, flush=True)
    return handed


cuda_driver._hand_over = counted
sys.argv = ["swgpu", *sys.argv[1:]]
cli.console()
"""


@pytest.mark.gpu
def test_the_executable_hands_its_gpus_to_a_keeper_before_it_writes(cli_db: Path, resources: Path, swgpu, tmp_path: Path) -> None:
    """On a GPU, ``swgpu search`` (with alignment fields: the GPU traceback runs before the
    release), ``pairs`` and ``align-long`` hand their GPU device files to a keeper before they
    write: each says so, writes exactly what the in-process command writes, nothing on stderr
    tells of a CUDA error, and the keeper (whose exit is the driver's teardown) ends after it."""
    import os
    import re
    import subprocess
    import sys
    import time

    queries = str(resources / "queries.fasta")
    records = [r.split("\n", 1) for r in Path(queries).read_text().split(">")[1:]]
    first, joined = tmp_path / "first.fasta", tmp_path / "joined.fasta"
    first.write_text(f">{records[0][0]}\n{records[0][1]}")
    joined.write_text(">joined\n" + "".join(seq.replace("\n", "") for _, seq in records) + "\n")
    commands = {
        "search": ["search", "--db", str(cli_db), "--query", queries, "--top", "5", "--outfmt", "6 qseqid sseqid score pident evalue qstart send"],
        "pairs": ["pairs", "--query", queries, "--subject", queries],
        "align-long": ["align-long", "--query", str(first), "--target", str(joined), "--alphabet", "protein"],
    }  # fmt: skip
    root = str(Path(__file__).resolve().parent.parent)
    for name, args in commands.items():
        args = [*args, "--backend", os.environ.get("SWGPU_TEST_BACKEND", "cuda"), "--quiet"]
        rc, expected, err = swgpu(*args, "--out", tmp_path / f"{name}.in")
        assert rc == 0, err
        out = tmp_path / f"{name}.out"
        run = subprocess.run(
            [sys.executable, "-c", _COUNTING_CONSOLE, *args, "--out", str(out)], capture_output=True, text=True, cwd=root, check=False
        )
        assert run.returncode == 0, run.stderr
        handed = re.fullmatch(r"handed ([0-9]+) device file\(s\) to keeper ([0-9]+)\n", run.stderr)
        assert handed and int(handed[1]) > 0, (name, run.stderr)
        assert out.read_text() == (tmp_path / f"{name}.in").read_text() and out.stat().st_size > 0, name
        deadline = time.monotonic() + 30
        while _running(int(handed[2])) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not _running(int(handed[2])), f"{name}: the keeper outlived its process"
