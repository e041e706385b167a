"""Driving the work of several GPUs from one host thread.

A device's work is a generator of steps (:meth:`swgpu_core.gpu.search.DeviceWorker.scan_steps`)
that yields each event it is about to wait for. :func:`drive` resumes whichever generator's
event has completed, so every GPU gets its next work soon after it asks for it, without a
thread per device. Pure Python (anything with ``done`` and ``synchronize()`` is an event),
so it is tested without a GPU.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from typing import Protocol

#: how often :func:`drive` looks at the events of several busy GPUs (a query's scans take milliseconds)
POLL_SECONDS = 50e-6


class Event(Protocol):
    """A point in a device's stream of work (``cupy.cuda.Event`` is one)."""

    @property
    def done(self) -> bool: ...

    def synchronize(self) -> None: ...


def drive(steps: list[Generator[Event, None, object]]) -> list:
    """Run step generators (one per GPU) to their ends from this one host thread; their results in order.

    A generator yields the event it would wait for next. Its GPU is kept fed as long as the
    host resumes it soon after that event completes, so the driver resumes any generator
    whose event is done, polling while several GPUs are busy (blocking on one event could
    leave another GPU idle behind it) and blocking when only one generator is left.
    One thread, not one per GPU: with a thread per device the host work of one device
    (CuPy calls, profiles) holds the GIL while the other's wait has ended, and the
    two-GPU search of bench200M x 500 queries ran at 1.19x of one GPU (bench/RESULTS.md).
    """
    results: list = [None] * len(steps)
    pending: dict[int, Event | None] = dict.fromkeys(range(len(steps)))
    while pending:
        ready = [k for k, ev in pending.items() if ev is None or ev.done]
        if not ready:
            if len(pending) == 1:
                ready = list(pending)
                pending[ready[0]].synchronize()
            else:
                time.sleep(POLL_SECONDS)
                continue
        for k in ready:
            try:
                pending[k] = steps[k].send(None)
            except StopIteration as stop:
                results[k] = stop.value
                del pending[k]
    return results
