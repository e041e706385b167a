"""CUDA is shown only the GPUs a command uses (``cuda_driver.show_only``), and the command's
devices are renumbered accordingly; without a GPU: the environment, /proc and the driver are
stand-ins. On a GPU, ``test_the_executable_sees_only_its_gpus`` runs the real thing."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from swgpu_core import cli, commands, cuda_driver
from swgpu_core.gpu_choice import FAST_MAX_GPUS

H200 = ["NVIDIA H200"] * 4
#: each GPU command's required arguments (files that need not exist: the tests stop before reading them)
REQUIRED = {
    "search": ["--db", "d", "--query", "q"],
    "align-long": ["--query", "q", "--target", "t"],
    "align": ["--hits", "h", "--db", "d", "--query", "q"],
    "pairs": ["--query", "q", "--subject", "s"],
    "plan": ["d"],
}


@pytest.mark.parametrize(
    ("devices", "visible", "order", "models", "want"),
    [
        ([1], None, None, H200, "1"),
        ([2, 0], None, None, H200, "2,0"),  # CUDA numbers them in this order: 2 becomes 0
        ([0, 1, 2, 3], None, None, H200, None),  # nothing to hide
        ([0, 1], None, None, H200, "0,1"),
        ([4], None, None, H200, None),  # beyond the GPUs listed: the command's own check names it
        ([1], None, None, None, None),  # no /proc listing: nothing is certain
        ([1], None, None, ["NVIDIA H100", "NVIDIA A10"], None),  # fastest first may differ from bus order
        ([1], None, "PCI_BUS_ID", ["NVIDIA H100", "NVIDIA A10"], "1"),  # ... unless CUDA numbers by bus too
        ([1], "3,5", None, None, "5"),  # entries of the variable, in its order
        ([0], "GPU-aaaa, MIG-bbbb/1/0", None, None, "GPU-aaaa"),
        ([1], "GPU-aaaa,MIG-bbbb/1/0", None, None, "MIG-bbbb/1/0"),
        ([0, 1], "3,5", None, H200, None),  # all of them, in order: unchanged
        ([2], "3,5", None, H200, None),
        ([0], "", None, H200, None),  # no GPU visible: left so
        ([], None, None, H200, None),
    ],
)
def test_the_variable_shows_exactly_the_commands_gpus(devices, visible, order, models, want):
    assert cuda_driver.visible_devices(devices, visible, order, models) == want


def fake_gpu_listing(root: Path, models: list[str]) -> Path:
    for i, model in enumerate(models):
        gpu = root / f"0000:{0x18 + i:02x}:00.0"
        gpu.mkdir(parents=True)
        (gpu / "information").write_text(f"Model: \t\t {model}\nIRQ:   \t\t 16\nGPU UUID: \t GPU-{i}\n")
    return root


def test_gpu_models_are_read_from_the_kernel_drivers_listing(tmp_path):
    root = fake_gpu_listing(tmp_path / "gpus", ["NVIDIA H200", "NVIDIA H100 80GB HBM3"])
    assert cuda_driver.gpu_models(str(root), str(tmp_path / "none")) == ["NVIDIA H200", "NVIDIA H100 80GB HBM3"]
    assert cuda_driver.gpu_models(str(tmp_path / "none")) is None
    caps = tmp_path / "capabilities"
    (caps / "gpu0" / "mig").mkdir(parents=True)  # MIG capable, no instance
    assert cuda_driver.gpu_models(str(root), str(caps)) == ["NVIDIA H200", "NVIDIA H100 80GB HBM3"]
    (caps / "gpu1" / "mig" / "gi3").mkdir(parents=True)  # a MIG instance: CUDA numbers MIG devices
    assert cuda_driver.gpu_models(str(root), str(caps)) is None
    (root / "0000:30:00.0").mkdir()  # a folder without its information file (hidden in a container)
    assert cuda_driver.gpu_models(str(root), str(tmp_path / "none")) is None


@pytest.fixture
def fresh_driver(monkeypatch, tmp_path):
    """cuda_driver as in a new process, on a machine whose /proc lists four H200s and whose
    driver is a stand-in that records the variable it saw when cuInit ran."""
    seen: list[str | None] = []
    monkeypatch.setattr(cuda_driver, "_STARTED", [])
    monkeypatch.setattr(cuda_driver, "_SHOWN", [])
    monkeypatch.setattr(cuda_driver, "PROC_GPUS", str(fake_gpu_listing(tmp_path / "gpus", H200)))
    monkeypatch.setattr(cuda_driver, "PROC_CAPABILITIES", str(tmp_path / "capabilities"))
    monkeypatch.setattr(cuda_driver, "initialise", lambda: seen.append(os.environ.get("CUDA_VISIBLE_DEVICES")))
    # a copy of the environment, restored afterwards: a variable written here must not reach the later tests' CUDA
    hidden = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_DEVICE_MAX_CONNECTIONS")
    monkeypatch.setattr(os, "environ", {k: v for k, v in os.environ.items() if k not in hidden})
    return seen


def _started() -> None:
    for thread in cuda_driver._STARTED:
        thread.join(5)


@pytest.fixture
def gpus_asked(monkeypatch) -> list:
    """The GPUs each command's ``start_gpu`` returns (warming nothing up), the command stopped
    right after it, before it reads its inputs."""
    from swgpu_core.commands import _options

    got: list = []
    real = _options.start_gpu
    monkeypatch.setattr(_options, "warm_up", lambda *a, **k: None)

    def recording(args, **kw):
        got.append(real(args, **kw))
        raise SystemExit(0)

    for name in ("search", "align", "pairs", "align_long", "plan"):
        monkeypatch.setattr(f"swgpu_core.commands.{name}.start_gpu", recording)
    return got


@pytest.mark.parametrize(
    ("argv", "shown", "used"),
    [
        (["align-long", "--devices", "2,3"], "2,3", [0, 1]),
        (["align-long"], "0", None),  # files of unknown size: the first GPU (every one would cost cuInit 0.2 s each)
        (["align-long", "--section", "0/2", "--save-ends", "s.npz"], "0", None),  # one section per process: the first GPU
        (["align-long", "--ends", "a.npz", "b.npz"], "0", None),  # no scan: the traceback on the first GPU
        (["search", "--devices=1"], "1", [0]),
        (["search", "--dev", "3"], "3", [0]),  # abbreviated, as argparse takes it
        (["search", "--devices", "0", "--devices", "2"], "2", [0]),  # the last one, as argparse
        (["search"], None, None),  # every GPU
        (["search", "--devices", "0-3"], None, [0, 1, 2, 3]),  # all of them: nothing hidden
        (["search", "--devices", "7"], None, [7]),  # not on this machine: left to the command's check
        (["search", "--devices", "x"], None, None),  # the parser reports it
        (["search", "--mode", "fast"], "0,1", None),  # a fast search takes at most FAST_MAX_GPUS, as many as it pays for
        (["search", "--mode=fast", "--devices", "3"], "3", [0]),
        (["search", "--mode", "exact"], None, None),
        (["pairs"], "0", [0]),
        (["align"], "0", [0]),
        (["plan"], "0", [0]),  # GPU 0's model
    ],
)
def test_the_executable_shows_cuda_only_the_commands_gpus(fresh_driver, gpus_asked, argv, shown, used):
    """Before cuInit begins, the variable names the command's GPUs, and the command then asks
    for them by their new numbers."""
    with contextlib.suppress(SystemExit):
        cli.main([*argv, *REQUIRED[argv[0]]], process_ends=True)
    _started()
    assert fresh_driver == [shown]
    assert gpus_asked == ([] if argv[-1] == "x" else [used])


@pytest.mark.parametrize(
    ("db_residues", "query_bytes", "extra", "shown"),
    [
        (10**6, 10**4, [], "0"),  # 1e10 cells at most: one GPU pays
        (10**9, 3_000, [], "0,1"),  # 3e12: two
        (10**9, 10**4, [], "0,1,2"),  # 1e13: three
        (10**10, 10**4, [], None),  # 1e14: more than the four there are, so every one (nothing hidden)
        (10**9, 2_500, ["--mode", "fast"], "0"),  # the fast mode's rule: one GPU below 8e13
        (10**11, 10**4, ["--mode", "fast"], "0,1"),
        (10**9, 10**4, ["--devices", "3"], "3"),  # named GPUs are followed
    ],
)
def test_a_search_that_names_no_gpus_is_shown_those_its_files_can_pay_for(
    fresh_driver, gpus_asked, tmp_path, db_residues, query_bytes, extra, shown
):
    """Before cuInit the search knows only its files' sizes (gpu_choice.cells_bound): CUDA is
    shown the GPUs that the most work they can hold pays for, and the search then takes as many
    of those as its own work pays for (api.search, tests/test_gpu_choice.py)."""
    db = tmp_path / "db"
    db.mkdir()
    with open(db / "residues.u8", "wb") as fh:  # sparse: only its size is read
        fh.truncate(db_residues)
    query = tmp_path / "q.fasta"
    query.write_bytes(b">q\n" + b"A" * (query_bytes - 3))
    with contextlib.suppress(SystemExit):
        cli.main(["search", "--db", str(db), "--query", str(query), *extra], process_ends=True)
    _started()
    assert fresh_driver == [shown]


@pytest.mark.parametrize(
    ("query_bytes", "target_bytes", "extra", "shown"),
    [
        (10**4, 10**7, [], "0"),  # 1e11 cells at most: one GPU pays
        (10**4, 10**8, [], "0,1"),  # 1e12: two (one GPU's scan of it is 0.8 s)
        (3 * 10**4, 10**8, [], "0,1,2"),  # 3e12: three
        (10**5, 10**8, [], None),  # 1e13: more than the four there are, so every one (nothing hidden)
        (10**4, 10**8, ["--devices", "3"], "3"),  # named GPUs are followed
        (10**5, 10**8, ["--section", "1/4", "--save-ends", "s.npz"], "0"),  # one section per process
    ],
)
def test_align_long_naming_no_gpus_is_shown_those_its_files_can_pay_for(
    fresh_driver, gpus_asked, tmp_path, query_bytes, target_bytes, extra, shown
):
    """As a search: from the two files' sizes (gpu_choice.long_cells_bound) CUDA is shown the
    GPUs the most work they can hold pays for (long_device_count), and api.scan_long takes as
    many of those as its own work pays for."""
    query, target = tmp_path / "q.fa", tmp_path / "t.fa"
    query.write_bytes(b">q\n" + b"A" * (query_bytes - 3))
    with open(target, "wb") as fh:  # sparse: only its size is read
        fh.truncate(target_bytes)
    with contextlib.suppress(SystemExit):
        cli.main(["align-long", "--query", str(query), "--target", str(target), *extra], process_ends=True)
    _started()
    assert fresh_driver == [shown]


def test_a_scheduler_s_variable_is_narrowed_not_replaced(fresh_driver, gpus_asked):
    """Where SLURM (or a user) set ``CUDA_VISIBLE_DEVICES``, ``--devices`` counts within it, and
    the command's GPUs are picked out of it: here GPU 1 of the job's "4,5,6,7" is 5."""
    os.environ["CUDA_VISIBLE_DEVICES"] = "4,5,6,7"
    with contextlib.suppress(SystemExit):
        cli.main(["align-long", "--devices", "1", *REQUIRED["align-long"]], process_ends=True)
    _started()
    assert fresh_driver == ["5"] and gpus_asked == [[0]]


def test_only_a_process_that_ends_with_its_command_hides_gpus(fresh_driver, monkeypatch):
    """In-process (the API's tests, a notebook): CUDA may be initialised already, so nothing is
    hidden and no number changes."""
    assert "CUDA_VISIBLE_DEVICES" not in os.environ
    monkeypatch.setattr("swgpu_core.commands._options.warm_up", lambda *a, **k: None)
    with contextlib.suppress(SystemExit):
        cli.main(["align-long", "--devices", "1", "--query", "missing", "--target", "missing", "--backend", "cpu"])
    _started()
    assert fresh_driver == [None] and cuda_driver._SHOWN == [] and cuda_driver.local([1]) == [1]


def test_devices_in_reads_the_arguments_as_each_commands_parser_does():
    """For every GPU command and a range of spellings, the devices read before parsing are the
    devices the command's own parser gives (wherever that parser accepts the line)."""
    spellings = [[], ["--devices", "1"], ["--devices=0,2"], ["--dev", "1-2"], ["--devices", "1", "--devices", "3"], ["--quiet"]]
    spellings += [["--mode", "fast"], ["--mode=fast", "--devices", "1"], ["--mode", "exact"]]
    checked = 0
    for command in sorted(commands.GPU_COMMANDS):
        parser = cli.build_parser(cli.command_module(command))
        for extra in spellings:
            argv = [command, *REQUIRED[command], *extra]
            try:
                args = parser.parse_args(argv)
            except SystemExit:  # a command without --devices
                continue
            want = commands.devices(command, getattr(args, "devices", None))
            if want is None and getattr(args, "mode", None) == "fast":  # a fast search takes at most FAST_MAX_GPUS
                want = list(range(FAST_MAX_GPUS))
            if want is None and command == "align-long":  # the GPUs its files can pay for (here unknown: the first)
                want = commands.align_long_devices(args.query, args.target, args.section, args.ends)
            assert commands.devices_in(argv) == want, argv
            checked += 1
    # every spelling for search, those without --mode for align-long; align, pairs and plan have no --devices
    assert checked == 9 + 6 + 2 * 2 + 1
    assert set(commands.DEFAULT_DEVICES) == commands.GPU_COMMANDS


@pytest.mark.parametrize(
    ("devices", "visible", "models", "current", "queues"),
    [
        ([0, 1], None, H200, None, "4"),
        ([0], None, H200, None, None),  # one GPU: its context's start is hidden behind CuPy's import
        ([0, 1], None, H200, "8", None),  # set by the user: kept
        ([0, 1], "3", H200, None, None),  # a workflow's slot shows one GPU: the search can use no more
        ([0, 1, 2], "1,3", H200, None, "4"),
        ([0, 1], None, ["NVIDIA H200"], None, None),  # a one-GPU machine
        ([0, 1], None, None, None, None),  # the GPUs unknown (MIG instances): the driver's default
        ([0, 1, 2], None, ["NVIDIA H200"], None, None),  # a search naming no GPUs lists as many as its work pays for
    ],
)
def test_a_process_on_several_gpus_gives_their_contexts_fewer_queues(devices, visible, models, current, queues):
    assert cuda_driver.queues_for(devices, visible, models, current) == queues


@pytest.mark.parametrize(
    ("argv", "queues"),
    [
        (["search", "--devices", "0,1"], "4"),
        (["search", "--devices", "2"], None),
        (["align-long", "--devices", "0-3"], "4"),  # every GPU: nothing hidden, four used
        (["align"], None),
    ],
)
def test_the_executable_sets_the_queues_before_cuinit(fresh_driver, gpus_asked, argv, queues):
    with contextlib.suppress(SystemExit):
        cli.main([*argv, *REQUIRED[argv[0]]], process_ends=True)
    _started()
    assert os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS") == queues


def test_a_users_queues_are_kept(fresh_driver, gpus_asked):
    os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = "16"
    with contextlib.suppress(SystemExit):
        cli.main(["search", "--devices", "0,1", *REQUIRED["search"]], process_ends=True)
    _started()
    assert os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] == "16"


