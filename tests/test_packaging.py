"""Installation metadata: compatible ranges in pyproject.toml, exact pins in constraints.txt,
one stated Python version, and the Makefile's choice of the CuPy extra."""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def _requirements() -> list[Requirement]:
    reqs = [Requirement(r) for r in PROJECT["dependencies"]]
    for extra in PROJECT["optional-dependencies"].values():
        reqs += [Requirement(r) for r in extra]
    return reqs


def _pins() -> dict[str, Version]:
    pins = {}
    for line in (REPO / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"constraints.txt: {line!r} is not an exact pin"
            pins[canonicalize_name(name)] = Version(version)
    return pins


def test_every_library_dependency_is_a_bounded_range_not_a_pin():
    for req in _requirements():
        operators = {spec.operator for spec in req.specifier}
        assert ">=" in operators and "<" in operators and "==" not in operators, f"{req}: give a range >=low,<high"


def test_constraints_pin_every_dependency_inside_its_range():
    pins = _pins()
    for req in _requirements():
        name = canonicalize_name(req.name)
        assert name in pins, f"constraints.txt does not pin {req.name}"
        assert pins[name] in req.specifier, f"constraints.txt pins {req.name}=={pins[name]}, outside {req.specifier}"


def test_one_python_version_is_stated_and_is_the_one_running():
    minimum = re.fullmatch(r">=(\d+\.\d+)", PROJECT["requires-python"].strip())
    assert minimum, PROJECT["requires-python"]
    assert f"Python {minimum.group(1)} or newer" in (REPO / "README.md").read_text()
    assert Version(platform.python_version()) in SpecifierSet(PROJECT["requires-python"])
    assert "python=" + minimum.group(1) in (REPO / "workflow" / "envs" / "swgpu.yaml").read_text()


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
@pytest.mark.parametrize(("header", "extra"), [("CUDA Version: 12.4", "cuda12"), ("CUDA Version: 13.0", "cuda13"), (None, None)])
def test_make_installs_the_cupy_extra_of_the_driver_cuda_version(tmp_path, header, extra):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if header is not None:  # a stand-in nvidia-smi printing the header line of the real one
        smi = bin_dir / "nvidia-smi"
        smi.write_text(f"#!/bin/sh\necho '| NVIDIA-SMI 580.95.05    Driver Version: 580.95.05    {header}     |'\n")
        smi.chmod(0o755)
    path = os.pathsep.join(
        [str(bin_dir)] + [p for p in os.environ.get("PATH", "").split(os.pathsep) if not (Path(p) / "nvidia-smi").exists()]
    )
    env = {k: v for k, v in os.environ.items() if k != "CUDA_MAJOR"} | {"PATH": path}
    plan = subprocess.run(["make", "-n", "-B", "-C", str(REPO), ".venv"], env=env, capture_output=True, text=True, check=True).stdout
    install = next(line for line in plan.splitlines() if "pip install" in line)
    assert "-c constraints.txt" in install
    extras = re.search(r'"\.\[([^\]]*)\]"', install).group(1).split(",")
    assert [e for e in extras if e.startswith("cuda")] == ([extra] if extra else [])
