"""Running the Snakemake workflow from tests: small inputs, a local HTTP server, job lists."""

from __future__ import annotations

import functools
import gzip
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
SNAKEFILE = REPO / "workflow" / "Snakefile"
BIN = Path(sys.executable).absolute().parent


def env(slurm: bool = False) -> dict[str, str]:
    """The environment of a workflow run: the venv's swgpu and snakemake first on PATH.

    Snakemake imports every installed executor plugin when it starts, and the SLURM plugin
    then asks ``scontrol show config``, which waits about 9 s for a controller where SLURM's
    client is installed but no cluster runs (as on the development machine between the SLURM
    tests): a local run's Snakemake starts in 12 s instead of 3. So local runs get an empty
    SLURM configuration, which scontrol refuses at once; ``slurm=True`` (runs through SLURM)
    keeps the machine's.
    """
    e = dict(os.environ)
    e["PATH"] = f"{BIN}{os.pathsep}{e.get('PATH', '')}"
    e.pop("CUDA_VISIBLE_DEVICES", None)
    if not slurm:
        e["SLURM_CONF"] = os.devnull
    return e


def small_inputs(directory: Path, n_subjects: int = 300, n_queries: int = 3) -> tuple[Path, Path]:
    """A few hundred sequences of the bundled database and a few bundled queries."""
    with gzip.open(REPO / "resources" / "db.fasta.gz", "rt") as fh:
        records = fh.read().split(">")[1 : n_subjects + 1]
    db = directory / "db.fasta"
    db.write_text("".join(">" + r for r in records))
    queries = (REPO / "resources" / "queries.fasta").read_text().split(">")[1 : n_queries + 1]
    q = directory / "queries.fasta"
    q.write_text("".join(">" + r for r in queries))
    return db, q


def write_config(directory: Path, source: str, queries: Path | str, **overrides) -> Path:
    """A small CPU config (paths may be relative to ``directory``, the working directory)."""
    config = {
        "databases": {"small": {"source": source, "chunk_residues": 40000}},
        "queries": str(queries),
        "query_batch_size": 2,
        "search": {"backend": "cpu", "threads": 1, "top": 10},
        "plan": {"enabled": False},
        "align": {"enabled": False},
        "report": {"enabled": False},
    }
    config.update(overrides)
    path = directory / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def snakemake(directory: Path, *args: str, snakefile: Path | None = SNAKEFILE, check: bool = True) -> subprocess.CompletedProcess:
    cmd = [str(BIN / "snakemake"), *args, "--cores", "2", "--nocolor"]
    if snakefile is not None:  # --configfile takes several values: keep it last
        cmd += ["-s", str(snakefile), "--configfile", str(directory / "config.yaml")]
    proc = subprocess.run(cmd, cwd=directory, env=env(), capture_output=True, text=True, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


def copy_run(source: Path, dest: Path) -> Path:
    """A finished run's directory copied with its modification times and Snakemake's
    metadata, so that a test can change it without touching the original."""
    shutil.copytree(source, dest, symlinks=True)
    return dest


def rule_logs(directory: Path, rule: str) -> list[str]:
    """The text of every log of one rule (results/*/logs/RULE[/...].log)."""
    paths = sorted(directory.glob(f"results/*/logs/{rule}/*.log")) + sorted(directory.glob(f"results/*/logs/{rule}.log"))
    return [p.read_text() for p in paths]


def planned_jobs(proc: subprocess.CompletedProcess) -> dict[str, int]:
    """The 'Job stats' table of a (dry) run: {rule: count}; empty when nothing is to be done."""
    text = proc.stdout + proc.stderr
    if "Nothing to be done" in text:
        return {}
    table = text.split("Job stats:", 1)[1].split("total", 1)[0]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M)}


def executed_rules(proc: subprocess.CompletedProcess) -> list[str]:
    """The rules a real run executed, in the order they started."""
    text = proc.stdout + proc.stderr
    return re.findall(r"^(?:local)?(?:rule|checkpoint) (\w+):$", text, re.M)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *args, server_root: FileServer, **kwargs) -> None:
        super().__init__(*args, directory=str(server_root.root), **kwargs)

    def log_message(self, *args) -> None:
        pass


class FileServer:
    """A local HTTP server on 127.0.0.1 serving one directory (no internet in tests).

    ``root`` may be changed while it runs: a test that copies a finished run points the
    same URL at its own copy of the served files.
    """

    def __init__(self, root: Path):
        self.root = root
        handler = functools.partial(_QuietHandler, server_root=self)
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
