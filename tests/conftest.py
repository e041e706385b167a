"""Shared fixtures, and the ``gpu`` marker: such tests are skipped without CuPy and a device.

On the GPU machine run them with ``SWGPU_REQUIRE_GPU=1``: then a ``gpu`` test that would
be skipped (no usable GPU, missing shared data, any ``pytest.skip`` inside it) fails
instead, so a run cannot pass by skipping. Shared data comes from ``SWGPU_SHARED``
(default ``../shared``, beside the repository) through the :func:`shared` fixture.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from swgpu_core import cli
from swgpu_core.database import Database, build_database
from swgpu_core.engine import probe_gpu

ROOT = Path(__file__).resolve().parent.parent
RESOURCES = ROOT / "resources"
SHARED = Path(os.environ.get("SWGPU_SHARED", ROOT.parent / "shared"))
#: ``SWGPU_REQUIRE_GPU=1``: gpu tests fail where they would be skipped.
REQUIRE_GPU = os.environ.get("SWGPU_REQUIRE_GPU", "") not in ("", "0")


def gpu_unavailable() -> str | None:
    """Why GPU tests cannot run here, or None when they can (the engine's own probe)."""
    return probe_gpu()[1]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if gpu_items and (reason := gpu_unavailable()):
        for item in gpu_items:
            item.add_marker(pytest.mark.skip(reason=f"gpu test: {reason}"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """Under ``SWGPU_REQUIRE_GPU=1``, a skipped ``gpu`` test is reported as failed."""
    outcome = yield
    report = outcome.get_result()
    if REQUIRE_GPU and report.skipped and "gpu" in item.keywords and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"SWGPU_REQUIRE_GPU=1 but this gpu test was skipped: {reason}"


@pytest.fixture(scope="session")
def shared() -> Callable[[str], Path]:
    """``shared(name)``: the path of a shared data file (in ``$SWGPU_SHARED/data`` or
    ``$SWGPU_SHARED``); a missing file skips the test, or fails it under ``SWGPU_REQUIRE_GPU=1``."""
    data = SHARED / "data" if (SHARED / "data").is_dir() else SHARED

    def find(name: str) -> Path:
        path = data / name
        if not path.exists():
            why = f"{path} not available (set SWGPU_SHARED to the shared data directory)"
            if REQUIRE_GPU:
                pytest.fail(why, pytrace=False)
            pytest.skip(why)
        return path

    return find


@pytest.fixture(scope="session")
def resources() -> Path:
    """The bundled data directory (resources/)."""
    return RESOURCES


@pytest.fixture(scope="session")
def bundled_db(tmp_path_factory: pytest.TempPathFactory) -> Database:
    """The bundled 3,000-sequence UniProt database, built once, in 4 chunks."""
    return build_database(RESOURCES / "db.fasta.gz", tmp_path_factory.mktemp("bundled") / "db", chunk_residues=400_000, show_progress=False)


@pytest.fixture
def swgpu(capsys: pytest.CaptureFixture):
    """Run the CLI in-process: returns (exit code, stdout, stderr).

    Anything but a :class:`~swgpu_core.errors.SwgpuError` escapes ``cli.main`` and fails
    the test, so a passing call proves there was no traceback.
    """

    def run(*args: str | Path) -> tuple[int, str, str]:
        capsys.readouterr()
        rc = cli.main([str(a) for a in args])
        out, err = capsys.readouterr()
        return rc, out, err

    return run
