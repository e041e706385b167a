"""CUDA's driver initialisation (``cuInit``), started early and without holding the GIL.

``cuInit`` takes about 0.2 s per visible GPU on the H200 hosts measured (0.42-0.47 s for two,
0.98-1.08 s for four; bench/RESULTS.md), which is why :func:`show_only` hides the GPUs a
command does not use. CuPy performs it inside ``cudaGetDeviceCount``, a call that keeps the
GIL, so while it ran every other thread of the process stood still: the command's reading
of its database and queries waited for it. Called through :mod:`ctypes` (which releases the
GIL for the call) it runs beside them instead; the driver is initialised once per process,
so CuPy's later call returns at once.

:func:`start` begins it in a daemon thread; ``swgpu`` calls it for the commands that may use
a GPU (:data:`swgpu_core.commands.GPU_COMMANDS`) before it even imports them, so the
initialisation overlaps Python's imports and the argument parsing. It creates no context and
takes no GPU memory (with ``--backend cpu`` such a command pays one background thread);
where no driver library is installed the thread ends at once. Standard library only
(and :mod:`swgpu_core.collector`, which is too): importing it costs nothing.
"""

from __future__ import annotations

import ctypes
import glob
import os
import sys
import threading
import time
from collections.abc import Sequence

from . import collector

_LOCK = threading.Lock()
_STARTED: list[threading.Thread] = []
_SHOWN: list[list[int]] = []  # the devices show_only() left visible, in the numbering from before it
#: where the kernel driver lists the GPUs it knows, one folder each (their order is nvidia-smi's),
#: and the capabilities of their MIG instances (``gpu<minor>/mig/gi<id>`` for each that exists)
PROC_GPUS = "/proc/driver/nvidia/gpus"
PROC_CAPABILITIES = "/proc/driver/nvidia/capabilities"
_RELEASING: list[threading.Thread] = []  # the thread of release(), once started
_KEPT: list[object] = []  # what release() keeps from being freed until the process ends
_KEEPERS: list[tuple[object, int]] = []  # release()'s keeper (_hand_over) and its pipe's write end
#: the path prefix of the GPU device files (/dev/nvidiactl, /dev/nvidia0, /dev/nvidia-uvm, ...)
DEVICE_FILES = "/dev/nvidia"


def _driver() -> ctypes.CDLL | None:
    """The driver library after ``cuInit(0)`` (GIL released), or None where there is no usable
    driver: the operation that needs a GPU reports that, through CuPy. ``cuInit`` is
    idempotent and thread-safe."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
        return lib if lib.cuInit(0) == 0 else None
    except (OSError, AttributeError):  # no driver installed (or not a CUDA driver library)
        return None


def initialise() -> None:
    """``cuInit(0)``, GIL released; returns once the driver is initialised (or failed)."""
    _driver()


#: a search's upload ring (:mod:`swgpu_core.gpu.search`): how many page-locked staging buffers,
#: and the bytes of each; :func:`open_contexts` can make them ahead, beside the first context
UPLOAD_RING = (2, 32 << 20)
#: ``cuMemHostAlloc``'s flag CU_MEMHOSTALLOC_PORTABLE: page-locked for every context of the process
_HOST_ALLOC_PORTABLE = 1


class _Pinned:
    """Page-locked host buffers that a context's thread makes (:func:`open_contexts`), and
    the event set once it is done with them, made or not."""

    def __init__(self, count: int, nbytes: int) -> None:
        self.shape = (count, nbytes)
        self.buffers: list = []  # ctypes arrays over the driver's memory, kept to the process's end
        self.done = threading.Event()


_PINNED: dict[int, _Pinned] = {}  # per device, the buffers made ahead, until take_pinned takes them


def open_contexts(devices: Sequence[int] | None, *, ring: bool = False) -> None:
    """Create the primary context of each of ``devices`` (None: every visible one) in daemon
    threads, one per device, GIL released; returns at once.

    A context takes 0.1-0.13 s to make. CuPy makes it (``cudaFree(0)``) only once it is
    imported, an import that holds the GIL for 0.15-0.4 s; made here beside that import, the
    context is ready when CuPy asks for it, because the CUDA runtime that CuPy uses adopts
    the device's primary context. The reference taken here is kept to the end of the process,
    as CuPy keeps its own. Only the devices the command will use: a context costs GPU memory,
    and on a shared machine another user's device must not get one.

    ``ring``: the first device's thread then also makes the :data:`UPLOAD_RING`'s page-locked
    buffers (``cuMemHostAlloc``, portable), for :func:`take_pinned`. The driver takes 0.02-0.03 s
    to pin them, which made through CuPy came after the first worker's set-up, on the way to
    the search's first launch (bench/RESULTS.md, thirty-fourth session); here it falls within
    CuPy's import."""
    devices = None if devices is None else list(devices)
    pinned = None
    if ring:
        pinned = _PINNED[devices[0] if devices else 0] = _Pinned(*UPLOAD_RING)
    threading.Thread(target=_open, args=(devices, pinned), name="swgpu-contexts", daemon=True).start()


