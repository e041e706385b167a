"""The workflow through SLURM with the profile in workflow/profiles/slurm, by the documented
command, on the project's own one-node cluster (``scripts/slurm_single_node.sh``).

Needs Debian's slurm-wlm and munge; skipped where they are not installed. When SLURM is
installed but not running, the tests start the one-node cluster (as root) and stop it
afterwards. That cluster has no accounting database: the profile's status checks must work
without one. Its stand-in GPUs are device nodes, so SLURM sets CUDA_VISIBLE_DEVICES.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from workflow_util import BIN, REPO, env, planned_jobs, small_inputs, write_config

pytestmark = pytest.mark.slow

SCRIPT = REPO / "scripts" / "slurm_single_node.sh"
# The command of workflow/profiles/slurm/config.yaml and config/README.md, as a user types it.
DOCUMENTED = ["snakemake", "--workflow-profile", "workflow/profiles/slurm", "--jobs", "4"]


def _slurm_ready() -> bool:
    """An idle (or partly busy) node that offers gres gpu."""
    try:
        out = subprocess.run(["sinfo", "-h", "-o", "%T %G"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return any(line.split()[0].rstrip("*") in ("idle", "mixed") and "gpu" in line for line in out.splitlines() if line.split())


@pytest.fixture(scope="module")
def slurm() -> Iterator[None]:
    """A running SLURM with a gpu gres: the one found, or the script's, started and stopped here."""
    if not all(shutil.which(tool) for tool in ("slurmctld", "slurmd", "sbatch", "sinfo", "munged")):
        pytest.skip("slurm-wlm and munge are not installed (apt-get install -y slurm-wlm munge)")
    if _slurm_ready():
        yield
        return
    if subprocess.run(["scontrol", "ping"], capture_output=True, timeout=30).returncode == 0:
        pytest.skip("a running SLURM without an idle node offering gres gpu (left as it is)")
    if os.geteuid() != 0:
        pytest.skip("SLURM is not running and starting it needs root (sudo scripts/slurm_single_node.sh start)")
    config = {name: _read(Path("/etc/slurm") / name) for name in ("slurm.conf", "gres.conf")}
    subprocess.run(["bash", str(SCRIPT), "start", "2"], check=True, capture_output=True, timeout=180)
    try:
        yield
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop"], check=True, capture_output=True, timeout=120)
        # stop undoes start: no daemon or job step left, the machine's configuration back.
        left = [name for name in ("slurmctld", "slurmd", "slurmstepd") if subprocess.run(["pgrep", "-x", name]).returncode == 0]
        assert not left and not Path("/run/swgpu-slurm").exists(), left
        assert {name: _read(Path("/etc/slurm") / name) for name in config} == config


def _read(path: Path) -> bytes | None:
    return path.read_bytes() if path.exists() else None


def test_a_job_that_asks_for_a_gpu_sees_its_device_in_cuda_visible_devices(slurm, tmp_path):
    script = tmp_path / "job.sh"
    script.write_text('#!/bin/sh\necho "CVD=${CUDA_VISIBLE_DEVICES-unset}"\n')
    for gpus, expected in (("--gpus=1", r"CVD=\d"), ("--gpus=2", r"CVD=\d,\d"), (None, "CVD=unset")):
        out = tmp_path / "job.out"
        args = ["sbatch", "--wait", "--mem=100", "-o", str(out)] + ([gpus] if gpus else []) + [str(script)]
        subprocess.run(args, check=True, capture_output=True, timeout=120)
        assert re.fullmatch(expected, out.read_text().strip()), (gpus, out.read_text())


def _workflow_copy(directory: Path) -> None:
    """The repository's workflow/ beside a small config/config.yaml, as in a clone."""
    shutil.copytree(REPO / "workflow", directory / "workflow")
    db, queries = small_inputs(directory, n_subjects=80, n_queries=2)
    write_config(directory, str(db), queries, databases={"small": {"source": str(db), "chunk_residues": 10**9}})
    (directory / "config").mkdir()
    (directory / "config.yaml").rename(directory / "config" / "config.yaml")


def _run(directory: Path, *extra: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [str(BIN / DOCUMENTED[0]), *DOCUMENTED[1:], *extra], cwd=directory, env=env(slurm=True), capture_output=True, text=True, timeout=600
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(DOCUMENTED + list(extra))} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


