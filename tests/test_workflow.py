"""The Snakemake workflow: lint, format, config schema, safety, full runs and scheduled reruns.

Every test runs alone and in any order. The rerun tests start from copies of one finished
run (300 subjects of the bundled database served by a local HTTP server; 3 queries in 2
batches; CPU backend, chunk-level search jobs), made once per module and never changed.
Dry runs cannot list the jobs behind a checkpoint that has to run again, so the tests
also run for real and check which rules executed.
"""

from __future__ import annotations

import ast
import gzip
import inspect
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest
import yaml

from swgpu_core.fasta import read_fasta

from workflow_util import (
    BIN,
    REPO,
    SNAKEFILE,
    FileServer,
    copy_run,
    env,
    executed_rules,
    planned_jobs,
    rule_logs,
    small_inputs,
    snakemake,
    write_config,
)

pytestmark = pytest.mark.slow


def hit_rows(path: Path) -> list[list[str]]:
    return [line.split("\t") for line in path.read_text().splitlines() if not line.startswith("#")]


def biopython_queries(path: Path) -> list[str]:
    """The query ids Biopython's BLAST tabular reader finds in a format 7 table."""
    from Bio import SearchIO

    fields = ["qseqid", "sseqid", "score", "evalue", "bitscore", "qlen", "slen"]
    return [q.id for q in SearchIO.parse(str(path), "blast-tab", comments=True, fields=fields)]


# --- static checks ---------------------------------------------------------------------


