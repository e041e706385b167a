"""The GPU traceback's kernels (``kernels/traceback.cu``) and their host code without a GPU: in a
subprocess whose ``cupy`` is ``tests/cuda_emu/fake_cupy`` (the kernels run through the g++
emulation of their source, ``tests/cuda_emu/traceback_main.cpp``), equal to the CPU reference
(:mod:`swgpu_core.align.traceback`) bit for bit: ends, statuses and paths.

Every pair is traced on one warp (``team_warps=1``), on teams of 2, 4 and 8 warps, and as
:func:`swgpu_core.align.gpu_plan.layout` plans it (the emulated GPU has 4 SMs, so a call of up
to 16 pairs is latency-bound and takes teams), and in strips (``tb_strip``, ``tb_walk_strip``),
with a path that crosses from strip to strip inside a long gap. The teams' barriers and rings are checked under
two interleavings of the emulated threads (a missing barrier shows as a difference between
them, or from the reference). The engine's entry (``traceback_pairs``) takes a search's hits
packed (``PairTasks``) and returns the paths as arrays (``TracedPaths``). The GPU tests (``test_gpu_traceback.py``) compare the kernels on
a device with the same reference. Skipped where g++ is missing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from emulator import require_gxx

TESTS = Path(__file__).resolve().parent
SCRIPT = r"""
import numpy as np
import cupy
from swgpu_core.align import traceback as cpu
from swgpu_core.align.gpu_plan import layout
from swgpu_core.alphabet import PROTEIN
from swgpu_core.gpu import traceback as gpu
from swgpu_core.kernel_abi import Status
from swgpu_core.scoring import Scoring

assert hasattr(cupy, "CALLS"), "the fake cupy was not the one imported"
rng = np.random.default_rng(11)


def mutant(seq, rate=0.3, letters=20):
    out = []
    for c in seq.tolist():
        u = rng.random()
        if u < rate * 0.1:
            continue
        out.append(int(rng.integers(0, letters)) if u < rate else c)
        if rng.random() < rate * 0.1:
            out.extend(rng.integers(0, letters, int(rng.integers(1, 6))).tolist())
    return np.asarray(out or [0], np.uint8)


def same(res, want, k, label):
    w = want[k]
    if w is None:
        assert res.status[k] == Status.NO_ALIGNMENT, (label, k, int(res.status[k]))
        return
    g = res.trace(k)
    assert res.status[k] == Status.OK, (label, k, int(res.status[k]))
    assert (g.score, g.qstart, g.qend, g.sstart, g.send) == (w.score, w.qstart, w.qend, w.sstart, w.send), (label, k)
    assert np.array_equal(g.ops, w.ops), (label, k, "paths differ")


protein, gapped = Scoring.protein(), Scoring.protein("BLOSUM62", 2, 1)
# tall and wide pairs, relatives (long gapped alignments) and strangers, lengths that leave a
# team's last pass with idle warps; and repeats, where only the tie rules pick the answer
pairs = []
for m in (1, 37, 300, 520, 1100, 1700):
    q = rng.integers(0, 20, m).astype(np.uint8)
    pairs += [(q, mutant(q)), (q, rng.integers(0, 20, int(rng.integers(1, 700))).astype(np.uint8))]
