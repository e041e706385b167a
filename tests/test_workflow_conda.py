"""`snakemake --sdm conda`: the rules' environment installs swgpu from the workflow's own
source whatever the layout: from the repository root, with the working directory elsewhere
(--directory), with --conda-prefix, and as a module with and without `prefix:`.

Snakemake hands conda a copy of the env file in its conda prefix, where conda runs pip, so
the rules name a copy whose pip paths are absolute (conda_env_file() in common.smk). The
first test checks those paths in every layout with a dry run, which asks `conda` only about
itself (a stand-in answers). The second builds and uses the environment with the `conda` on
PATH (skipped without one; the reason is printed with `pytest -rs`).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from workflow_util import REPO, env, planned_jobs, small_inputs, write_config

pytestmark = pytest.mark.slow

LAYOUTS = ["root", "directory", "conda-prefix", "module", "module-prefix"]


def _repo_copy(dest: Path) -> Path:
    """The repository's tracked files (the layout of a fresh clone), for a run from its root."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    for name in files.decode().split("\0"):
        if name and (REPO / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, dest / name)
    return dest


def _layout(tmp_path: Path, layout: str) -> tuple[Path, Path, list[str]]:
    """(the workflow's source, the working directory, snakemake's arguments) of one layout;
    every layout runs the same small CPU workflow."""
    source = _repo_copy(tmp_path / "checkout") if layout == "root" else REPO
    workdir = source if layout == "root" else tmp_path / "run"
    workdir.mkdir(exist_ok=True)
    db, queries = small_inputs(workdir, n_subjects=60, n_queries=3)
    if layout.startswith("module"):
        config = yaml.safe_load((REPO / "tests" / "module_example" / "config.yaml").read_text())
        config["swgpu_prefix"] = "swgpu" if layout == "module-prefix" else ""
        (workdir / "config.yaml").write_text(yaml.safe_dump(config))
        text = (REPO / "tests" / "module_example" / "Snakefile").read_text()
        (workdir / "Snakefile").write_text(text.replace('"../../workflow/Snakefile"', json.dumps(str(source / "workflow" / "Snakefile"))))
        return source, workdir, []
    write_config(workdir, db.name, queries.name)
    args = ["--configfile", str(workdir / "config.yaml"), "--replace-workflow-config"]
    if layout == "root":
        return source, workdir, args
    args += ["-s", str(source / "workflow" / "Snakefile"), "--directory", str(workdir)]
    if layout == "conda-prefix":
        args += ["--conda-prefix", str(tmp_path / "envs")]
    return source, tmp_path, args  # run from tmp_path: --directory names the working directory


def _snakemake(cwd: Path, path: str, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    """Snakemake of this venv with PATH=`path`: no swgpu on it but the environment's."""
    e = env()  # SLURM_CONF too (workflow_util.env says why)
    e.pop("PYTHONPATH", None)
    e["PATH"] = path
    cmd = [sys.executable, "-m", "snakemake", "--sdm", "conda", "--cores", "2", "--nocolor", *args]
    return subprocess.run(cmd, cwd=cwd, env=e, capture_output=True, text=True, timeout=timeout)


def _pip_lines(env_file: Path) -> list[str]:
    spec = yaml.safe_load(env_file.read_text())
    return next(entry["pip"] for entry in spec["dependencies"] if isinstance(entry, dict))


STAND_IN_CONDA = """#!/bin/sh
# Answers only what Snakemake asks a conda about itself; builds nothing.
case "$*" in
  "info --json") echo '{"conda_prefix": "/nonexistent", "platform": "linux-64"}' ;;
  "--version") echo "conda 24.7.1" ;;
  "config --get channel_priority --json") echo '{"get": {"channel_priority": "strict"}}' ;;
  *) echo "stand-in conda cannot: $*" >&2; exit 1 ;;
esac
"""


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_rules_environment_installs_the_workflows_own_source_in_every_layout(tmp_path, layout):
    source, cwd, args = _layout(tmp_path, layout)
    stand_in = tmp_path / "stand-in"
    stand_in.mkdir()
    (stand_in / "conda").write_text(STAND_IN_CONDA)
    (stand_in / "conda").chmod(0o755)
    proc = _snakemake(cwd, f"{stand_in}{os.pathsep}/usr/bin:/bin", "-n", *args)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0, text
    assert {"download", "makedb"} <= {re.sub("^swgpu_", "", rule) for rule in planned_jobs(proc)}
    # One environment for every rule: the copy of workflow/envs/swgpu.yaml written for this run.
    named = set(re.findall(r"Conda environment (\S+) will be created", text))
    assert len(named) == 1, text
    workdir = source if layout == "root" else tmp_path / "run"
    env_file = (workdir / named.pop()).resolve()
    assert env_file.parent == (workdir / ".snakemake" / "swgpu").resolve()
    # conda runs pip in the directory of the copy it is given (the conda prefix): only
    # absolute paths name the source from there, and they name this workflow's source.
    pip = [shlex.split(line) for line in _pip_lines(env_file)]
    assert pip == [["-c", str(source / "constraints.txt")], ["-e", str(source)]]
    # The original stays relative to itself, for `conda env create -f workflow/envs/swgpu.yaml`.
    original = source / "workflow" / "envs"
    assert [(original / shlex.split(line)[1]).resolve() for line in _pip_lines(original / "swgpu.yaml")] == [
        source / "constraints.txt",
        source,
    ]
    assert not [p for p in (workdir / ".snakemake" / "conda").glob("*") if p.is_dir()]  # a dry run builds nothing


def _real_conda() -> str | None:
    conda = shutil.which("conda")
    if conda is None:
        return None
    proc = subprocess.run([conda, "--version"], capture_output=True, text=True)
    return conda if proc.returncode == 0 and re.search(r"\d+\.\d+\.\d+", proc.stdout) else None


@pytest.mark.skipif(_real_conda() is None, reason="no conda on PATH: `snakemake --sdm conda` not run with a real conda")
@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_real_conda_builds_the_environment_and_every_job_runs_in_it(tmp_path, layout):
    """The workflow under --sdm conda with the conda on PATH (its channels as configured):
    every job runs the environment's swgpu, which is the workflow's own source, editable."""
    source, cwd, args = _layout(tmp_path, layout)
    conda_bin = str(Path(_real_conda()).parent)
    # PATH: conda, and the system, but no venv: a job finds swgpu only in the environment.
    proc = _snakemake(cwd, f"{conda_bin}{os.pathsep}/usr/bin:/bin", *args, timeout=1800)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0, text
    assert "Environment for" in text and " created (location: " in text
    workdir = source if layout == "root" else tmp_path / "run"
    results = workdir / ("swgpu" if layout == "module-prefix" else "") / "results"
    hits = next(results.glob("*/hits.tsv"))
    assert [line for line in hits.read_text().splitlines() if not line.startswith("#")]
    prefix = tmp_path / "envs" if layout == "conda-prefix" else workdir / ".snakemake" / "conda"
    (environment,) = [p for p in prefix.iterdir() if p.is_dir()]
    where = subprocess.run(
        [str(environment / "bin" / "python"), "-c", "import swgpu_core; print(swgpu_core.__file__)"],
        cwd=tmp_path,  # not the repository: its swgpu_core would be found first
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(where) == source / "swgpu_core" / "__init__.py"
