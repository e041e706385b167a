"""Set-up a process does once per GPU, whichever thread comes to it first.

The command line warms a GPU up in a background thread (:func:`swgpu_core.engine.warm_up`)
while the command reads its inputs, and the search's own worker then does the same steps
on the same GPU: loading the scan kernels and the selection routines, and pinning the
upload ring. Where the command's thread came first (a small database, read before the
warm-up got there), both did them at once: the driver does one such call at a time for the
process, so each waited for the other's, and the ring was pinned twice. On one H100,
uniprot20k x 20, the search's first launch then came 0.06-0.08 s after its scan began
instead of 0.005 s, in 5 of 10 runs (bench/RESULTS.md, twenty-first session).

:class:`PerDevice` makes the second comer wait for the first's work instead of repeating
it: :meth:`PerDevice.once` for what is made for the whole process (the scan kernels, which
every worker of a GPU shares; CuPy keeps a routine loaded per device),
:meth:`PerDevice.offer` and :meth:`PerDevice.take` for a thing that belongs to one user at
a time (a ring of pinned buffers, which one worker's uploads cycle through): the warm-up
offers one, the first worker to need one takes it, and the warm-up makes none once a
worker has made its own. Standard library only, so that it is tested without a GPU.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")


class PerDevice(Generic[T]):
    """Per device (or any key that names one, such as a device and an arithmetic): a thing
    made once and kept (:meth:`once`), or one made ahead for the first taker (:meth:`offer`,
    :meth:`take`); an instance serves one of the two. Thread-safe; each key has its own lock,
    so two GPUs are set up at once."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[Hashable, threading.Lock] = {}
        self._made: dict[Hashable, T] = {}  # once: what was made; offer: the spare not yet taken
        self._taken: set[Hashable] = set()  # offer/take: a taker has come

    def _lock(self, key: Hashable) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())

    def once(self, key: Hashable, make: Callable[[], T]) -> T:
        """What ``make`` returned for ``key``, made by the first caller in this process; a
        caller that comes while another makes it waits for that one. One that raises made
        nothing: the next caller tries again (and meets the error itself)."""
        with self._lock(key):
            if key not in self._made:
                self._made[key] = make()
            return self._made[key]

    def offer(self, key: Hashable, make: Callable[[], T]) -> bool:
        """Make one for ``key``'s first taker, unless a taker has already come (and made its
        own); a taker that comes meanwhile waits for it. Whether one was made."""
        with self._lock(key):
            if key in self._taken or key in self._made:
                return False
            self._made[key] = make()
            return True

    def take(self, key: Hashable, make: Callable[[], T]) -> T:
        """The one offered for ``key`` (waiting while it is being made), else a new one from
        ``make``. Each offered one goes to one taker only."""
        with self._lock(key):
            self._taken.add(key)
            found = self._made.pop(key, None)
        return found if found is not None else make()