def test_snakemake_lint_is_clean():
    proc = subprocess.run([str(BIN / "snakemake"), "--lint"], cwd=REPO, env=env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Congratulations, your workflow is in a good condition!" in proc.stdout + proc.stderr


@pytest.mark.parametrize("job_size", ["chunk", "database"])
def test_local_rules_exist_under_each_job_size(tmp_path, job_size):
    """`localrules` names only rules the config defines: with search jobs over the whole
    database there is no merge rule, and Snakemake warned of it on every run (run alone,
    every job is local: which rules are cluster jobs shows only under an executor)."""
    db, queries = small_inputs(tmp_path, 5, 1)
    write_config(tmp_path, str(db), queries, search={"backend": "cpu", "threads": 1, "top": 3, "job_size": job_size})
    proc = snakemake(tmp_path)  # run: a dry run cannot list the merge jobs behind the chunks checkpoint
    assert "not present" not in proc.stdout + proc.stderr
    assert ("merge" in executed_rules(proc)) == (job_size == "chunk")


def test_snakefmt_check_is_clean():
    proc = subprocess.run(
        [str(BIN / "snakefmt"), "--check", "workflow/", "tests/module_example/"],
        cwd=REPO,
        env=env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_default_config_validates_and_a_bad_one_is_refused(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    jsonschema.validate(yaml.safe_load((REPO / "config/config.yaml").read_text()), schema)
    jsonschema.validate(yaml.safe_load((REPO / ".test/config/config.yaml").read_text()), schema)
    # The merge jobs trace nothing: the default hits.tsv columns come from the scores alone.
    from swgpu_core.outfmt import parse_outfmt

    default = yaml.safe_load((REPO / "config/config.yaml").read_text())["merge"]["outfmt"]
    assert default == schema["properties"]["merge"]["properties"]["outfmt"]["default"]
    assert not parse_outfmt(default).needs_alignment

    db, queries = small_inputs(tmp_path, 5, 1)
    write_config(tmp_path, str(db), queries, search={"backend": "opencl"})
    proc = snakemake(tmp_path, "-n", check=False)
    assert proc.returncode != 0 and "opencl" in proc.stdout + proc.stderr


@pytest.mark.parametrize("name", ["..", ".", "a/b", "../up", "/abs", ".hidden", "-opt", "with space", ""])
def test_database_names_must_be_safe_path_components(name):
    jsonschema = pytest.importorskip("jsonschema")
    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    config = {"databases": {name: {"source": "x.fasta"}}, "queries": "q.fasta"}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(config, schema)


def test_a_database_named_dotdot_is_refused_before_anything_is_written(tmp_path):
    db, queries = small_inputs(tmp_path, 5, 1)
    write_config(tmp_path, str(db), queries)
    config = yaml.safe_load((tmp_path / "config.yaml").read_text())
    config["databases"] = {"..": config["databases"]["small"]}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    proc = snakemake(tmp_path, check=False)
    assert proc.returncode != 0 and "'..'" in proc.stdout + proc.stderr
    assert not (tmp_path / "results").exists() and not (tmp_path / "db").exists()


def _module_python(path: Path) -> list[str]:
    """The names a Snakefile's Python imports (snakefmt-formatted rules files parse as
    Python once their rule bodies are dropped: only top-level import statements matter)."""
    names = []
    for line in path.read_text().splitlines():
        if re.match(r"(import|from) \S", line):
            node = ast.parse(line).body[0]
            names += [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
    return names


DRIVER_SMK = REPO / "workflow" / "rules" / "driver.smk"


def _driver_holder_program() -> str:
    """The program driver.smk runs as CUDA's driver holder (_DRIVER_HOLDER)."""
    return re.search(r'^_DRIVER_HOLDER = """(.*?)"""$', DRIVER_SMK.read_text(), re.S | re.M).group(1)


def test_the_workflow_parses_and_dry_runs_with_snakemake_alone(tmp_path):
    """No swgpu_core import, no query file read, no GPU probe when the workflow is parsed:
    `snakemake -n` works where only Snakemake is installed (a login node, --sdm conda).
    The one process the workflow starts as it is read is CUDA's driver holder (driver.smk):
    Snakemake's own interpreter running a ctypes program that nothing waits for and that
    decides nothing; no `swgpu`, no nvidia-smi."""
    for path in [SNAKEFILE, *sorted((REPO / "workflow" / "rules").glob("*.smk"))]:
        imported = _module_python(path)
        banned = ("swgpu_core",) if path == DRIVER_SMK else ("swgpu_core", "subprocess")
        assert not [n for n in imported if n.split(".")[0] in banned], (path, imported)
    text = DRIVER_SMK.read_text()
    calls = re.findall(r"subprocess\.(\w+)", text)
    assert sorted(calls) == ["DEVNULL"] * 3 + ["Popen"], calls
    assert re.search(r'subprocess\.Popen\(\s*\[sys\.executable, "-c", _DRIVER_HOLDER\]', text)
    holder = _driver_holder_program()
    assert re.findall(r"^import (.*)$", holder, re.M) == ["ctypes, os, time"] and "swgpu" not in holder
    # A dry run in a Python where swgpu_core cannot be imported and `swgpu`/`nvidia-smi`
    # are not on PATH: the run would fail if the Snakefile imported or called them.
    db, queries = small_inputs(tmp_path, 5, 1)
    write_config(tmp_path, str(db), "queries.fasta", search={"backend": "auto"})
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(
        "import sys\n"
        "class _Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'swgpu_core':\n"
        "            raise ImportError('swgpu_core is not installed here')\n"
        "sys.meta_path.insert(0, _Block())\n"
    )
    e = env()
    e["PYTHONPATH"] = str(blocker)
    e["PATH"] = "/usr/bin:/bin"  # no venv: no swgpu, and no nvidia-smi from the venv
    cmd = [sys.executable, "-c", "import swgpu_core"]
    assert subprocess.run(cmd, env=e, capture_output=True).returncode != 0  # the blocker works
    (tmp_path / "queries.fasta").rename(tmp_path / "queries.later")  # not read at parse time
    cmd = [sys.executable, "-m", "snakemake", "-n", "--cores", "2", "-s", str(SNAKEFILE), "--configfile", str(tmp_path / "config.yaml")]
    proc = subprocess.run(cmd, cwd=tmp_path, env=e, capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0 and "queries.fasta" in proc.stdout + proc.stderr  # missing input, reported by Snakemake
    (tmp_path / "queries.later").rename(tmp_path / "queries.fasta")
    proc = subprocess.run(cmd, cwd=tmp_path, env=e, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    planned = planned_jobs(proc)
    assert {"download", "makedb", "split_queries", "gather_hits"} <= set(planned), planned
    assert "swgpu_core" not in proc.stdout + proc.stderr


def test_align_long_paths_reach_the_shell_quoted(tmp_path):
    """The printed command of a dry run, split as the shell splits it, has every path whole."""
    query = tmp_path / "long query $(touch pwned-q).fasta"
    target = tmp_path / "long 'target\".fasta"
    query.write_text(">q\nACGTACGT\n")
    target.write_text(">t\nACGTACGTACGT\n")
    db, queries = small_inputs(tmp_path, 5, 1)
    write_config(
        tmp_path,
        str(db),
        queries,
        align_long={
            "enabled": True,
            "query": str(query),
            "target": str(target),
            "sections": 2,
            "backend": "cpu",
            "formats": ["tsv", "sam"],
        },
    )
    proc = snakemake(tmp_path, "-n", "-p", "results/align_long/alignments.tsv")
    commands = [line for line in proc.stdout.splitlines() if "swgpu align-long" in line]
    assert len(commands) == 3  # two sections and one merge that writes both formats from one traceback
    merge = shlex.split(commands[-1].split(" > ")[0])
    assert [merge[i + 1] for i, w in enumerate(merge) if w == "--out"] == [
        "results/align_long/alignments.tsv",
        "results/align_long/alignments.sam",
    ]
    for command in commands:
        words = shlex.split(command.split(" > ")[0])
        assert words[words.index("--query") + 1] == str(query) and words[words.index("--target") + 1] == str(target)
    assert not list(tmp_path.rglob("pwned*"))


# --- runs ------------------------------------------------------------------------------


def test_paths_with_spaces_and_shell_syntax_work_and_run_nothing(tmp_path):
    """Config paths reach commands whole (quoted): spaces work, `$(...)` is just a name."""
    db, queries = small_inputs(tmp_path, 60, 3)
    (tmp_path / "my data").mkdir()
    db = db.rename(tmp_path / "my data" / "db $(touch pwned-db).fasta")
    queries = queries.rename(tmp_path / "my queries $(touch pwned-q) `touch pwned-b`.fasta")
    write_config(
        tmp_path,
        "my data/" + db.name,
        queries.name,
        search={"backend": "cpu", "threads": 1, "top": 5, "job_size": "database"},
        align={"enabled": True, "formats": ["tsv", "jsonl"], "threads": 1},
    )
    proc = snakemake(tmp_path)
    assert {"download", "makedb", "split_queries", "search", "gather_hits"} <= set(executed_rules(proc))  # search also merges and aligns
    assert len({r[0] for r in hit_rows(tmp_path / "results/small/hits.tsv")}) == 3
    assert (tmp_path / "results/small/alignments/batch-0001.jsonl").stat().st_size > 0
    assert not list(tmp_path.rglob("pwned*")) and not list(Path.cwd().glob("pwned*"))


@pytest.mark.parametrize("job_size", ["chunk", "database"])
def test_outfmt_with_quotes_is_one_argument(tmp_path, job_size):
    """A quote in merge.outfmt / align.outfmt cannot end the argument: swgpu refuses the
    format as a whole and no command hidden in it runs (align.outfmt reaches the align job,
    or the search job that traces its batch over the whole database)."""
    db, queries = small_inputs(tmp_path, 30, 1)
    evil = "6 qseqid'; touch pwned-merge; echo '"
    write_config(
        tmp_path,
        str(db),
        queries,
        search={"backend": "cpu", "threads": 1, "top": 3, "job_size": job_size},
        merge={"outfmt": evil},
        align={"enabled": True, "formats": ["tsv"], "threads": 1, "outfmt": evil.replace("merge", "align")},
    )
    proc = snakemake(tmp_path, "--keep-going", check=False)
    assert proc.returncode != 0
    failing = ["merge", "align"] if job_size == "chunk" else ["search"]  # a search that cannot write its alignments stops first
    assert set(failing) <= set(executed_rules(proc))
    for rule in failing:
        (log,) = rule_logs(tmp_path, rule)
        assert "outfmt" in log and "Traceback" not in log, log
    assert not list(tmp_path.rglob("pwned*"))


def test_query_batch_residues_cut_the_batches_by_residues(tmp_path):
    """query_batch_residues reaches split-queries: every batch holds at most that many
    residues (or one longer query), in the file's order."""
    db, queries = small_inputs(tmp_path, 30, 3)
    lengths = [len(r.sequence) for r in read_fasta(queries)]
    write_config(tmp_path, str(db), queries, query_batch_size=10, query_batch_residues=max(lengths))
    snakemake(tmp_path, "results/queries/batches")
    got = [[len(r.sequence) for r in read_fasta(p)] for p in sorted((tmp_path / "results/queries/batches").glob("batch-*.fasta"))]
    assert [n for batch in got for n in batch] == lengths and len(got) > 1
    assert all(sum(batch) <= max(lengths) for batch in got)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """One finished run on a database served over HTTP, never changed by the tests (they
    copy it); yields (directory, served directory, server, snakemake process, seconds)."""
    work = tmp_path_factory.mktemp("workflow")
    www = work / "www"
    www.mkdir()
    db, _ = small_inputs(work)
    db.rename(www / "small.fasta")
    server = FileServer(www)
    write_config(work, f"{server.url}/small.fasta", "queries.fasta")
    started = time.monotonic()
    proc = snakemake(work)
    yield work, www, server, proc, time.monotonic() - started
    server.close()


@pytest.fixture
def run_copy(finished, tmp_path):
    """A copy of the finished run whose served files the server now serves."""
    work, _, server, _, _ = finished
    copy = copy_run(work, tmp_path / "copy")
    server.root = copy / "www"
    yield copy
    server.root = work / "www"


def test_full_run_writes_the_documented_outputs(finished):
    work, www, _, proc, seconds = finished
    results = work / "results" / "small"
    for rel in (
        "source/small.fasta",
        "source/small.fasta.version.json",
        "db/manifest.json",
        "dbstats/lengths.png",
        "dbstats/lengths.tsv",
        "chunks.json",
        "hits/batch-0000.tsv",
        "hits/batch-0001.tsv",
        "hits.tsv",
    ):
        assert (results / rel).is_file(), rel
    assert (www / "small.fasta").read_bytes() == (results / "source/small.fasta").read_bytes()
    chunks = len(list((results / "search/batch-0000").glob("chunk-*.npz")))
    assert chunks > 1, "the test database should span several chunks"
    assert executed_rules(proc).count("search") == 2 * chunks  # job_size auto with cpu: one job per (batch x chunk)
    text = (results / "hits.tsv").read_text()
    assert text.startswith("# ") and "# Fields: query id, subject id, score" in text  # format 7: a header per query
    hits = hit_rows(results / "hits.tsv")
    assert len({h[0] for h in hits}) == 3 and all(len(h) == 7 for h in hits)
    assert len(biopython_queries(results / "hits.tsv")) == 3  # batches gathered into one table
    # Every job leaves a log and a benchmark.
    assert len(list(results.glob("logs/**/*.log"))) == len(list(results.glob("benchmarks/**/*.tsv")))
    print(f"full workflow run: {seconds:.1f} s")


def test_second_run_has_nothing_to_do(run_copy):
    assert planned_jobs(snakemake(run_copy, "-n")) == {}


def test_a_finished_run_does_not_wait_for_the_schedulers_timers(run_copy):
    """Snakemake's scheduler leaves non-daemon timers of its 1 s re-check behind; the
    workflow's onsuccess handler cancels them (common.smk, release_scheduler_timers), so
    the process ends right after its last log line instead of up to a second later."""
    from snakemake.scheduling.job_scheduler import JobScheduler

    assert "threading.Timer" in inspect.getsource(JobScheduler._schedule_reevalutation)  # what the handler matches
    cmd = [str(BIN / "snakemake"), "--cores", "2", "--nocolor", "--forcerun", "gather_hits", "-s", str(SNAKEFILE)]
    cmd += ["--configfile", str(run_copy / "config.yaml")]
    proc = subprocess.Popen(cmd, cwd=run_copy, env=env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    last_line = None
    for line in proc.stdout:
        if line.startswith("Elapsed time"):  # Snakemake's last line, after the onsuccess handler
            last_line = time.monotonic()
    assert proc.wait(timeout=120) == 0 and last_line is not None
    assert time.monotonic() - last_line < 0.7  # 0.03 s here (0.2-0.3 s before the exit's collection was spared); 1.3 s with the timers left


@pytest.mark.parametrize(("command", "frozen"), [("snakemake", True), ("my_pipeline.py", False)])
def test_a_run_spares_its_exit_collection_only_where_the_process_ends_with_it(run_copy, command: str, frozen: bool) -> None:
    """At the end of a run the workflow freezes the garbage collector's objects (common.smk,
    spare_the_exit_collection), so that Python's finalisation does not collect every object of
    Snakemake's process (0.26-0.31 s): in Snakemake's own command, never in a program of
    one's own that runs it through its entry point and goes on (that program's garbage would
    stay)."""
    code = (
        "import gc, sys\n"
        "from snakemake.cli import main\n"
        f"sys.argv = [{command!r}, *sys.argv[1:]]\n"
        "try:\n    main()\n"
        "except SystemExit as end:\n    print('frozen', gc.get_freeze_count(), 'exit', end.code)\n"
    )
    args = ["--cores", "1", "--nocolor", "--forcerun", "gather_hits", "-s", str(SNAKEFILE), "--configfile", str(run_copy / "config.yaml")]
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=run_copy, env=env(), capture_output=True, text=True, timeout=120)
    last = done.stdout.strip().splitlines()[-1].split()
    assert last[0] == "frozen" and last[3] == "0", done.stdout + done.stderr
    assert (int(last[1]) > 0) == frozen


def _stand_in_ctypes(tmp_path: Path) -> Path:
    """A directory with a stand-in ctypes for the holder's program (first on PYTHONPATH): its
    cuInit leaves tmp_path/initialised and returns $CUINIT_ERROR (0 unless set); with
    $NO_DRIVER set there is no driver library."""
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "ctypes.py").write_text(
        "import os\n"
        "class CDLL:\n"
        "    def __init__(self, name):\n"
        "        if os.environ.get('NO_DRIVER'): raise OSError(name)\n"
        f"    def cuInit(self, flags):\n        open({str(tmp_path / 'initialised')!r}, 'w').close()\n"
        "        return int(os.environ.get('CUINIT_ERROR', '0'))\n"
    )
    return fake


def test_the_driver_holder_ends_with_the_process_that_started_it(tmp_path):
    """config gpu.hold_driver: driver.smk's holder initialises CUDA's driver (here a stand-in
    ctypes, first on the path) and ends on its own soon after the process that started it,
    however that ends; without a driver library, or where cuInit fails, it ends at once."""
    fake = _stand_in_ctypes(tmp_path)
    # a stand-in for Snakemake's process: it reads driver.smk as the Snakefile does, starts the holder, then ends
    starter = (
        "import sys, time, types\n"
        "names = {'workflow': types.SimpleNamespace(is_main_process=True)}\n"
        "exec(compile(open(sys.argv[1]).read(), sys.argv[1], 'exec'), names)\n"
        "names['start_gpu_driver_holder']()\n"
        "print(names['_DRIVER_HOLDERS'][0].pid, flush=True); time.sleep(float(sys.argv[2]))\n"
    )

    def run(delay: float, **extra: str) -> tuple[int, float]:
        environment = {**os.environ, "PYTHONPATH": str(fake), **extra}
        proc = subprocess.run([sys.executable, "-c", starter, str(DRIVER_SMK), str(delay)], env=environment, capture_output=True, text=True)
        return int(proc.stdout.split()[0]), time.monotonic()

    def alive(pid: int) -> bool:
        try:
            return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
        except FileNotFoundError:
            return False

    pid, ended = run(1.0)
    assert (tmp_path / "initialised").exists()
    while alive(pid) and time.monotonic() - ended < 5:
        time.sleep(0.05)
    assert not alive(pid) and time.monotonic() - ended < 1.5
    (tmp_path / "initialised").unlink()
    pid, ended = run(1.0, NO_DRIVER="1")
    assert not alive(pid) and not (tmp_path / "initialised").exists()
    pid, ended = run(1.0, CUINIT_ERROR="100")  # CUDA_ERROR_NO_DEVICE: nothing to hold
    assert not alive(pid) and (tmp_path / "initialised").exists()


def test_the_driver_holder_starts_first_and_is_kept_only_where_wanted(tmp_path, monkeypatch):
    """driver.smk starts the holder before the configuration is validated (in Snakemake's
    main process only), and keep_gpu_driver_holder ends it at once where the validated
    configuration has no GPU job or turns gpu.hold_driver off; the Snakefile asks with both."""
    # a stand-in ctypes whose cuInit succeeds: the holder lives while this test does
    monkeypatch.setenv("PYTHONPATH", str(_stand_in_ctypes(tmp_path)))
    monkeypatch.delenv("NO_DRIVER", raising=False)
    monkeypatch.delenv("CUINIT_ERROR", raising=False)

    def driver_smk(main_process: bool) -> dict:
        names = {"workflow": types.SimpleNamespace(is_main_process=main_process)}
        exec(compile(DRIVER_SMK.read_text(), str(DRIVER_SMK), "exec"), names)
        names["start_gpu_driver_holder"]()
        return names

    assert driver_smk(False)["_DRIVER_HOLDERS"] == []  # a job Snakemake runs itself starts none
    kept = driver_smk(True)
    (holder,) = kept["_DRIVER_HOLDERS"]
    kept["keep_gpu_driver_holder"](True)
    time.sleep(0.3)
    assert holder.poll() is None  # wanted: it holds on
    holder.kill()
    holder.wait()
    ended = driver_smk(True)
    (holder,) = ended["_DRIVER_HOLDERS"]
    ended["keep_gpu_driver_holder"](False)
    assert holder.poll() is not None and ended["_DRIVER_HOLDERS"] == []
    snakefile = SNAKEFILE.read_text()
    assert snakefile.index("start_gpu_driver_holder()") < snakefile.index("validate(")
    assert 'keep_gpu_driver_holder(config["gpu"]["hold_driver"] and gpu_jobs())' in snakefile


def test_refresh_of_an_unchanged_release_changes_nothing(run_copy):
    source = run_copy / "results/small/source/small.fasta"
    stamps = (source.stat().st_mtime_ns, Path(f"{source}.version.json").stat().st_mtime_ns)
    proc = snakemake(run_copy, "refresh")
    assert "unchanged" in proc.stdout + proc.stderr
    assert (source.stat().st_mtime_ns, Path(f"{source}.version.json").stat().st_mtime_ns) == stamps
    assert planned_jobs(snakemake(run_copy, "-n")) == {}


def test_changed_queries_rerun_the_changed_batch_only(run_copy):
    manifest = run_copy / "results/small/db/manifest.json"
    built = manifest.stat().st_mtime_ns
    first = {p: p.stat().st_mtime_ns for p in (run_copy / "results/small/search/batch-0000").glob("*.npz")}
    queries = run_copy / "queries.fasta"
    os.utime(queries)  # touched, same bytes: nothing to do
    assert planned_jobs(snakemake(run_copy, "-n")) == {}
    queries.write_text(queries.read_text() + ">extra_query\nMKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQAPILSRVGDGTQDNLSGAEKAVQVKVKALPDAQ\n")
    ran = executed_rules(snakemake(run_copy))
    assert {"split_queries", "search", "merge", "gather_hits"} <= set(ran)
    assert not {"download", "makedb", "dbstats", "chunks"} & set(ran)
    assert ran.count("merge") == 1  # batch-0001 got the new query; batch-0000 is unchanged
    assert {p: p.stat().st_mtime_ns for p in first} == first
    assert manifest.stat().st_mtime_ns == built
    assert biopython_queries(run_copy / "results/small/hits.tsv")[-1] == "extra_query"
    assert planned_jobs(snakemake(run_copy, "-n")) == {}


def test_new_release_reruns_exactly_the_database_chain(run_copy):
    served = run_copy / "www" / "small.fasta"
    served.write_text(served.read_text() + ">new_entry in the new release\nMKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQ\n")
    later = time.time() + 5  # Last-Modified has one-second resolution
    os.utime(served, (later, later))
    assert planned_jobs(snakemake(run_copy, "-n")) == {}  # a plain run does not look at the source
    proc = snakemake(run_copy, "refresh")
    assert "new release" in proc.stdout + proc.stderr
    ran = executed_rules(snakemake(run_copy))
    assert {"makedb", "dbstats", "chunks", "search", "merge", "gather_hits"} <= set(ran)
    assert not {"download", "split_queries"} & set(ran)
    assert "new_entry" in (run_copy / "results/small/db/headers.bin").read_text(errors="replace")


def test_database_jobs_give_the_hits_of_chunk_jobs(finished, tmp_path):
    """search.job_size database: one search job per batch over the whole database, the
    same merged hits as one job per (batch x chunk)."""
    work, *_ = finished
    shutil.copy(work / "queries.fasta", tmp_path / "queries.fasta")
    shutil.copy(work / "www" / "small.fasta", tmp_path / "small.fasta")
    write_config(tmp_path, "small.fasta", "queries.fasta", search={"backend": "cpu", "threads": 1, "top": 10, "job_size": "database"})
    ran = executed_rules(snakemake(tmp_path))
    assert ran.count("search") == 2 and "chunks" not in ran
    assert sorted((tmp_path / "results/small/search/batch-0000").iterdir()) == [tmp_path / "results/small/search/batch-0000/all.npz"]
    assert hit_rows(tmp_path / "results/small/hits.tsv") == hit_rows(work / "results/small/hits.tsv")


def test_database_jobs_trace_their_hits_as_the_align_jobs_of_chunk_jobs(tmp_path):
    """search.job_size database: each batch's one search job also writes its hits table and
    traces its hits into every alignment format (no merge or align job), byte for byte what
    chunk-level search jobs, a merge and an align job per batch write; only the lines naming
    the command that wrote them differ (the table's first line, SAM/BAM's @PG)."""
    pysam = pytest.importorskip("pysam")
    formats = ["tsv", "jsonl", "sam", "bam", "txt"]
    runs = {}
    for job_size in ("chunk", "database"):
        work = tmp_path / job_size
        work.mkdir()
        small_inputs(work, 120, 3)
        search = {"backend": "cpu", "threads": 1, "top": 5, "job_size": job_size}
        write_config(work, "db.fasta", "queries.fasta", search=search, align={"enabled": True, "formats": formats, "threads": 1})
        runs[job_size] = executed_rules(snakemake(work))
    assert runs["chunk"].count("align") == 2 and runs["chunk"].count("search") > 2
    assert runs["database"].count("search") == 2 and "align" not in runs["database"]
    assert all("alignments traced in" in log for log in rule_logs(tmp_path / "database", "search"))
    chunk, database = (tmp_path / name / "results/small" for name in ("chunk", "database"))
    # the hits table as the merge jobs write it, but for the program each batch's header names
    hits = [(run / "hits.tsv").read_text() for run in (chunk, database)]
    assert hits[0].count("(swgpu merge: exact") == hits[1].count("(swgpu search: exact") == 3  # a header per query
    assert hits[0].replace("(swgpu merge: exact", "(swgpu search: exact") == hits[1]
    for batch in ("0000", "0001"):
        for fmt in ("tsv", "jsonl", "txt"):
            name = f"alignments/batch-{batch}.{fmt}"
            assert (database / name).read_bytes() == (chunk / name).read_bytes(), name
        sam = [[line for line in (run / f"alignments/batch-{batch}.sam").read_text().splitlines() if not line.startswith("@PG")]
               for run in (chunk, database)]  # fmt: skip
        assert sam[0] == sam[1] and len(sam[0]) > 5
        bam = []
        for run in (chunk, database):
            with pysam.AlignmentFile(str(run / f"alignments/batch-{batch}.bam")) as fh:
                bam.append([r.to_string() for r in fh])
        assert bam[0] == bam[1] and bam[0]


def test_database_jobs_leave_the_table_to_a_merge_when_its_options_differ(finished, tmp_path):
    """search.job_size database with align.extra `--align 1` (one alignment per query): the
    search job applies it to its alignments, and a merge job writes the hits table with its
    own options, the same table as without it (one process would cut both to one hit)."""
    work, *_ = finished
    shutil.copy(work / "queries.fasta", tmp_path / "queries.fasta")
    shutil.copy(work / "www" / "small.fasta", tmp_path / "small.fasta")
    search = {"backend": "cpu", "threads": 1, "top": 10, "job_size": "database"}
    write_config(
        tmp_path,
        "small.fasta",
        "queries.fasta",
        search=search,
        align={"enabled": True, "formats": ["tsv"], "threads": 1, "extra": "--align 1"},
    )
    ran = executed_rules(snakemake(tmp_path))
    assert ran.count("search") == 2 and ran.count("merge") == 2
    assert hit_rows(tmp_path / "results/small/hits.tsv") == hit_rows(work / "results/small/hits.tsv")
    aligned = [row[0] for batch in ("0000", "0001") for row in hit_rows(tmp_path / f"results/small/alignments/batch-{batch}.tsv")]
    assert len(aligned) == len(set(aligned)) == 3  # one alignment per query


def test_database_jobs_paste_the_shared_table_and_alignment_options_once(tmp_path):
    """merge.extra and align.extra alike (the search job then writes the table): their raw
    options reach the search job once, not once per output, and no merge job runs."""
    small_inputs(tmp_path, 40, 2)
    search = {"backend": "cpu", "threads": 1, "top": 3, "job_size": "database"}
    write_config(tmp_path, "db.fasta", "queries.fasta", search=search, merge={"extra": "--evalue 5"},
                 align={"enabled": True, "formats": ["tsv"], "threads": 1, "extra": "--evalue 5"})  # fmt: skip
    proc = snakemake(tmp_path, "--printshellcmds")
    ran = executed_rules(proc)
    assert ran.count("search") == 1 and "merge" not in ran
    (command,) = [line for line in (proc.stdout + proc.stderr).splitlines() if "swgpu search" in line]
    assert command.count("--evalue 5") == 1, command


def test_fast_mode_reaches_the_search_jobs_and_gives_exact_hits(finished, tmp_path):
    """search.mode fast: every search job (one per batch and chunk) runs --mode fast and saves a
    fast-mode hit list; each merged hit is the exact run's hit where both have the pair."""
    work, *_ = finished
    shutil.copy(work / "queries.fasta", tmp_path / "queries.fasta")
    shutil.copy(work / "www" / "small.fasta", tmp_path / "small.fasta")
    write_config(tmp_path, "small.fasta", "queries.fasta", search={"backend": "cpu", "threads": 1, "top": 10, "mode": "fast"})
    assert executed_rules(snakemake(tmp_path)).count("search") > 2
    logs = rule_logs(tmp_path, "search")
    assert logs and all("fast mode:" in log for log in logs)
    from swgpu_core.hitlist import load_hits

    assert {load_hits(p).mode for p in tmp_path.glob("results/small/search/batch-*/chunk-*.npz")} == {"fast"}
    exact = {tuple(r[:2]): r for r in hit_rows(work / "results/small/hits.tsv")}
    fast = hit_rows(tmp_path / "results/small/hits.tsv")
    shared = [r for r in fast if tuple(r[:2]) in exact]
    assert len(shared) >= len(fast) // 2 and all(exact[tuple(r[:2])] == r for r in shared)


def test_a_touched_local_source_reruns_nothing_and_an_edited_one_its_chain(tmp_path):
    """The bundled database (over Snakemake's 1 MB checksum limit) as a local source."""
    shutil.copy(REPO / "resources" / "db.fasta.gz", tmp_path / "db.fasta.gz")
    small_inputs(tmp_path, 1, 2)
    write_config(tmp_path, "db.fasta.gz", "queries.fasta", search={"backend": "cpu", "threads": 1, "top": 3, "job_size": "database"})
    snakemake(tmp_path)
    source = tmp_path / "db.fasta.gz"
    assert source.stat().st_size > 1_000_000
    later = time.time() + 5
    os.utime(source, (later, later))
    assert planned_jobs(snakemake(tmp_path, "-n")) == {}
    assert executed_rules(snakemake(tmp_path)) == []
    with gzip.open(source, "ab") as fh:  # a second gzip member: one more record
        fh.write(b">edited_entry\nMKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQ\n")
    ran = executed_rules(snakemake(tmp_path))
    assert {"download", "makedb", "search", "gather_hits"} <= set(ran)  # a search job over the database merges too
    assert "edited_entry" in (tmp_path / "results/small/db/headers.bin").read_text(errors="replace")


def test_without_a_gpu_cuda_fails_clearly_and_auto_runs_on_the_cpu(tmp_path):
    """`--resources gpu=2` on a machine without a usable GPU (CI): backend cuda stops at
    the first GPU job with the reason in its log; auto runs on the CPU and says so."""
    if shutil.which("nvidia-smi"):
        pytest.skip("this machine has nvidia-smi: the test is for machines without a GPU")
    db, queries = small_inputs(tmp_path, 30, 1)
    write_config(tmp_path, str(db), queries, search={"backend": "cuda", "threads": 1, "top": 3}, gpu={"slot_dir": str(tmp_path / "slots")})
    proc = snakemake(tmp_path, "--resources", "gpu=2", check=False)
    assert proc.returncode != 0
    (log,) = rule_logs(tmp_path, "search")
    assert "cuda" in log.lower() and "Traceback" not in log, log
    write_config(tmp_path, str(db), queries, search={"backend": "auto", "threads": 1, "top": 3}, gpu={"slot_dir": str(tmp_path / "slots")})
    proc = snakemake(tmp_path, "--resources", "gpu=2")
    (log,) = rule_logs(tmp_path, "search")
    assert "(no GPU)" in log and "cpu" in log.lower(), log
    assert len({r[0] for r in hit_rows(tmp_path / "results/small/hits.tsv")}) == 1


def test_the_ci_configuration_runs(tmp_path):
    """`.test/` (the snakemake-workflows convention): the whole workflow, plan, align in
    three formats and the report included, on 120 subjects."""
    usage = subprocess.run([str(BIN / "swgpu"), "report", "--help"], env=env(), capture_output=True, text=True).stdout
    assert "--alignments" in usage, "the report rule passes the align jobs' JSON lines: it needs `swgpu report --alignments`"
    test_dir = shutil.copytree(REPO / ".test", tmp_path / ".test", ignore=shutil.ignore_patterns("results", ".snakemake"))
    # workflow/Snakefile's `configfile: "config/config.yaml"` is .test/config/config.yaml here
    proc = snakemake(test_dir, "-s", str(SNAKEFILE), "--directory", str(test_dir), snakefile=None)
    results = test_dir / "results" / "test"
    for rel in (
        "hits.tsv",
        "plan/plan.png",
        "alignments/batch-0000.bam",
        "alignments/batch-0001.tsv",
        "alignments/batch-0001.jsonl",
        "report.html",
    ):
        assert (results / rel).is_file(), rel
    ran = executed_rules(proc)
    assert ran.count("search") == 2 and "align" not in ran  # one job per batch searches the database and traces its hits
