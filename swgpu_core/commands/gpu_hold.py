"""``swgpu gpu-hold --while-pid PID``: keep CUDA's driver initialised while a script runs.

Every GPU command is a process of its own, and each would initialise the driver again if
nothing held it; two starting at once on two GPUs then do it one after the other
(:func:`swgpu_core.cuda_driver.hold` gives the measurements). A job script that runs several
GPU commands in turn starts one holder first (``swgpu gpu-hold --while-pid $$ &``); it ends
by itself once process ``PID`` has gone. The workflow needs none: Snakemake starts a holder of
its own while it reads the workflow (``workflow/rules/driver.smk``). It makes
no context, so it takes no GPU memory and no device slot.
Where there is no usable driver it exits at once, with status 0: holding is an optimisation.
"""

from __future__ import annotations

import argparse

from .. import cuda_driver

NAME = "gpu-hold"
HELP = "keep CUDA's driver initialised while process PID runs (a workflow's GPU jobs then start faster)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--while-pid", type=int, required=True, help="hold for as long as this process lives")


def run(args: argparse.Namespace) -> int:
    cuda_driver.hold(args.while_pid)
    return 0
