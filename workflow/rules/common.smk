# Helpers shared by the rules: output paths, database settings, query batches, GPU use.
# They only decide *which* files and options a job gets; the work is done by `swgpu`.

import json
import os
import shlex
import urllib.parse

from swgpu_core.gpu_slots import nvidia_smi_devices


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
    batchdir = checkpoints.split_queries.get().output[0]
    return sorted(glob_wildcards(os.path.join(batchdir, "batch-{batch}.fasta")).batch)


def search_hits(wildcards):
    """Every (chunk x query batch) hit list of one database, known once both checkpoints ran."""
    return expand(
        "results/{db}/search/chunk-{chunk}/batch-{batch}.npz",
        db=wildcards.db,
        chunk=chunk_indices(wildcards.db),
        batch=query_batches(),
    )


def plan_json(wildcards):
    return (
        [f"results/{wildcards.db}/plan/plan.json"] if config["plan"]["enabled"] else []
    )


def alignment_outputs(db):
    return [
        f"results/{db}/alignments/alignments.{fmt}"
        for fmt in config["align"]["formats"]
    ]


def final_targets():
    targets = []
    for db in config["databases"]:
        targets += [f"results/{db}/hits.tsv", f"results/{db}/dbstats/lengths.png"]
        if config["align"]["enabled"]:
            targets += alignment_outputs(db)
        if config["report"]["enabled"]:
            targets.append(f"results/{db}/report.html")
    return targets
