"""align-long's traceback on the GPU equals the CPU's: the same traces, bit for bit, and the
same error (the first failing end point's) where an alignment is too long.

Marked ``gpu``: skipped without CuPy and a device. End points come from real scans (the
numba scan, so these tests do not depend on the GPU scan) of planted DNA and of bundled
proteins; most DNA alignments are longer than the first window (256), many than 1,024.
"""

from __future__ import annotations

import numpy as np
import pytest
from long_data import mutate, protein_pair, random_dna

from swgpu_core.align.traceback import TracebackError
from swgpu_core.engine import get_engine
from swgpu_core.errors import InputError
from swgpu_core.long.cpu_scan import scan_section
from swgpu_core.long.endpoints import BandRule, EndPoint, merge, select
from swgpu_core.long.sections import layout
from swgpu_core.scoring import Scoring

pytestmark = pytest.mark.gpu

DNA_SCORING = Scoring.nucleotide()


def _ends(q, t, scoring, top, sections=1, overlap=0):
    rule = BandRule(q.size, 64)
    return select(merge([scan_section(q, t, s, rule, scoring)[0] for s in layout(t.size, sections, overlap)]), rule, top)


def _outcome(q, t, ends, scoring, max_length, backend, devices=(0,)):
    """The traces as comparable tuples, or the error as (type, message)."""
    try:
        traces = get_engine(backend).trace_end_points(q, t, ends, scoring, max_length, devices=devices)
    except (InputError, TracebackError) as exc:
        return type(exc).__name__, str(exc)
    return [(x.score, x.qstart, x.qend, x.sstart, x.send, x.ops.tobytes()) for x in traces]


def _same(q, t, ends, scoring, max_length=10_000, devices=(0,)):
    """GPU and CPU outcomes for ``ends``; returns the CPU's."""
    want = _outcome(q, t, ends, scoring, max_length, "cpu")
    got = _outcome(q, t, ends, scoring, max_length, "cuda", devices)
    if isinstance(want, tuple) or isinstance(got, tuple):
        assert got == want
        return want
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g[:5] == w[:5], f"end point {ends[k]}: gpu ends {g[:5]}, cpu {w[:5]}"
        assert g[5] == w[5], f"end point {ends[k]}: paths differ ({len(g[5])} vs {len(w[5])} ops)"
    return want


@pytest.fixture(scope="module")
def dna():
    """A 1,200-residue query and mutated copies of 1,200, 400 and 100 of its residues."""
    q, t = random_dna(1_200, 41), random_dna(30_000, 42)
    for k, (a, b, at) in enumerate([(0, 1_200, 5_000), (300, 700, 15_000), (900, 1_000, 25_000)]):
        c = mutate(q[a:b], 43 + k)
        t[at : at + c.size] = c
    return q, t, _ends(q, t, DNA_SCORING, 80)


def test_dna_end_points(dna):
    q, t, ends = dna
    want = _same(q, t, ends, DNA_SCORING)
    sizes = [max(w[2] - w[1], w[4] - w[3]) + 1 for w in want]
    assert len(ends) > 50 and max(sizes) > 1_024  # windows grew twice
    assert (want[0][1], want[0][2]) == (1, 1_200)  # the planted copy


def test_protein_end_points():
    q, t = protein_pair(60_000)
    for scoring in (Scoring.protein(), Scoring.protein("BLOSUM45", 14, 2)):
        want = _same(q, t, _ends(q, t, scoring, 100), scoring)
        assert len(want) == 100


def test_ties():
    """Repeats and two-letter sequences with cheap gaps: many optimal paths, one answer."""
    unit = random_dna(37, 7)
    q = np.tile(unit, 12)
    t = np.concatenate([random_dna(2_000, 8), np.tile(unit, 30), random_dna(500, 9), np.tile(unit[::-1], 20), random_dna(1_000, 10)])
    _same(q, t, _ends(q, t, DNA_SCORING, 50), DNA_SCORING)
    two = Scoring.nucleotide(2, -1, 1, 1)
    q2, t2 = random_dna(300, 11) % 2, random_dna(6_000, 12) % 2
    want = _same(q2, t2, _ends(q2, t2, two, 40), two)
    assert len(want) > 20


def test_errors(dna):
    """Too long for --max-alignment-length, a score below the true one, no alignment at all,
    and sections that cut alignments (small overlap): the CPU's error, from the first
    failing end point in order even when the GPU finds a later one's in an earlier round."""
    q, t, ends = dna
    assert _same(q, t, ends[:5], DNA_SCORING, 300)[0] == "InputError"
    seg = random_dna(300, 13)
    q2, t2 = np.concatenate([q, seg[:200]]), np.concatenate([t, seg])
    above = EndPoint(999, q.size + 200, t.size + 200)  # the perfect 200-residue match scores 1,000
    assert "scores more than the scan found (999)" in _same(q2, t2, [above], DNA_SCORING)[1]
    assert "is longer than --max-alignment-length 300" in _same(q2, t2, [ends[0], above], DNA_SCORING, 300)[1]
    assert "scores more" in _same(q2, t2, [above, ends[0]], DNA_SCORING, 300)[1]
    assert _same(q, t, [ends[3], EndPoint(10_000, 50, 60)], DNA_SCORING)[0] == "TracebackError"
    _same(q, t, _ends(q, t, DNA_SCORING, 40, sections=4, overlap=300), DNA_SCORING, 300)


def test_devices_share_the_end_points(dna):
    """Every visible GPU (GPU 0 twice on a machine of one) traces a share of the end points,
    each in a thread of its own; the traces and the first error are the CPU's."""
    import cupy as cp

    count = cp.cuda.runtime.getDeviceCount()
    devices = list(range(count)) if count > 1 else [0, 0]
    q, t, ends = dna
    _same(q, t, ends, DNA_SCORING, devices=devices)
    seg = random_dna(300, 13)
    q2, t2 = np.concatenate([q, seg[:200]]), np.concatenate([t, seg])
    above = EndPoint(999, q.size + 200, t.size + 200)
    assert "is longer than --max-alignment-length 300" in _same(q2, t2, [ends[0], above], DNA_SCORING, 300, devices)[1]
    assert "scores more" in _same(q2, t2, [above, ends[0]], DNA_SCORING, 300, devices)[1]
