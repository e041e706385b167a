"""Hand each concurrent GPU job its own device.

A workflow engine counts GPUs (Snakemake's ``--resources gpu=2`` lets two GPU jobs run at
once) but does not say *which* GPU a job gets, so without help both jobs land on device 0.
:func:`claim_gpu` picks a free device slot: one lock file per visible device under a
shared directory, held with ``fcntl.flock``. The kernel drops a flock when the holding
process exits for any reason, so a crashed or killed job frees its slot with no clean-up.

When ``CUDA_VISIBLE_DEVICES`` is already set (by SLURM, another scheduler or the user)
that choice is honoured as it is: the scheduler has already isolated the devices.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .cuda_driver import gpu_models
from .errors import SwgpuError

ENV = "CUDA_VISIBLE_DEVICES"
# nvidia-smi numbers GPUs in PCI bus order, CUDA by default fastest first: make CUDA
# count like nvidia-smi so that a slot index names the device it locked.
ORDER_ENV, ORDER = "CUDA_DEVICE_ORDER", "PCI_BUS_ID"


class NoFreeSlot(SwgpuError):
    """Every device slot stayed busy for the whole waiting time."""


@dataclass(frozen=True)
class Slot:
    """The device a job got; ``fd`` is the open lock file (None when nothing was locked)."""

    device: str | None
    fd: int | None


def host_devices() -> list[str]:
    """Indices of the host's GPUs as nvidia-smi numbers them (PCI bus order): one per GPU in
    the kernel driver's list (:func:`swgpu_core.cuda_driver.gpu_models`, a few small reads)
    where it can be read, else :func:`nvidia_smi_devices` (also where a GPU has MIG instances).

    Why: ``nvidia-smi -L`` takes 0.06 s alone, and longer beside another process that
    initialises CUDA, which is when a workflow's first GPU jobs start: beside one another and
    beside Snakemake's own initialisation (config gpu.hold_driver; bench/RESULTS.md)."""
    models = gpu_models()
    return [str(i) for i in range(len(models))] if models is not None else nvidia_smi_devices()


def nvidia_smi_devices() -> list[str]:
    """Indices of the GPUs ``nvidia-smi -L`` lists (none when it is absent or fails)."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    try:
        out = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [str(i) for i, _ in enumerate(line for line in out.splitlines() if line.startswith("GPU "))]


def _try_lock(path: Path) -> int | None:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()} {os.uname().nodename}\n".encode())
    return fd


def acquire(slot_dir: str | os.PathLike, devices: list[str] | None = None, *, wait: float | None = None, poll: float = 0.2) -> Slot:
    """Lock a free device slot and return it; the caller releases it with :func:`release`.

    ``devices`` defaults to every GPU of the host (:func:`host_devices`). With ``CUDA_VISIBLE_DEVICES``
    already set, or no device at all, nothing is locked. ``wait`` (seconds) bounds the
    wait for a free slot; None waits for ever.
    """
    if os.environ.get(ENV) is not None:
        return Slot(os.environ[ENV], None)
    pool = host_devices() if devices is None else devices
    if not pool:
        return Slot(None, None)
    directory = Path(slot_dir)
    directory.mkdir(parents=True, exist_ok=True)
    deadline = None if wait is None else time.monotonic() + wait
    start = os.getpid() % len(pool)  # spread first attempts so jobs rarely collide
    while True:
        for k in range(len(pool)):
            device = pool[(start + k) % len(pool)]
            fd = _try_lock(directory / f"gpu-{device}.lock")
            if fd is not None:
                return Slot(device, fd)
        if deadline is not None and time.monotonic() >= deadline:
            raise NoFreeSlot(f"{directory}: all {len(pool)} GPU slots stayed busy for {wait:g} s")
        time.sleep(poll)


def release(slot: Slot) -> None:
    if slot.fd is not None:
        os.close(slot.fd)  # closing the only descriptor drops the flock


@contextmanager
def claim_gpu(slot_dir: str | os.PathLike, devices: list[str] | None = None, *, wait: float | None = None) -> Iterator[str | None]:
    """Hold a device slot for the ``with`` block and point ``CUDA_VISIBLE_DEVICES`` at it.

    Yields the device (None without a GPU, in which case the environment is untouched).
    The previous ``CUDA_VISIBLE_DEVICES`` is restored on exit.
    """
    slot = acquire(slot_dir, devices, wait=wait)
    previous = {k: os.environ.get(k) for k in (ENV, ORDER_ENV)}
    if slot.fd is not None:
        os.environ[ENV] = slot.device
        os.environ.setdefault(ORDER_ENV, ORDER)
    try:
        yield slot.device
    finally:
        for key, value in previous.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        release(slot)
