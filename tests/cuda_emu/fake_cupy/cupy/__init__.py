"""A CPU stand-in for the part of CuPy that the CUDA backend's searches use, for
``tests/test_gpu_emulated.py`` and ``tests/test_tb_kernel.py`` (imported as ``cupy`` only in their subprocesses).

Device arrays are numpy arrays (their ``data.ptr`` the host address, so the backend's
``memcpyAsync`` calls are plain copies), streams and events do nothing (everything is done
when it returns: races between streams cannot show here), the candidate compaction is done
in numpy, and the kernels run through the g++ emulation of their CUDA source
(``tests/cuda_emu``: ``seed_candidates``, ``sw_inter_tasks``, ``sw_intra_tasks``, ``sw_inter``, ``sw_intra``, the
selection's ``select_count`` and ``select_pick``, and the traceback's ``tb_*``, for ``tests/test_tb_kernel.py``),
compiled with the options the backend gives CuPy. Anything else raises.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import tempfile
import types
from pathlib import Path

import numpy as np

#: kernel launches so far, by kernel
CALLS = {"seed_candidates": 0, "sw_inter_tasks": 0, "sw_intra_tasks": 0, "sw_inter": 0, "sw_intra": 0, "select_count": 0, "select_pick": 0}
_arrays: dict[int, np.ndarray] = {}  # device pointer -> array made here (for the task kernel's profile pointers)
_binaries: dict[tuple, str] = {}


class ndarray(np.ndarray):  # noqa: N801 (CuPy's name)
    @property
    def data(self):
        return types.SimpleNamespace(ptr=self.ctypes.data)

    def get(self, stream=None, out=None) -> np.ndarray:
        if out is None:
            return np.array(self)
        out[...] = self
        return out


def _at(ptr: int, count: int, dtype) -> np.ndarray:
    """The ``count`` elements of ``dtype`` at device address ``ptr``, inside an array made here
    (a profile may be a slice of a larger buffer)."""
    import bisect

    bases = sorted(_arrays)
    k = bisect.bisect_right(bases, ptr) - 1
    nbytes = count * np.dtype(dtype).itemsize
    while k >= 0:
        a = _arrays[bases[k]]
        if ptr + nbytes <= bases[k] + a.nbytes:
            return np.frombuffer(a.view(np.uint8).reshape(-1), dtype, count, offset=ptr - bases[k])
        k -= 1
    raise KeyError(f"fake cupy: no array holds {nbytes} bytes at {ptr:#x}")


def _device(a: np.ndarray) -> ndarray:
    out = np.ascontiguousarray(a).view(ndarray)
    _arrays[out.ctypes.data] = out
    return out


int32, int64, uint8, uint32, uint64 = np.int32, np.int64, np.uint8, np.uint32, np.uint64


def searchsorted(a, v) -> ndarray:
    return _device(np.searchsorted(np.asarray(a), np.asarray(v)))


def packbits(a, axis=None, bitorder="big") -> ndarray:
    if axis is not None:
        raise NotImplementedError("axis option is not supported yet")  # as CuPy 13
    return _device(np.packbits(np.asarray(a), bitorder=bitorder))


def unpackbits(a, axis=None, bitorder="big") -> ndarray:
    if axis is not None:
        raise NotImplementedError("axis option is not supported yet")  # as CuPy 13
    return _device(np.unpackbits(np.asarray(a), bitorder=bitorder))


def flatnonzero(a) -> ndarray:
    return _device(np.flatnonzero(np.asarray(a)))


def stack(arrays) -> ndarray:
    return _device(np.stack([np.asarray(a) for a in arrays]))


def asarray(a, dtype=None) -> ndarray:
    return _device(np.array(a, dtype=dtype))


def empty(shape, dtype=np.float64) -> ndarray:
    return _device(np.empty(shape, dtype))


def zeros(shape, dtype=np.float64) -> ndarray:
    return _device(np.zeros(shape, dtype))


def arange(*args, dtype=None) -> ndarray:
    return _device(np.arange(*args, dtype=dtype))


def unique(a) -> ndarray:
    return _device(np.unique(np.asarray(a)))


def full(shape, value, dtype=None) -> ndarray:
    return _device(np.full(shape, value, dtype))


def partition(a, kth: int) -> ndarray:
    return _device(np.partition(np.asarray(a), kth))


def subtract(a, b) -> ndarray:
    return _device(np.subtract(a, b))


class ElementwiseKernel:
    """Only the search's candidate compaction (``swgpu_core.gpu.search._compact_kernel``), in numpy."""

    def __init__(self, in_params: str, out_params: str, operation: str, name: str):
        if name != "swgpu_candidates":
            raise NotImplementedError(f"fake cupy: no emulation of the elementwise kernel {name}")

    def __call__(self, score, kth, index, value, count) -> None:
        found = np.flatnonzero(np.asarray(score) >= int(np.asarray(kth)[0]))
        k = int(count[0])
        index[k : k + found.size] = found
        value[k : k + found.size] = np.asarray(score)[found]
        count[0] = k + found.size


