"""align-long on the GPU: band keys (so end points and scores) equal the CPU scan's, exactly.

Marked ``gpu``: skipped without CuPy and a device. Every case compares the complete band
key arrays of ``kernels/sw_long.cu`` and the numba reference, which pins down every
band's best score and its cell, not just the top alignment. A section cut into parts
that one launch scans side by side (``long/gpu_plan.py``) must give the keys of the CPU
scan of the whole section.
"""

from __future__ import annotations

import numpy as np
import pytest
from long_data import planted, protein_pair, random_dna

from swgpu_core.long import gpu_plan
from swgpu_core.long.cpu_scan import scan_section
from swgpu_core.long.endpoints import BandRule, merge, select
from swgpu_core.long.run import scan_sections
from swgpu_core.long.sections import layout, split
from swgpu_core.scoring import Scoring

pytestmark = pytest.mark.gpu

DNA_SCORING = Scoring.nucleotide()


@pytest.fixture(scope="module")
def kernel():
    """The compiled kernel for a scoring (the score table's shape depends on the alphabet)."""
    from swgpu_core.gpu.long_scan import LongScanKernel

    cache = {}
    return lambda scoring: cache.setdefault(scoring.describe(), LongScanKernel(scoring))


def _both(kernel, q, t, scoring, width=64, sections=1, overlap=10_000):
    rule = BandRule(q.size, width)
    parts = layout(t.size, sections, overlap)
    gpu = merge([kernel(scoring).scan(q, t, [s], rule, scoring)[0] for s in parts])
    cpu = merge([scan_section(q, t, s, rule, scoring)[0] for s in parts])
    return gpu, cpu, rule


def _same(gpu, cpu):
    assert gpu.bands.size == cpu.bands.size, f"{gpu.bands.size} bands on the GPU, {cpu.bands.size} on the CPU"
    bad = np.flatnonzero((gpu.bands != cpu.bands) | (gpu.keys != cpu.keys))
    assert bad.size == 0, f"{bad.size} band keys differ, first at band {cpu.bands[bad[0]]}: {gpu.keys[bad[0]]:#x} vs {cpu.keys[bad[0]]:#x}"


