"""swgpu_core.per_device: set-up done once per GPU by whichever thread comes first (the scan
kernels, the selection routines), and the upload ring handed from the warm-up to the search's
first worker (the threads are real; the steps stand in for the driver's calls)."""

from __future__ import annotations

import threading
import time

import pytest

from swgpu_core.per_device import PerDevice


def _in_thread(target) -> threading.Thread:
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


def test_once_makes_a_thing_once_and_a_second_comer_waits_for_the_first():
    kept, calls, started = PerDevice(), [], threading.Event()
    release = threading.Event()

    def make():
        calls.append(1)
        started.set()
        release.wait(10)
        return f"kernels {len(calls)}"

    results = []
    first = _in_thread(lambda: results.append(kept.once(0, make)))
    assert started.wait(10)
    second = _in_thread(lambda: results.append(kept.once(0, make)))
    time.sleep(0.05)
    assert results == [], "a caller returned while the first still made it"
    release.set()
    first.join(10)
    second.join(10)
    assert results == ["kernels 1", "kernels 1"] and calls == [1]
    assert kept.once(0, make) == "kernels 1" and calls == [1]


def test_once_is_per_key_and_what_failed_is_not_kept():
    kept, calls = PerDevice(), []
    release = threading.Event()
    blocked = _in_thread(lambda: kept.once(0, lambda: release.wait(10)))
    assert kept.once(1, lambda: calls.append(1) or "one") == "one", "device 1 waited for device 0's step"
    assert kept.once((1, "plain"), lambda: "plain") == "plain" and kept.once((1, "dpx"), lambda: "dpx") == "dpx"
    release.set()
    blocked.join(10)

    def failing():
        calls.append("failed")
        raise RuntimeError("no GPU")

    with pytest.raises(RuntimeError):
        kept.once(2, failing)
    with pytest.raises(RuntimeError):
        kept.once(2, failing)
    assert calls == [1, "failed", "failed"]


def test_an_offered_ring_goes_to_the_first_taker_only():
    rings, made = PerDevice(), []

    def make():
        made.append(object())
        return made[-1]

    assert rings.offer(0, make) is True
    first = rings.take(0, make)
    assert first is made[0]
    second = rings.take(0, make)
    assert second is made[1] and second is not first
    assert rings.offer(0, make) is False and len(made) == 2, "a ring was pinned for nobody"


def test_a_taker_that_came_first_makes_its_own_and_none_is_offered_after_it():
    rings, made = PerDevice(), []
    assert rings.take(0, lambda: made.append("own") or "own") == "own"
    assert rings.offer(0, lambda: made.append("spare") or "spare") is False
    assert made == ["own"]


def test_a_taker_waits_for_the_ring_being_offered():
    rings, making, release = PerDevice(), threading.Event(), threading.Event()

    def make_slowly():
        making.set()
        release.wait(10)
        return "offered"

    offering = _in_thread(lambda: rings.offer(0, make_slowly))
    assert making.wait(10)
    got = []
    taker = _in_thread(lambda: got.append(rings.take(0, lambda: "own")))
    time.sleep(0.05)
    assert got == [], "the taker made its own while one was being pinned for it"
    release.set()
    offering.join(10)
    taker.join(10)
    assert got == ["offered"]
