"""The tree is clean under the formatter and linter configured in pyproject.toml (ruff)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _ruff() -> list[str]:
    """ruff of this environment (the test extra installs it), else the one on PATH."""
    local = Path(sys.executable).parent / "ruff"
    if local.exists():
        return [str(local)]
    found = shutil.which("ruff")
    if found is None:
        pytest.fail("ruff is not installed: it is in the test extra (pip install -e '.[test]')")
    return [found]


@pytest.mark.parametrize("args", [["check", "."], ["format", "--check", "."]], ids=["lint", "format"])
def test_ruff_clean(args: list[str]) -> None:
    proc = subprocess.run([*_ruff(), *args], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
