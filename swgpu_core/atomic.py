"""Output files that appear whole or not at all.

Every file swgpu writes goes to a temporary name in the same directory and is renamed
over the target only after the last byte is written, so an error or an interrupt never
leaves a half-written result that a workflow manager would take for a finished one.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import socket
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from .errors import InputError

STDOUT = "-"


def owner_tag() -> str:
    """``host-pid`` of this process, put into the names of its temporaries so that a later
    run can tell a dead run's leftovers (same host, pid gone) from a live run's files."""
    return f"{socket.gethostname()}-{os.getpid()}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


def sweep_stale(directory: str | os.PathLike, prefix: str) -> None:
    """Remove ``directory/{prefix}{host}-{pid}-*`` left by dead processes of this host.

    Only temporaries named by :func:`owner_tag` on this host are considered, and only those
    whose process no longer exists: another run's live temporary, or one written on another
    node of a shared file system, is never touched.
    """
    mine = f"{prefix}{socket.gethostname()}-"
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    for entry in entries:
        if not entry.name.startswith(mine):
            continue
        match = re.match(r"(\d+)-", entry.name[len(mine) :])
        if not match or int(match.group(1)) == os.getpid() or _pid_alive(int(match.group(1))):
            continue
        with contextlib.suppress(OSError):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)


def check_output_path(*paths: str | os.PathLike | None) -> None:
    """Refuse output paths that cannot be written, before any work is done.

    A directory, a path under a regular file, or a directory without write permission is
    reported now, not after an hour of search. ``None`` (not asked for) and ``"-"``
    (standard output) pass.
    """
    for path in paths:
        if path is None or os.fspath(path) == STDOUT:
            continue
        target = Path(path)
        if target.is_dir():
            raise InputError(f"{target}: is a directory; give a file name")
        parent = target.parent
        while not parent.exists():
            parent = parent.parent
        if not parent.is_dir():
            raise InputError(f"{target}: cannot write under {parent}, which is not a directory")
        if not os.access(parent, os.W_OK | os.X_OK) and not (target.exists() and not target.is_file()):
            raise InputError(f"{target}: cannot write in {parent} (permission denied)")


def install(tmp: str | os.PathLike, target: str | os.PathLike) -> None:
    """Move a finished temporary file onto ``target``.

    A ``target`` that exists but is not a regular file (``/dev/null``, ``/dev/full``, a
    pipe) receives the bytes instead of being replaced: renaming over a device node would
    put a regular file in its place (as root, in ``/dev``).
    """
    target = Path(target)
    if target.exists() and not target.is_file() and not target.is_dir():
        try:
            with open(tmp, "rb") as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)
        except OSError as exc:
            if exc.errno not in WRITE_ERRORS:
                raise
            raise _write_error(target, exc) from None
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        return
    os.replace(tmp, target)


#: errno values of a failed write (a full disk or quota, /dev/full, a read-only or failing device)
WRITE_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EIO)


def _write_error(target: Path | str, exc: OSError) -> InputError:
    return InputError(f"{target}: cannot write ({exc.strerror or exc})")


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike, mode: str = "w") -> Iterator[IO]:
    """Open a temporary sibling of ``path`` for writing; rename it onto ``path`` on success.

    ``"-"`` yields standard output (text mode only). Missing parent directories are
    created, as a workflow expects of its outputs. A target that exists but is not a
    regular file (``/dev/null``, a pipe) is written in place: it cannot be half-written.
    """
    if os.fspath(path) == STDOUT:
        if "b" in mode:
            raise InputError("binary output cannot go to standard output ('-'); give a file name")
        try:
            yield sys.stdout
            sys.stdout.flush()
        except OSError as exc:
            if exc.errno not in WRITE_ERRORS:
                raise
            raise _write_error("standard output", exc) from None
        return
    target = Path(path)
    if target.is_dir():
        raise InputError(f"{target}: is a directory; give a file name")
    if target.exists() and not target.is_file():
        try:
            with open(target, mode) as fh:
                yield fh
        except OSError as exc:  # /dev/full
            if exc.errno not in WRITE_ERRORS:
                raise
            raise _write_error(target, exc) from None
        return
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        sweep_stale(target.parent, f".{target.name}.")
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.{owner_tag()}-", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise InputError(f"{target}: cannot write ({exc.strerror})") from None
    try:
        with os.fdopen(fd, mode) as fh:
            yield fh
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes it private; outputs are ordinary files
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if exc.errno not in WRITE_ERRORS:
            raise
        raise _write_error(target, exc) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def check_replaceable(
    directory: Path, what: str, tool: str, marker: str, owns: Callable[[str], bool], *, source: str | os.PathLike | None = None
) -> None:
    """Refuse to replace ``directory`` with ``tool``'s output (``what``) unless it is absent,
    empty, or an earlier output of ``tool``: it holds ``marker`` and nothing but names that
    ``owns`` accepts. Never the current directory or one above it, so a mistyped ``.`` or
    ``..`` cannot be taken for an output, and never a directory that holds the input being
    read (``source``). ``makedb`` and ``split-queries`` share this rule.
    """
    resolved, cwd = directory.resolve(), Path.cwd().resolve()
    if resolved == cwd or resolved in cwd.parents:
        raise InputError(f"{directory}: is the current directory or one above it; give the {what} a directory of its own")
    if source is not None and resolved in Path(source).resolve().parents:
        raise InputError(f"{source}: lies inside the {what} directory {directory}, which {tool} replaces; move it out first")
    if not directory.exists() and not directory.is_symlink():
        return
    if directory.is_symlink() or not directory.is_dir():
        raise InputError(f"{directory}: exists and is not a directory; refusing to replace it with the {what}")
    names = {p.name for p in directory.iterdir()}
    if not names:
        return
    if marker not in names:
        raise InputError(f"{directory}: exists and is not an output of {tool}; refusing to replace it")
    foreign = sorted(n for n in names if n != marker and not owns(n))
    if foreign:
        raise InputError(f"{directory}: holds files that {tool} did not write ({', '.join(foreign[:3])}); refusing to replace it")


def remove_owned(directory: Path, marker: str, owns: Callable[[str], bool]) -> None:
    """Delete an earlier output's ``marker`` and the files ``owns`` accepts, then the
    directory if that leaves it empty (something that appeared meanwhile stays, with it)."""
    for entry in directory.iterdir():
        if entry.name == marker or owns(entry.name):
            entry.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        directory.rmdir()
