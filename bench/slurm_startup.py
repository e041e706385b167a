"""Where the time of a SLURM job of the workflow goes, on the project's one-node cluster.

    sudo scripts/slurm_single_node.sh start
    python bench/slurm_startup.py [--reps 3]
    sudo scripts/slurm_single_node.sh stop

Prints one JSON object:
- ``components``: medians of the pieces every cluster job pays, each timed alone:
  ``sbatch_call_s`` (the submit command), ``submit_to_start_s`` and ``start_to_end_s`` of
  an empty job (SLURM's own times, whole seconds), ``srun_step_s`` (one job step, as the
  jobstep plugin runs the rule's command under ``srun``), ``snakemake_import_s`` (Python,
  Snakemake and its plugins; a job starts Snakemake twice: the jobstep, then the rule
  under srun), ``workflow_parse_s`` (``snakemake -n`` of the finished run: parse, DAG,
  inventory) and ``swgpu_version_s`` (``swgpu --version``);
- ``jobs``: every cluster job of a small CPU run of the workflow through the documented
  command (``snakemake --workflow-profile workflow/profiles/slurm --jobs 4``): its rule,
  SLURM's submit-to-start and start-to-end times, the rule's command time (its benchmark
  file) and the difference, the job's start-up and teardown;
- ``run_s``: the whole run's wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from workflow_util import small_inputs, write_config  # noqa: E402

BIN = Path(sys.executable).absolute().parent
ENV = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")


def timed(cmd: list[str], **kw) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=ENV, **kw)
    return time.perf_counter() - start, proc


def job_times(jobid: str) -> dict[str, str]:
    """SLURM's record of a job (kept MinJobAge seconds after it ends), once it has ended."""
    for _ in range(600):
        out = subprocess.run(["scontrol", "show", "job", "-o", jobid], capture_output=True, text=True).stdout
        fields = dict(re.findall(r"(\w+)=(\S*)", out))
        if fields.get("JobState") in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"):
            return fields
        time.sleep(0.2)
    raise RuntimeError(f"SLURM job {jobid} did not end")


def seconds(fields: dict[str, str], start: str, end: str) -> float:
    return (datetime.fromisoformat(fields[end]) - datetime.fromisoformat(fields[start])).total_seconds()


def components(reps: int, run_dir: Path) -> dict[str, float]:
    samples: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(reps):
            took, proc = timed(["sbatch", "--parsable", "--mem=100", "-o", f"{tmp}/empty.out", "--wrap", "true"])
            samples.setdefault("sbatch_call_s", []).append(took)
            fields = job_times(proc.stdout.strip().split(";")[0])
            samples.setdefault("submit_to_start_s", []).append(seconds(fields, "SubmitTime", "StartTime"))
            samples.setdefault("start_to_end_s", []).append(seconds(fields, "StartTime", "EndTime"))
            step = (
                "import subprocess, time; t = time.perf_counter(); subprocess.run(['srun', '-n1', 'true']); print(time.perf_counter() - t)"
            )
            subprocess.run(
                ["sbatch", "--wait", "--mem=100", "-o", f"{tmp}/step.out", "--wrap", f"{sys.executable} -c {json.dumps(step)}"],
                check=True,
                capture_output=True,
            )
            samples.setdefault("srun_step_s", []).append(float(Path(f"{tmp}/step.out").read_text().split()[-1]))
            samples.setdefault("snakemake_import_s", []).append(timed([sys.executable, "-c", "import snakemake.api"])[0])
            samples.setdefault("workflow_parse_s", []).append(timed([str(BIN / "snakemake"), "-n", "--cores", "1"], cwd=run_dir)[0])
            samples.setdefault("swgpu_version_s", []).append(timed([str(BIN / "swgpu"), "--version"])[0])
    return {k: round(statistics.median(v), 3) for k, v in samples.items()}


def run_workflow(directory: Path) -> tuple[float, list[dict]]:
    shutil.copytree(REPO / "workflow", directory / "workflow")
    db, queries = small_inputs(directory, n_subjects=80, n_queries=2)
    write_config(directory, str(db), queries, databases={"small": {"source": str(db), "chunk_residues": 10**9}})
    (directory / "config").mkdir()
    (directory / "config.yaml").rename(directory / "config" / "config.yaml")
    # The documented command; the plugin deletes a successful job's log unless asked to keep it.
    command = [str(BIN / "snakemake"), "--workflow-profile", "workflow/profiles/slurm", "--jobs", "4", "--slurm-keep-successful-logs"]
    took, proc = timed(command, cwd=directory)
    if proc.returncode != 0:
        raise RuntimeError(proc.stdout + proc.stderr)
    jobs = []
    for log in sorted((directory / ".snakemake" / "slurm_logs").rglob("*.log")):
        rule = log.relative_to(directory / ".snakemake" / "slurm_logs").parts[0].removeprefix("rule_")
        fields = job_times(log.stem)
        # The benchmark the job wrote (its rule's benchmark: path, from the job's log).
        bench = re.search(r"^\s+benchmark: (\S+)$", log.read_text(), re.M)
        command = float((directory / bench.group(1)).read_text().splitlines()[1].split("\t")[0]) if bench else None
        wall = seconds(fields, "StartTime", "EndTime")
        jobs.append(
            {
                "rule": rule,
                "jobid": log.stem,
                "submit_to_start_s": seconds(fields, "SubmitTime", "StartTime"),
                "start_to_end_s": wall,
                "command_s": command,
                "overhead_s": None if command is None else round(wall - command, 3),
            }
        )
    return took, jobs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run_s, jobs = run_workflow(Path(tmp))
        result = {"run_s": round(run_s, 2), "components": components(args.reps, Path(tmp)), "jobs": jobs}
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
