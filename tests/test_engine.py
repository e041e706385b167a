"""The engine: one decision of cpu/cuda/auto with its reason, and the CPU engine's operations
equal to the references they wrap. Runs without a GPU (the probe is replaced where a test
needs a GPU to be seen); ``test_gpu_engine.py`` compares the two engines on a device."""

from __future__ import annotations

import contextlib
import ctypes
import sys
import threading
import time

import numpy as np
import pytest

from swgpu_core import engine as eng
from swgpu_core.align import traceback as ref
from swgpu_core.align.traceback import PairTask
from swgpu_core.alphabet import PROTEIN
from swgpu_core.errors import BackendUnavailable, InputError
from swgpu_core.long.cpu_scan import scan_section
from swgpu_core.long.endpoints import BandRule
from swgpu_core.long.sections import layout
from swgpu_core.scoring import Scoring
from swgpu_core.seed import SeedParams


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(eng, "probe_gpu", lambda: (0, "no CUDA device"))


@pytest.fixture
def two_gpus(monkeypatch):
    monkeypatch.setattr(eng, "probe_gpu", lambda: (2, None))


def test_cpu_is_chosen_without_asking_cuda(monkeypatch):
    def fail():
        raise AssertionError("probed for a GPU although the CPU was asked for")

    monkeypatch.setattr(eng, "probe_gpu", fail)
    assert eng.resolve("cpu") == eng.EngineChoice("cpu", None, 0)
    assert eng.get_engine("cpu").kind == "cpu"


def test_auto_without_gpu_says_why(no_gpu):
    choice = eng.resolve("auto")
    assert (choice.kind, choice.reason, choice.devices) == ("cpu", "no CUDA device", 0)
    assert eng.get_engine().choice == choice and eng.get_engine().kind == "cpu"


def test_cuda_without_gpu_is_refused(no_gpu):
    with pytest.raises(BackendUnavailable, match=r"^--backend cuda: no CUDA device$"):
        eng.resolve("cuda")
    with pytest.raises(BackendUnavailable):
        eng.get_engine("cuda")


def test_gpu_seen(two_gpus):
    for name in ("auto", "cuda"):
        engine = eng.get_engine(name)
        assert isinstance(engine, eng.CudaEngine) and engine.kind == "cuda"
        assert engine.choice == eng.EngineChoice("cuda", None, 2)


def test_unknown_name():
    with pytest.raises(InputError, match="unknown backend 'gpu'"):
        eng.resolve("gpu")


def test_an_engine_is_passed_through():
    engine = eng.CpuEngine()
    assert eng.get_engine(engine) is engine


def test_the_probe_runs_once(monkeypatch):
    calls = []
    real = eng._probe
    monkeypatch.setattr(eng, "_PROBED", [])
    monkeypatch.setattr(eng, "_probe", lambda: calls.append(1) or real())
    first = eng.probe_gpu()
    assert eng.probe_gpu() is first and len(calls) == 1
    assert first[0] >= 0 and (first[0] > 0) == (first[1] is None)


def test_the_warm_up_and_the_operation_probe_once_between_them(monkeypatch):
    """warm_up's thread asks CUDA while the command reads its inputs; an operation asking at the
    same moment waits for that answer instead of asking again (and never sees a half answer)."""
    calls, started = [], threading.Event()

    def slow():
        calls.append(1)
        started.set()
        time.sleep(0.2)
        return (0, "no CUDA device")

    monkeypatch.setattr(eng, "_PROBED", [])
    monkeypatch.setattr(eng, "_WARM_UP", [])
    monkeypatch.setattr(eng, "_probe", slow)
    eng.warm_up([0])
    eng.warm_up([0])  # once per process
    assert started.wait(5)
    assert eng.resolve("auto") == eng.EngineChoice("cpu", "no CUDA device", 0)
    eng._WARM_UP[0].join(5)
    assert len(calls) == 1 and len(eng._WARM_UP) == 1


