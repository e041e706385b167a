"""The ``swgpu`` command: a thin client of the Python API.

Each subcommand lives in :mod:`swgpu_core.commands` as a module with ``NAME`` (its module
name with ``-`` for ``_``), ``HELP``, ``add_arguments(parser)`` and ``run(args) -> int``;
they are discovered here, so adding a command touches no other file (one that may use a
GPU is also named in ``commands.GPU_COMMANDS``; a test keeps the two in step). A run
imports only the module of the command it names. A
:class:`~swgpu_core.errors.SwgpuError` becomes one line on stderr and exit code 2, never a
traceback.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import pkgutil
import sys
from collections.abc import Sequence
from typing import NoReturn

from . import __version__, commands, cuda_driver
from .atomic import WRITE_ERRORS
from .errors import SwgpuError


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or with ``only`` (a command module's name) of that one.

    Why ``only``: each command module imports what its command needs, and a process runs one
    command; building every subparser imported all of them (0.15 s on the CPU machine, most
    of ``swgpu gpu-run``'s own run, which every GPU job of the workflow pays before its
    command starts). The one command's parser is the same object as in the full parser, so
    its options, help and errors are the same; a name that is no command's (``--help``, a
    typo) gets the full parser and its list of commands. ``only=""`` builds no command's
    parser: ``swgpu --version`` needs none (0.26 s -> 0.05 s on the CPU machine, for
    pipelines that record each tool's version).
    """
    parser = argparse.ArgumentParser(prog="swgpu", description="Exact Smith-Waterman database search on GPUs and CPUs.")
    parser.add_argument("--version", action="version", version=f"swgpu {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_") or (only is not None and info.name != only):  # shared helpers, not commands
            continue
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        p = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def command_module(name: str) -> str | None:
    """The module of command ``name`` (``align-long`` is ``align_long``), None if there is none."""
    module = name.replace("-", "_")
    if module.startswith("_") or not module.isidentifier():
        return None
    return module if importlib.util.find_spec(f"{commands.__name__}.{module}") is not None else None


def main(argv: Sequence[str] | None = None, *, process_ends: bool = False) -> int:
    """Run one command; its exit code. ``process_ends``: the process ends with ``os._exit``
    once this returns (:func:`console`), so a command may let go of its GPUs early
    (:func:`swgpu_core.commands._options.gpus_done`); False wherever the process goes on."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] and argv[0] in commands.GPU_COMMANDS:
        # in the background, while the commands are imported (see its docstring); CUDA shown only the
        # command's GPUs where the process ends with it (cuda_driver.show_only)
        cuda_driver.start(commands.devices_in(argv) if process_ends else None)
    only = "" if argv[:1] == ["--version"] else command_module(argv[0]) if argv else None
    args = build_parser(only).parse_args(argv)
    args.process_ends = process_ends
    try:
        return int(args._run(args) or 0)
    except SwgpuError as exc:
        print(f"swgpu {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"swgpu {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except MemoryError as exc:  # the host's (numpy) or a GPU's (CuPy's OutOfMemoryError is one): what ran out, on one line
        detail = " ".join(str(exc).split()) or "the host's memory"
        print(f"swgpu {args.command}: error: out of memory: {detail}", file=sys.stderr)
        return 2
    except OSError as exc:  # a full disk or failing device where no command caught it (pysam, numpy writes)
        if exc.errno not in WRITE_ERRORS:
            raise
        print(f"swgpu {args.command}: error: {exc.filename or 'output'}: cannot write ({exc.strerror})", file=sys.stderr)
        return 2


def console() -> NoReturn:
    """The ``swgpu`` executable: :func:`main`, then the process ends at once.

    Python's own teardown would free CuPy's memory pools and destroy each GPU's context one
    object at a time, 0.2-0.7 s after the work is done (measured on an H200 with one and
    two GPUs); the driver releases all of it at process exit anyway. Nothing is lost: every
    output was written under a temporary name and renamed before :func:`main` returned,
    and the standard streams are flushed here. The GPUs' contexts, which the driver would
    destroy at the exit before the process could end, are destroyed after it instead: a
    command hands its GPU device files to a keeper process once its GPU work is done
    (:func:`swgpu_core.cuda_driver.release`; where none can be started, it destroys them
    while it writes, and the exit waits for that). Under a profiler or
    tracer (``python -m cProfile -m swgpu_core``, coverage), which write their results at
    exit, it exits normally, and keeps its contexts to the end.
    """
    if sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(main())
    rc = main(process_ends=True)
    cuda_driver.wait_released()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # a reader that stopped early (| head): as main, not an error
        pass
    os._exit(rc)


if __name__ == "__main__":
    console()
