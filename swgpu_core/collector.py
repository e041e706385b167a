"""Python's cyclic garbage collector: the one place that turns it off.

Two reasons, each its own function:

* :func:`paused`: while a step builds hundreds of thousands of objects that hold no cycles
  (a pair set's sequences, its records), the collector only costs time. Its full passes
  traverse every object alive, and they come each time the objects that outlived two young
  passes have grown by a quarter, so building N objects walks them several times over. For
  the 100,000 pairs of ``swgpu pairs`` (bench/RESULTS.md, thirty-second session) that was
  0.5 s of the 1.3 s their FASTA files took to read and 0.5-1.1 s of the 1.4-2.0 s their
  records took, on the CPU machine. Reference counting still frees everything these steps
  drop; a cycle made meanwhile waits for the next pass after the step.
* :func:`off_for_good`: :func:`swgpu_core.cuda_driver.release` lets the GPUs go while the
  command still holds CUDA objects, which a collection must not free after their contexts
  are gone. A step paused before that does not turn the collector back on after it.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_LOCK = threading.Lock()
_PAUSES = 0  # steps inside paused(), on any thread
_RESUME = False  # whether the collector was on when the first of them began
_OFF = False  # off_for_good() was called


@contextmanager
def paused() -> Iterator[None]:
    """The collector off for the ``with`` block; on again after it where it was on before the
    first of the blocks open now (on any thread) began, unless :func:`off_for_good` came meanwhile."""
    global _PAUSES, _RESUME
    with _LOCK:
        if not _PAUSES:
            _RESUME = gc.isenabled()
        _PAUSES += 1
        gc.disable()
    try:
        yield
    finally:
        with _LOCK:
            _PAUSES -= 1
            if not _PAUSES and _RESUME and not _OFF:
                gc.enable()


def off_for_good() -> None:
    """The collector off until the process ends, whatever steps are paused now."""
    global _OFF
    with _LOCK:
        _OFF = True
        gc.disable()
