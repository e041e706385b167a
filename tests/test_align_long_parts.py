"""align-long inside one GPU: cutting a section into parts, how many, and the kernel's part table.

The GPU scans a section as parts that overlap by ``--max-alignment-length``
(``long/gpu_plan.py``); these tests pin the pure-Python side without a GPU: the parts own
the section's cells exactly once, the CPU scans of the parts merge to the CPU scan of
the whole section (also when a mutated copy with indels straddles a cut), the part
count fills the GPU only where the query is short, and the kernel's buffers hold each
part's columns where its table row says.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from long_data import fasta, planted, random_dna

from swgpu_core.errors import InputError
from swgpu_core.long.cpu_scan import scan_section
from swgpu_core.long.endpoints import GROUP, BandRule, merge, select
from swgpu_core.long.gpu_plan import (
    COLS_PER_WARP,
    MIN_PART_OVERLAPS,
    WARPS_PER_SM,
    PartBuffers,
    auto_parts,
    busy_warps,
    gpu_parts,
    launch_warps,
    parse_gpu_sections,
)
from swgpu_core.long.sections import Section, layout, split
from swgpu_core.scoring import Scoring

H100_SMS = 132


@pytest.mark.parametrize(("n", "count", "overlap"), [(1_000, 1, 0), (100_003, 7, 1_000), (50, 3, 10)])
def test_layout_cuts_the_whole_target_as_before(n, count, overlap):
    pad = -(-overlap // GROUP) * GROUP
    cuts = [min(n, (n * k // count) // GROUP * GROUP) for k in range(count)] + [n]
    assert layout(n, count, overlap) == [Section(k, count, max(0, cuts[k] - pad), cuts[k], cuts[k + 1], overlap) for k in range(count)]


@pytest.mark.parametrize("count", [1, 2, 5, 64])
def test_split_owns_the_section_once_and_scans_inside_it(count):
    section = layout(1_000_003, 3, 10_000)[2]
    parts = split(section, count)
    assert [p.own_lo for p in parts[1:]] == [p.own_hi for p in parts[:-1]]
    assert (parts[0].own_lo, parts[-1].own_hi) == (section.own_lo, section.own_hi)
    assert parts[0].scan_lo == section.scan_lo
    for p in parts:
        assert p.own_lo % GROUP == 0 and p.scan_lo % GROUP == 0
        assert section.scan_lo <= p.scan_lo <= p.own_lo - 10_000 and p.overlap == 10_000


def test_cpu_scans_of_parts_merge_to_the_uncut_section():
    """The reference for the GPU: a mutated copy with indels across a part cut is found the same."""
    section = layout(120_000, 2, 2_000)[1]
    cut = split(section, 3)[1].own_lo
    q, t, copy = planted(120_000, 500, cut - 250)
    rule = BandRule(q.size, 64)
    whole = scan_section(q, t, section, rule, Scoring.nucleotide())[0]
    parts = merge([scan_section(q, t, p, rule, Scoring.nucleotide())[0] for p in split(section, 3)])
    assert np.array_equal(parts.bands, whole.bands) and np.array_equal(parts.keys, whole.keys)
    best = select(parts, rule, 1)[0]
    assert (best.qend, best.send) == (500, cut - 250 + copy.size)
    unlapped = merge([scan_section(q, t, p, rule, Scoring.nucleotide())[0] for p in split(replace(section, overlap=0), 3)])
    assert select(unlapped, rule, 1)[0].score < best.score  # without the overlap the cut copy is lost


def test_auto_parts_fill_the_gpu_for_short_queries_only():
    whole = layout(100_000_000, 1, 10_000)[0]
    chosen = {m: auto_parts(m, whole, H100_SMS) for m in (100, 1_000, 10_000, 100_000)}
    assert chosen == {100: 704, 1_000: 125, 10_000: 14, 100_000: 2}
    for m, s in chosen.items():
        assert (s - 1) * busy_warps(m) < WARPS_PER_SM * H100_SMS <= s * busy_warps(m) or s == 1


def test_auto_parts_are_never_short():
    section = layout(1_000_000, 1, 10_000)[0]
    assert auto_parts(1_000, section, H100_SMS) == 1_000_000 // (MIN_PART_OVERLAPS * 10_000)
    assert auto_parts(1_000, layout(1_000_000, 1, 0)[0], H100_SMS) == 1_000_000 // (busy_warps(1_000) * COLS_PER_WARP)
    assert auto_parts(1_000, layout(50_000, 1, 10_000)[0], H100_SMS) == 1
    assert len(gpu_parts(1_000, section, H100_SMS, 5)) == 5


def test_launch_warps_of_one_part_are_the_pipeline_and_parts_fill_the_gpu():
    assert launch_warps(1_000, 195_313, 1, H100_SMS) == 96
    assert launch_warps(100_000, 195_313, 1, H100_SMS) == WARPS_PER_SM * H100_SMS
    assert launch_warps(1_000_000, 195_313, 1, H100_SMS) == 268  # 2 GiB of slots of 8 MB
    assert launch_warps(1_000, 195_313, 22, H100_SMS) == WARPS_PER_SM * H100_SMS
    assert launch_warps(1_000, 10, 22, H100_SMS) == 8  # no more warps than blocks


def test_part_buffers_hold_each_part_where_its_row_says():
    target = np.random.default_rng(3).integers(0, 4, 5_000).astype(np.uint8)
    parts = split(layout(target.size, 1, 600)[0], 3)
    buffers = PartBuffers.build(target, parts, pad=15)
    for p, (offset, ncols, col0, own_lo, own_hi, blocks) in zip(parts, buffers.table):
        assert offset % COLS_PER_WARP == 0 and (col0, own_lo, own_hi) == (p.scan_lo, p.own_lo, p.own_hi)
        assert ncols == own_hi - col0 and blocks == -(-ncols // COLS_PER_WARP)
        assert np.array_equal(buffers.columns[offset : offset + ncols], target[col0:own_hi])
        assert (buffers.columns[offset + ncols : offset + blocks * COLS_PER_WARP] == 15).all()
    assert buffers.columns.size == buffers.blocks.sum() * COLS_PER_WARP


def test_parse_gpu_sections():
    assert parse_gpu_sections("auto") is None and parse_gpu_sections("12") == 12
    for bad in ("0", "-2", "many"):
        with pytest.raises(InputError, match="--gpu-sections"):
            parse_gpu_sections(bad)


def test_cli_reports_table_cells_and_overlap_cells_apart(tmp_path, swgpu):
    q, t = random_dna(40, 1), random_dna(3_000, 2)
    qf, tf = fasta(tmp_path / "q.fa", "q", q), fasta(tmp_path / "t.fa", "t", t)
    args = ("--backend", "cpu", "--section", "1/2", "--save-ends", tmp_path / "s.npz", "--max-alignment-length", "500")
    rc, _, err = swgpu("align-long", "--query", qf, "--target", tf, *args)
    section = layout(3_000, 2, 500)[1]
    owned, extra = 40 * (section.own_hi - section.own_lo), 40 * (section.own_lo - section.scan_lo)
    assert rc == 0 and f"{owned:,} cells (+{extra:,} overlap) on cpu" in err
