"""Give numba a writable cache directory before it is imported.

The ``@njit(cache=True)`` kernels cache their machine code beside the source (``__pycache__``)
or, when the install is read-only, under ``~/.cache/numba``. With both unwritable (a
read-only site-packages and an unwritable or missing HOME, as on many cluster nodes) numba
raises "no locator available" when the module is imported, and every command crashes. Then
we point ``NUMBA_CACHE_DIR`` at a private directory under the system temporary directory.
A user's own ``NUMBA_CACHE_DIR`` is always respected.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def _writable_dir(path: Path) -> bool:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(path, os.W_OK | os.X_OK)


def configure(package_dir: Path = _PACKAGE, environ: os._Environ | dict = os.environ) -> str | None:
    """Set ``NUMBA_CACHE_DIR`` when numba would find no writable cache; returns the directory set."""
    if environ.get("NUMBA_CACHE_DIR"):
        return None
    if os.access(package_dir, os.W_OK | os.X_OK):
        return None  # numba writes __pycache__ beside the sources
    home = environ.get("HOME") or os.path.expanduser("~")
    user_cache = Path(environ.get("XDG_CACHE_HOME") or Path(home) / ".cache") / "numba"
    if _writable_dir(user_cache):
        return None
    fallback = Path(tempfile.gettempdir()) / f"swgpu-numba-cache-{os.getuid()}"
    try:
        fallback.mkdir(mode=0o700, exist_ok=True)
    except OSError:
        return None  # nowhere to cache: numba will say so
    environ["NUMBA_CACHE_DIR"] = str(fallback)
    return str(fallback)
