"""The values that the CUDA kernels and the Python host code must agree on, in one place.

The kernels in ``swgpu_core/kernels/`` do not define these numbers: they read them as
macros (``-DSWGPU_...``) that :func:`compile_options` generates from this module, and
``kernels/common.cuh`` turns the macros into the named constants the kernel code uses
(a macro missing from the options is a compile error). The host code imports the same
names from here, so a value is written once.

Every kernel source starts with ``#include "common.cuh"``. :func:`kernel_source` returns
the source with that line replaced by the header's text, so that CuPy, whose on-disk
cache is keyed by the source text and the options, sees (and recompiles on) any change
of the header; an offline ``nvcc`` build finds the header through ``-I``
(:data:`KERNEL_DIR`) instead. Pure Python: importable without CuPy or a GPU.
"""

from __future__ import annotations

import bisect
import enum
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .seed import SeedParams

#: The directory of the CUDA sources and ``common.cuh`` (the ``-I`` path for nvcc).
KERNEL_DIR = Path(__file__).resolve().parent / "kernels"
HEADER = "common.cuh"
_INCLUDE = f'#include "{HEADER}"'

# ---------------------------------------------------------------- sw_scan.cu
#: Rows of a query profile: one per residue code, the padding residue's row the last.
PROFILE_ROWS = 28
#: The residue code of subject rows past a sequence's end (its profile row scores very low).
PAD_RESIDUE = PROFILE_ROWS - 1
#: Threads per block of the inter-task kernel (its ``__launch_bounds__``).
INTER_BLOCK = 256
#: Steps by which each warp of an intra-task block runs behind the one before it (``kDelay``:
#: it reads the previous warp's last column from a ring of twice as many rows); a block of
#: ``W`` warps needs ``intra_fill_steps(W)`` more steps per pass than its subject has rows.
#: The block synchronises every ``INTRA_DELAY / 2`` steps, and its lanes read lane 0's inputs
#: a batch of that many steps at a time, one per lane: so it is twice the warp size (the
#: kernel asserts it).
INTRA_DELAY = 64


def intra_fill_steps(warps: int) -> int:
    """The wavefront's fill of one pass of a ``warps``-warp intra-task block (sw_intra's
    ``steps = longest + (W - 1) * kDelay + 31``): its last lane starts that many steps late."""
    return (warps - 1) * INTRA_DELAY + 31


# ---------------------------------------------------------------- select.cu
#: Widest digit of the candidate selection's radix select (a histogram of 2^bits bins in
#: shared memory per block), and the threads of its one-block pick (each takes whole bins).
SELECT_BITS = 11
SELECT_PICK_THREADS = 1024


def select_passes() -> tuple[tuple[int, int], ...]:
    """The radix select's digits, (shift, bits) from the most significant: 32 bits in digits
    of at most SELECT_BITS ((21, 11), (10, 11), (0, 10))."""
    passes, top = [], 32
    while top > 0:
        bits = min(SELECT_BITS, top)
        passes.append((top - bits, bits))
        top -= bits
    return tuple(passes)


# ---------------------------------------------------------------- traceback.cu
#: Residue codes the traceback kernels' shared-memory profiles hold.
MAX_CODES = 32
#: Rows of the query per lane that the traceback kernels are compiled for, and the warps
#: (pairs) per block of each (``Warps<R>``): the per-warp profiles take MAX_CODES * 32 * R bytes.
TB_WARPS = {4: 4, 8: 4, 16: 2}
#: A team (one pair spread over several warps of a block, ``tb_ends_team``/``tb_region_team``):
#: warp w runs TB_TEAM_DELAY steps behind warp w - 1 and takes its top input from a shared ring
#: of twice as many columns written by warp w - 1's last lane; the block synchronises every
#: TB_TEAM_DELAY / 2 steps (the kernel derives why that is safe), and at most TB_TEAM_MAX_WARPS
#: warps make a team (its ``__launch_bounds__``).
TB_TEAM_DELAY = 64
TB_TEAM_MAX_WARPS = 8


class Status(enum.IntEnum):
    """Per-pair outcome of ``tb_ends``; ``BAD_REGION`` is set by the host after the region pass."""

    OK = 0
    MISMATCH = 1  # the best score differs from the expected one
    NO_ALIGNMENT = 2  # no positive-scoring local alignment
    NO_START = 3  # anchored: no cell reaches the score inside the pair
    ABOVE = 4  # anchored: the first cell reaching the score exceeds it
    BAD_REGION = 5  # the region pass's path does not score the expected score


