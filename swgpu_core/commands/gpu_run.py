"""``swgpu gpu-run --slot-dir DIR -- COMMAND ...``: run a command on a GPU of its own.

Claims a free device slot (see :mod:`swgpu_core.gpu_slots`), sets ``CUDA_VISIBLE_DEVICES``
and *replaces itself* with the command, which inherits the lock: the slot is held exactly
as long as the command lives, and freed by the kernel however it ends.
"""

from __future__ import annotations

import argparse
import os
import sys

from ..errors import InputError
from ..gpu_slots import ENV, ORDER, ORDER_ENV, acquire

NAME = "gpu-run"
HELP = "run a command with CUDA_VISIBLE_DEVICES set to a free GPU slot (one lock file per device)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--slot-dir", required=True, help="directory of the per-device lock files, shared by all jobs of a host")
    parser.add_argument(
        "--devices", help="comma-separated device indices to hand out (default: every GPU of the host, as nvidia-smi lists them)"
    )
    parser.add_argument("--wait", type=float, help="give up after this many seconds without a free slot (default: wait)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command, after '--'")


def run(args: argparse.Namespace) -> int:
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise InputError("no command given (usage: swgpu gpu-run --slot-dir DIR -- COMMAND ...)")
    devices = [d.strip() for d in args.devices.split(",") if d.strip()] if args.devices else None
    slot = acquire(args.slot_dir, devices, wait=args.wait)
    env = dict(os.environ)
    if slot.fd is not None:  # a slot was locked (not a scheduler's or the user's choice)
        env[ENV] = slot.device
        env.setdefault(ORDER_ENV, ORDER)
        os.set_inheritable(slot.fd, True)
    print(f"swgpu gpu-run: {ENV}={slot.device if slot.device is not None else '(no GPU)'}", file=sys.stderr, flush=True)
    try:
        os.execvpe(command[0], command, env)
    except OSError as exc:
        raise InputError(f"cannot run {command[0]}: {exc.strerror}") from None
