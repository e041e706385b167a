"""How one GPU scans a section: how many independent parts, and how many warps.

The kernel (``kernels/sw_long.cu``) is a blocked wavefront: a column block can start only
once its left neighbour has published its first rows, so one scan advances one block per
hand-off (about 24 us on an H100, whatever the query length) and keeps only
:func:`busy_warps` warps computing (~17 for a 1,000-residue query, on a GPU with room
for ~2,000). A short query therefore gets its section cut into parts exactly as the
target is cut across GPUs (:func:`.sections.split`, the section's overlap
``--max-alignment-length``), and the parts run side by side in one launch: ``S`` parts
keep ``S`` times the warps busy, at the price of scanning ``S - 1`` overlaps more (on
the H100, GCUPS grow linearly with ``S`` until the GPU is full). Queries of ~10^5
residues and more fill the GPU with one or two parts. Pure Python, so the choice is
tested without a GPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..kernel_abi import LONG_WARPS_PER_BLOCK as WARPS_PER_BLOCK
from ..kernel_abi import PartField
from .endpoints import GROUP
from .sections import Section, split

#: Target columns of one column block (32 lanes of GROUP columns), the unit a warp takes.
COLS_PER_WARP = 32 * GROUP
#: Warps per SM that a launch aims for (128-thread blocks: 16 warps fit an SM's registers).
WARPS_PER_SM = 16
#: Device memory for the boundary slots of all warps (``m`` words of 8 bytes each).
SLOT_BUDGET = 2 << 30
#: A part owns at least this many overlaps' worth of columns, so overlap costs <= 1/8 more cells.
MIN_PART_OVERLAPS = 8
#: Wavefront steps from one column block's start to the next one's: the right block's lane
#: 0 needs each row from the left block's lane 31, 31 steps later, in chunks of 8, through
#: a polled global word. Calibrated on the H100: with this lag, parts reach the GPU's
#: plateau (~1,250 GCUPS) for 10^3 and 10^4 queries; with 32, half as many parts reached
#: only 950 and 1,030.
HANDOFF_STEPS = 64


def busy_warps(m: int) -> int:
    """Warps one part keeps computing: a block's ``m + 31`` steps over the steps between blocks."""
    return -(-(m + 31) // HANDOFF_STEPS)


def pipeline_warps(m: int) -> int:
    """Warps to launch per part: room for a new block every 16 steps, plus 32 (generous: idle warps only poll)."""
    return 2 * (m + 32) // 32 + 32


def launch_warps(m: int, n_blocks: int, n_parts: int, sms: int) -> int:
    """Warps to launch (a multiple of WARPS_PER_BLOCK) for ``n_parts`` parts of ``n_blocks`` blocks in all.

    The parts' pipelines, capped by the GPU's size, the slot budget and the blocks there are.
    """
    want = min(n_parts * pipeline_warps(m), WARPS_PER_SM * sms, SLOT_BUDGET // (8 * max(m, 1)), max(n_blocks, 1))
    return max(WARPS_PER_BLOCK, want // WARPS_PER_BLOCK * WARPS_PER_BLOCK)


def auto_parts(m: int, section: Section, sms: int) -> int:
    """Parts that fill the GPU with busy warps, as long as each owns a long enough run of columns.

    A part must own ``MIN_PART_OVERLAPS`` overlaps (so the extra cells stay small) and at
    least a block per busy warp (a shorter part cannot keep its warps busy).
    """
    fill = -(-WARPS_PER_SM * sms // busy_warps(m))
    shortest = max(MIN_PART_OVERLAPS * section.overlap, busy_warps(m) * COLS_PER_WARP)
    return max(1, min(fill, section.owned // shortest))


def parse_gpu_sections(text: str) -> int | None:
    """``--gpu-sections``: ``auto`` as None (:func:`auto_parts` decides), else a count >= 1."""
    if text == "auto":
        return None
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise InputError(f"--gpu-sections {text!r}: expected auto or a count >= 1")
    return count


def gpu_parts(m: int, section: Section, sms: int, count: int | None = None) -> list[Section]:
    """The parts one GPU scans side by side: ``count`` of them, or :func:`auto_parts` when None."""
    return split(section, auto_parts(m, section, sms) if count is None else count)


def part_table(parts: Sequence[Section]) -> np.ndarray:
    """The kernel's table of ``parts``: one int64 row of :class:`~swgpu_core.kernel_abi.PartField`
    values per part: offset of its columns in the columns buffer, column count, first (global)
    column, owned ``[own_lo, own_hi)``, column blocks.

    Each part's columns start at a multiple of a block (the kernel loads 16 bytes at a
    time) and are padded to whole blocks with the padding code (cells right of a part's
    columns never feed back into them, and are not recorded): the buffer holds
    ``BLOCKS.sum() * COLS_PER_WARP`` columns."""
    ncols = np.array([p.scanned for p in parts], np.int64)
    blocks = -(-ncols // COLS_PER_WARP)
    offsets = np.concatenate([[0], np.cumsum(blocks * COLS_PER_WARP)])
    f = PartField
    fields = [f.OFFSET, f.COLUMNS, f.COL0, f.OWN_LO, f.OWN_HI, f.BLOCKS]
    rows = np.array([(off, n, p.scan_lo, p.own_lo, p.own_hi, b) for p, off, n, b in zip(parts, offsets[:-1], ncols, blocks)], np.int64)
    table = np.zeros((len(parts), len(f)), np.int64)
    table[:, fields] = rows.reshape(-1, len(fields))
    return table


@dataclass(frozen=True)
class PartBuffers:
    """What the kernel reads about the parts, made on the host: their columns, laid out as
    :func:`part_table` says, and that table. The GPU's scan makes the same columns on the
    device (:func:`swgpu_core.gpu.long_scan.device_columns`, tested equal to these)."""

    columns: np.ndarray  # uint8
    table: np.ndarray  # int64, one row of PartField values per part

    @classmethod
    def build(cls, target: np.ndarray, parts: Sequence[Section], pad: int) -> PartBuffers:
        table = part_table(parts)
        columns = np.full(int(table[:, PartField.BLOCKS].sum()) * COLS_PER_WARP, pad, np.uint8)
        for off, n, col0 in table[:, [PartField.OFFSET, PartField.COLUMNS, PartField.COL0]].tolist():
            columns[off : off + n] = target[col0 : col0 + n]
        return cls(columns, table)

    @property
    def blocks(self) -> np.ndarray:
        return self.table[:, PartField.BLOCKS]
