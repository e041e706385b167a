"""align-long's windowed traceback on the CPU: growing windows, the errors, and the rounds
of the GPU path driven by a CPU stand-in for the kernels (so CI checks its bookkeeping)."""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from types import SimpleNamespace

import numpy as np
import pytest
from long_data import planted, random_dna

from swgpu_core.align.traceback import PairTask, TracebackError, reverse_start, trace_pair, trace_region
from swgpu_core.errors import InputError
from swgpu_core.kernel_abi import Status
from swgpu_core.long import trace
from swgpu_core.long.cpu_scan import scan_section
from swgpu_core.long.endpoints import BandRule, EndPoint, merge, select
from swgpu_core.long.sections import layout
from swgpu_core.scoring import Scoring

DNA_SCORING = Scoring.nucleotide()


def _ends(q, t, scoring, top):
    rule = BandRule(q.size, 64)
    return select(merge([scan_section(q, t, s, rule, scoring)[0] for s in layout(t.size, 1, 0)]), rule, top)


def _key(t):
    return (t.score, t.qstart, t.qend, t.sstart, t.send, t.ops.tobytes())


@pytest.fixture(scope="module")
def long_copy():
    """A 1,500-residue query planted with indels: its alignment needs a 4,096 window."""
    q, t, copy = planted(12_000, 1_500, 4_000, seed=21)
    return q, t, _ends(q, t, DNA_SCORING, 1)[0]


def test_grown_window_equals_the_full_table(long_copy):
    q, t, end = long_copy
    got = trace.trace_end_points(q, t, [end], DNA_SCORING, 10_000)[0]
    want = trace_pair(PairTask(q, t[: end.send], end.score), DNA_SCORING)
    assert got.qend - got.qstart + 1 == 1_500 > 1024
    assert _key(got) == _key(want)


def test_window_rule():
    end = EndPoint(100, 50_000, 90_000)
    assert trace.grown_window(end, 256, 10_000) == 1_024
    assert trace.grown_window(end, 16_384, 10_000) == 20_000
    with pytest.raises(InputError, match="longer than --max-alignment-length 10000"):
        trace.grown_window(end, 20_000, 10_000)
    with pytest.raises(TracebackError, match="no alignment of score 100 ends at query 50000, target 90000"):
        trace.grown_window(end, 90_000, 100_000)  # the window held the table's corner
    assert trace.window_cap(10) == trace.FIRST_WINDOW


def test_first_window_rule():
    """Windows whose rows or columns cannot hold score / best-entry pairs are skipped; the skip
    stops at the table's corner and at the cap, where the full sequence stops growing."""
    dna = DNA_SCORING  # best entry 5
    assert trace.first_window(EndPoint(1_280, 50_000, 90_000), dna, 10**6) == 256  # 256 pairs reach 1,280
    assert trace.first_window(EndPoint(1_285, 50_000, 90_000), dna, 10**6) == 1_024
    assert trace.first_window(EndPoint(42_000, 50_000, 90_000), dna, 10**6) == 16_384  # a 10^4 alignment
    assert trace.first_window(EndPoint(420_000, 100_000, 10**8), dna, 10**6) == 262_144  # a 10^5 one
    assert trace.first_window(EndPoint(12_000, 3_000, 90_000), dna, 10**6) == 4_096  # 2,400 pairs: the 3,000 rows of 4,096
    assert trace.first_window(EndPoint(42_000, 3_000, 90_000), dna, 10**6) == 262_144  # none can: on to the corner
    assert trace.first_window(EndPoint(42_000, 900, 1_000), dna, 10**6) == 1_024  # the corner
    assert trace.first_window(EndPoint(42_000, 50_000, 90_000), dna, 1_000) == 2_000  # the cap
    no_gain = dataclasses.replace(dna, matrix=np.full_like(dna.matrix, -1))
    assert trace.first_window(EndPoint(42_000, 50_000, 90_000), no_gain, 10**6) == 256


@pytest.mark.parametrize("seed", range(6))
def test_skipped_windows_hold_no_start(seed):
    """The rule's premise, on the reference: every window before the first one finds no start
    (so the traceback from 256 would have grown past it); alignments with indels, end points of
    several bands, ties in the score rows."""
    q, t, _ = planted(6_000, 900, 2_500, seed=seed)
    mat = np.require(DNA_SCORING.matrix, np.int32, ["C", "W"])
    skipped = 0
    for end in _ends(q, t, DNA_SCORING, 6):
        first = trace.first_window(end, DNA_SCORING, 10_000)
        window = trace.FIRST_WINDOW
        while window < first:
            i_lo, j_lo = max(0, end.qend - window), max(0, end.send - window)
            got = reverse_start(
                np.ascontiguousarray(q[i_lo : end.qend]), np.ascontiguousarray(t[j_lo : end.send]), mat,
                DNA_SCORING.gap_open, DNA_SCORING.gap_extend, end.qend - i_lo, end.send - j_lo, end.score,
            )  # fmt: skip
            assert got == (-1, -1)
            window *= 4
            skipped += 1
        assert first > trace.FIRST_WINDOW or end.score <= 5 * trace.FIRST_WINDOW
    assert skipped