pairs += [(PROTEIN.encode("W" * 600), PROTEIN.encode("W" * 90)), (PROTEIN.encode("ACDW" * 150), PROTEIN.encode("ACDW" * 40 + "AC"))]
pairs += [(PROTEIN.encode("W" * 700), PROTEIN.encode("C" * 300))]  # no positive-scoring alignment
queries, subjects = [p[0] for p in pairs], [p[1] for p in pairs]
rows, cols = np.array([q.size for q in queries]), np.array([s.size for s in subjects])
planned = layout(rows, cols, 4)
assert (planned[1] > 1).any() and len(set(planned[0].tolist())) > 1, planned
# (scoring, emulation seed, team sizes, with the search's scores too)
runs = [(protein, 7, (None, 1, 2, 4, 8), True), (protein, 12345, (2, 8), False), (gapped, 7, (None, 1, 4), False)]
for scoring, seed, team_sizes, scored in runs:
    cupy.SEED = seed
    want = cpu.align_pairs(queries, subjects, scoring)
    assert any(w is None for w in want) and max(w.qend - w.qstart for w in want if w is not None) > 1000
    packed = gpu.pack_sequences(queries, subjects)
    tasks = [k for k, w in enumerate(want) if w is not None]
    expected = np.array([want[k].score for k in tasks], np.int32)
    sub = gpu.pack_sequences([queries[k] for k in tasks], [subjects[k] for k in tasks])
    for team in team_sizes:
        label = (scoring.gap_open, seed, team)
        before = cupy.CALLS.get("tb_ends_team", 0)
        res = gpu.align_packed(*packed, scoring, team_warps=team)  # free: the best score found here
        for k in range(len(pairs)):
            same(res, want, k, label)
        assert (cupy.CALLS.get("tb_ends_team", 0) > before) == (team != 1), label
        if scored and team in (None, 8):
            res = gpu.align_packed(*sub, scoring, expected, team_warps=team)  # the search's scores
            for j in range(len(tasks)):
                same(res, [want[k] for k in tasks], j, label)
res = gpu.align_packed(*sub, scoring, expected + 1, team_warps=4)  # a wrong search score
assert (res.status == Status.MISMATCH).all()
# the engine's entry with the pairs packed as a search packs its hits (PairTasks): its paths as arrays
hits = cpu.PairTasks.of([*queries, *subjects], tasks, [len(queries) + k for k in tasks], expected)
paths = gpu.traceback_pairs(hits, scoring)
assert isinstance(paths, cpu.TracedPaths) and len(paths) == len(tasks)
for j, k in enumerate(tasks):
    g, w = paths[j], want[k]
    assert (g.score, g.qstart, g.qend, g.sstart, g.send) == (w.score, w.qstart, w.qend, w.sstart, w.send), ("PairTasks", j)
    assert np.array_equal(g.ops, w.ops), ("PairTasks", j, "paths differ")

# anchored (align-long's end points): from the given end cell, the reverse scan alone; its three
# outcomes (a start; none reaching the score: NO_START; the first reaching it above it: ABOVE)
dna = Scoring.nucleotide()
mat = np.require(dna.matrix, np.int32, ["C", "W"])
anchored = []
for m in (80, 700, 1500):
    q = rng.integers(0, 4, m).astype(np.uint8)
    s = mutant(q, 0.15, 4)
    best, ie, je = (int(x) for x in cpu.forward_end(q, s, mat, dna.gap_open, dna.gap_extend)[:3])
    for score in (best, best - 3, best + 1):
        anchored.append((q, s, score, ie, je))
    anchored.append((q, s, 2 * dna.matrix[0][0], int(rng.integers(2, m)), int(rng.integers(2, s.size))))
packed = gpu.pack_sequences([a[0] for a in anchored], [a[1] for a in anchored])
expected = np.array([a[2] for a in anchored], np.int32)
cells = np.array([(a[3], a[4]) for a in anchored], np.int32)
want = []
for q, s, score, ie, je in anchored:
    i0, j0 = cpu.reverse_start(q, s, mat, dna.gap_open, dna.gap_extend, ie, je, score)
    want.append(Status.OK if i0 > 0 else Status.ABOVE if i0 == -2 else Status.NO_START)
    want[-1] = (want[-1], i0, j0)
assert {w[0] for w in want} == {Status.OK, Status.NO_START, Status.ABOVE}, want
for team in (None, 1, 8):
    res = gpu.align_packed(*packed, dna, expected, end_cells=cells, team_warps=team)
    for k, (status, i0, j0) in enumerate(want):
        assert res.status[k] == status, (team, k, int(res.status[k]), status)
        if status == Status.OK:
            assert (res.qstart[k], res.sstart[k]) == (i0, j0), (team, k)

