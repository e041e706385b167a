# Helpers shared by the rules: output paths, database settings, query batches, GPU use.
# They only decide *which* files and options a job gets; the work is done by `swgpu`.

import datetime
import functools
import json
import os
import shlex
import urllib.parse

from swgpu_core.batches import batch_name, count_batches
from swgpu_core.gpu_slots import nvidia_smi_devices

# Names this invocation's `refresh` log, so that each refresh is a new job.
REFRESH_STAMP = datetime.datetime.now().strftime("%Y%m%dT%H%M%S.%f")


def db_settings(db):
    return config["databases"][db]


def is_remote(source):
    return urllib.parse.urlsplit(source).scheme in ("http", "https", "ftp", "file")


def source_suffix(db):
    """Keep '.gz' so that tools reading the downloaded file see what it is."""
    path = urllib.parse.urlsplit(db_settings(db)["source"]).path
    return ".fasta.gz" if path.endswith(".gz") else ".fasta"


def source_path(db):
    return f"results/{db}/source/{db}{source_suffix(db)}"


def local_source(wildcards):
    """A local source is an input, so editing it re-runs its chain; URLs are checked by `refresh`."""
    source = db_settings(wildcards.db)["source"]
    return [] if is_remote(source) else [source]


def download_command(db):
    """The `swgpu download` call for one database, with its configured checks."""
    settings = db_settings(db)
    args = ["swgpu", "download", settings["source"], source_path(db), "--quiet"]
    for key in ("md5", "sha256", "checksum_url", "size"):
        if key in settings:
            args += [f"--{key.replace('_', '-')}", str(settings[key])]
    return shlex.join(args)


@functools.cache
def uses_gpu():
    """CUDA search jobs count against the `gpu` resource; `auto` does so when a GPU is visible."""
    backend = config["search"]["backend"]
    return backend == "cuda" or (backend == "auto" and bool(nvidia_smi_devices()))


def gpu_run_prefix():
    """Wrap GPU jobs in `swgpu gpu-run` so concurrent jobs get different devices."""
    if not uses_gpu():
        return ""
    args = ["swgpu", "gpu-run", "--slot-dir", config["gpu"]["slot_dir"]]
    if config["gpu"]["devices"]:
        args += ["--devices", config["gpu"]["devices"]]
    return shlex.join(args) + " --"


def chunk_indices(db):
    with open(checkpoints.chunks.get(db=db).output[0]) as fh:
        return [c["index"] for c in json.load(fh)["chunks"]]


def query_batches():
    """Batch names, counted from the query file when the workflow starts (no checkpoint:
    Snakemake then sees a changed batch file as changed input of its search jobs)."""
    n = count_batches(config["queries"], config["query_batch_size"])
    return [
        batch_name(i).removeprefix("batch-").removesuffix(".fasta") for i in range(n)
    ]


QUERY_BATCHES = query_batches()


def search_hits(wildcards):
    """Every chunk's hit list for one query batch, known once the chunk checkpoint ran."""
    return expand(
        "results/{db}/search/batch-{batch}/chunk-{chunk}.npz",
        db=wildcards.db,
        batch=wildcards.batch,
        chunk=chunk_indices(wildcards.db),
    )


def all_search_hits(wildcards):
    """The hit lists of every (query batch x chunk) of one database."""
    return expand(
        "results/{db}/search/batch-{batch}/chunk-{chunk}.npz",
        db=wildcards.db,
        batch=QUERY_BATCHES,
        chunk=chunk_indices(wildcards.db),
    )


def plan_json(wildcards):
    return (
        [f"results/{wildcards.db}/plan/plan.json"] if config["plan"]["enabled"] else []
    )


def final_targets():
    """hits.tsv, the plots, the alignments and the report of every configured database."""
    targets = []
    for db in config["databases"]:
        targets += [f"results/{db}/hits.tsv", f"results/{db}/dbstats/lengths.png"]
        if config["align"]["enabled"]:
            targets += expand(
                "results/{db}/alignments/batch-{batch}.{fmt}",
                db=db,
                batch=QUERY_BATCHES,
                fmt=config["align"]["formats"],
            )
        if config["report"]["enabled"]:
            targets.append(f"results/{db}/report.html")
    if config["align_long"]["enabled"]:
        targets += expand(
            "results/align_long/alignments.{fmt}", fmt=config["align_long"]["formats"]
        )
    return targets


# align-long (rules/align_long.smk): sections, shared options, GPU use.
ALIGN_LONG_SECTIONS = range(config["align_long"]["sections"])


def align_long_options():
    """The options every align-long job shares; the merge refuses sections scanned otherwise."""
    settings = config["align_long"]
    if settings["enabled"] and not (settings["query"] and settings["target"]):
        raise ValueError(
            "align_long.enabled needs align_long.query and align_long.target"
        )
    return (
        f"--max-alignment-length {settings['max_alignment_length']} {settings['extra']}"
    )


def align_long_gpu():
    backend = config["align_long"]["backend"]
    return backend == "cuda" or (backend == "auto" and bool(nvidia_smi_devices()))