@pytest.mark.parametrize("command", ["search", "align", "pairs", "align-long"])
def test_commands_start_the_gpu_first_unless_the_cpu_is_asked_for(monkeypatch, tmp_path, command):
    """Each GPU-capable command begins CUDA's start-up before it reads anything (here it then fails
    on a missing input), and not at all with --backend cpu."""
    from swgpu_core import cli
    from swgpu_core.commands import _options

    started: list[tuple] = []
    monkeypatch.setattr(_options, "warm_up", lambda devices, scan=False, seed_params=None: started.append((devices, scan)))
    missing = str(tmp_path / "missing")
    args = {
        "search": ["search", "--db", missing, "--query", missing],
        "align": ["align", "--db", missing, "--hits", missing, "--query", missing],
        "pairs": ["pairs", "--query", missing, "--subject", missing],
        "align-long": ["align-long", "--query", missing, "--target", missing],
    }[command]
    # a search names every visible GPU (it takes as many as its work pays for); align-long starts those its files
    # can pay for (here missing: the first, commands.align_long_devices)
    for backend, want in (("cpu", []), ("auto", [(None, True)] if command == "search" else [([0], False)])):
        started.clear()
        assert cli.main([*args, "--backend", backend, "--out", str(tmp_path / "o")]) == 2
        assert started == want, backend


@pytest.mark.parametrize(("mode", "want"), [("exact", None), ("fast", SeedParams())])
def test_a_fast_search_warms_its_candidate_stage_too(monkeypatch, tmp_path, mode, want):
    """``--mode fast`` has the warm-up load the seed kernel and its routines ahead (the search's
    parameters), while the command reads its inputs; and the warm-up's thread passes them on."""
    from swgpu_core import cli
    from swgpu_core.commands import _options

    started: list = []
    monkeypatch.setattr(_options, "warm_up", lambda devices, scan=False, seed_params=None: started.append(seed_params))
    missing = str(tmp_path / "missing")
    assert cli.main(["search", "--db", missing, "--query", missing, "--mode", mode, "--out", str(tmp_path / "o")]) == 2
    assert started == [want]
    import types

    from swgpu_core import cuda_driver

    done: list = []
    monkeypatch.setattr(cuda_driver, "open_contexts", lambda devices, ring=False: None)
    monkeypatch.setattr(eng, "probe_gpu", lambda: (1, None))
    monkeypatch.setitem(
        sys.modules, "swgpu_core.gpu.search", types.SimpleNamespace(warm_up_device=lambda d, seed=None: done.append((d, seed)))
    )
    monkeypatch.setitem(sys.modules, "swgpu_core.gpu.device", types.SimpleNamespace(open_context=lambda d: None))
    eng._warm(None, True, want)
    assert done == [(0, want)]


def test_swgpu_starts_the_driver_before_it_imports_its_commands(monkeypatch, tmp_path):
    """For a command that may use a GPU, ``cuInit`` (0.1-0.45 s) begins first thing, in its own
    thread, so that it overlaps the imports of the commands and the parsing; the parser is
    built only after it started. Not for the others: gpu-run turns into its command, whose own
    initialisation a wrapper's would only slow down."""
    from swgpu_core import cli, cuda_driver

    events: list[str] = []
    monkeypatch.setattr(cuda_driver, "initialise", lambda: events.append(threading.current_thread().name))
    real = cli.build_parser
    monkeypatch.setattr(cli, "build_parser", lambda only=None: events.append("build_parser") or real(only))
    for argv in (["--version"], ["gpu-run", "--slot-dir", str(tmp_path)], ["makedb", "--help"]):
        monkeypatch.setattr(cuda_driver, "_STARTED", [])
        events.clear()
        with contextlib.suppress(SystemExit):  # --help and --version exit, gpu-run without a command returns 2
            cli.main(argv)
        assert events == ["build_parser"] and cuda_driver._STARTED == [], argv
    monkeypatch.setattr(cuda_driver, "_STARTED", [])
    events.clear()
    missing = str(tmp_path / "missing")
    assert cli.main(["search", "--db", missing, "--query", missing, "--backend", "cpu", "--out", str(tmp_path / "o")]) == 2
    cuda_driver._STARTED[0].join(5)
    assert events[0] in ("swgpu-cuinit", "build_parser") and sorted(events) == ["build_parser", "swgpu-cuinit"]
    assert len(cuda_driver._STARTED) == 1
    cuda_driver.start()  # once per process
    assert len(cuda_driver._STARTED) == 1