def _open(devices: list[int] | None, pinned: _Pinned | None) -> None:
    started = False
    try:
        lib = _driver()
        if lib is None:
            return
        if devices is None:
            count = ctypes.c_int(0)
            lib.cuDeviceGetCount(ctypes.byref(count))
            devices = list(range(count.value))
        for k, ordinal in enumerate(devices):
            threading.Thread(
                target=_retain, args=(lib, ordinal, pinned if k == 0 else None), name=f"swgpu-context-{ordinal}", daemon=True
            ).start()
            started = True  # the first device's thread, which sets the event, is on its way
    finally:
        if pinned is not None and not started:  # no thread will make them: a taker must not wait
            pinned.done.set()


def _retain(lib: ctypes.CDLL, ordinal: int, pinned: _Pinned | None = None) -> None:
    device, context = ctypes.c_int(0), ctypes.c_void_p()
    try:
        made = lib.cuDeviceGet(ctypes.byref(device), ordinal) == 0 and lib.cuDevicePrimaryCtxRetain(ctypes.byref(context), device) == 0
        if pinned is not None and made and lib.cuCtxSetCurrent(context) == 0:
            count, nbytes = pinned.shape
            for _ in range(count):
                pointer = ctypes.c_void_p()
                if (
                    lib.cuMemHostAlloc(ctypes.byref(pointer), ctypes.c_size_t(nbytes), ctypes.c_uint(_HOST_ALLOC_PORTABLE)) != 0
                    or not pointer.value
                ):
                    break
                pinned.buffers.append((ctypes.c_ubyte * nbytes).from_address(pointer.value))
    finally:
        if pinned is not None:
            pinned.done.set()


def take_pinned(ordinal: int, count: int, nbytes: int) -> list | None:
    """The page-locked buffers that :func:`open_contexts` made ahead for device ``ordinal``
    (waiting while they are made): ``count`` buffers of ``nbytes`` each, each with the buffer
    protocol, kept to the end of the process. Once: a second taker, a device without them,
    another shape or a failed allocation get None (the caller then makes its own)."""
    pinned = _PINNED.pop(ordinal, None)
    if pinned is None:
        return None
    pinned.done.wait()
    return pinned.buffers if pinned.shape == (count, nbytes) and len(pinned.buffers) == count else None


def start(devices: Sequence[int] | None = None) -> None:
    """:func:`initialise` in a daemon thread, once per process; with ``devices`` (the GPUs a
    process that runs one command will use), CUDA is first shown only those
    (:func:`show_only`), and where that is several, their contexts get fewer work queues
    (:func:`fewer_queues`)."""
    with _LOCK:
        if _STARTED:
            return
        if devices is not None:
            show_only(devices)
            fewer_queues(devices)
        _STARTED.append(threading.Thread(target=initialise, name="swgpu-cuinit", daemon=True))
    _STARTED[0].start()


#: the hardware work queues of each GPU's context (``CUDA_DEVICE_MAX_CONNECTIONS``; the driver's
#: default is 8) in a process that uses several GPUs (:func:`fewer_queues`)
SEVERAL_GPU_QUEUES = 4


