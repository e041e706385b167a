"""The garbage collector's pauses (swgpu_core.collector): off inside, back as it was after,
nested and across threads, and off for good once the GPUs are let go."""

from __future__ import annotations

import gc
import threading

import pytest

from swgpu_core import collector


@pytest.fixture(autouse=True)
def _restore(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(collector, "_OFF", False)
    was = gc.isenabled()
    gc.enable()
    yield
    (gc.enable if was else gc.disable)()


def test_a_pause_turns_the_collector_off_and_back_on() -> None:
    with collector.paused():
        assert not gc.isenabled()
        with collector.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer pause is still open
    assert gc.isenabled()


def test_a_pause_leaves_the_collector_off_where_it_was_off() -> None:
    gc.disable()
    with collector.paused():
        pass
    assert not gc.isenabled()


def test_the_collector_comes_back_after_an_error() -> None:
    with pytest.raises(ValueError), collector.paused():
        raise ValueError
    assert gc.isenabled()


def test_pauses_on_two_threads_turn_it_on_when_the_last_ends() -> None:
    inside, leave = threading.Event(), threading.Event()

    def other() -> None:
        with collector.paused():
            inside.set()
            leave.wait()

    thread = threading.Thread(target=other)
    thread.start()
    inside.wait()
    with collector.paused():
        pass
    assert not gc.isenabled()  # the other thread's pause is still open
    leave.set()
    thread.join()
    assert gc.isenabled()


def test_off_for_good_inside_a_pause_stays_off() -> None:
    with collector.paused():
        collector.off_for_good()
    assert not gc.isenabled()
    with collector.paused():
        pass
    assert not gc.isenabled()