def test_version_imports_no_command():
    """``swgpu --version`` prints the version without importing any command (nor numpy)."""
    import subprocess
    import sys

    code = (
        "import sys, contextlib\n"
        "from swgpu_core import cli\n"
        "with contextlib.suppress(SystemExit):\n"
        "    cli.main(['--version'])\n"
        "print(sorted(m for m in sys.modules if m.startswith('swgpu_core.commands.') or m == 'numpy'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    from swgpu_core import __version__

    assert out == [f"swgpu {__version__}", "[]"]


def test_the_commands_that_may_use_a_gpu_are_the_ones_listed():
    """commands.GPU_COMMANDS (read before the commands are imported) names exactly the command
    modules that start the GPU (``start_gpu``)."""
    import importlib
    import inspect
    import pkgutil

    from swgpu_core import commands

    starting = set()
    for info in pkgutil.iter_modules(commands.__path__):
        if not info.name.startswith("_"):
            module = importlib.import_module(f"swgpu_core.commands.{info.name}")
            if "start_gpu(" in inspect.getsource(module):
                starting.add(module.NAME)
    assert starting == set(commands.GPU_COMMANDS)


def test_the_probe_initialises_the_driver_without_the_gil_before_asking_cupy(monkeypatch):
    """CuPy's device count holds the GIL through ``cuInit``; the probe makes the driver ready
    first (through ctypes, GIL released), so that the count is immediate."""
    import sys
    import types

    from swgpu_core import cuda_driver

    order: list[str] = []
    fake = types.ModuleType("cupy")
    fake.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=lambda: order.append("count") or 1))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(cuda_driver, "initialise", lambda: order.append("cuInit"))
    assert eng._probe() == (1, None)
    assert order == ["cuInit", "count"]


class FakeDriver:
    """libcuda through ctypes, as far as :mod:`swgpu_core.cuda_driver` calls it: two devices."""

    def __init__(self, fail_alloc: bool = False, pin_seconds: float = 0.0) -> None:
        self.retained: list[int] = []
        self.calls: list[str] = []
        self.host: list = []
        self.fail_alloc = fail_alloc
        self.pin_seconds = pin_seconds  # how long each page-locked allocation takes
        self.lock = threading.Lock()

    def cuInit(self, flags):  # noqa: N802 -- the driver's names
        return 0

    def cuDeviceGetCount(self, count):  # noqa: N802
        count._obj.value = 2
        return 0

    def cuDeviceGet(self, device, ordinal):  # noqa: N802
        device._obj.value = ordinal
        return 0 if ordinal < 2 else 101  # CUDA_ERROR_INVALID_DEVICE

    def cuDevicePrimaryCtxRetain(self, context, device):  # noqa: N802
        with self.lock:
            self.retained.append(device.value)
            context._obj.value = 0x1000 + device.value
        return 0

    def cuCtxSetCurrent(self, context):  # noqa: N802
        with self.lock:
            self.calls.append(f"current {context.value - 0x1000}")
        return 0

    def cuMemHostAlloc(self, pointer, nbytes, flags):  # noqa: N802
        """Host memory that Python owns (kept here), its address given back as the driver's would be."""
        time.sleep(self.pin_seconds)
        with self.lock:
            if self.fail_alloc:
                return 2  # CUDA_ERROR_OUT_OF_MEMORY
            buf = ctypes.create_string_buffer(nbytes.value)
            self.host.append(buf)
            self.calls.append(f"pin {nbytes.value} flags {flags.value}")
            pointer._obj.value = ctypes.addressof(buf)
        return 0