# in strips (every rectangle, strip_nibbles=0): the same paths, on one warp and on teams
for team in (None, 1, 8):
    res = gpu.align_packed(*sub, protein, np.array([w.score for w in (cpu.align_pairs(queries, subjects, protein)[k] for k in tasks)],
                           np.int32), team_warps=team, strip_nibbles=0)  # fmt: skip
    assert res.in_strips == len(tasks) and res.on_cpu == 0, (team, res.in_strips)
    want = cpu.align_pairs([queries[k] for k in tasks], [subjects[k] for k in tasks], protein)
    for j in range(len(tasks)):
        same(res, want, j, ("strips", team))
# a path that crosses from strip to strip inside a long query gap (state F), at rows where H came
# from elsewhere: a walk that forgot its matrix at a strip's top would turn there (checked on
# the reference's nibbles for every strip height of one warp, so the test can fail)
from swgpu_core.align.traceback import NEG, _strip

gap = np.random.default_rng(0)  # one of the seeds where it does (most of them)
a, b = gap.integers(0, 20, 700).astype(np.uint8), gap.integers(0, 20, 700).astype(np.uint8)
s = np.concatenate([a, b])
x = np.where(gap.random(1500) < 0.5, s[699], gap.integers(0, 20, 1500)).astype(np.uint8)  # half of it the residue where the gap opens
q = np.concatenate([a, x, b])
ref = cpu.align_pair(q, s, protein)
h, w = ref.qend - ref.qstart + 1, ref.send - ref.sstart + 1
hrow, frow = np.full(w + 1, NEG, np.int32), np.full(w + 1, NEG, np.int32)
hrow[0] = 0
nib = np.zeros((h, (w + 1) >> 1), np.uint8)
_strip(q, s, np.require(protein.matrix, np.int32, ["C", "W"]), protein.gap_open + protein.gap_extend, protein.gap_extend, ref.qstart,
       ref.qend, ref.sstart, w, hrow, frow, nib, True)  # fmt: skip


def walk(top_every):
    i, j, state, ops, came = h, w, 0, [], h
    while i >= 1 and j >= 1:
        if top_every and i != came and i % top_every == 0:  # entered a strip's last row: forget the matrix
            state = 0
        came = i
        bits = (nib[i - 1, (j - 1) >> 1] >> (((j - 1) & 1) * 4)) & 15
        if state == 0:
            if bits & 3 == 0:
                ops.append(0)
                i, j = i - 1, j - 1
            else:
                state = bits & 3
        elif state == 1:
            ops.append(1)
            j, state = j - 1, (1 if bits & 4 else 0)
        else:
            ops.append(2)
            i, state = i - 1, (2 if bits & 8 else 0)
    return ops[::-1]


assert walk(0) == ref.ops.tolist()
assert all(walk(32 * r) != walk(0) for r in (4, 8, 16)), "no strip crossing that a forgotten matrix would change"
one = gpu.pack_sequences([q], [s])
for team in (1, 4):
    res = gpu.align_packed(*one, protein, np.array([ref.score], np.int32), team_warps=team, strip_nibbles=0)
    same(res, [ref], 0, ("strips across a gap", team))
    assert res.in_strips == 1
res = gpu.align_packed(*one, protein, np.array([ref.score], np.int32), strip_nibbles=0, pair_budget=10_000)
assert res.on_cpu == 1 and res.in_strips == 0  # strips that do not fit the budget: the CPU's pass 3
same(res, [ref], 0, "strips over the budget")
print("ok", cupy.CALLS)
"""


def test_traceback_kernels_equal_the_cpu_reference_on_one_warp_and_on_teams(tmp_path: Path) -> None:
    require_gxx()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS / "cuda_emu" / "fake_cupy"), str(TESTS), str(TESTS.parent)]))
    run = subprocess.run([sys.executable, "-c", SCRIPT], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert run.stdout.startswith("ok"), run.stdout
