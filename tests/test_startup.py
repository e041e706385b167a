"""Start-up cost: building the CLI parser imports no heavy package.

Every ``swgpu`` call (``--help`` too) and every workflow job builds the parser, which
imports every command module and, through them, the library. numba, matplotlib, pysam,
Biopython and CuPy together took over a second to import; they are imported where they
are used (``lazyjit``, inside the functions that plot, read FASTA, load a matrix, run on a GPU).
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

from swgpu_core.scoring import Scoring

HEAVY = ("numba", "matplotlib", "pysam", "cupy", "Bio", "scipy", "pyopal")


def _loaded_after(code: str) -> list[str]:
    """The HEAVY top-level packages in ``sys.modules`` after running ``code`` in a fresh interpreter."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return json.loads(out.splitlines()[-1])


def test_building_the_parser_imports_no_heavy_package() -> None:
    assert _loaded_after("import swgpu_core.cli as c\nc.build_parser()") == []


def test_the_probe_sees_a_heavy_import() -> None:
    # The check above can fail: the same probe reports a package that was imported.
    assert _loaded_after("import swgpu_core.cli\nimport pysam") == ["pysam"]


def test_lazy_numba_functions_compile_on_first_call_and_call_each_other() -> None:
    # region_ops calls _strip inside compiled code: both must be numba dispatchers by then.
    code = """
import numpy as np
from swgpu_core.align import traceback as tb
from swgpu_core.align.traceback import forward_end
from swgpu_core.scoring import Scoring
import sys
assert "numba" not in sys.modules
sc = Scoring.protein()
q = np.array([1, 2, 3, 4, 5, 6], np.uint8)
best, ie, je = forward_end(q, q.copy(), np.require(sc.matrix, np.int32, ["C", "W"]), sc.gap_open, sc.gap_extend)
tr = tb.trace_pair(tb.PairTask(q, q.copy(), int(best)), sc)
import numba
assert isinstance(tb._strip, numba.core.dispatcher.Dispatcher) and isinstance(tb.region_ops, numba.core.dispatcher.Dispatcher)
print(best, tr.qstart, tr.qend, len(tr.ops))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    self_scores = Scoring.protein().matrix[np.arange(1, 7), np.arange(1, 7)]  # all positive: the whole pair aligns
    assert [int(x) for x in out] == [int(self_scores.sum()), 1, 6, 6]


def test_a_command_builds_only_its_own_parser():
    """`swgpu gpu-run` (the wrapper of every GPU job of the workflow) imports no numpy: only its
    own command module is imported when the command is named."""
    assert "numpy" not in _modules_after("import swgpu_core.cli as c\nc.build_parser(c.command_module('gpu-run'))")
    assert "numpy" in _modules_after("import swgpu_core.cli as c\nc.build_parser()")  # the check can fail


def _modules_after(code: str) -> set[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return set(json.loads(out.splitlines()[-1]))


def test_each_commands_own_parser_is_the_full_parsers():
    """Names map to modules (align-long -> align_long), and a command's help, defaults and
    errors are the same from its own parser as from the full one."""
    import contextlib
    import io
    import pkgutil

    from swgpu_core import cli, commands

    names = [m.name for m in pkgutil.iter_modules(commands.__path__) if not m.name.startswith("_")]
    assert len(names) >= 14
    for module in names:
        name = module.replace("_", "-")
        assert cli.command_module(name) == module
        outputs = []
        for parser in (cli.build_parser(), cli.build_parser(module)):
            out = io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
                parser.parse_args([name, "--help"])
            err = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.suppress(SystemExit):
                parser.parse_args([name, "--no-such-option"])
            outputs.append((out.getvalue(), err.getvalue()))
        assert outputs[0] == outputs[1], name
    assert cli.command_module("serach") is None and cli.command_module("--help") is None and cli.command_module("_options") is None