@pytest.mark.parametrize(("devices", "want"), [([1], [1]), (None, [0, 1]), ([0, 5], [0])])
def test_contexts_are_made_for_the_commands_devices_only(monkeypatch, devices, want):
    """A context costs GPU memory: only the devices the command uses get one (None: every visible)."""
    import ctypes

    from swgpu_core import cuda_driver

    fake = FakeDriver()
    monkeypatch.setattr(ctypes, "CDLL", lambda name: fake)
    cuda_driver.open_contexts(devices)
    deadline = time.monotonic() + 5
    while len(fake.retained) < len(want) and time.monotonic() < deadline:  # the threads' work, awaited
        time.sleep(0.01)
    time.sleep(0.05)  # room for a context too many
    assert sorted(fake.retained) == want


def _pinned_in_thread(cuda_driver, *args):
    """take_pinned(*args) in a thread, awaited at most 5 s (a taker must never hang)."""
    out: list = []
    t = threading.Thread(target=lambda: out.append(cuda_driver.take_pinned(*args)))
    t.start()
    t.join(5)
    assert not t.is_alive(), "take_pinned hung"
    return out[0]


def test_the_first_contexts_thread_pins_the_upload_ring(monkeypatch):
    """With ``ring``, the first device's context thread makes the upload ring's buffers in that
    context (portable), for one taker of that shape; the other devices' threads pin nothing."""
    import ctypes

    from swgpu_core import cuda_driver

    fake = FakeDriver(pin_seconds=0.1)  # slow enough that a taker woken too soon would find none
    monkeypatch.setattr(ctypes, "CDLL", lambda name: fake)
    monkeypatch.setattr(cuda_driver, "UPLOAD_RING", (2, 4096))
    monkeypatch.setattr(cuda_driver, "_PINNED", {})
    cuda_driver.open_contexts([1, 0], ring=True)
    ring = _pinned_in_thread(cuda_driver, 1, 2, 4096)
    assert ring is not None and len(ring) == 2
    for k, buf in enumerate(ring):  # each a writable buffer of its size, as the upload stages into it
        view = np.frombuffer(buf, np.uint8, 4096)
        view[:] = k + 1
    assert [bytes(b.raw[:3]) for b in fake.host] == [b"\x01\x01\x01", b"\x02\x02\x02"]
    assert fake.calls == ["current 1", "pin 4096 flags 1", "pin 4096 flags 1"]
    assert _pinned_in_thread(cuda_driver, 1, 2, 4096) is None  # taken once
    assert _pinned_in_thread(cuda_driver, 0, 2, 4096) is None  # only the first device's


@pytest.mark.parametrize("case", ["no driver", "allocation fails", "another shape", "no ring asked"])
def test_a_ring_not_made_ahead_is_none_at_once(monkeypatch, case):
    """Without a driver, after a failed allocation, for another shape or where no ring was
    asked for, the taker gets None at once (and makes its own through CuPy)."""
    import ctypes

    from swgpu_core import cuda_driver

    fake = FakeDriver(fail_alloc=case == "allocation fails")

    def cdll(name):
        if case == "no driver":
            raise OSError("libcuda.so.1: cannot open shared object file")
        return fake

    monkeypatch.setattr(ctypes, "CDLL", cdll)
    monkeypatch.setattr(cuda_driver, "UPLOAD_RING", (2, 4096))
    monkeypatch.setattr(cuda_driver, "_PINNED", {})
    cuda_driver.open_contexts([0], ring=case != "no ring asked")
    assert _pinned_in_thread(cuda_driver, 0, 2, 1024 if case == "another shape" else 4096) is None


def test_the_warm_up_makes_the_contexts_before_it_imports_cupy(monkeypatch):
    from swgpu_core import cuda_driver

    order: list[str] = []
    monkeypatch.setattr(cuda_driver, "open_contexts", lambda devices, ring=False: order.append(f"contexts {devices}"))
    monkeypatch.setattr(eng, "probe_gpu", lambda: order.append("probe") or (0, "no CUDA device"))
    eng._warm([1], True)
    assert order == ["contexts [1]", "probe"]