class _Context:
    def __enter__(self):
        return self

    def __exit__(self, *exc) -> bool:
        return False


class _Stream(_Context):
    ptr = 0

    def __init__(self, non_blocking: bool = False, priority: int = 0):
        pass

    def wait_event(self, event) -> None:
        pass

    def record(self, event=None):
        return event if event is not None else _Event()

    def synchronize(self) -> None:
        pass


class _Event:
    done = True

    def __init__(self, disable_timing: bool = False):
        pass

    def record(self, stream=None) -> None:
        pass

    def synchronize(self) -> None:
        pass


class _Device(_Context):
    compute_capability = "90"

    def __init__(self, device_id: int = 0):
        self.id = device_id


class _Pinned(bytearray):
    @property
    def ptr(self) -> int:
        return ctypes.addressof((ctypes.c_char * len(self)).from_buffer(self))


_PROPERTIES = {"name": b"Emulated H100", "multiProcessorCount": 4, "maxThreadsPerMultiProcessor": 2048, "totalGlobalMem": 8 << 30,
               "sharedMemPerBlockOptin": 232_448}  # fmt: skip
cuda = types.SimpleNamespace(
    Device=_Device, Stream=_Stream, Event=_Event, alloc_pinned_memory=_Pinned, get_elapsed_time=lambda start, end: 1.0,
    get_current_stream=lambda: _Stream(),
    driver=types.SimpleNamespace(CUDADriverError=RuntimeError),
    runtime=types.SimpleNamespace(
        getDeviceCount=lambda: 1, getDeviceProperties=lambda device_id: dict(_PROPERTIES), memGetInfo=lambda: (8 << 30, 8 << 30),
        memcpyAsync=lambda dst, src, size, kind, stream: ctypes.memmove(dst, src, size), memcpyHostToDevice=1, memcpyDeviceToHost=2,
        memcpyDeviceToDevice=3, memcpyPeerAsync=lambda dst, dst_device, src, src_device, size, stream: ctypes.memmove(dst, src, size),
        deviceCanAccessPeer=lambda device, peer: int(device != peer), deviceEnablePeerAccess=lambda peer: None,
        CUDARuntimeError=RuntimeError,
    ),
)  # fmt: skip


def _binary(main: str, options: tuple) -> str:
    key = (main, options)
    if key not in _binaries:
        from emulator import build_harness  # tests/emulator.py: the test's PYTHONPATH holds tests/

        _binaries[key] = str(build_harness(main, options, Path(tempfile.mkdtemp(prefix="fake_cupy")) / "emu"))
    return _binaries[key]


def _write(work: Path, arrays: dict) -> None:
    for name, a in arrays.items():
        np.ascontiguousarray(np.asarray(a)).tofile(work / f"{name}.bin")


