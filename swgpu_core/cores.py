"""How many CPU threads a step runs on: the one place that reads ``--threads``'s 0."""

from __future__ import annotations

import os


def cpu_threads(threads: int = 0) -> int:
    """``threads``, or where it is 0 every core this process may run on: its CPU affinity, which
    a batch scheduler, a cgroup or ``taskset`` narrows (``os.cpu_count`` counts the machine's)."""
    return threads or len(os.sched_getaffinity(0))
