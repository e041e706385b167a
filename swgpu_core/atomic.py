"""Output files that appear whole or not at all.

Every file swgpu writes goes to a temporary name in the same directory and is renamed
over the target only after the last byte is written, so an error or an interrupt never
leaves a half-written result that a workflow manager would take for a finished one.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from .errors import InputError

STDOUT = "-"


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
        yield sys.stdout
        sys.stdout.flush()
        return
    target = Path(path)
    if target.exists() and not target.is_file() and not target.is_dir():
        with open(target, mode) as fh:
            yield fh
        return
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise InputError(f"{target}: cannot write ({exc.strerror})") from None
    try:
        with os.fdopen(fd, mode) as fh:
            yield fh
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes it private; outputs are ordinary files
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
