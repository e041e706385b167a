"""Where the time of one warm fast search goes (issue 15), without Nsight Systems (the device has
none): the host thread's turns in the seeder's and the scoring's steps (the time each step ran on
the host, between the events it waited for) and the GPU's timed events (each seed kernel's start
and end, each scoring's start and end), on one clock: a reference event is synchronized just
before the search, and the GPU events are read relative to it. Prints the timeline (ms from the
reference) and one JSON line of totals.

    python bench/fast_timeline.py DB QUERIES.fasta [--cold] [--async-pool]     (one GPU)

``--cold``: the process's first search, as the command line's: after the command line's GPU
warm-up of a fast search (:func:`swgpu_core.engine.warm_up` with the seed parameters) has
ended, but with no search before it.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Generator

import cupy as cp

import swgpu_core as sw
from swgpu_core.fasta import read_sequences
from swgpu_core.gpu import search as gpu_search
from swgpu_core.gpu import seed as gpu_seed
from swgpu_core.seed import SeedParams

EVENTS: list[tuple[str, cp.cuda.Event]] = []  # (the function that recorded it, event)
HOST: list[tuple[str, float, float]] = []  # (stage, start, end) of each host turn


def recording(stream: cp.cuda.Stream, timing: bool = False) -> cp.cuda.Event:
    event = RECORD(stream, timing)
    if timing:
        EVENTS.append((sys._getframe(1).f_code.co_name, event))
    return event


def traced(stage: str, steps: Generator) -> Generator:
    """``steps`` with the host time of each of its turns logged."""
    value = None
    while True:
        began = time.perf_counter()
        try:
            event = steps.send(value)
        except StopIteration as stop:
            HOST.append((stage, began, time.perf_counter()))
            return stop.value
        HOST.append((stage, began, time.perf_counter()))
        value = yield event


RECORD = gpu_search._record
gpu_search._record = gpu_seed._record = recording
SUBSET_STEPS, PART_STEPS = gpu_search.DeviceWorker.subset_steps, gpu_seed.CudaSeeder.part_steps
gpu_search.DeviceWorker.subset_steps = lambda self, *a, **k: traced("score", SUBSET_STEPS(self, *a, **k))
gpu_seed.CudaSeeder.part_steps = lambda self, *a, **k: traced("seed", PART_STEPS(self, *a, **k))


def main() -> None:
    db = sw.open_database(sys.argv[1])
    queries = read_sequences(sys.argv[2])
    cold = "--cold" in sys.argv[3:]
    if "--async-pool" in sys.argv[3:]:  # an experiment: CUDA's stream-ordered allocator in place of CuPy's pool
        cp.cuda.set_allocator(cp.cuda.MemoryAsyncPool().malloc)
    if cold:
        from swgpu_core import engine

        engine.warm_up([0], seed_params=SeedParams())
        engine._WARM_UP[0].join()
    else:
        sw.search(db, queries, backend="cuda", mode="fast", top=500, show_progress=False)  # warm-up
    EVENTS.clear()
    HOST.clear()
    stream = cp.cuda.get_current_stream()
    reference = cp.cuda.Event()
    reference.record(stream)
    reference.synchronize()
    origin = time.perf_counter()
    result = sw.search(db, queries, backend="cuda", mode="fast", top=500, show_progress=False)
    cp.cuda.runtime.deviceSynchronize()
    lines = [((b - origin) * 1e3, (e - origin) * 1e3, f"host {stage}") for stage, b, e in HOST]
    gpu = [(name, cp.cuda.get_elapsed_time(reference, ev)) for name, ev in EVENTS]
    lines += [(t, t, f"gpu event {name}") for name, t in gpu]
    for b, e, what in sorted(lines):
        print(f"{b:9.2f} {e:9.2f} {e - b:8.2f}  {what}")
    host = {s: round(sum(e - b for st, b, e in HOST if st == s), 4) for s in ("seed", "score")}
    print(
        json.dumps(
            {
                "kind": "fast-timeline",
                "cold": cold,
                "async_pool": "--async-pool" in sys.argv[3:],
                "scan": round(result.seconds, 4),
                "host_seconds": host,
                "host_turns": len(HOST),
            }
        )
    )


if __name__ == "__main__":
    main()
