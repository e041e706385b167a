"""The workflow as a Snakemake module of a parent pipeline (tests/module_example/), with and
without ``prefix:``, with a source path relative to the working directory or absolute."""

from __future__ import annotations

import pytest
import yaml

from workflow_util import REPO, executed_rules, planned_jobs, small_inputs, snakemake

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("prefix", "absolute_source"), [("", False), ("swgpu", False), ("swgpu", True)])
def test_parent_workflow_uses_swgpu_as_a_module(tmp_path, prefix, absolute_source):
    example = REPO / "tests" / "module_example"
    config = yaml.safe_load((example / "config.yaml").read_text())
    config["swgpu_prefix"] = prefix
    db, _ = small_inputs(tmp_path, n_subjects=60, n_queries=3)
    if absolute_source:
        config["swgpu"]["databases"]["sample"]["source"] = str(db)
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    # The parent names the module by a path relative to its own Snakefile.
    text = (
        (example / "Snakefile")
        .read_text()
        .replace('"../../workflow/Snakefile"', repr(str(REPO / "workflow" / "Snakefile")).replace("'", '"'))
    )
    (tmp_path / "Snakefile").write_text(text)

    proc = snakemake(tmp_path, snakefile=None)
    ran = set(executed_rules(proc))
    assert {"swgpu_download", "swgpu_makedb", "swgpu_search", "swgpu_merge", "swgpu_gather_hits", "best_hits"} <= ran
    best = (tmp_path / "annotation" / "best_hits.tsv").read_text().splitlines()
    assert len(best) == 3  # one best hit per query
    results = tmp_path / prefix / "results"
    assert (results / "sample" / "hits.tsv").is_file()  # swgpu's documented path, under the prefix
    assert prefix == "" or not (tmp_path / "results").exists()
    assert planned_jobs(snakemake(tmp_path, "-n", snakefile=None)) == {}
    # `refresh` writes where the download rule does, under the prefix too.
    proc = snakemake(tmp_path, "swgpu_refresh", snakefile=None)
    assert "unchanged" in proc.stdout + proc.stderr
    assert planned_jobs(snakemake(tmp_path, "-n", snakefile=None)) == {}
