"""The package's import graph: no cycles, CuPy only inside ``swgpu_core/gpu/``, no device
queries at import.

Read from the sources (``ast``), not by importing, so it runs without CuPy and sees the
GPU modules too. An edge is an import that runs when the module is imported: a statement
at module level (also inside a module-level ``if``/``try``/``with`` or a class body),
not one inside a function, and not one under ``if TYPE_CHECKING:`` (never executed).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "swgpu_core"
GPU = PACKAGE / "gpu"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_time_nodes(body: list[ast.stmt]):
    """Statements that run when the module is imported (recursing into blocks, not functions)."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _import_time_nodes(node.orelse)
            continue
        yield node
        for field in ("body", "orelse", "finalbody"):
            yield from _import_time_nodes(getattr(node, field, []) or [])
        for handler in getattr(node, "handlers", []) or []:
            yield from _import_time_nodes(handler.body)


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Absolute names of everything ``name`` imports at import time (package modules and others)."""
    is_package = path.name == "__init__.py"
    out: set[str] = set()
    for node in _import_time_nodes(ast.parse(path.read_text(), str(path)).body):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                out.add(sub if sub in modules else target)
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (or a module importing itself)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph.get(v, ()):
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_is_read():
    graph = _graph()
    assert len(graph) > 40
    assert "swgpu_core.plan" in graph["swgpu_core.gpu.search"]
    assert "swgpu_core.engine" in graph["swgpu_core.pairs"]
    assert "swgpu_core.align.traceback" not in graph["swgpu_core.engine"], "a TYPE_CHECKING import counted"


def test_no_import_cycles():
    cycles = _cycles(_graph())
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_cycle_finder_finds_cycles():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_cupy_only_in_the_gpu_package():
    offenders = [
        name for name, deps in _graph().items()
        if any(d == "cupy" or d.startswith("cupy.") for d in deps) and not _modules()[name].is_relative_to(GPU)
    ]  # fmt: skip
    assert not offenders, f"modules outside swgpu_core/gpu import CuPy at import time: {offenders}"


def test_gpu_modules_ask_the_device_nothing_at_import():
    """Importing ``swgpu_core.gpu.*`` may import CuPy but runs no CUDA call: the engine
    decides whether there is a GPU (:func:`swgpu_core.engine.probe_gpu`), once."""
    device_calls = {"getDeviceCount", "getDeviceProperties", "memGetInfo", "Device", "Stream", "RawModule", "compute_capability"}
    for path in sorted(GPU.glob("*.py")):
        for node in _import_time_nodes(ast.parse(path.read_text(), str(path)).body):
            if isinstance(node, (ast.ClassDef, ast.Import, ast.ImportFrom)):
                continue
            # a block's own expression only: the statements inside it are yielded on their own
            parts = {ast.If: ["test"], ast.While: ["test"], ast.For: ["iter"], ast.With: ["items"], ast.Try: []}.get(type(node))
            roots = (
                [node]
                if parts is None
                else [x for p in parts for x in (getattr(node, p) if isinstance(getattr(node, p), list) else [getattr(node, p)])]
            )
            walked = [n for r in roots for n in ast.walk(r)]
            names = {n.attr for n in walked if isinstance(n, ast.Attribute)} | {n.id for n in walked if isinstance(n, ast.Name)}
            assert not names & device_calls, f"{path.name}:{node.lineno} queries the device at import ({sorted(names & device_calls)})"


def _closure(graph: dict[str, set[str]], roots: list[str]) -> set[str]:
    """Every module importing ``roots`` imports, with the packages above each package module."""
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        parts = name.split(".")
        todo.extend(".".join(parts[:k]) for k in range(1, len(parts)) if name.startswith("swgpu_core"))
        todo.extend(graph.get(name, ()))
    return seen


def test_what_swgpu_imports_before_cuinit_is_the_standard_library():
    """``swgpu`` starts CUDA's initialisation once it has imported ``cli`` and read the
    command's devices (``commands.devices_in``, with ``gpu_choice``): nothing it imports until
    then may be numpy or another third-party module, whose import (0.1 s and more) ``cuInit``
    would wait for."""
    import sys

    seen = _closure(_graph(), ["swgpu_core.cli", "swgpu_core.commands", "swgpu_core.cuda_driver", "swgpu_core.gpu_choice"])
    assert {"swgpu_core.gpu_choice", "swgpu_core.errors"} <= seen
    third = sorted(m for m in seen if not m.startswith("swgpu_core") and m.split(".")[0] not in sys.stdlib_module_names)
    assert not third, f"imported before cuInit starts: {third}"
    assert _closure({"a": {"numpy"}}, ["a"]) == {"a", "numpy"}
