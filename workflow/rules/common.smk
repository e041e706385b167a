# Helpers shared by the rules: output paths, database settings, query batches, GPU use.
# They only decide *which* files and options a job gets; the work is done by `swgpu`.
#
# This file is parsed wherever Snakemake runs (a login node, a plain `pip install
# snakemake`), so it imports nothing of swgpu_core, never reads the query file (the
# batches come from the split_queries checkpoint) and never looks for GPUs: whether a
# job computes on a GPU is decided where it runs, by `swgpu gpu-run` and the backend.
# Every value that reaches a shell command goes through `{...:q}`; only the documented
# `extra` keys are pasted as they are.

import datetime
import gc
import hashlib
import json
import os
import re
import shlex
import sys
import tempfile
import threading
import urllib.parse

import yaml
from snakemake.settings.types import DeploymentMethod

# Names this invocation's `refresh` log, so that each refresh is a new job.
REFRESH_STAMP = datetime.datetime.now().strftime("%Y%m%dT%H%M%S.%f")


wildcard_constraints:
    db="|".join(re.escape(name) for name in config["databases"]),
    batch=r"\d+",
    chunk=r"\d+",


# The software of the rules under `--sdm conda`: SWGPU_ENV, named by their conda directive.
#
# envs/swgpu.yaml installs swgpu from the workflow's own source by pip paths relative to
# itself, which is how conda resolves them for `conda env create -f workflow/envs/swgpu.yaml`.
# Snakemake, though, hands conda a copy of an env file in its conda prefix (.snakemake/conda
# of the working directory, or --conda-prefix), and conda runs pip there: relative paths
# then name the source only from the repository root with the default prefix, never with
# --directory, --conda-prefix or as a module. So under --sdm conda the rules name a copy
# whose pip paths are resolved against the env file's directory, as conda does for the
# original: one result for every layout. The absolute source path is part of the copy, so
# the environment's hash follows the checkout, and two checkouts sharing a --conda-prefix
# never share an editable install. Without conda nothing is read or written.


def _absolute_pip_path(line, envs_dir):
    """`-e PATH` and `-c PATH` with PATH made absolute (against the env file's directory)."""
    option, _, path = line.partition(" ")
    if option not in ("-e", "-c") or os.path.isabs(path):
        return line
    return f"{option} {shlex.quote(os.path.normpath(os.path.join(envs_dir, path)))}"


