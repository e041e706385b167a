"""--threads 0 means every core this process may run on, wherever a step reads it."""

from __future__ import annotations

import os

import pytest

from swgpu_core.cores import cpu_threads


def test_zero_is_every_core_this_process_may_use(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 3, 5})  # a process held to three cores
    assert cpu_threads(0) == 3 and cpu_threads() == 3
    assert cpu_threads(1) == 1 and cpu_threads(8) == 8  # a number given is kept
