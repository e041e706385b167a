"""The workflow through SLURM with the profile in workflow/profiles/slurm.

Needs a running SLURM with a node that offers gres "gpu", as
``scripts/slurm_single_node.sh start`` sets up on a single machine (as root, with
Debian's slurm-wlm and munge); skipped otherwise. The single-node setup has no job
accounting database, so job states come from squeue.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from workflow_util import REPO, executed_rules, planned_jobs, small_inputs, snakemake, write_config

pytestmark = pytest.mark.slow


def _slurm_ready() -> bool:
    if shutil.which("sinfo") is None or shutil.which("sbatch") is None:
        return False
    try:
        out = subprocess.run(["sinfo", "-h", "-o", "%T %G"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return any(line.split()[0].rstrip("*") in ("idle", "mixed") and "gpu" in line for line in out.splitlines() if line.split())


@pytest.mark.skipif(not _slurm_ready(), reason="no running SLURM with a gpu gres (scripts/slurm_single_node.sh start)")
def test_workflow_runs_through_slurm_and_gpu_jobs_request_a_gpu(tmp_path):
    db, queries = small_inputs(tmp_path, n_subjects=80, n_queries=2)
    write_config(tmp_path, str(db), queries, databases={"small": {"source": str(db), "chunk_residues": 10**9}})
    profile = ["--workflow-profile", str(REPO / "workflow/profiles/slurm")]
    fast = ["--slurm-status-command", "squeue", "--slurm-init-seconds-before-status-checks", "1"]

    proc = snakemake(tmp_path, *profile, *fast)
    text = proc.stdout + proc.stderr
    assert "submitted with SLURM jobid" in text
    assert {"makedb", "search", "merge"} <= set(executed_rules(proc))
    assert (tmp_path / "results/small/hits.tsv").read_text().count("\n") > 0
    assert planned_jobs(snakemake(tmp_path, *profile, "-n")) == {}

    # With the CUDA backend the search job counts one `gpu` and is submitted with a GPU
    # request; it then fails here, for this machine has no GPU (the stand-in devices of
    # scripts/slurm_single_node.sh only satisfy the scheduler).
    cuda = snakemake(tmp_path, *profile, *fast, "--verbose", "--config", "search={'backend': 'cuda'}", check=False)
    sbatch = [line for line in (cuda.stdout + cuda.stderr).splitlines() if "sbatch call" in line and "search" in line]
    assert sbatch and all("--gpus=1" in line for line in sbatch)
