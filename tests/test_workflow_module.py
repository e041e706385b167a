"""The workflow as a Snakemake module of a parent pipeline (tests/module_example/)."""

from __future__ import annotations

import shutil

import pytest

from workflow_util import REPO, executed_rules, small_inputs, snakemake

pytestmark = pytest.mark.slow


def test_parent_workflow_uses_swgpu_as_a_module(tmp_path):
    example = REPO / "tests" / "module_example"
    shutil.copy(example / "config.yaml", tmp_path / "config.yaml")
    # The parent names the module by a path relative to its own Snakefile.
    text = (example / "Snakefile").read_text().replace('"../../workflow/Snakefile"', repr(str(REPO / "workflow" / "Snakefile")).replace("'", '"'))
    (tmp_path / "Snakefile").write_text(text)
    small_inputs(tmp_path, n_subjects=60, n_queries=3)

    proc = snakemake(tmp_path, snakefile=None)
    ran = set(executed_rules(proc))
    assert {"swgpu_download", "swgpu_makedb", "swgpu_search", "swgpu_merge", "swgpu_gather_hits", "best_hits"} <= ran
    best = (tmp_path / "annotation" / "best_hits.tsv").read_text().splitlines()
    assert len(best) == 3  # one best hit per query
    assert (tmp_path / "results" / "sample" / "hits.tsv").is_file()  # swgpu's documented path