class EndField(enum.IntEnum):
    """Columns of ``tb_ends``'s per-pair output row (1-based cells)."""

    STATUS = 0
    SCORE = 1
    Q_START = 2
    Q_END = 3
    S_START = 4
    S_END = 5


class WalkField(enum.IntEnum):
    """Columns of ``tb_walk_strip``'s per-pair walk state (int32), kept between the strips of a
    region: where the path is (1-based row and column of the region), in which matrix (0 H, 1 E,
    2 F) and how many operations it has written."""

    I = 0  # noqa: E741 (the recurrences' name for the row)
    J = 1
    STATE = 2
    LENGTH = 3


#: ``tb_walk_strip``'s path length of a pair whose walk goes on in the strip above.
TB_WALKING = -2


# ---------------------------------------------------------------- sw_long.cu
#: Warps per block of ``sw_long`` (its ``__launch_bounds__`` is 32 times this).
LONG_WARPS_PER_BLOCK = 4
#: Bits of each of the two values (G + oe, E + oe) in a boundary slot word; the other
#: 64 - 2 * bits hold the producer's tag. Scores must stay below ``1 << LONG_SLOT_BITS``.
LONG_SLOT_BITS = 28


class PartField(enum.IntEnum):
    """Columns of the align-long part table (one int64 row per part, see ``long.gpu_plan.PartBuffers``)."""

    OFFSET = 0  # the part's first column in the columns buffer (padded to whole blocks)
    COLUMNS = 1  # columns scanned
    COL0 = 2  # global 0-based first column
    OWN_LO = 3  # owned columns [own_lo, own_hi)
    OWN_HI = 4
    BLOCKS = 5  # column blocks


# ---------------------------------------------------------------- seed.cu
#: Row length of the seed kernel's substitution matrix copy (codes < 32).
SEED_MATRIX_STRIDE = 32
#: Warps per block of the seed kernel (its ``__launch_bounds__`` is 32 times this).
SEED_WARPS = 8
#: Positions of a subject per unit of the seed kernel's work (a warp): longer subjects are cut.
SEED_SEGMENT = 1024


class SeedCounter(enum.IntEnum):
    """The seed kernel's uint64 counters."""

    HITS = 0  # hits whose span was scored (the CPU counts those of pairs not yet candidates)
    EXTENSIONS = 1  # ungapped extensions run (hits whose span passed, of pairs not yet candidates)


def scan_rows(offsets, first: int, stop: int, lanes: int) -> tuple[int, int]:
    """The boundary rows ``[lo, hi)`` that a whole-batch scan of subjects ``first..stop``
    (``first`` even when ``lanes`` is 2; ``offsets``: the batch's n + 1 residue offsets)
    writes: its groups' rows as ``boundary_row`` in ``kernels/sw_scan.cu`` places them."""
    if stop <= first:
        return 0, 0
    if lanes == 1:
        return int(offsets[first]), int(offsets[stop])
    last = first + (stop - 1 - first) // 2 * 2  # the last group's first subject
    return int(offsets[first + 1]) // 2, int(offsets[last + 1]) // 2 + int(offsets[stop] - offsets[stop - 1])