@pytest.mark.parametrize(("m", "n"), [(1, 700), (77, 10_001), (300, 50_000), (1_000, 33_333), (5_000, 700), (2_049, 4_096)])
def test_dna_band_keys_equal_cpu(kernel, m, n):
    q, t = random_dna(m, m), random_dna(n, n)
    if m > 20 and n > 2 * m:
        t[n // 3 : n // 3 + m] = q
    _same(*_both(kernel, q, t, DNA_SCORING)[:2])


def test_planted_indels_and_end_points(kernel):
    q, t, copy = planted(200_000, 800, 123_457)
    gpu, cpu, rule = _both(kernel, q, t, DNA_SCORING)
    _same(gpu, cpu)
    best = select(gpu, rule, 200)
    assert best == select(cpu, rule, 200)
    assert (best[0].qend, best[0].send) == (800, 123_457 + copy.size)


def test_real_protein_band_keys_equal_cpu(kernel):
    q, t = protein_pair(120_000)
    for name, go in (("BLOSUM62", 11), ("BLOSUM45", 14)):
        _same(*_both(kernel, q, t, Scoring.protein(name, go, 1))[:2])


def test_score_above_65535(kernel):
    seg = random_dna(14_000, 3)
    t = np.concatenate([random_dna(3_000, 4), seg, random_dna(3_000, 5)])
    gpu, cpu, rule = _both(kernel, seg, t, DNA_SCORING)
    _same(gpu, cpu)
    best = select(gpu, rule, 1)[0]
    assert (best.score, best.qend, best.send) == (70_000, 14_000, 17_000)


def test_sections_cut_through_an_alignment(kernel):
    q, t, _ = planted(60_000, 700, 29_700)
    whole, _, rule = _both(kernel, q, t, DNA_SCORING, sections=1)
    for count in (2, 4):
        gpu, cpu, _ = _both(kernel, q, t, DNA_SCORING, sections=count, overlap=2_000)
        _same(gpu, cpu)
        _same(gpu, whole)


def _parts_vs_whole(kernel, q, t, section, count, scoring=DNA_SCORING):
    """GPU keys of ``section`` cut into ``count`` parts (one launch) and CPU keys of the uncut section."""
    rule = BandRule(q.size, 64)
    found, timing = kernel(scoring).scan(q, t, split(section, count), rule, scoring)
    assert timing.parts == count
    return found, scan_section(q, t, section, rule, scoring)[0], rule


@pytest.mark.parametrize("count", [2, 5, 16])
def test_parts_in_one_launch_equal_the_uncut_cpu_scan(kernel, count):
    q, t, copy = planted(300_000, 900, 149_700)  # the 2-part cut (150,000) falls inside the copy
    gpu, cpu, rule = _parts_vs_whole(kernel, q, t, layout(t.size, 1, 2_000)[0], count)
    _same(gpu, cpu)
    best = select(gpu, rule, 1)[0]
    assert (best.qend, best.send) == (900, 149_700 + copy.size)


def test_parts_of_a_device_section_equal_its_cpu_scan(kernel):
    section = layout(400_000, 3, 3_000)[1]  # owns [133,328, 266,656), scans from 130,320
    cut = split(section, 4)[2].own_lo
    q, t, copy = planted(400_000, 600, cut - 300)  # a mutated copy with indels across a part boundary
    gpu, cpu, rule = _parts_vs_whole(kernel, q, t, section, 4)
    _same(gpu, cpu)
    ends = select(gpu, rule, 200)
    assert ends == select(cpu, rule, 200)
    assert (ends[0].qend, ends[0].send) == (600, cut - 300 + copy.size)


def test_one_slot_per_part_with_blocks_of_a_part_in_flight_together(kernel, monkeypatch):
    """A slot budget of 4 warps: 3 parts share them, so a part's consecutive blocks run at once on one slot."""
    q, t, _ = planted(60_000, 500, 29_800)
    monkeypatch.setattr(gpu_plan, "SLOT_BUDGET", 8 * q.size * 4)
    _same(*_parts_vs_whole(kernel, q, t, layout(t.size, 1, 1_000)[0], 3)[:2])


def test_protein_parts_equal_cpu(kernel):
    q, t = protein_pair(120_000)
    _same(*_parts_vs_whole(kernel, q, t, layout(t.size, 1, 5_000)[0], 6, Scoring.protein())[:2])


def test_scan_sections_auto_parts_on_devices(kernel):
    """The product path: sections per device, each cut into as many parts as fill the GPU."""
    q, t, copy = planted(2_000_000, 200, 1_000_000 - 100)
    rule = BandRule(q.size, 64)
    sections = layout(t.size, 2, 10_000)
    results = scan_sections(q, t, sections, rule, DNA_SCORING, "cuda")
    assert all(r.parts > 1 for r in results)
    assert sum(r.owned_cells for r in results) == q.size * t.size < sum(r.cells for r in results)
    cpu = merge([scan_section(q, t, s, rule, DNA_SCORING)[0] for s in sections])
    _same(merge([r.found for r in results]), cpu)


@pytest.mark.parametrize("locked", [False, True])
def test_device_columns_equal_the_host_buffers(locked):
    """The scan's columns, made on the device from one upload of the parts' span (page-locked
    or not), are the host build's byte for byte: a section away from the target's start (its
    span starts inside the target), parts whose columns overlap, the padding code at each end."""
    import cupy as cp

    from swgpu_core.gpu.long_scan import device_columns, page_locked

    target = np.random.default_rng(5).integers(0, 4, 300_000).astype(np.uint8)
    parts = split(layout(target.size, 3, 2_000)[1], 5)
    table = gpu_plan.part_table(parts)
    with page_locked(target) as ok:
        assert ok
        with page_locked(target) as again:  # memory registered already: refused, not an error
            assert not again
        columns = device_columns(target, table, 15, locked)
        cp.cuda.Device().synchronize()
    assert np.array_equal(columns.get(), gpu_plan.PartBuffers.build(target, parts, 15).columns)
