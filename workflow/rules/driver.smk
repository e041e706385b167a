# CUDA's driver held initialised for the run by a process of its own (config gpu.hold_driver).
#
# Read first, before the configuration is validated, so that the holder's initialisation
# (0.3-0.45 s on two H200s, one GPU after another) is done before the first GPU jobs start
# theirs. Only Snakemake's interpreter and ctypes: the workflow is read without swgpu_core,
# and nothing here looks for GPUs (without a usable driver the holder ends at once).

import subprocess
import sys

# The holder's program: cuInit, then it waits for the process that started it to end.
_DRIVER_HOLDER = """
import ctypes, os, time
parent = os.getppid()
try:
    held = ctypes.CDLL("libcuda.so.1").cuInit(0) == 0
except (OSError, AttributeError):  # no driver installed here
    held = False
while held and os.getppid() == parent:
    time.sleep(0.25)
"""
_DRIVER_HOLDERS = []


def start_gpu_driver_holder():
    """Start a process that initialises CUDA's driver and keeps it so while Snakemake runs:
    while one process on the host has it initialised, each GPU job's own initialisation
    takes 0.03 s instead of 0.1-0.4 s, and jobs starting together wait less for one another
    (swgpu_core.cuda_driver.hold gives the measurements). Started before the configuration
    is validated, as early as the workflow can (0.1-0.15 s earlier than after it, until
    2026-11-27): its initialisation of every GPU takes 0.3-0.45 s and may otherwise still run
    when the first jobs start theirs. A/B on two H200s, 9 interleaved rounds in two calls
    (bench/RESULTS.md): `--resources gpu=2` 10.88 against 11.61 s and 12.28 against 12.51 s
    (medians per call; faster in 6 of the 9 rounds), `gpu=1` the same; within the runs'
    spread, and it costs nothing. keep_gpu_driver_holder ends it where the configuration
    has no GPU job or turns it off. A process of its own, not a thread of
    Snakemake's (until 2026-11-27): Snakemake's process then does not tear the driver down
    when it ends, and reads the workflow beside it, not under it (two H200s, A/B: the run's
    end after its last job 0.41 -> 0.33 s, its first job's start 1.81 -> 1.47 s, medians
    of 8 runs; bench/RESULTS.md). It ends within 0.25 s of Snakemake, however that ends.
    `cuInit` creates no context and takes no GPU memory. Not in a job that Snakemake runs
    itself (a cluster job re-reads the workflow)."""
    if workflow.is_main_process:
        holder = subprocess.Popen(
            [sys.executable, "-c", _DRIVER_HOLDER],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _DRIVER_HOLDERS.append(holder)  # kept for the run: nothing waits for it


def keep_gpu_driver_holder(wanted):
    """End the holder at once unless `wanted` (config gpu.hold_driver, and a job that may
    use a GPU): the decision needs the validated configuration, the start did not."""
    if not wanted:
        while _DRIVER_HOLDERS:
            holder = _DRIVER_HOLDERS.pop()
            holder.kill()
            holder.wait()
