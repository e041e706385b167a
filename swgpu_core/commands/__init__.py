"""Subcommands of the ``swgpu`` CLI, one module each (see :mod:`swgpu_core.cli`).

:data:`GPU_COMMANDS` names the commands that may use a GPU in their own process (each calls
``_options.start_gpu`` first thing): for them ``swgpu`` starts CUDA's driver initialisation
before it even parses the arguments (:mod:`swgpu_core.cuda_driver`). Not for the others:
``gpu-run`` hands a GPU to the command it turns into, and a driver initialised in it would
only compete with that command's (and with the other jobs' starting beside it).
``tests/test_engine.py`` keeps this set and the modules in step.

:func:`devices` says which GPUs such a command uses, from its ``--devices`` or its default
(:data:`DEFAULT_DEVICES`); ``swgpu`` reads that from the arguments before it parses them
(:func:`devices_in`), so that CUDA initialises only those (:func:`swgpu_core.cuda_driver.show_only`).
Standard library only: this module is imported before any command.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..errors import InputError
from ..gpu_choice import FAST_MAX_GPUS, cells_bound, device_count, long_cells_bound, long_device_count

GPU_COMMANDS = frozenset({"search", "align", "pairs", "align-long", "plan"})

#: the GPUs each of :data:`GPU_COMMANDS` uses where ``--devices`` names none (None: every visible one,
#: of which a search or align-long's scan takes as many as its size pays for, ``gpu_choice``)
DEFAULT_DEVICES: dict[str, list[int] | None] = {"search": None, "align": [0], "pairs": [0], "align-long": None, "plan": [0]}
#: options of each command that :func:`devices_in` reads, besides ``--devices``
_SIZE_OPTIONS = {"search": ("--mode", "--db", "--query"), "align-long": ("--query", "--target", "--section")}


def parse_index_list(spec: str, option: str, limit: int | None = None) -> list[int]:
    """``"0,2-4"`` -> ``[0, 2, 3, 4]``; each index below ``limit`` when given."""
    out: list[int] = []
    for part in spec.split(","):
        part = part.strip()
        lo, sep, hi = part.partition("-")
        try:
            first, last = (int(lo), int(hi)) if sep else (int(part), int(part))
        except ValueError:
            raise InputError(f"{option} {spec!r}: {part!r} is not an index or a range like 2-4") from None
        if first < 0 or last < first:
            raise InputError(f"{option} {spec!r}: bad range {part!r}")
        if limit is not None and last >= limit:
            raise InputError(f"{option} {spec!r}: index {last} out of range (there are {limit})")
        out.extend(range(first, last + 1))
    if len(set(out)) != len(out):
        raise InputError(f"{option} {spec!r}: an index is listed twice")
    return out


def devices(command: str, spec: str | None) -> list[int] | None:
    """The GPUs ``command`` uses (CUDA's numbering as the process started): its ``--devices``
    ``spec`` where given, else its default (None: every visible one)."""
    return parse_index_list(spec, "--devices") if spec else DEFAULT_DEVICES[command]


def align_long_devices(query: str | None, target: str | None, section: object, ends: object) -> list[int]:
    """The GPUs align-long may take where ``--devices`` names none, from its arguments alone:
    the first GPU with ``--section`` (one section per process) or ``--ends`` (no scan); else
    the first GPUs that the most work its two files can hold pays for
    (:func:`~swgpu_core.gpu_choice.long_device_count` of
    :func:`~swgpu_core.gpu_choice.long_cells_bound`; its scan then takes as many of them as its
    work pays for), and where a file cannot tell (gzip, a stream) the first GPU: starting every
    GPU of a node would cost a one-GPU scan 0.2 s per GPU of ``cuInit`` and a context each."""
    if section or ends or not (query and target):
        return [0]
    bound = long_cells_bound(query, target)
    return [0] if bound is None else list(range(long_device_count(bound, sys.maxsize)))


def devices_in(argv: Sequence[str]) -> list[int] | None:
    """The GPUs the command line ``argv`` (``argv[0]`` the command) may use, for CUDA to be
    shown only those: its :func:`devices`; for a search that names none, the first
    :func:`~swgpu_core.gpu_choice.device_count` GPUs for the most work its files can hold
    (:func:`~swgpu_core.gpu_choice.cells_bound`; the search then takes as many of them as its
    work pays for), and where that is unknown every GPU, or for a fast search the first
    :data:`~swgpu_core.gpu_choice.FAST_MAX_GPUS`; for align-long that names none,
    :func:`align_long_devices`. Read before the command's parser exists (building it imports the command, numpy with it: 0.1-0.2 s that ``cuInit`` would
    wait for), as argparse reads the options (the last value, ``=`` or not, abbreviated or
    not); None (every GPU) where they cannot be read, which the command's parser then reports."""
    if not argv or argv[0] not in GPU_COMMANDS:
        return None
    command = argv[0]
    parser = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    for option in ("--devices", *_SIZE_OPTIONS.get(command, ())):
        parser.add_argument(option)  # only the command's own options: an abbreviation is read as its parser reads it
    if command == "align-long":
        parser.add_argument("--ends", nargs="+")
    try:
        known, _rest = parser.parse_known_args(list(argv[1:]))
        if command not in _SIZE_OPTIONS or known.devices:
            return devices(command, known.devices)
    except (InputError, argparse.ArgumentError):
        return None
    if command == "align-long":
        return align_long_devices(known.query, known.target, known.section, known.ends)
    mode = known.mode or "exact"
    bound = cells_bound(known.db, known.query) if known.db and known.query else None
    if bound is not None:
        return list(range(device_count(mode, bound, sys.maxsize)))
    return list(range(FAST_MAX_GPUS)) if mode == "fast" else None
