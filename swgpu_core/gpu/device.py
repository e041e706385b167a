"""What a CUDA device is: its count, name and geometry, asked of the CUDA runtime once.

The planner (:mod:`swgpu_core.plan`) and the kernels' launch shapes need the number of
SMs and resident threads per SM; they take them from here rather than from constants of
one GPU model. The answers are cached per device for the process.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import cupy as cp

from ..errors import BackendUnavailable
from ..plan import DeviceGeometry


def device_count() -> int:
    """CUDA devices visible to this process (raises CUDARuntimeError where the runtime fails)."""
    return int(cp.cuda.runtime.getDeviceCount())


def checked_devices(devices: Sequence[int] | None) -> list[int]:
    """``devices`` (None or empty: ``[0]``), each checked to be one this process can see; the
    scanner and the seeder take their GPUs through here, so both refuse a missing one alike."""
    ids = list(devices) if devices else [0]
    n_devices = device_count()
    bad = [d for d in ids if d < 0 or d >= n_devices]
    if bad:
        raise BackendUnavailable(f"no CUDA device {bad[0]} (this machine has {n_devices})")
    return ids


@functools.cache
def geometry(device_id: int) -> DeviceGeometry:
    """Name, SM count, threads per SM and memory of ``device_id``, read once."""
    props = cp.cuda.runtime.getDeviceProperties(device_id)
    name = props["name"]
    name = name.decode() if isinstance(name, bytes) else str(name)
    return DeviceGeometry(name, int(props["multiProcessorCount"]), int(props["maxThreadsPerMultiProcessor"]), int(props["totalGlobalMem"]))


def open_context(device_id: int) -> None:
    """Make ``device_id``'s CUDA context now (0.12-0.13 s on an H200), rather than in its first operation."""
    with cp.cuda.Device(device_id):
        cp.cuda.runtime.free(0)
