"""GPU slot claiming, tested without a GPU: device lists are given or faked."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from test_visible_devices import fake_gpu_listing

from swgpu_core import cuda_driver, gpu_slots
from swgpu_core.gpu_slots import ENV, NoFreeSlot, acquire, claim_gpu, release

SWGPU = [sys.executable, "-m", "swgpu_core"]


@pytest.fixture(autouse=True)
def no_scheduler_env(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.delenv("CUDA_DEVICE_ORDER", raising=False)


def _env_without_cuda() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != ENV}


def test_concurrent_jobs_never_share_a_slot(tmp_path):
    """Six jobs on two slots: at most one job per device at any time, both devices used."""
    record = tmp_path / "record.jsonl"
    job = (
        "import json, os, time; t0 = time.time(); time.sleep(0.4); "
        f"open({str(record)!r}, 'a').write(json.dumps([os.environ['{ENV}'], t0, time.time()]) + '\\n')"
    )
    procs = [
        subprocess.Popen(
            [*SWGPU, "gpu-run", "--slot-dir", str(tmp_path / "slots"), "--devices", "0,1", "--", sys.executable, "-c", job],
            env=_env_without_cuda(),
            stderr=subprocess.DEVNULL,
        )
        for _ in range(6)
    ]
    assert all(p.wait(timeout=60) == 0 for p in procs)
    runs = [json.loads(line) for line in record.read_text().splitlines()]
    assert len(runs) == 6 and {d for d, _, _ in runs} == {"0", "1"}
    for device in ("0", "1"):
        spans = sorted((a, b) for d, a, b in runs if d == device)
        assert all(prev[1] <= nxt[0] for prev, nxt in zip(spans, spans[1:])), f"device {device} shared: {spans}"


def test_a_killed_job_releases_its_slot(tmp_path):
    slots = tmp_path / "slots"
    holder = subprocess.Popen(
        [*SWGPU, "gpu-run", "--slot-dir", str(slots), "--devices", "7", "--", sys.executable, "-c", "import time; time.sleep(60)"],
        env=_env_without_cuda(),
        stderr=subprocess.PIPE,
        text=True,
    )
    assert holder.stderr.readline().strip().endswith(f"{ENV}=7")  # the slot is held now
    with pytest.raises(NoFreeSlot):
        acquire(slots, ["7"], wait=0.3)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    slot = acquire(slots, ["7"], wait=5)
    assert slot.device == "7"
    release(slot)


def test_claim_sets_and_restores_the_environment(tmp_path):
    with claim_gpu(tmp_path, ["3"]) as device:
        assert device == "3" and os.environ[ENV] == "3"
        assert os.environ["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"  # numbered like nvidia-smi
        other = subprocess.run(
            [*SWGPU, "gpu-run", "--slot-dir", str(tmp_path), "--devices", "3", "--wait", "0", "--", "true"],
            env=_env_without_cuda(),
            capture_output=True,
            text=True,
        )
        assert other.returncode == 2 and "busy" in other.stderr
    assert ENV not in os.environ and "CUDA_DEVICE_ORDER" not in os.environ
    with claim_gpu(tmp_path, ["3"]) as device:  # released on exit
        assert device == "3"


def test_scheduler_assignment_is_honoured(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV, "2")
    with claim_gpu(tmp_path / "slots", ["0", "1"]) as device:
        assert device == "2" and os.environ[ENV] == "2"
    assert not (tmp_path / "slots").exists()  # nothing was locked
    assert os.environ[ENV] == "2"


def test_no_gpu_means_no_slot(tmp_path, monkeypatch):
    monkeypatch.setattr(cuda_driver, "PROC_GPUS", str(tmp_path / "no-driver"))
    monkeypatch.setattr(gpu_slots.shutil, "which", lambda _: None)
    with claim_gpu(tmp_path) as device:
        assert device is None and ENV not in os.environ


def _fake_nvidia_smi(directory: Path, monkeypatch) -> Path:
    """An nvidia-smi first on PATH that lists two GPUs and leaves a mark where it ran."""
    fake = directory / "nvidia-smi"
    fake.write_text(
        f"#!/bin/sh\ntouch {directory / 'ran'}\n"
        "echo 'GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-a)'\necho 'GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-b)'\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{directory}{os.pathsep}{os.environ['PATH']}")
    return directory / "ran"


def test_devices_come_from_the_kernel_drivers_list(tmp_path, monkeypatch):
    """Slots for the GPUs the kernel driver lists, without running nvidia-smi (0.06 s and
    more per workflow job); where the list cannot be read (or with MIG), nvidia-smi's."""
    ran = _fake_nvidia_smi(tmp_path, monkeypatch)
    monkeypatch.setattr(cuda_driver, "PROC_GPUS", str(fake_gpu_listing(tmp_path / "gpus", ["NVIDIA H200"] * 3)))
    monkeypatch.setattr(cuda_driver, "PROC_CAPABILITIES", str(tmp_path / "no-mig"))
    assert gpu_slots.host_devices() == ["0", "1", "2"]
    slots = [acquire(tmp_path / "slots") for _ in range(3)]
    assert sorted(s.device for s in slots) == ["0", "1", "2"] and not ran.exists()
    for slot in slots:
        release(slot)
    monkeypatch.setattr(cuda_driver, "PROC_GPUS", str(tmp_path / "no-driver"))
    assert gpu_slots.host_devices() == ["0", "1"] and ran.exists()


def test_devices_come_from_nvidia_smi(tmp_path, monkeypatch):
    _fake_nvidia_smi(tmp_path, monkeypatch)
    monkeypatch.setattr(cuda_driver, "PROC_GPUS", str(tmp_path / "no-driver"))
    assert gpu_slots.nvidia_smi_devices() == ["0", "1"]
    first, second = acquire(tmp_path / "slots"), acquire(tmp_path / "slots")
    assert {first.device, second.device} == {"0", "1"}
    release(first)
    release(second)


def test_gpu_run_without_command_is_an_error(tmp_path):
    proc = subprocess.run([*SWGPU, "gpu-run", "--slot-dir", str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 2 and "no command" in proc.stderr


def test_gpu_hold_ends_with_the_process_it_serves(monkeypatch):
    """`swgpu gpu-hold` holds the driver while its workflow's process lives and ends by itself
    after it (a killed workflow leaves no holder behind); with no driver it ends at once."""
    import threading
    import time

    from swgpu_core import cli, cuda_driver

    monkeypatch.setattr(cuda_driver, "_driver", lambda: None)
    t0 = time.monotonic()
    assert cuda_driver.hold(os.getpid()) is False and time.monotonic() - t0 < 1
    monkeypatch.setattr(cuda_driver, "_driver", lambda: object())
    served = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.6)"])
    reaper = threading.Thread(target=served.wait)  # as init reaps a dead workflow: no zombie stays
    reaper.start()
    t0 = time.monotonic()
    assert cuda_driver.hold(served.pid, poll=0.05) is True
    assert 0.4 < time.monotonic() - t0 < 5
    reaper.join()
    assert cli.main(["gpu-hold", "--while-pid", str(served.pid)]) == 0  # gone already: returns at once