@pytest.mark.parametrize(
    ("devices", "scan", "ahead"), [([1, 0], True, [1]), (None, True, [0]), ([1, 0], False, [1, 0]), (None, False, None)]
)
def test_the_warm_up_makes_a_searchs_first_context_ahead_and_every_other_commands(monkeypatch, devices, scan, ahead):
    """A search gets only its first GPU's context ahead; its other GPUs' are made later (it
    starts on the first one meanwhile, and the driver does little else while it makes one).
    Other commands (align-long) get every context ahead (None: every visible GPU's), made
    while they read their input: one made after CuPy's import came too late for the second
    GPU's section (bench/RESULTS.md, thirty-fourth session)."""
    from swgpu_core import cuda_driver

    order: list[str] = []
    monkeypatch.setattr(cuda_driver, "open_contexts", lambda devices, ring=False: order.append(f"contexts {devices} ring {ring}"))
    monkeypatch.setattr(eng, "probe_gpu", lambda: order.append("probe") or (0, "no CUDA device"))
    eng._warm(devices, scan)
    assert order == [f"contexts {ahead} ring {scan}", "probe"]  # a search's upload ring made beside its context


def test_the_driver_initialisation_is_harmless_without_a_driver():
    from swgpu_core import cuda_driver

    cuda_driver.initialise()  # no libcuda here (CI): nothing happens; with one: the driver is ready
    cuda_driver.open_contexts([0])


def test_a_search_uses_every_visible_gpu_by_default():
    engine = eng.CudaEngine(eng.EngineChoice("cuda", None, 2))
    assert engine.devices(None) == [0, 1] and engine.devices([1]) == [1]


def test_engines_implement_the_protocol():
    names = [n for n in vars(eng.Engine) if not n.startswith("_")]
    assert {"scanner", "traceback", "align_pairs", "scan_sections", "trace_end_points", "device_model", "kind"} <= set(names)
    for cls in (eng.CpuEngine, eng.CudaEngine):
        assert all(hasattr(cls, n) for n in names if n != "choice"), cls


def test_cpu_engine_equals_the_references():
    scoring = Scoring.protein()
    rng = np.random.default_rng(1)
    qs = [PROTEIN.encode("".join(rng.choice(list("ACDEFGHIKLMNPQRSTVWY"), int(n)))) for n in rng.integers(5, 120, 12)]
    ss = [q[::-1].copy() if k % 2 else q[3:].copy() for k, q in enumerate(qs)]
    engine = eng.get_engine("cpu")
    want = ref.align_pairs(qs, ss, scoring)
    got = engine.align_pairs(qs, ss, scoring)
    assert [None if t is None else (t.score, t.qstart, t.send, t.ops.tobytes()) for t in got] == [
        None if t is None else (t.score, t.qstart, t.send, t.ops.tobytes()) for t in want
    ]
    tasks = [PairTask(q, s, t.score) for q, s, t in zip(qs, ss, want) if t is not None]
    assert [t.ops.tobytes() for t in engine.traceback(tasks, scoring)] == [t.ops.tobytes() for t in ref.traceback_pairs(tasks, scoring)]
    dna = Scoring.nucleotide()
    q, t = rng.integers(0, 4, 300).astype(np.uint8), rng.integers(0, 4, 5_000).astype(np.uint8)
    t[1000:1300] = q
    rule, sections = BandRule(q.size, 64), layout(t.size, 2, 400)
    results = engine.scan_sections(q, t, sections, rule, dna)
    for r, s in zip(results, sections):
        keys = scan_section(q, t, s, rule, dna)[0]
        assert r.section == s and r.device is None and r.parts == 1
        assert np.array_equal(r.found.bands, keys.bands) and np.array_equal(r.found.keys, keys.keys)
    assert engine.device_model().measured is False


