"""Set-up a process does once per GPU, whichever thread comes to it first.

The command line warms a GPU up in a background thread (:func:`swgpu_core.engine.warm_up`)
while the command reads its inputs, and the search's own worker then does the same steps
on the same GPU: loading the selection routines and pinning the upload ring. Where the
command's thread came first (a small database, read before the warm-up got there), both
did them at once: the driver does one such call at a time for the process, so each waited
for the other's, and the ring was pinned twice. On one H100, uniprot20k x 20, the search's
first launch then came 0.06-0.08 s after its scan began instead of 0.005 s, in 5 of 10 runs
(bench/RESULTS.md, twenty-first session).

:class:`PerDevice` makes the second comer wait for the first's work instead of repeating
it: :meth:`PerDevice.once` for what is done for the whole process (CuPy keeps a routine
loaded per device), :meth:`PerDevice.offer` and :meth:`PerDevice.take` for a thing that
belongs to one user at a time (a ring of pinned buffers, which one worker's uploads cycle
through): the warm-up offers one, the first worker to need one takes it, and the warm-up
makes none once a worker has made its own. Standard library only, so that it is tested
without a GPU.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class PerDevice(Generic[T]):
    """Per device: a step done once (:meth:`once`), or one thing made ahead for the first
    taker (:meth:`offer`, :meth:`take`); an instance serves one of the two. Thread-safe; each
    device has its own lock, so two GPUs are set up at once."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[int, threading.Lock] = {}
        self._done: set[int] = set()  # once: the step has completed; offer/take: a taker has come
        self._spare: dict[int, T] = {}

    def _lock(self, device: int) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(device, threading.Lock())

    def once(self, device: int, step: Callable[[], object]) -> bool:
        """Run ``step`` for ``device`` unless it has completed in this process; a caller that
        comes while another runs it waits for that one. Whether it ran in this call. A step
        that raises is not done: the next caller runs it again (and meets the error itself)."""
        with self._lock(device):
            if device in self._done:
                return False
            step()
            self._done.add(device)
            return True

    def offer(self, device: int, make: Callable[[], T]) -> bool:
        """Make one for ``device``'s first taker, unless a taker has already come (and made
        its own); a taker that comes meanwhile waits for it. Whether one was made."""
        with self._lock(device):
            if device in self._done or device in self._spare:
                return False
            self._spare[device] = make()
            return True

    def take(self, device: int, make: Callable[[], T]) -> T:
        """The one offered for ``device`` (waiting while it is being made), else a new one from
        ``make``. Each offered one goes to one taker only."""
        with self._lock(device):
            self._done.add(device)
            found = self._spare.pop(device, None)
        return found if found is not None else make()
