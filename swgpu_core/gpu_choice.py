"""Which GPUs a search or align-long runs on where none are named: pure rules, standard library only.

Light on purpose: ``swgpu`` applies them before CUDA is initialised, to show CUDA only the
GPUs a command may take (:func:`swgpu_core.commands.devices_in`), where an import of numpy
would hold ``cuInit`` back; it can then only bound the work from file sizes
(:func:`cells_bound`, :func:`long_cells_bound`). :func:`swgpu_core.api.search` and
:func:`swgpu_core.api.scan_long` apply them to the work itself. The rules grow with the work,
so the GPUs a command takes are among those shown.
"""

from __future__ import annotations

import os
import stat

#: the work (query residues x database residues) a fast search takes per GPU where its GPUs are
#: not named, and the most GPUs it then takes (:func:`fast_device_count`)
FAST_CELLS_PER_GPU = 8e13
FAST_MAX_GPUS = 2
#: an exact search's work that one GPU scans in the time a further GPU costs it
#: (:func:`exact_device_count`)
EXACT_GPU_COST_CELLS = 1.4e12
#: align-long's scan: the cells one GPU scans in the time a further GPU costs the command
#: (:func:`long_device_count`)
LONG_GPU_COST_CELLS = 3e11


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
    cells per second each, but each further GPU costs about ``c`` seconds: ``cuInit`` (about
    0.2 s per visible GPU), its context (0.12 s, made while the driver does little else), its
    set-up and its later start. The ``k``-th GPU saves ``cells / R * (1/(k-1) - 1/k)`` and
    costs ``c``, so it pays where ``cells >= c R k (k - 1)``; :data:`EXACT_GPU_COST_CELLS` is
    ``c R``. Fitted to the model from searches on H200s (``R`` 4e12; bench/RESULTS.md, sixteenth
    session; process wall in seconds on 1 / 2 / 3 / 4 GPUs, medians of 2), ``c`` came out
    at 0.24-0.41 s, 0.35 s for the searches near the thresholds:

    * uniprot20k x 20 queries (3.8e11 cells): 0.85 / 1.09 / 1.49 / 1.80 s; the rule takes one;
    * bench200M x 20 of the 500 queries (1.9e12): 1.19 / 1.30 / 1.58 / 1.90 s; one;
    * bench200M x 63 of them (8.6e12): 2.83 / 2.12 / 2.18 / 2.29 s; three (two and three within the runs' spread);
    * bench200M x 125 of them (1.4e13): 4.11 / 2.80 / 2.46 / 2.53 s; three;
    * bench200M x 500 queries (4.9e13, two H200s): 13.08 / 7.25 s; six where there are.
    """
    return _paying_count(cells, visible, EXACT_GPU_COST_CELLS)


def long_device_count(cells: float, visible: int) -> int:
    """How many of the ``visible`` GPUs align-long's scan of ``cells`` (query residues x target
    residues) runs on where its GPUs are not named: the rule of :func:`exact_device_count`
    with :data:`LONG_GPU_COST_CELLS`.

    Why that constant: align-long's scan runs about ``R`` = 1.23e12 cells per second on an
    H200 (DNA); its GPUs' contexts are opened while the target is read, so a second GPU cost
    only 0.05-0.10 s, but a third and a fourth 0.25 s each (CUDA's start of four GPUs, about
    1 s). With ``c`` = 0.25 s, ``c R`` is 3e11, and the rule takes two GPUs for 10^12 cells and
    six for 10^13. Measured (bench/RESULTS.md, thirty-sixth session; DNA, 10^8 target residues,
    a planted copy of the query, 200 alignments; process wall on 1 / 2 / 4 H200s, medians of 2):

    * a 10^4 query (1e12 cells): 2.03 / 1.68 / 1.99 s; the rule takes two;
    * a 3 x 10^4 query (3e12): 5.44 / 3.63 / 3.56 s; three;
    * a 10^5 query (1e13): 101.4 / 55.4 s on another host (the traceback of its 200 alignments
      divides too); six where there are.

    Only the scan counts here, so a traceback that dominates (a long query's many long
    alignments) gains more than the rule assumes, never less: it may take too few GPUs, not
    too many. A slower GPU (an H100) scans fewer cells in ``c``, so the rule is cautious there too."""
    return _paying_count(cells, visible, LONG_GPU_COST_CELLS)


def _paying_count(cells: float, visible: int, cost_cells: float) -> int:
    """The most ``k`` of ``visible`` whose ``k``-th GPU still pays for itself: ``cells >= cost_cells
    * k * (k - 1)``; at least one."""
    k = 1
    while k < visible and cells >= cost_cells * (k + 1) * k:
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
    except OSError:
        return None
    size = _plain_size(query)
    return None if size is None else float(residues) * size


def long_cells_bound(query: str, target: str) -> float | None:
    """At least the cells of align-long's scan of the FASTA files ``query`` and ``target``
    from their sizes alone (a plain FASTA file takes at least one byte per residue); None where
    either cannot tell."""
    sizes = [_plain_size(path) for path in (query, target)]
    return None if None in sizes else float(sizes[0]) * sizes[1]  # type: ignore[operator]


def _plain_size(path: str) -> int | None:
    """The size of the plain (not compressed) regular file ``path``: at least its residues;
    None for a gzip or bgzip file (as swgpu_core.fasta reads them), a stream or a missing file."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            return None
        with open(path, "rb") as fh:
            compressed = fh.read(2) == b"\x1f\x8b"
    except OSError:
        return None
    return None if compressed else info.st_size