def test_documented_command_runs_the_workflow_through_slurm_and_gpu_jobs_get_a_device(slurm, tmp_path):
    _workflow_copy(tmp_path)

    proc = _run(tmp_path, "--verbose")
    text = proc.stdout + proc.stderr
    assert "submitted with SLURM jobid" in text
    assert {"makedb", "search", "merge"} <= set(re.findall(r"^(?:local)?(?:rule|checkpoint) (\w+):$", text, re.M))
    submitted = {m.group(1): int(m.group(2)) for m in re.finditer(r"sbatch call: .*--comment rule_(\w+?)_wildcards.* --mem (\d+)", text)}
    # Cluster jobs: the database's build (--mem from the source's size, not 16 GB) and the
    # search; a batch's merge (under a second) runs where Snakemake runs.
    assert set(submitted) == {"makedb", "dbstats", "search"} and submitted["makedb"] < 1100, submitted
    assert (tmp_path / "results/small/hits.tsv").read_text().count("\n") > 0
    assert planned_jobs(_run(tmp_path, "-n")) == {}

    # With the CUDA backend the search job counts one `gpu`, is submitted with --gpus=1 and
    # runs with the device SLURM gave it in CUDA_VISIBLE_DEVICES; the search itself then
    # fails here, for the stand-in devices have no driver behind them.
    # --retries 0: the failure is expected, no need to wait for the profile's retry.
    cuda = _run(tmp_path, "--verbose", "--retries", "0", "--config", "search={'backend': 'cuda'}", check=False)
    sbatch = [line for line in (cuda.stdout + cuda.stderr).splitlines() if "sbatch call" in line and "rule_search" in line]
    assert sbatch and all("--gpus=1" in line for line in sbatch)
    # --mem from the chunk size (workflow/rules/resources.smk), not the profile's default 4000.
    assert all(int(re.search(r"--mem (\d+)", line).group(1)) < 4000 for line in sbatch)
    # With a GPU backend a search job covers the whole database (search.job_size auto): its
    # logs are batch-*.all.log; the CPU run above left chunk-level logs beside them.
    logs = list((tmp_path / "results/small/logs/search").glob("*.all.log"))
    assert logs and all(re.search(r"swgpu gpu-run: CUDA_VISIBLE_DEVICES=\d\b", log.read_text()) for log in logs), [
        log.read_text() for log in logs
    ]


class _Wildcards(dict):
    __getattr__ = dict.__getitem__


def _resources(chunk_residues: int, gpu: bool = False) -> dict:
    """workflow/rules/resources.smk's functions, with the helpers of common.smk it uses."""
    config = {"databases": {"d": {"source": "x", "chunk_residues": chunk_residues}}, "query_batch_size": 100, "search": {"top": 50}}
    namespace = {"config": config, "db_settings": lambda db: config["databases"][db], "uses_gpu": lambda: gpu}
    path = REPO / "workflow" / "rules" / "resources.smk"
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace


def test_search_job_memory_and_time_follow_from_chunk_size_and_query_batch(tmp_path):
    db = tmp_path / "db"
    db.mkdir()
    (db / "manifest.json").write_text('{"n_residues": 640000000}')
    batch = tmp_path / "batch.fasta"
    batch.write_text(">q\n" + "A" * 30000 + "\n")
    chunk = _Wildcards(db="d", batch="0000", chunk="0")
    inputs = SimpleNamespace(db=str(db), batch=str(batch))

    small, large = _resources(4_000_000), _resources(64_000_000)
    mem_small, mem_large = small["search_mem_mb"](chunk, inputs), large["search_mem_mb"](chunk, inputs)
    # A 64 M-residue chunk: about 1.5 GB (was 16 GB for every job); 4 M: about 1 GB.
    assert 1024 < mem_small < mem_large < 2000
    assert mem_large - mem_small == pytest.approx(8 * 60_000_000 / 2**20, abs=2)
    # A whole-database job holds one chunk at a time, but scans all of them.
    whole = _Wildcards(db="d", batch="0000")
    assert large["search_mem_mb"](whole, inputs) == mem_large
    assert large["search_runtime"](whole, inputs, 2) > large["search_runtime"](chunk, inputs, 2)

    # Time: grows with the batch's residues and the chunk's; shorter with threads or a GPU.
    t_small, t_large = small["search_runtime"](chunk, inputs, 2), large["search_runtime"](chunk, inputs, 2)
    assert 10 <= t_small < t_large
    assert large["search_runtime"](chunk, inputs, 8) < t_large
    assert _resources(64_000_000, gpu=True)["search_runtime"](chunk, inputs, 2) < t_large
    batch.write_text(">q\n" + "A" * 300000 + "\n")
    assert large["search_runtime"](chunk, inputs, 2) > t_large
    # Before the batch and the database exist (dry run), an estimate from the config.
    missing = SimpleNamespace(db=str(tmp_path / "none"), batch=str(tmp_path / "none.fasta"))
    assert large["search_mem_mb"](chunk, missing) == mem_large
    assert large["search_runtime"](chunk, missing, 2) >= 10


def test_makedb_job_memory_follows_from_the_source_size(tmp_path):
    """The build's peak (about 2.4 bytes per residue and 70 per sequence, measured) from
    the downloaded source: a small database asks for about 1 GB, not 16 for every build."""
    namespace = _resources(64_000_000)
    mem = lambda path: namespace["makedb_mem_mb"](_Wildcards(db="d"), SimpleNamespace(fasta=str(path)))  # noqa: E731
    small, large = tmp_path / "small.fasta", tmp_path / "large.fasta"
    small.write_bytes(b">a\n" + b"A" * 1000 + b"\n")
    large.write_bytes(b">a\n" + b"A" * 100 * 2**20 + b"\n")
    assert mem(tmp_path / "not-yet.fasta") == 1024  # a dry run, before the download
    assert 1024 < mem(small) < 1100 < 1024 + 250 < mem(large) < 1024 + 400
    (tmp_path / "large.fasta.gz").write_bytes(large.read_bytes()[: 25 * 2**20])  # counted as 4 x its size
    assert mem(tmp_path / "large.fasta.gz") == pytest.approx(mem(large), abs=2)
