"""Which GPUs a search runs on where none are named: pure rules, standard library only.

Light on purpose: ``swgpu`` applies them before CUDA is initialised, to show CUDA only the
GPUs a search may take (:func:`swgpu_core.commands.devices_in`), where an import of numpy
would hold ``cuInit`` back; it can then only bound the work from file sizes
(:func:`cells_bound`). :func:`swgpu_core.api.search` applies them to the work itself. Both
rules grow with the work, so the GPUs the search takes are among those shown.
"""

from __future__ import annotations

import os
import stat

#: the work (query residues x database residues) a fast search takes per GPU where its GPUs are
#: not named, and the most GPUs it then takes (:func:`fast_device_count`)
FAST_CELLS_PER_GPU = 8e13
FAST_MAX_GPUS = 2
#: an exact search's work that one GPU scans in the time a further GPU costs to set up
#: (:func:`exact_device_count`)
EXACT_GPU_COST_CELLS = 1e12


def fast_device_count(cells: float, visible: int) -> int:
    """How many of the ``visible`` GPUs a fast search of ``cells`` (query residues x database
    residues) runs on where its GPUs are not named: one per :data:`FAST_CELLS_PER_GPU`, at least
    one and at most :data:`FAST_MAX_GPUS`.

    Why not as many as the exact search: each further GPU is set up (its context, 0.12-0.16 s,
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


def exact_device_count(cells: float, visible: int) -> int:
    """How many of the ``visible`` GPUs an exact search of ``cells`` (query residues x database
    residues) runs on where its GPUs are not named: the most ``k`` whose last GPU still saves
    time, that is ``cells >= EXACT_GPU_COST_CELLS * k * (k - 1)``; at least one.

    Why: the scan divides among the GPUs, about ``cells / (R k)`` seconds on ``k`` GPUs of ``R``
    cells per second each, but each further GPU costs about ``c`` seconds of its own before it
    scans: ``cuInit`` (about 0.2 s per visible GPU), its context (0.12 s, made while the driver
    does little else) and its set-up. The ``k``-th GPU saves ``cells / R * (1/(k-1) - 1/k)``
    and costs ``c``, so it pays where ``cells >= c R k (k - 1)``; :data:`EXACT_GPU_COST_CELLS`
    is ``c R``, 0.25 s at an H200's 4e12 cells per second. Measured on two H200s at 9f1b66f
    (bench/RESULTS.md, sixteenth session; process wall, one GPU against two):

    * uniprot20k x 20 queries (3.8e11 cells): 0.89 s against 1.17 s: one GPU;
    * bench200M x 20 queries (8.4e12 cells): 2.72 s against 2.08 s: two (the rule: three);
    * bench200M x 500 queries (4.9e13 cells): 13.08 s against 7.25 s (the rule: seven).
    """
    k = 1
    while k < visible and cells >= EXACT_GPU_COST_CELLS * (k + 1) * k:
        k += 1
    return k


def device_count(mode: str, cells: float, visible: int) -> int:
    """How many of the ``visible`` GPUs a search in ``mode`` ("exact" or "fast") of ``cells``
    takes where its GPUs are not named."""
    return fast_device_count(cells, visible) if mode == "fast" else exact_device_count(cells, visible)


def cells_bound(db: str, query: str) -> float | None:
    """At least the cells (query residues x database residues) of a search of the FASTA file
    ``query`` against the database folder ``db``, from their sizes alone: the database keeps one
    byte per residue (``residues.u8``), and a plain FASTA file takes at least one byte per
    residue. None where that cannot be known: a gzip or streamed query, a missing file."""
    try:
        residues = os.stat(os.path.join(db, "residues.u8")).st_size
        info = os.stat(query)
        if not stat.S_ISREG(info.st_mode):
            return None
        with open(query, "rb") as fh:
            compressed = fh.read(2) == b"\x1f\x8b"  # gzip or bgzip, as swgpu_core.fasta reads them
    except OSError:
        return None
    if compressed:
        return None
    return float(residues) * info.st_size