class RawKernel:
    def __init__(self, name: str, options: tuple):
        self.name, self.options = name, tuple(options)
        self.max_dynamic_shared_size_bytes = 0

    def __call__(self, grid, block, args, shared_mem: int = 0) -> None:
        work = Path(tempfile.mkdtemp(prefix="fake_cupy_call"))
        try:
            if self.name == "seed_candidates":
                self._seed(work, grid, block, args, shared_mem)
            elif self.name.startswith(("sw_inter_tasks<", "sw_intra_tasks<")):
                self._tasks(work, grid, block, args)
            elif self.name.startswith(("sw_inter<", "sw_intra<")):
                self._scan(work, grid, block, args)
            elif self.name in ("select_count", "select_pick"):
                self._select(work, grid, block, args)
            elif self.name.startswith("tb_"):
                self._traceback(work, grid, block, args, shared_mem)
            else:
                raise NotImplementedError(f"fake cupy: no emulation of {self.name}")
        finally:
            shutil.rmtree(work)

    def _seed(self, work: Path, grid, block, args, shared_mem: int) -> None:
        CALLS["seed_candidates"] += 1
        (residues, offsets, segments, n_segments, reduction, shape_offsets, shape_lengths, bitmap, key_offsets, positions, query_of, qstart,
         qcodes, matrix, flags, row_words, counters) = args  # fmt: skip
        assert int(n_segments) == segments.shape[0]
        _write(work, dict(residues=residues, offsets=offsets, segments=segments, reduction=reduction, shape_offsets=shape_offsets,
                          shape_lengths=shape_lengths,
                          bitmap=bitmap, key_offsets=key_offsets, positions=positions, query_of=query_of, qstart=qstart, qcodes=qcodes,
                          matrix=matrix))  # fmt: skip
        (work / "scalars.txt").write_text(f"{int(row_words)} {flags.shape[0]} {grid[0]}\n")
        subprocess.run([_binary("seed_main.cpp", self.options), str(work), "7"], check=True)
        flags[:] = np.fromfile(work / "flags.bin", np.uint32).reshape(flags.shape)
        counters[:] = np.fromfile(work / "counters.bin", np.uint64)[: counters.size]

    def _tasks(self, work: Path, grid, block, args) -> None:
        kind = self.name[: self.name.index("<")]
        CALLS[kind] += 1
        arith, r, width = self.name[self.name.index("<") + 1 : -1].split(",")
        residues, offsets, subjects, n, pointers, qpads, group_query, bnd_rows, oe, extend, overflow_at, boundary, scores, overflow = args
        groups = -(-int(n) // (1 if arith == "S32" else 2))
        from swgpu_core.kernel_abi import INTER_BLOCK

        inter = kind == "sw_inter_tasks"
        expected = ((-(-groups * int(width) // INTER_BLOCK),), (INTER_BLOCK,)) if inter else ((groups,), (32 * int(width),))
        if (tuple(grid), tuple(block)) != expected:
            raise RuntimeError(f"fake cupy: {self.name} launched with grid {grid} and block {block}, not {expected}")
        from swgpu_core.kernel_abi import PROFILE_ROWS

        profiles = [_at(int(p), PROFILE_ROWS * int(qpad), np.int16) for p, qpad in zip(np.asarray(pointers), np.asarray(qpads))]
        _write(work, dict(residues=residues, offsets=offsets, subjects=subjects, profiles=np.concatenate([p.ravel() for p in profiles]),
                          prof_offsets=np.concatenate(([0], np.cumsum([p.size for p in profiles]))).astype(np.int64),
                          qpads=np.append(np.asarray(qpads), 0).astype(np.int32), group_query=group_query, bnd_rows=bnd_rows))  # fmt: skip
        code = {"DpxS16x2": 0, "PlainS16x2": 1, "S32": 2}[arith]
        scalars = [code, int(not inter), width, r, int(n), int(oe), int(extend), int(overflow_at), boundary.size // 2]
        (work / "scalars.txt").write_text(" ".join(map(str, scalars)) + "\n")
        subprocess.run([_binary("tasks_main.cpp", self.options), str(work), "7"], check=True)
        got = np.fromfile(work / "scores.bin", np.int32)
        scores[: got.size] = got
        listed = np.fromfile(work / "overflow.bin", np.int32)
        overflow[: listed.size] = listed

    def _scan(self, work: Path, grid, block, args) -> None:
        kind = self.name[: self.name.index("<")]
        CALLS[kind] += 1
        arith, r, width = self.name[self.name.index("<") + 1 : -1].split(",")
        residues, offsets, subjects, n, profile, qpad, n_passes, oe, extend, overflow_at, boundary, scores, overflow = args
        groups = -(-int(n) // (1 if arith == "S32" else 2))
        from swgpu_core.kernel_abi import INTER_BLOCK

        expected = ((-(-groups * int(width) // INTER_BLOCK),), (INTER_BLOCK,)) if kind == "sw_inter" else ((groups,), (32 * int(width),))
        if (tuple(grid), tuple(block)) != expected:
            raise RuntimeError(f"fake cupy: {self.name} launched with grid {grid} and block {block}, not {expected}")
        _write(
            work, dict(residues=residues, offsets=offsets, subjects=subjects[: int(n)], profile=profile, scores=scores, overflow=overflow)
        )
        code = {"DpxS16x2": 0, "PlainS16x2": 1, "S32": 2}[arith]
        scalars = [code, int(kind == "sw_intra"), r, width, int(n), int(qpad), int(n_passes), int(oe), int(extend), int(overflow_at),
                   boundary.size // 2, scores.size]  # fmt: skip
        (work / "scalars.txt").write_text(" ".join(map(str, scalars)) + "\n")
        subprocess.run([_binary("scan_main.cpp", self.options), str(work), "7"], check=True)
        scores[:] = np.fromfile(work / "scores.bin", np.int32)
        overflow[:] = np.fromfile(work / "overflow.bin", np.int32)

    def _select(self, work: Path, grid, block, args) -> None:
        CALLS[self.name] += 1
        if self.name == "select_count":
            scores, n, state, hist, shift, bits = args
            first, k, kth = 0, 0, np.zeros(1, np.int32)
        else:
            hist, state, shift, bits, first, k, kth = args
            scores, n = np.zeros(0, np.int32), 0
        _write(work, dict(scores=scores, state=state, hist=hist, kth=kth))
        scalars = [int(self.name == "select_pick"), grid[0], block[0], int(n), int(shift), int(bits), int(first), int(k)]
        (work / "scalars.txt").write_text(" ".join(map(str, scalars)) + "\n")
        subprocess.run([_binary("select_main.cpp", self.options), str(work), "7"], check=True)
        state[:] = np.fromfile(work / "state.bin", np.uint32)
        hist[:] = np.fromfile(work / "hist.bin", np.uint32)
        kth[:] = np.fromfile(work / "kth.bin", np.int32)

    def _traceback(self, work: Path, grid, block, args, shared_mem: int) -> None:
        kind = self.name.split("<")[0]
        CALLS[kind] = CALLS.get(kind, 0) + 1
        r = int(self.name[self.name.index("<") + 1 : -1]) if "<" in self.name else 0
        team = kind.endswith("_team")
        if team and shared_mem > self.max_dynamic_shared_size_bytes:
            raise RuntimeError(
                f"fake cupy: {self.name} asks {shared_mem} bytes of shared memory over its maximum {self.max_dynamic_shared_size_bytes}"
            )
        if kind == "tb_walk":
            rect, n, r, dirs, dirs_off, ops, ops_off, n_ops = args
            _write(work, dict(rect=rect, dirs=dirs, dirs_off=dirs_off, ops=ops, ops_off=ops_off, n_ops=n_ops))
            scalars = [2, int(r), 0, grid[0], block[0], int(n), 0, 0, 0, 0, 0, 0, 0]
        elif kind == "tb_walk_strip":
            rect, n, r, span, pass_of, dirs, dirs_off, ops, ops_off, walk, n_ops = args
            _write(work, dict(rect=rect, pass_of=pass_of, dirs=dirs, dirs_off=dirs_off, ops=ops, ops_off=ops_off, walk=walk, n_ops=n_ops))
            scalars = [4, int(r), 0, grid[0], block[0], int(n), 0, 0, 0, 0, int(span), 0, 0]
        elif kind.startswith("tb_strip"):
            residues, qoff, soff, rect, n, matrix, n_codes, go, ge, ckpt, ckpt_off, pass_of, dirs, dirs_off, score = args
            _write(work, dict(residues=residues, qoff=qoff, soff=soff, rect=rect, matrix=matrix, ckpt=ckpt, ckpt_off=ckpt_off,
                              pass_of=np.zeros(0, np.int32) if pass_of is None else pass_of, dirs=dirs, dirs_off=dirs_off, score=score))  # fmt: skip
            scalars = [3, r, block[0] // 32 if team else 0, grid[0], block[0], int(n), int(n_codes), int(go), int(ge), int(pass_of is not None),
                       0, 0, shared_mem]  # fmt: skip
        elif kind.startswith("tb_ends"):
            residues, qoff, qlen, soff, slen, n, matrix, n_codes, go, ge, expected, given, boundary, bnd_off, ends = args
            arrays = dict(residues=residues, qoff=qoff, qlen=qlen, soff=soff, slen=slen, matrix=matrix, bnd_off=bnd_off)
            arrays.update(
                {k: np.zeros(0, np.int32) if v is None else v for k, v in dict(expected=expected, given=given, boundary=boundary).items()}
            )
            _write(work, arrays)
            scalars = [0, r, block[0] // 32 if team else 0, grid[0], block[0], int(n), int(n_codes), int(go), int(ge), int(expected is not None),
                       int(given is not None), int(boundary is not None), shared_mem]  # fmt: skip
        else:
            residues, qoff, soff, rect, n, matrix, n_codes, go, ge, boundary, bnd_off, dirs, dirs_off, score = args
            arrays = dict(residues=residues, qoff=qoff, soff=soff, rect=rect, matrix=matrix, bnd_off=bnd_off, dirs=dirs, dirs_off=dirs_off)
            arrays["boundary"] = np.zeros(0, np.int32) if boundary is None else boundary
            _write(work, arrays)
            scalars = [1, r, block[0] // 32 if team else 0, grid[0], block[0], int(n), int(n_codes), int(go), int(ge), 0, 0,
                       int(boundary is not None), shared_mem]  # fmt: skip
        (work / "scalars.txt").write_text(" ".join(map(str, scalars)) + "\n")
        subprocess.run([_binary("traceback_main.cpp", self.options), str(work), str(SEED)], check=True)
        if kind in ("tb_walk", "tb_walk_strip"):
            ops[:] = np.fromfile(work / "ops.bin", np.uint8)
            n_ops[:] = np.fromfile(work / "n_ops.bin", np.int32)
            if kind == "tb_walk_strip":
                walk[...] = np.fromfile(work / "walk.bin", np.int32).reshape(walk.shape)
        elif kind.startswith("tb_strip"):
            ckpt[...] = np.fromfile(work / "ckpt.bin", np.int32).reshape(ckpt.shape)
            dirs[:] = np.fromfile(work / "dirs.bin", np.uint8)
            score[:] = np.fromfile(work / "score.bin", np.int32)
        elif kind.startswith("tb_ends"):
            ends[...] = np.fromfile(work / "ends.bin", np.int32).reshape(ends.shape)
        else:
            dirs[:] = np.fromfile(work / "dirs.bin", np.uint8)
            score[:] = np.fromfile(work / "score.bin", np.int32)


#: the emulation's interleaving seed for the traceback kernels (a test may vary it)
SEED = 7


class _Pool:
    def free_bytes(self) -> int:
        return 0


def get_default_memory_pool() -> _Pool:
    return _Pool()


class RawModule:
    def __init__(self, code: str | None = None, options: tuple = (), name_expressions=None, **kwargs):
        self.options = options
        self.module = types.SimpleNamespace(mapping={n: n for n in name_expressions or []})

    def get_function(self, name: str) -> RawKernel:
        return RawKernel(name, self.options)
