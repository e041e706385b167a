"""The one-thread driver of several GPUs' step generators (swgpu_core.steps), with fake events."""

from __future__ import annotations

from swgpu_core.steps import drive


class FakeEvent:
    """Completes after it has been looked at ``polls`` times (or at once when synchronised)."""

    def __init__(self, log: list, name: str, polls: int) -> None:
        self.log, self.name, self.polls = log, name, polls
        self.synced = False

    @property
    def done(self) -> bool:
        self.polls -= 1
        return self.polls < 0 or self.synced

    def synchronize(self) -> None:
        self.log.append(("sync", self.name))
        self.synced = True


def worker(log: list, name: str, waits: list[int]):
    for k, polls in enumerate(waits):
        log.append((name, k))
        yield FakeEvent(log, f"{name}{k}", polls)
    return f"{name} done"


def test_results_in_order_and_every_step_runs() -> None:
    log: list = []
    out = drive([worker(log, "a", [0, 3, 0]), worker(log, "b", [5, 0])])
    assert out == ["a done", "b done"]
    assert [e for e in log if e[0] == "a"] == [("a", 0), ("a", 1), ("a", 2)]
    assert [e for e in log if e[0] == "b"] == [("b", 0), ("b", 1)]


def test_a_ready_device_is_not_held_up_by_a_busy_one() -> None:
    # b's first event takes long; a must run all of its steps before b's second step
    log: list = []
    drive([worker(log, "a", [0, 0, 0, 0]), worker(log, "b", [50, 0])])
    steps = [e for e in log if e[0] in "ab"]
    assert steps.index(("a", 3)) < steps.index(("b", 1))
    # polled, never blocked, while both were busy: the one wait is b's, once a has ended
    assert [e for e in log if e[0] == "sync"] == [("sync", "b0")]
    assert log.index(("sync", "b0")) > log.index(("a", 3))


def test_the_last_generator_blocks_instead_of_polling() -> None:
    log: list = []
    assert drive([worker(log, "a", [10**9])]) == ["a done"]
    assert ("sync", "a0") in log
