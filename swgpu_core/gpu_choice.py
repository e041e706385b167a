"""Which GPUs a fast search runs on where none are named: a pure rule, standard library only.

Light on purpose: ``swgpu`` reads :data:`FAST_MAX_GPUS` before CUDA is initialised, to show
CUDA only the GPUs a fast search may take (:func:`swgpu_core.commands.devices_in`), where an
import of numpy would hold ``cuInit`` back. :func:`swgpu_core.api.search` applies the rule.
"""

from __future__ import annotations

#: the work (query residues x database residues) a fast search takes per GPU where its GPUs are
#: not named, and the most GPUs it then takes (:func:`fast_device_count`)
FAST_CELLS_PER_GPU = 8e13
FAST_MAX_GPUS = 2


def fast_device_count(cells: float, visible: int) -> int:
    """How many of the ``visible`` GPUs a fast search of ``cells`` (query residues x database
    residues) runs on where its GPUs are not named: one per :data:`FAST_CELLS_PER_GPU`, at least
    one and at most :data:`FAST_MAX_GPUS`.

    Why not every one, as the exact search: each further GPU is set up (its context, 0.12-0.16 s,
    and its seed tables) before the candidate stage starts, and the one host thread that drives
    them all builds the task lists of every run, so the stage cannot end sooner than that thread's
    work, about two thirds of a one-GPU search's time. Measured on H200s (the scan as the
    command reports it, and the process's wall; bench/RESULTS.md, fourteenth session):

    * bench200M x 500 queries (4.9e13 cells): scan 0.565 s on one GPU, 0.685 s on two, 0.895 s
      on four;
    * four times the queries (2.0e14 cells): 1.77-2.39 s on one, 1.39-1.63 s on two;
    * eight times (3.9e14 cells): 3.48-3.55 s on one, 2.37-2.45 s on two, 2.29-2.34 s on four,
      whose wall was the longer (7.48-7.93 s against 7.23-7.44 s on two).

    A line through the first two crosses one GPU's time near 7.5e13 cells."""
    return max(1, min(visible, FAST_MAX_GPUS, int(cells // FAST_CELLS_PER_GPU)))
