"""align-long on the GPU: band keys (so end points and scores) equal the CPU scan's, exactly.

Marked ``gpu``: skipped without CuPy and a device. Every case compares the complete band
key arrays of ``kernels/sw_long.cu`` and the numba reference, which pins down every
band's best score and its cell, not just the top alignment.
"""

from __future__ import annotations

import numpy as np
import pytest
from long_data import planted, protein_pair, random_dna

from swgpu_core.long.cpu_scan import scan_section
from swgpu_core.long.endpoints import BandRule, merge, select
from swgpu_core.long.sections import layout
from swgpu_core.scoring import Scoring

pytestmark = pytest.mark.gpu

DNA_SCORING = Scoring.nucleotide()


@pytest.fixture(scope="module")
def kernel():
    """The compiled kernel for a scoring (the score table's shape depends on the alphabet)."""
    from swgpu_core.long.cuda_scan import LongScanKernel

    cache = {}
    return lambda scoring: cache.setdefault(scoring.describe(), LongScanKernel(scoring))


def _both(kernel, q, t, scoring, width=64, sections=1, overlap=10_000):
    rule = BandRule(q.size, width)
    parts = layout(t.size, sections, overlap)
    gpu = merge([kernel(scoring).scan(q, t, s, rule, scoring)[0] for s in parts])
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