def test_search_prints_the_reason(no_gpu, swgpu, bundled_db, resources):
    rc, _, err = swgpu("search", "--db", bundled_db.path, "--query", resources / "queries.fasta", "--top", "2")
    assert rc == 0 and "swgpu: no usable GPU (no CUDA device); searching on the CPU" in err
    rc, _, err = swgpu("search", "--db", bundled_db.path, "--query", resources / "queries.fasta", "--top", "2", "--quiet")
    assert rc == 0 and err == ""
    rc, out, err = swgpu("search", "--db", bundled_db.path, "--query", resources / "queries.fasta", "--backend", "cuda")
    assert rc == 2 and out == "" and err == "swgpu search: error: --backend cuda: no CUDA device\n"


def test_require_gpu_turns_skips_into_failures():
    """``SWGPU_REQUIRE_GPU=1`` (conftest.py): where a gpu test would be skipped, it fails."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    if eng.probe_gpu()[0]:
        pytest.skip("a GPU is visible: the gpu tests run here instead of skipping")
    root = Path(__file__).resolve().parent.parent
    test = "tests/test_gpu_engine.py::test_device_geometry_comes_from_the_device"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test]
    env = {k: v for k, v in os.environ.items() if k != "SWGPU_REQUIRE_GPU"}
    relaxed = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert relaxed.returncode == 0 and "1 skipped" in relaxed.stdout, relaxed.stdout[-2000:]
    strict = subprocess.run(cmd, cwd=root, env={**env, "SWGPU_REQUIRE_GPU": "1"}, capture_output=True, text=True, timeout=300)
    assert strict.returncode == 1 and "SWGPU_REQUIRE_GPU=1 but this gpu test was skipped" in strict.stdout, strict.stdout[-2000:]


@pytest.mark.parametrize(("scan", "warmed"), [(True, ["scan 1"]), (False, ["context 1", "context 0"])])
def test_a_search_warms_only_its_first_gpu(monkeypatch, scan, warmed):
    """A search sets up its other GPUs itself, once the first one scans (CudaBackend); other
    commands (align-long: every GPU at once) get every context, in the order given."""
    import types

    from swgpu_core import cuda_driver

    done: list[str] = []
    monkeypatch.setattr(cuda_driver, "open_contexts", lambda devices, ring=False: None)
    monkeypatch.setattr(eng, "probe_gpu", lambda: (2, None))
    monkeypatch.setitem(
        sys.modules, "swgpu_core.gpu.search", types.SimpleNamespace(warm_up_device=lambda d, seed=None: done.append(f"scan {d}"))
    )
    monkeypatch.setitem(sys.modules, "swgpu_core.gpu.device", types.SimpleNamespace(open_context=lambda d: done.append(f"context {d}")))
    eng._warm([1, 0], scan)
    assert done == warmed


def test_align_long_starts_the_gpus_its_files_can_pay_for(monkeypatch, tmp_path):
    """Without --devices, align-long starts (in the background, while it reads) the GPUs that its
    files' sizes can pay for (commands.align_long_devices), not every GPU of the node: in process
    that list; where the executable hid the others from CUDA, every one left visible (None)."""
    from swgpu_core import cli, cuda_driver
    from swgpu_core.commands import _options

    started: list = []
    monkeypatch.setattr(_options, "warm_up", lambda devices, scan=False, seed_params=None: started.append(devices))
    query, target = tmp_path / "q.fa", tmp_path / "t.fa"
    query.write_bytes(b">q\n" + b"A" * (10**4 - 3))
    with open(target, "wb") as fh:  # sparse: only its size is read before the command fails on it
        fh.truncate(10**8)
    argv = ["align-long", "--query", str(query), "--target", str(target), "--out", str(tmp_path / "o")]
    assert cli.main(argv) == 2 and started == [[0, 1]]  # 10^12 cells at most: two GPUs
    started.clear()
    assert cli.main([*argv, "--devices", "1"]) == 2 and started == [[1]]  # named: followed
    started.clear()
    monkeypatch.setattr(cuda_driver, "hid_gpus", lambda: True)
    assert cli.main(argv) == 2 and started == [None]  # the executable showed CUDA only those two
