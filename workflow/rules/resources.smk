# Cluster resources of the makedb and search jobs (SLURM's --mem and --time through the
# slurm profile), from what the job holds and computes, so that small databases and chunks
# ask for little and many jobs share a node. Evaluated again just before a job is
# submitted, when its inputs exist.

import json
import math
import os

# Memory: Python, numba, CuPy and a CUDA context; then per residue of the chunk in hand.
# Measured on the CPU backend (swgpu search --chunks 0, peak RSS): 150 MB with a 1 M-residue
# chunk, 246 MB with 24 M, i.e. about 4.2 bytes per residue (memory map and working arrays);
# 8 allows for the GPU's pinned staging copy of the next chunk.
SEARCH_BASE_MB = 1024
SEARCH_BYTES_PER_RESIDUE = 8
# Time: query residues x subject residues at a rate well under what was measured (CPU:
# about 2.5 GCUPS per thread with pyopal/AVX2 here; GPU: about 3,000 on an H100, README), so
# that slower nodes finish within the request; plus start-up and reading.
SEARCH_CELLS_PER_SECOND_CPU_THREAD = 0.25e9
SEARCH_CELLS_PER_SECOND_GPU = 100e9
SEARCH_MINUTES_MIN = 10
# makedb: peak RSS measured (swgpu makedb) 70 MB for the bundled 1.7 MB FASTA, 188 MB for
# 50 k sequences of 1,000 residues (51 MB of FASTA), 261 MB for 1 M of 50 (75 MB): about
# 2.4 bytes per residue and 70 per sequence, under 3 per FASTA byte. A gzip source counts
# as 4 times its size (protein FASTA compresses about 2-4 times).
MAKEDB_BYTES_PER_FASTA_BYTE = 3
GZIP_EXPANSION = 4


def chunk_residues(db):
    """The database's chunk size in residues (config, else the schema's default)."""
    return db_settings(db).get("chunk_residues", 64000000)


def _database_residues(db_dir):
    """Residues of a built database (its manifest); None while it is not built yet."""
    try:
        with open(os.path.join(db_dir, "manifest.json")) as fh:
            return int(json.load(fh)["n_residues"])
    except (OSError, ValueError, KeyError):
        return None


def _searched_residues(wildcards, input):
    """Residues one search job scans: its chunk, or the whole database (a job without one)."""
    total = _database_residues(input.db)
    if wildcards.get("chunk") is None:
        return total if total is not None else chunk_residues(wildcards.db)
    chunk = chunk_residues(wildcards.db)
    return chunk if total is None else min(chunk, total)


def makedb_mem_mb(wildcards, input):
    """The interpreter and the build's arrays, from the source's size (the base alone
    before it is downloaded, in a dry run)."""
    try:
        size = os.path.getsize(input.fasta)
    except OSError:
        size = 0
    if str(input.fasta).endswith(".gz"):
        size *= GZIP_EXPANSION
    return SEARCH_BASE_MB + math.ceil(size * MAKEDB_BYTES_PER_FASTA_BYTE / 2**20)


def search_mem_mb(wildcards, input):
    """One chunk in memory at a time (a whole-database job too), plus the kept hits."""
    residues = min(chunk_residues(wildcards.db), _searched_residues(wildcards, input))
    hits = config["query_batch_size"] * config["search"]["top"] * 64
    return SEARCH_BASE_MB + math.ceil(
        (residues * SEARCH_BYTES_PER_RESIDUE + hits) / 2**20
    )


def search_runtime(wildcards, input, threads):
    """Minutes for query residues x searched residues; the batch file's size bounds its
    residues (before it exists, query_batch_size queries of 1,000 residues)."""
    try:
        query_residues = os.path.getsize(input.batch)
    except OSError:
        query_residues = config["query_batch_size"] * 1000
    cells = query_residues * _searched_residues(wildcards, input)
    rate = (
        SEARCH_CELLS_PER_SECOND_GPU
        if uses_gpu()
        else SEARCH_CELLS_PER_SECOND_CPU_THREAD * threads
    )
    return SEARCH_MINUTES_MIN + math.ceil(cells / rate / 60)