def conda_env_file():
    """envs/swgpu.yaml, or under --sdm conda its copy with absolute pip paths, written once
    under .snakemake/swgpu/ of the working directory and named by its content, so that
    every parse (a cluster job's too) names the same file and so the same environment.
    Called while this file is parsed: `workflow.current_basedir` is workflow/rules/."""
    if DeploymentMethod.CONDA not in workflow.deployment_settings.deployment_method:
        return "../envs/swgpu.yaml"  # relative to the rule files, as Snakemake reads it
    rules_dir = workflow.current_basedir.get_path_or_uri(secret_free=True)
    envs_dir = os.path.normpath(os.path.join(rules_dir, "..", "envs"))
    source = os.path.dirname(os.path.dirname(envs_dir))
    if not (
        workflow.current_basedir.is_local
        and os.path.isfile(os.path.join(source, "pyproject.toml"))
    ):
        raise ValueError(
            f"--sdm conda installs swgpu from the workflow's own source, but {source} is "
            "not a local checkout of it: use a clone (or a module whose snakefile is a "
            "local path)"
        )
    env_file = os.path.join(envs_dir, "swgpu.yaml")
    with open(env_file) as fh:
        spec = yaml.safe_load(fh)
    for entry in spec["dependencies"]:
        if isinstance(entry, dict) and "pip" in entry:
            entry["pip"] = [_absolute_pip_path(line, envs_dir) for line in entry["pip"]]
    text = (
        f"# {env_file} with absolute pip paths (conda_env_file() in rules/common.smk)\n"
    )
    text += yaml.safe_dump(spec, sort_keys=False)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    path = os.path.abspath(os.path.join(".snakemake", "swgpu", f"swgpu-{digest}.yaml"))
    if not os.path.isfile(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with tempfile.NamedTemporaryFile(
            "w", dir=os.path.dirname(path), delete=False
        ) as fh:
            fh.write(text)
        os.replace(fh.name, path)
    return path


SWGPU_ENV = conda_env_file()


def db_settings(db):
    return config["databases"][db]


def is_remote(source):
    return urllib.parse.urlsplit(source).scheme in ("http", "https", "ftp", "file")


def source_suffix(db):
    """Keep '.gz' so that tools reading the downloaded file see what it is."""
    path = urllib.parse.urlsplit(db_settings(db)["source"]).path
    return ".fasta.gz" if path.endswith(".gz") else ".fasta"


def source_relpath(db):
    """The downloaded source, relative to the workflow's results (and module prefix)."""
    return f"results/{db}/source/{db}{source_suffix(db)}"


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def local_source(wildcards):
    """A local source is an input of its download job, so editing it re-runs its chain;
    URLs are checked by `refresh`. A source touched since its download but holding the
    same bytes (same size and SHA-256 as its .version.json records) is `ancient`, so
    that it re-runs nothing; it is hashed only in that case, once per invocation."""
    source = db_settings(wildcards.db)["source"]
    if is_remote(source):
        return []
    release = rules.download.output.release.format(
        db=wildcards.db, suffix=source_suffix(wildcards.db)
    )
    try:
        recorded = json.loads(open(release).read())
        newer = os.stat(source).st_mtime > os.stat(release).st_mtime
        same = (
            newer
            and os.stat(source).st_size == recorded["size"]
            and _sha256(source) == recorded["sha256"]
        )
    except (OSError, ValueError, KeyError, TypeError):
        same = False  # no usable record: the mtime decides, as for any input
    return [ancient(local(source))] if same else [local(source)]


def download_checks(db):
    """The configured `swgpu download` checks of one database, as separate arguments."""
    settings = db_settings(db)
    args = []
    for key in ("md5", "sha256", "checksum_url", "size"):
        if key in settings:
            args += [f"--{key.replace('_', '-')}", str(settings[key])]
    return args


def uses_gpu(backend=None):
    """A job that may compute on a GPU (`cuda`, or `auto` wherever it lands) asks for a
    `gpu` slot; with `auto` on a host without a usable GPU it runs on the CPU and says
    so in its log. `backend` defaults to search.backend."""
    return (backend or config["search"]["backend"]) != "cpu"


def gpu_run(backend):
    """`swgpu gpu-run ... --` before a GPU job, so concurrent jobs get different devices
    (the device is chosen when the job starts, on the host that runs it)."""
    if not uses_gpu(backend):
        return []
    args = ["swgpu", "gpu-run", "--slot-dir", config["gpu"]["slot_dir"]]
    if config["gpu"]["devices"]:
        args += ["--devices", config["gpu"]["devices"]]
    return args + ["--"]


def gpu_jobs():
    """Whether any job of this configuration may compute on a GPU: a search or, where it
    runs, an align-long job."""
    return uses_gpu() or (
        config["align_long"]["enabled"] and uses_gpu(config["align_long"]["backend"])
    )


def search_job_size():
    """`database`: one search job per query batch scans the whole database, streaming its
    chunks in-process (the GPU default: a job start costs seconds, a chunk milliseconds);
    `chunk`: one job per query batch and chunk, to spread a CPU search over cores or nodes.
    """
    size = config["search"]["job_size"]
    if size == "auto":
        return "chunk" if config["search"]["backend"] == "cpu" else "database"
    return size


def search_threads():
    """Threads of a search job; a job over the whole database also traces its batch's hits
    in the same process, so it takes the align job's threads where that asks for more.
    """
    threads = config["search"]["threads"]
    if search_job_size() == "database" and alignment_formats():
        threads = max(threads, config["align"]["threads"])
    return threads


def chunk_indices(db):
    with open(checkpoints.chunks.get(db=db).output[0]) as fh:
        return [c["index"] for c in json.load(fh)["chunks"]]


def query_batches(db):
    """Batch numbers, known once the split_queries checkpoint ran (the query file is not
    read when the workflow is parsed).

    Every input function that reaches past both checkpoints (split_queries, and chunks
    for chunk-level search jobs) calls this, which asks for both: after a checkpoint
    Snakemake re-evaluates only its direct dependents, so a job that depended on them
    only through a nested job would keep stale inputs when nothing is to be re-run there.
    """
    if search_job_size() == "chunk":
        chunk_indices(db)
    outdir = checkpoints.split_queries.get().output[0]
    return sorted(glob_wildcards(os.path.join(outdir, "batch-{batch}.fasta")).batch)


def hit_lists(db, batch):
    """The hit lists of one query batch: one covering the whole database, or one per chunk."""
    parts = (
        ["all"]
        if search_job_size() == "database"
        else [f"chunk-{k}" for k in chunk_indices(db)]
    )
    return expand(
        "results/{db}/search/batch-{batch}/{part}.npz", db=db, batch=batch, part=parts
    )


def search_hits(wildcards):
    return hit_lists(wildcards.db, wildcards.batch)


def all_search_hits(wildcards):
    """The hit lists of every query batch of one database."""
    return [
        path
        for batch in query_batches(wildcards.db)
        for path in hit_lists(wildcards.db, batch)
    ]


def merged_hits(wildcards):
    return expand(
        "results/{db}/hits/batch-{batch}.tsv",
        db=wildcards.db,
        batch=query_batches(wildcards.db),
    )


def alignment_formats():
    """What each batch's one traceback writes (its search job over the whole database, or
    its align job after chunk-level searches): the configured formats, and JSON lines for
    the report."""
    formats = list(config["align"]["formats"]) if config["align"]["enabled"] else []
    if config["report"]["enabled"] and "jsonl" not in formats:
        formats.append("jsonl")
    return formats


def search_writes_table():
    """Whether a search job over the whole database writes its batch's hits table itself
    (no merge job after it). One process selects the hits of all its outputs with the same
    options, so where the table and the alignments ask for different ones (merge.extra and
    align.extra differ, e.g. `--align 5` for the alignments only), a merge job writes the
    table from the saved hit list, as after chunk-level jobs."""
    return search_job_size() == "database" and (
        not alignment_formats() or config["merge"]["extra"] == config["align"]["extra"]
    )


def search_outputs(table, alignments):
    """`--out` per output of a search job over the whole database: its batch's hits table
    first (when it writes one), then each alignment file; `--outfmt` once per table in that
    order (merge.outfmt, and align.outfmt for a tsv alignment file)."""
    outs = [arg for path in [*table, *alignments] for arg in ("--out", path)]
    formats = [config["merge"]["outfmt"]] if table else []
    if "tsv" in alignment_formats():
        formats.append(config["align"]["outfmt"])
    return outs + [arg for fmt in formats for arg in ("--outfmt", fmt)]


def report_alignments(wildcards):
    return expand(
        "results/{db}/alignments/batch-{batch}.jsonl",
        db=wildcards.db,
        batch=query_batches(wildcards.db),
    )


def plan_json(wildcards):
    return (
        [f"results/{wildcards.db}/plan/plan.json"] if config["plan"]["enabled"] else []
    )


def final_targets(wildcards):
    """hits.tsv, the plots and the report of every configured database, and align-long's
    outputs: known before the queries are split, so that building the databases starts
    beside the split_queries checkpoint."""
    targets = []
    for db in config["databases"]:
        targets += [f"results/{db}/hits.tsv", f"results/{db}/dbstats/lengths.png"]
        if config["plan"]["enabled"]:
            targets.append(f"results/{db}/plan/plan.png")
        if config["report"]["enabled"]:
            targets.append(f"results/{db}/report.html")
    if config["align_long"]["enabled"]:
        targets += expand(
            "results/align_long/alignments.{fmt}", fmt=config["align_long"]["formats"]
        )
    return targets


def alignment_targets(wildcards):
    """Every query batch's alignment files (the batches are known after split_queries)."""
    if not config["align"]["enabled"]:
        return []
    return [
        path
        for db in config["databases"]
        for path in expand(
            "results/{db}/alignments/batch-{batch}.{fmt}",
            db=db,
            batch=query_batches(db),
            fmt=config["align"]["formats"],
        )
    ]


# align-long (rules/align_long.smk): sections and the options every job shares.
ALIGN_LONG_SECTIONS = range(config["align_long"]["sections"])


def align_long_input(key):
    """The configured query or target file (not prefixed when used as a module)."""
    settings = config["align_long"]
    if not settings["enabled"]:
        return []
    if not (settings["query"] and settings["target"]):
        raise ValueError(
            "align_long.enabled needs align_long.query and align_long.target"
        )
    return [local(settings[key])]


def align_long_options():
    """The options every align-long job shares; the merge refuses sections scanned otherwise."""
    return ["--max-alignment-length", str(config["align_long"]["max_alignment_length"])]


def release_scheduler_timers():
    """Cancel the job scheduler's pending re-evaluation timers once the run has ended.

    Snakemake's scheduler (9.x) re-checks its queue through a `threading.Timer` after each
    round, at the job rate limit's timespan (`--max-jobs-per-timespan`, 100/1s by default;
    its parser reads "200ms" as 200 minutes, so a second is the shortest). The timers are
    not daemon threads, so after the last job the process waited for the last one: up to a
    second of every run, about 1 s of 4 s for the test workflow. Only timers whose action is
    the scheduler's are cancelled (matched by name; under another Snakemake none match and
    nothing changes); they could only have woken a scheduler that has returned.
    """
    for thread in threading.enumerate():
        action = getattr(thread, "function", None)
        if isinstance(thread, threading.Timer) and getattr(
            action, "__qualname__", ""
        ).startswith("JobScheduler._schedule_reevalutation"):
            thread.cancel()


def spare_the_exit_collection():
    """Spare Snakemake's process the garbage collection Python runs over all its objects as
    it exits, where the process ends with the run (Snakemake's own command).

    Python's finalisation collects every object the collector tracks; in a Snakemake process
    (its imports, the DAG, the jobs' records) that took 0.26-0.31 s after the run's last line,
    against 0.03 s with them frozen (CPU machine, the test workflow's `gather_hits` forced, 3
    runs each; bench/RESULTS.md, twenty-third session): every run's end, and a fixed part of a
    `--resources gpu=2` run that more GPUs do not shorten. `gc.freeze()` moves them into a
    generation the collector no longer examines, so only cycles that are garbage already go
    unfinalised; everything Snakemake writes is closed by then (its metadata and locks
    explicitly, its log by `logging.shutdown`; outputs are the jobs'). Not in a process that
    goes on after the run (Snakemake's API used from a program of one's own, which would keep
    its garbage), nor in the jobs Snakemake runs itself.
    """
    command = sys.argv[0] if sys.argv else ""
    ends_with_run = os.path.basename(command) == "snakemake" or command.endswith(
        os.path.join("snakemake", "__main__.py")
    )
    if workflow.is_main_process and ends_with_run:
        gc.freeze()
