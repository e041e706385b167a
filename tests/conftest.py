"""Shared fixtures, and the ``gpu`` marker: such tests are skipped without CuPy and a device."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from swgpu_core import cli
from swgpu_core.database import Database, build_database

ROOT = Path(__file__).resolve().parent.parent
RESOURCES = ROOT / "resources"


@functools.cache
def gpu_unavailable() -> str | None:
    """Why GPU tests cannot run here, or None when they can."""
    try:
        import cupy
    except ImportError:
        return "CuPy is not installed"
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "no CUDA device"
    except Exception as exc:  # any CUDA runtime failure means: no usable device
        return f"no usable CUDA device ({exc})"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if gpu_items and (reason := gpu_unavailable()):
        for item in gpu_items:
            item.add_marker(pytest.mark.skip(reason=f"gpu test: {reason}"))


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