def test_local_renumbers_the_shown_gpus(monkeypatch):
    monkeypatch.setattr(cuda_driver, "_SHOWN", [[3, 1]])
    assert cuda_driver.local([1, 3]) == [1, 0] and cuda_driver.local(None) is None
    with pytest.raises(RuntimeError, match="device 2 was hidden"):
        cuda_driver.local([2])
    monkeypatch.setattr(cuda_driver, "_SHOWN", [])
    assert cuda_driver.local([2]) == [2]


_REPORTING_CONSOLE = r"""
import ctypes, sys
from swgpu_core import cli, cuda_driver

def report():
    lib = ctypes.CDLL("libcuda.so.1")
    count, bus = ctypes.c_int(0), ctypes.create_string_buffer(32)
    lib.cuDeviceGetCount(ctypes.byref(count))
    lib.cuDeviceGetPCIBusId(bus, 32, 0)
    print(f"sees {count.value} first {bus.value.decode()}", file=sys.stderr, flush=True)

cuda_driver.wait_released, waited = (lambda: (waited(), report())), cuda_driver.wait_released
sys.argv = ["swgpu", *sys.argv[1:]]
cli.console()
"""


@pytest.mark.gpu
def test_the_executable_sees_only_its_gpus(bundled_db, resources: Path, swgpu, tmp_path: Path) -> None:
    """On a GPU: ``swgpu search --devices K`` (K the last GPU) sees one GPU, the one at K's bus
    address, and writes what the in-process command writes with every GPU visible."""
    import cupy

    last = cupy.cuda.runtime.getDeviceCount() - 1
    want_bus = cupy.cuda.Device(last).pci_bus_id
    args = ["search", "--db", str(bundled_db.path), "--query", str(resources / "queries.fasta"), "--top", "5", "--quiet"]
    args += ["--devices", str(last), "--backend", os.environ.get("SWGPU_TEST_BACKEND", "cuda"), "--outfmt", "6 qseqid sseqid score evalue"]
    rc, expected, err = swgpu(*args, "--out", tmp_path / "in.tsv")
    assert rc == 0, err
    root = str(Path(__file__).resolve().parent.parent)
    run = subprocess.run([sys.executable, "-c", _REPORTING_CONSOLE, *args, "--out", str(tmp_path / "out.tsv")],
                         capture_output=True, text=True, cwd=root, check=False)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.stderr.strip() == f"sees 1 first {want_bus}", run.stderr
    assert (tmp_path / "out.tsv").read_text() == (tmp_path / "in.tsv").read_text()
