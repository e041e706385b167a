"""The workflow on a GPU: search jobs take a `gpu` slot, compute on the device under
`swgpu gpu-run` (scan and traceback in one job per batch), and give the hits and
alignments of a CPU run (chunk-level search jobs and align jobs).

Device command (integrator): ``SWGPU_REQUIRE_GPU=1 python -m pytest -q tests/test_workflow_gpu.py``
"""

from __future__ import annotations

import pytest

from workflow_util import executed_rules, rule_logs, small_inputs, snakemake, write_config

pytestmark = [pytest.mark.gpu, pytest.mark.slow]


def _rows(path):
    return [line for line in path.read_text().splitlines() if not line.startswith("#")]


@pytest.mark.parametrize("backend", ["cuda", "auto"])
def test_gpu_workflow_equals_the_cpu_workflow(tmp_path, backend):
    runs = {}
    for name, search in (("cpu", {"backend": "cpu", "job_size": "chunk"}), ("gpu", {"backend": backend})):
        work = tmp_path / name
        work.mkdir()
        db, queries = small_inputs(work, 300, 3)
        align = {"enabled": True, "formats": ["tsv", "jsonl", "bam"]}
        write_config(
            work, str(db), queries, search={"threads": 1, "top": 10, **search}, align=align, gpu={"slot_dir": str(tmp_path / "slots")}
        )
        runs[name] = (work, snakemake(work, "--resources", "gpu=1"))
    work, proc = runs["gpu"]
    ran = executed_rules(proc)
    # one job per batch (job_size auto on a GPU backend) searches the whole database and traces its hits
    assert ran.count("search") == 2 and "align" not in ran
    for log in rule_logs(work, "search"):
        assert "CUDA_VISIBLE_DEVICES=" in log and "(no GPU)" not in log and "on the CPU" not in log, log
        assert "alignments traced in" in log and "on cuda" in log, log
    cpu = runs["cpu"][0]
    assert _rows(work / "results/small/hits.tsv") == _rows(cpu / "results/small/hits.tsv")
    for batch in ("0000", "0001"):
        for fmt in ("tsv", "jsonl"):
            gpu_text = (work / f"results/small/alignments/batch-{batch}.{fmt}").read_text()
            assert gpu_text == (cpu / f"results/small/alignments/batch-{batch}.{fmt}").read_text(), (batch, fmt)
