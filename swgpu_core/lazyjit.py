"""``njit`` that imports numba on the first call, not at import time.

Importing numba costs about half a second, which every ``swgpu`` command (even ``--help``)
and every workflow job paid because the library modules with compiled loops were imported
at start-up. ``@njit(...)`` from here keeps the source unchanged and defers both the numba
import and the compilation to the first call of any such function.

The first call of any lazy function of a module replaces *all* of that module's lazy
functions in its globals by real numba dispatchers before compiling, so a compiled
function calling another one of its module (``region_ops`` calling ``_strip``) finds a
dispatcher there, as it would with numba's own ``njit``. Names imported elsewhere
(``from .traceback import forward_end``) keep the lazy object, whose calls and attributes
(``py_func``, ``inspect_asm``...) forward to the dispatcher.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

_lock = threading.RLock()


class LazyDispatcher:
    """Stands for ``numba.njit(**options)(func)`` until it is first needed."""

    def __init__(self, func: Callable[..., Any], options: dict[str, Any]) -> None:
        self.py_func = func
        self._options = options
        self._dispatcher: Any = None
        self.__name__ = func.__name__
        self.__qualname__ = func.__qualname__
        self.__doc__ = func.__doc__
        self.__module__ = func.__module__
        self.__wrapped__ = func

    def dispatcher(self) -> Any:
        """The numba dispatcher; the first use compiles nothing yet but imports numba."""
        if self._dispatcher is None:
            with _lock:
                if self._dispatcher is None:
                    _materialise(self.py_func.__globals__)
        return self._dispatcher

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.dispatcher()(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        # Only reached for attributes this object lacks (signatures, inspect_asm, ...).
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.dispatcher(), name)

    def __repr__(self) -> str:
        return f"<lazy numba function {self.__module__}.{self.__qualname__}>"


def _materialise(namespace: dict[str, Any]) -> None:
    """Replace every lazy function in one module namespace by its dispatcher, in place.

    The module's own functions first; one imported from another module materialises
    that module too, so its own globals hold dispatchers when it is compiled.
    """
    import numba

    lazy = [(name, value) for name, value in namespace.items() if isinstance(value, LazyDispatcher)]
    for _, value in lazy:
        if value._dispatcher is None and value.py_func.__globals__ is namespace:
            value._dispatcher = numba.njit(**value._options)(value.py_func)
    for name, value in lazy:
        if value._dispatcher is None:
            _materialise(value.py_func.__globals__)
        namespace[name] = value._dispatcher


def njit(**options: Any) -> Callable[[Callable[..., Any]], LazyDispatcher]:
    """Like ``numba.njit(**options)``; numba is imported when a decorated function is first used."""

    def wrap(func: Callable[..., Any]) -> LazyDispatcher:
        return LazyDispatcher(func, options)

    return wrap