def queues_for(devices: Sequence[int], visible: str | None, models: list[str] | None, current: str | None) -> str | None:
    """The ``CUDA_DEVICE_MAX_CONNECTIONS`` for a process that uses ``devices``, or None to
    leave it as it is: :data:`SEVERAL_GPU_QUEUES` where it uses more than one GPU and the
    variable is not set. The GPUs it uses are at most those CUDA can see: the entries of
    ``visible`` (``CUDA_VISIBLE_DEVICES``, as a workflow's GPU slot sets it) where set, else
    the GPUs in ``models`` (:func:`gpu_models`). Where neither is known, nothing changes: a
    search that names no GPUs lists as many as its files could pay for
    (:func:`swgpu_core.commands.devices_in`), which on a one-GPU machine would give its one
    context fewer queues and its scan the cost of them."""
    if current is not None:
        return None
    entries = visible_entries(visible)
    seen = len(entries) if entries else len(models) if models else 1
    return str(SEVERAL_GPU_QUEUES) if min(len(devices), seen) > 1 else None


def fewer_queues(devices: Sequence[int]) -> bool:
    """Give each GPU context of a process that uses several GPUs :data:`SEVERAL_GPU_QUEUES`
    hardware work queues instead of the driver's 8 (:func:`queues_for`); whether it did.
    Before the first context, in a process that ends with its command (as :func:`show_only`).

    Why: the driver makes a context in about 0.03 s plus 0.011 s per queue, and destroys it in
    about 0.01 s plus 0.0065 s per queue, one context at a time (bench/ctx_probe.py; two
    H200s, bench/RESULTS.md). With one GPU that start is hidden behind CuPy's import; with
    several, each further context and each reset at the end lies on the run's path, and 8
    queues cost 0.07 s more per GPU than 4 (0.044 s to make the context, 0.026 s to destroy
    it). A search keeps 9 streams per GPU, which then share the queues: on one GPU, scans
    with many long subjects (bench200M x 20 queries) ran 2-3% slower with 4, and the 500
    queries of bench200M 0.2%, so a one-GPU process keeps 8. On two and four H200s every exact
    search measured took 0.05-0.48 s less with 4, its scan as fast (bench/RESULTS.md,
    nineteenth session)."""
    value = queues_for(devices, os.environ.get("CUDA_VISIBLE_DEVICES"), gpu_models(), os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS"))
    if value is None:
        return False
    os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = value
    return True


def visible_devices(devices: Sequence[int], visible: str | None, order: str | None, models: list[str] | None) -> str | None:
    """The ``CUDA_VISIBLE_DEVICES`` that shows CUDA only ``devices`` (numbered as CUDA numbers
    them now), or None where nothing would be hidden or the mapping is not certain.

    ``visible`` and ``order`` are the environment's ``CUDA_VISIBLE_DEVICES`` and
    ``CUDA_DEVICE_ORDER``; ``models`` the model of each GPU in nvidia-smi's order (None where
    unknown, or where MIG instances make CUDA number MIG devices: :func:`gpu_models`).

    Where ``CUDA_VISIBLE_DEVICES`` is set, CUDA numbers its entries in their order, so device
    ``d`` is entry ``d`` (an index, a UUID or a MIG name, copied as it is). Where it
    is not, CUDA numbers the GPUs fastest first and the variable's indices are nvidia-smi's
    (bus order): the two agree where ``CUDA_DEVICE_ORDER`` is ``PCI_BUS_ID`` or all GPUs are
    the same model, and only then is a variable written. An index beyond the GPUs listed
    leaves everything visible, so the command's own check names it as before.
    """
    want = list(devices)
    if not want or min(want) < 0:
        return None
    entries = visible_entries(visible)
    if entries is not None:
        if not entries or max(want) >= len(entries) or want == list(range(len(entries))):
            return None
        return ",".join(entries[d] for d in want)
    if not models or max(want) >= len(models) or want == list(range(len(models))):
        return None
    if order != "PCI_BUS_ID" and len(set(models)) > 1:
        return None
    return ",".join(str(d) for d in want)


def visible_entries(visible: str | None) -> list[str] | None:
    """The entries of a ``CUDA_VISIBLE_DEVICES`` value (indices, UUIDs or MIG names, CUDA's
    devices 0, 1, ... in that order); none for an empty value (it hides every GPU), None where
    the variable is unset."""
    if visible is None:
        return None
    return [e.strip() for e in visible.split(",")] if visible.strip() else []


def gpu_models(root: str | None = None, capabilities: str | None = None) -> list[str] | None:
    """Each GPU's model as the kernel driver lists it under ``root`` (default :data:`PROC_GPUS`;
    bus order), without initialising CUDA (a few small reads); None where the folder or a
    model line cannot be read, or where a GPU has MIG instances (under ``capabilities``,
    default :data:`PROC_CAPABILITIES`): CUDA then numbers MIG devices, not GPUs."""
    root = root or PROC_GPUS
    if glob.glob(os.path.join(capabilities or PROC_CAPABILITIES, "gpu*", "mig", "gi*")):
        return None
    try:
        folders = sorted(os.listdir(root))
        models = []
        for name in folders:
            with open(os.path.join(root, name, "information")) as fh:
                line = next((ln for ln in fh if ln.startswith("Model:")), None)
            if line is None:
                return None
            models.append(line.split(":", 1)[1].strip())
    except OSError:
        return None
    return models or None


def show_only(devices: Sequence[int]) -> bool:
    """Show CUDA only ``devices`` before the driver is initialised (``CUDA_VISIBLE_DEVICES``,
    :func:`visible_devices`); whether it did. Once per process, before :func:`start`.

    Why: ``cuInit`` initialises every visible GPU, one after another, whatever else the
    process does meanwhile. On H200 hosts (persistence mode on; bench/RESULTS.md) it took
    0.42-0.47 s with two visible against 0.22 s with one, and 0.98-1.08 s with four visible
    against 0.27 s with one. On the four-GPU host, ``swgpu search`` of uniprot20k x 20 on
    GPU 0 took 1.54-1.65 s before and 0.81-0.86 s since; the same results.

    The devices are then numbered 0, 1, ... in the order given: :func:`local` turns the
    command's numbers into the process's. Only for a process that runs one command and ends
    (the ``swgpu`` executable): the variable is inherited by any child, and a process that
    initialised CUDA before would keep seeing every GPU while :func:`local` renumbers them.
    """
    if _SHOWN:
        return False
    value = visible_devices(devices, os.environ.get("CUDA_VISIBLE_DEVICES"), os.environ.get("CUDA_DEVICE_ORDER"), gpu_models())
    if value is None:
        return False
    os.environ["CUDA_VISIBLE_DEVICES"] = value
    _SHOWN.append(list(devices))
    return True


def hid_gpus() -> bool:
    """Whether :func:`show_only` hid GPUs from CUDA in this process."""
    return bool(_SHOWN)


def local(devices: Sequence[int] | None) -> list[int] | None:
    """``devices`` (numbered as the process started) in the process's numbering: unchanged
    unless :func:`show_only` hid GPUs, else their places among those it showed."""
    if devices is None or not _SHOWN:
        return None if devices is None else list(devices)
    shown = _SHOWN[0]
    missing = [d for d in devices if d not in shown]
    if missing:  # the command asks for a GPU the start-up hid: the two read its arguments differently
        raise RuntimeError(f"device {missing[0]} was hidden at start-up (shown: {shown})")
    return [shown.index(d) for d in devices]


def hold(while_pid: int, poll: float = 0.5) -> bool:
    """Keep the driver initialised in this process (``cuInit``, no context, no GPU memory) for
    as long as process ``while_pid`` lives; False at once where there is no usable driver.

    Why: while no process holds the driver, each new one initialises it again, and two
    starting at once do it one after the other. Measured on two H200s (persistence mode
    reported on; bench/RESULTS.md): ``cuInit`` 0.12 s alone and 0.14-0.36 s for two processes
    started together, against 0.03 s and 0.03-0.07 s while another process held it; a search
    of uniprot20k x 20 took 0.89-1.08 s alone and 1.14-1.31 s beside another one, against
    0.82-0.96 s and 0.85-1.00 s. So the workflow, whose GPU jobs each start a process (and
    on several GPUs start them together), starts a process that holds it while Snakemake
    runs (``workflow/rules/driver.smk``), and ``swgpu gpu-hold`` does it for a job script that
    runs several GPU commands in turn. Polls the process rather than waiting for a signal,
    so a holder whose script was killed outright ends too."""
    if _driver() is None:
        return False
    while True:
        try:
            os.kill(while_pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:  # alive, another user's: keep holding
            pass
        time.sleep(poll)


def release(keep: object = None) -> None:
    """Let go of this process's GPUs, for a process that uses no GPU again and ends with
    ``os._exit`` once :func:`wait_released` returns.

    Why: the driver destroys a process's contexts when it closes the process's GPU device
    files, at its exit, and the exit cannot end before that is done: 0.1-0.2 s after the last
    output was written (one and two H200s, bench/RESULTS.md). So the device files are handed
    to a keeper, a process that only holds them until this one has ended
    (:func:`_hand_over`): the driver's teardown then runs there, after the command has
    returned to its caller. Measured on H200s (bench/RESULTS.md, twenty-eighth session,
    commands back to back, so a teardown that overlaps the next command counts there):
    uniprot20k x 20 on one GPU 0.85 -> 0.72 s a command; bench200M x 500 on two 7.32 -> 7.10 s.
    Where no keeper can be started, the primary contexts are destroyed instead in a daemon
    thread (``cuDevicePrimaryCtxReset``: memory, kernels, streams) while the command writes
    its outputs, and :func:`wait_released` waits for it (0.07-0.2 s less than at the exit).

    Nothing may touch a GPU afterwards: after a reset, a CUDA object freed later would call a
    destroyed context (CuPy would make it again and print the error its finaliser meets). So
    ``keep`` (what holds the command's CUDA objects, e.g. its engine) is held until the
    process ends, and the garbage collector, which could free such an object in a cycle, is
    turned off. Once per process; without a usable driver, nothing."""
    lib = _driver()
    with _LOCK:
        if lib is None or _RELEASING or _KEEPERS:
            return
        _KEPT.append(keep)
        collector.off_for_good()
        if _hand_over():
            return
        _RELEASING.append(threading.Thread(target=_reset_active, args=(lib,), name="swgpu-release", daemon=True))
    _RELEASING[0].start()


def device_files() -> list[int]:
    """This process's open GPU device files (their descriptors): those whose path starts with
    :data:`DEVICE_FILES`; none where ``/proc/self/fd`` cannot be read."""
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return []
    fds = []
    for name in names:
        try:
            if os.readlink(f"/proc/self/fd/{name}").startswith(DEVICE_FILES):
                fds.append(int(name))
        except (OSError, ValueError):  # closed meanwhile (listdir's own descriptor)
            continue
    return fds


def _hand_over() -> bool:
    """Start a keeper of this process's GPU device files; True once it runs.

    The keeper (this Python, isolated, reading its standard input to the end) is given the
    device files and nothing else: its input is a pipe whose only writer is this process, its
    output and errors go to /dev/null, every other descriptor is closed in it. So it holds
    no output file or pipe of the command's, and a caller that reads the command's output to
    its end does not wait for it. When this process ends, the pipe closes, the keeper ends,
    and with it the last reference to each device file: the driver destroys the contexts in
    the keeper's exit. Killing the keeper (a signal to the process group) only brings that
    forward. Started with ``vfork``, a few milliseconds; the keeper is never waited for: it
    outlives this process and is reaped by init (or the nearest subreaper). In a container
    whose first process reaps no orphans (no ``--init``), each keeper stays a zombie there (a
    process-table entry: no memory, no GPU) until that first process ends."""
    fds = device_files()
    if not fds:
        return False
    import subprocess  # here: most commands never get this far, and the import costs milliseconds

    read_end, write_end = os.pipe()
    try:
        keeper = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", "import sys; sys.stdin.buffer.read()"],
            stdin=read_end,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=fds,
            close_fds=True,
        )
    except (OSError, ValueError, TypeError):  # no interpreter to start (an embedded one), no process left
        os.close(write_end)
        return False
    finally:
        os.close(read_end)
    _KEEPERS.append((keeper, write_end))  # the write end stays open until this process ends
    return True


def _reset_active(lib: ctypes.CDLL) -> None:
    """Reset each device's primary context where it is active (one after another: the driver
    does them in turn anyway, measured on two H200s)."""
    count = ctypes.c_int(0)
    if lib.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return
    for ordinal in range(count.value):
        device, flags, active = ctypes.c_int(0), ctypes.c_uint(0), ctypes.c_int(0)
        if lib.cuDeviceGet(ctypes.byref(device), ordinal) != 0:
            continue
        if lib.cuDevicePrimaryCtxGetState(device, ctypes.byref(flags), ctypes.byref(active)) == 0 and active.value:
            lib.cuDevicePrimaryCtxReset_v2(device)


def wait_released() -> None:
    """Return once :func:`release`'s contexts are destroyed, where it destroys them here (at
    once where it handed them to a keeper or was not called)."""
    for thread in _RELEASING:
        thread.join()
