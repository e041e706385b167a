"""The Snakemake workflow: lint, format, config schema, a full run, and scheduled reruns.

One small run (300 subjects from the bundled database, served by a local HTTP server;
3 queries in 2 batches; CPU backend) is shared by the rerun tests, which run in the
order written. Dry runs cannot list the search jobs behind the chunk checkpoint when the
database is rebuilt, so the tests also run for real and check which rules executed.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from workflow_util import BIN, REPO, FileServer, env, executed_rules, planned_jobs, small_inputs, snakemake, write_config

pytestmark = pytest.mark.slow


def test_snakemake_lint_is_clean():
    proc = subprocess.run([str(BIN / "snakemake"), "--lint"], cwd=REPO, env=env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Congratulations, your workflow is in a good condition!" in proc.stdout + proc.stderr


def test_snakefmt_check_is_clean():
    proc = subprocess.run([str(BIN / "snakefmt"), "--check", "workflow/", "tests/module_example/"], cwd=REPO, env=env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_default_config_validates_and_a_bad_one_is_refused(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    jsonschema.validate(yaml.safe_load((REPO / "config/config.yaml").read_text()), schema)

    db, queries = small_inputs(tmp_path, 5, 1)
    write_config(tmp_path, str(db), queries, search={"backend": "opencl"})
    proc = snakemake(tmp_path, "-n", check=False)
    assert proc.returncode != 0 and "opencl" in proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The workflow run once on a database served over HTTP; yields (directory, server root)."""
    work = tmp_path_factory.mktemp("workflow")
    www = work / "www"
    www.mkdir()
    db, queries = small_inputs(work)
    db.rename(www / "small.fasta")
    server = FileServer(www)
    write_config(work, f"{server.url}/small.fasta", queries)
    started = time.monotonic()
    proc = snakemake(work)
    yield work, www, proc, time.monotonic() - started
    server.close()


def test_full_run_writes_the_documented_outputs(run):
    work, www, proc, seconds = run
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
    assert executed_rules(proc).count("search") == 2 * chunks  # one job per (batch x chunk)
    hits = [line.split("\t") for line in (results / "hits.tsv").read_text().splitlines()]
    assert len({h[0] for h in hits}) == 3 and all(len(h) == 7 for h in hits)
    # Every rule leaves a log and a benchmark.
    assert len(list(results.glob("logs/**/*.log"))) == len(list(results.glob("benchmarks/**/*.tsv")))
    print(f"full workflow run: {seconds:.1f} s")


def test_second_run_has_nothing_to_do(run):
    work, *_ = run
    assert planned_jobs(snakemake(work, "-n")) == {}


def test_refresh_of_an_unchanged_release_changes_nothing(run):
    work, *_ = run
    source = work / "results/small/source/small.fasta"
    stamps = (source.stat().st_mtime_ns, Path(f"{source}.version.json").stat().st_mtime_ns)
    proc = snakemake(work, "refresh")
    assert "unchanged" in proc.stdout + proc.stderr
    assert (source.stat().st_mtime_ns, Path(f"{source}.version.json").stat().st_mtime_ns) == stamps
    assert planned_jobs(snakemake(work, "-n")) == {}


def test_changed_queries_rerun_search_onwards_but_not_makedb(run):
    work, *_ = run
    manifest = work / "results/small/db/manifest.json"
    built = manifest.stat().st_mtime_ns
    queries = work / "queries.fasta"
    queries.write_text(queries.read_text() + ">extra_query\nMKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQAPILSRVGDGTQDNLSGAEKAVQVKVKALPDAQ\n")
    planned = planned_jobs(snakemake(work, "-n"))
    assert set(planned) == {"split_queries", "search", "merge", "gather_hits", "all"}
    ran = executed_rules(snakemake(work))
    assert {"split_queries", "search", "merge", "gather_hits"} <= set(ran)
    assert not {"download", "makedb", "dbstats", "chunks"} & set(ran)
    assert manifest.stat().st_mtime_ns == built
    assert "extra_query" in (work / "results/small/hits.tsv").read_text()


def test_new_release_reruns_exactly_the_database_chain(run):
    work, www, _, _ = run
    served = www / "small.fasta"
    served.write_text(served.read_text() + ">new_entry in the new release\nMKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQ\n")
    later = time.time() + 5  # Last-Modified has one-second resolution
    os.utime(served, (later, later))
    assert planned_jobs(snakemake(work, "-n")) == {}  # a plain run does not look at the source
    proc = snakemake(work, "refresh")
    assert "new release" in proc.stdout + proc.stderr
    planned = planned_jobs(snakemake(work, "-n"))
    assert set(planned) == {"makedb", "dbstats", "chunks", "merge", "gather_hits", "all"}
    ran = executed_rules(snakemake(work))
    assert {"makedb", "dbstats", "chunks", "search", "merge", "gather_hits"} <= set(ran)
    assert not {"download", "split_queries"} & set(ran)
    assert "new_entry" in (work / "results/small/db/headers.bin").read_text(errors="replace")