def even_cuts(offsets, stop: int, parts: int) -> list[int]:
    """Subject indices ``0 = c_0 <= ... <= c_parts = stop`` that cut subjects ``0..stop`` of a
    batch (``offsets``: its n + 1 residue offsets, ascending) into ``parts`` scans of about
    equal residues, each cut even, so that packed pairs stay whole and the scans' rows
    (:func:`scan_rows`) are disjoint (``stop`` itself is even or the batch's end)."""
    lo, hi = int(offsets[0]), int(offsets[stop])
    cuts = [bisect.bisect_left(offsets, lo + (hi - lo) * j // parts, 0, stop + 1) // 2 * 2 for j in range(1, parts)]
    return [0, *cuts, stop]


def boundary_rows(n_residues: int, longest: int, lanes: int) -> int:
    """Rows (two 32-bit words each) of the boundary buffer that the whole-batch scans of a batch
    of ``n_residues`` residues, its longest subject ``longest`` long, use with ``lanes``
    subjects per group: the derivation is ``boundary_row`` in ``kernels/sw_scan.cu``."""
    return n_residues // 2 + longest + 1 if lanes == 2 else n_residues + 1


def _enum_defines(prefix: str, values: type[enum.IntEnum]) -> list[str]:
    return [f"-DSWGPU_{prefix}_{m.name}={m.value}" for m in values] + [f"-DSWGPU_{prefix}_COUNT={len(values)}"]


def compile_options() -> tuple[str, ...]:
    """The ``-D`` options of every kernel: the values above as ``SWGPU_*`` macros."""
    return (
        "-DSWGPU_ABI=1",
        f"-DSWGPU_PROFILE_ROWS={PROFILE_ROWS}",
        f"-DSWGPU_PAD_RESIDUE={PAD_RESIDUE}",
        f"-DSWGPU_INTER_BLOCK={INTER_BLOCK}",
        f"-DSWGPU_INTRA_DELAY={INTRA_DELAY}",
        f"-DSWGPU_SELECT_BITS={SELECT_BITS}",
        f"-DSWGPU_SELECT_PICK_THREADS={SELECT_PICK_THREADS}",
        f"-DSWGPU_MAX_CODES={MAX_CODES}",
        *(f"-DSWGPU_TB_WARPS_{r}={w}" for r, w in TB_WARPS.items()),
        f"-DSWGPU_TB_TEAM_DELAY={TB_TEAM_DELAY}",
        f"-DSWGPU_TB_TEAM_MAX_WARPS={TB_TEAM_MAX_WARPS}",
        *_enum_defines("STATUS", Status),
        *_enum_defines("END", EndField),
        *_enum_defines("WALK", WalkField),
        f"-DSWGPU_TB_WALKING={TB_WALKING}",
        f"-DSWGPU_LONG_WARPS_PER_BLOCK={LONG_WARPS_PER_BLOCK}",
        f"-DSWGPU_LONG_SLOT_BITS={LONG_SLOT_BITS}",
        *_enum_defines("PART", PartField),
    )


def seed_options(params: SeedParams) -> tuple[str, ...]:
    """The ``-D`` options of the seed kernel (``--mode fast``), beside :func:`compile_options`:
    the rule's parameters (:class:`~swgpu_core.seed.SeedParams`: its shapes' count and weight,
    its alphabet's groups, the keys per shape, the span, X-drop and trigger scores), so the
    kernel and the CPU read one definition. The shapes' offsets go to the kernel as an array."""
    from .seed import TRIGGER_BASE_LOG2

    return (
        f"-DSWGPU_SEED_SHAPES={len(params.shapes)}",
        f"-DSWGPU_SEED_WEIGHT={params.weight}",
        f"-DSWGPU_SEED_GROUPS={params.n_groups}",
        f"-DSWGPU_SEED_KEYS={params.n_keys}",
        f"-DSWGPU_SEED_SPAN={params.span}",
        f"-DSWGPU_SEED_XDROP={params.xdrop}",
        f"-DSWGPU_SEED_TRIGGER={params.trigger}",
        f"-DSWGPU_SEED_TRIGGER_STEP={params.trigger_step}",
        f"-DSWGPU_SEED_TRIGGER_BASE_LOG2={TRIGGER_BASE_LOG2}",
        f"-DSWGPU_SEED_MATRIX_STRIDE={SEED_MATRIX_STRIDE}",
        f"-DSWGPU_SEED_WARPS={SEED_WARPS}",
        f"-DSWGPU_SEED_MAX_LENGTH={max(len(s) for s in params.shapes)}",
        f"-DSWGPU_SEED_SEGMENT={SEED_SEGMENT}",
        *_enum_defines("SEED_COUNTER", SeedCounter),
    )


def _read(name: str) -> str:
    return resources.files("swgpu_core").joinpath(f"kernels/{name}").read_text()


def kernel_source(name: str) -> str:
    """``kernels/<name>`` with its ``#include "common.cuh"`` line replaced by the header's text.

    NVRTC gets one self-contained source (no include path), and CuPy's cache key, which
    covers the source text, covers the header too.
    """
    text = _read(name)
    lines = text.split("\n")
    hits = [k for k, line in enumerate(lines) if line.split("//")[0].strip() == _INCLUDE]
    if len(hits) != 1:
        raise ValueError(f"kernels/{name}: expected one line '{_INCLUDE}', found {len(hits)}")
    at = hits[0]
    # #line keeps the compiler's messages pointing at the right file and line
    lines[at] = f'#line 1 "{HEADER}"\n' + _read(HEADER).rstrip("\n") + f'\n#line {at + 2} "{name}"'
    return "\n".join(lines)