def _with_above(q, t):
    """Inputs extended by a perfect 200-residue match, and an end point at its end whose
    score (999) is below the true one (1,000), as a scan cut short by a section would give."""
    seg = random_dna(300, 5)
    return np.concatenate([q, seg[:200]]), np.concatenate([t, seg]), EndPoint(999, q.size + 200, t.size + 200)


def test_errors_name_max_alignment_length(long_copy):
    q, t, end = long_copy
    with pytest.raises(InputError) as exc:
        trace.trace_end_points(q, t, [end], DNA_SCORING, 300)
    assert (
        str(exc.value) == f"the alignment ending at query {end.qend}, target {end.send} is longer than --max-alignment-length 300; raise it"
    )
    q2, t2, above = _with_above(q, t)
    with pytest.raises(InputError, match=r"scores more than the scan found \(999\)"):
        trace.trace_end_points(q2, t2, [above], DNA_SCORING, 10_000)
    with pytest.raises(TracebackError, match="no alignment of score 10000 ends at query 50, target 60"):
        trace.trace_end_points(q, t, [EndPoint(10_000, 50, 60)], DNA_SCORING, 10_000)


class _CpuKernels:
    """The few names of ``gpu.traceback`` that ``trace_on_gpu`` uses, with the CPU's passes:
    anchored reverse scan at the last cell of each pair, then pass 3 of the rectangle."""

    def __init__(self) -> None:
        self.rounds = 0
        self.first: dict[int, int] = {}  # per device: the end points of its first round
        self._current = threading.local()
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def on_device(self, device):
        self._current.device = device
        yield
        del self._current.device

    @staticmethod
    def pack_sequences(queries, subjects):
        return list(queries), list(subjects)

    def align_packed(self, queries, subjects, scoring, expected, *, end_cells):
        with self._lock:
            self.rounds += 1
            self.first.setdefault(self._current.device, len(queries))
        mat = np.require(scoring.matrix, np.int32, ["C", "W"])
        status, traces = [], []
        for q, s, best, (ie, je) in zip(queries, subjects, expected.tolist(), end_cells.tolist()):
            assert (ie, je) == (q.size, s.size)
            i0, j0 = reverse_start(
                np.ascontiguousarray(q), np.ascontiguousarray(s), mat, scoring.gap_open, scoring.gap_extend, ie, je, best
            )
            status.append(Status.OK if i0 > 0 else Status.ABOVE if i0 == -2 else Status.NO_START)
            traces.append(trace_region(q, s, scoring, best, i0, ie, j0, je) if i0 > 0 else None)
        return SimpleNamespace(status=np.array(status), traces=lambda which: [traces[k] for k in which])


def test_gpu_rounds_equal_the_cpu(long_copy):
    """Real end points (all about 1,500 rows long: windows grow twice or more); then two
    errors in both orders: the too-long one is found in round 2, the other in round 1, yet
    the first in order is raised."""
    q, t, end = long_copy
    ends = _ends(q, t, DNA_SCORING, 40)
    assert ends[0] == end and len(ends) > 10
    kernels = _CpuKernels()
    want = trace.trace_end_points(q, t, ends, DNA_SCORING, 10_000, threads=2)
    got = trace.trace_on_gpu(kernels, q, t, ends, DNA_SCORING, 10_000)
    assert [_key(g) for g in got] == [_key(w) for w in want]
    assert kernels.rounds >= 2  # windows from 256 for the weakest end points, from 4,096 for the best
    q2, t2, above = _with_above(q, t)
    for order in ([end, above], [above, end]):
        with pytest.raises(InputError) as cpu_err:
            trace.trace_end_points(q2, t2, order, DNA_SCORING, 300, threads=2)
        with pytest.raises(InputError) as gpu_err:
            trace.trace_on_gpu(kernels, q2, t2, order, DNA_SCORING, 300)
        assert str(gpu_err.value) == str(cpu_err.value)


def test_gpu_rounds_share_the_devices(long_copy):
    """With several devices the end points are dealt round robin, one thread per device; the
    traces are one device's, and of two errors the first in order is raised whichever device
    found it."""
    q, t, end = long_copy
    ends = _ends(q, t, DNA_SCORING, 40)
    want = trace.trace_end_points(q, t, ends, DNA_SCORING, 10_000, threads=2)
    kernels = _CpuKernels()
    got = trace.trace_on_gpu(kernels, q, t, ends, DNA_SCORING, 10_000, devices=[1, 0])
    assert [_key(g) for g in got] == [_key(w) for w in want]
    assert kernels.first == {1: -(-len(ends) // 2), 0: len(ends) // 2}
    q2, t2, above = _with_above(q, t)
    for order in ([end, above], [above, end]):
        with pytest.raises(InputError) as cpu_err:
            trace.trace_end_points(q2, t2, order, DNA_SCORING, 300, threads=2)
        with pytest.raises(InputError) as gpu_err:
            trace.trace_on_gpu(_CpuKernels(), q2, t2, order, DNA_SCORING, 300, devices=[0, 1])
        assert str(gpu_err.value) == str(cpu_err.value)
    for devices in ([0], [0, 1]):  # no end point (a scan that found no alignment): no trace, no GPU asked
        idle = _CpuKernels()
        assert trace.trace_on_gpu(idle, q, t, [], DNA_SCORING, 10_000, devices=devices) == []
        assert idle.rounds == 0
