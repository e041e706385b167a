"""The task-list scan kernels (``sw_inter_tasks`` and ``sw_intra_tasks`` in ``kernels/sw_scan.cu``,
which score ``--mode fast``'s candidates, many queries per launch), without a GPU: their source
compiled with g++ against ``tests/cuda_emu/cuda_emu.h`` (the packed 16-bit DPX and SIMD
intrinsics emulated per halfword), run on task lists of :mod:`swgpu_core.subset_tasks` with
profiles of :mod:`swgpu_core.scan_profile`, as the CUDA backend builds them, and compared with
the CPU backend's exact scores (pyopal). Queries of every inter task shape, one-pass and
multi-pass (queries of different passes in one launch), each against its own subjects; the intra-task kernel with blocks of 1, 2 and 4
warps (256, 512 and 1,024 columns a pass) and queries of one to six passes. Skipped where g++
is missing.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from emulator import build_harness, require_gxx

from swgpu_core import kernel_abi
from swgpu_core.backends.cpu import CpuBackend
from swgpu_core.database import build_database
from swgpu_core.fasta import EncodedSequence, read_sequences
from swgpu_core.scan_profile import build_profile
from swgpu_core.scoring import Scoring
from swgpu_core.subset_tasks import TASK_LANES, scores_by_query, task_list, task_shape

ARITH = {"dpx": 0, "plain": 1, "s32": 2}


@pytest.fixture(scope="module")
def emulator(tmp_path_factory) -> Path:
    require_gxx()
    return build_harness("tasks_main.cpp", kernel_abi.compile_options(), tmp_path_factory.mktemp("tasks_emu") / "tasks_emu")


@pytest.fixture(scope="module")
def setup(tmp_path_factory, resources):
    """A small database of bundled sequences and queries of every task shape (up to eleven passes)."""
    db = build_database(resources / "db.fasta.gz", tmp_path_factory.mktemp("db") / "db", chunk_residues=10_000_000, show_progress=False)
    rng = np.random.default_rng(3)
    bundled = read_sequences(resources / "queries.fasta", db.alphabet)
    lengths = [40, 64, 65, 100, 150, 200, 256, 300, 512, 700, 1400]
    queries = [EncodedSequence(f"r{n}", "", rng.integers(0, 20, n).astype(np.uint8)) for n in lengths] + bundled
    # both columns per lane, and in one launch queries of one to eleven passes (of 8 columns: one and
    # three), whose groups share no warp
    assert {task_shape(len(q)) for q in queries} == {(TASK_LANES, 8), (TASK_LANES, 16)}
    assert {-(-len(q) // (TASK_LANES * 16)) for q in queries if task_shape(len(q))[1] == 16} >= {1, 2, 3, 4, 6, 11}
    assert {-(-len(q) // (TASK_LANES * 8)) for q in queries if task_shape(len(q))[1] == 8} == {1, 3}
    return db, queries


def emulate(
    exe: Path, work: Path, db, chunk, queries, subjects, kind: str, width: int, r: int, arith: str, overflow_at: int, seed: int = 1
):
    """Scores of each query against its ``subjects`` (chunk-relative) from one emulated launch of the
    ``kind`` ("inter": ``width`` lanes per group; "intra": ``width`` warps per block) task kernel, and
    the entries the kernel put on its overflow list (as (query, subject) pairs)."""
    scoring = Scoring.protein()
    cols = width * r * (32 if kind == "intra" else 1)
    profiles = [build_profile(q.codes, scoring, cols, r) for q in queries]
    passes = [p.shape[1] // cols for p in profiles]
    lanes = 32 if kind == "intra" else width  # an intra list's unit is one group (a block)
    tasks = task_list(subjects, np.asarray(db.lengths[chunk.first : chunk.stop], np.int64), lanes, 1 if arith == "s32" else 2, passes)
    work.mkdir(parents=True, exist_ok=True)
    offsets = np.asarray(db.offsets[chunk.first : chunk.stop + 1], np.int64) - chunk.residue_start
    flat = np.concatenate([p.ravel() for p in profiles])
    prof_offsets = np.concatenate(([0], np.cumsum([p.size for p in profiles])))
    arrays = dict(residues=db.chunk_residues(chunk), offsets=offsets, subjects=tasks.subjects, profiles=flat, prof_offsets=prof_offsets,
                  qpads=np.array([p.shape[1] for p in profiles] + [0], np.int32), group_query=tasks.group_query, bnd_rows=tasks.bnd_rows)  # fmt: skip
    for name, arr in arrays.items():
        np.ascontiguousarray(arr).tofile(work / f"{name}.bin")
    scalars = [
        ARITH[arith],
        int(kind == "intra"),
        width,
        r,
        tasks.n_slots,
        scoring.first_gap_cost,
        scoring.gap_extend,
        overflow_at,
        tasks.boundary_rows,
    ]
    (work / "scalars.txt").write_text(" ".join(map(str, scalars)) + "\n")
    done = subprocess.run([str(exe), str(work), str(seed)], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    scores = np.fromfile(work / "scores.bin", np.int32)
    overflow = np.fromfile(work / "overflow.bin", np.int32)
    flagged = {(int(tasks.slot_query[e]), int(tasks.subjects[e])) for e in overflow[1 : 1 + overflow[0]]}
    return scores_by_query(tasks, scores, subjects), flagged


@pytest.mark.parametrize("arith", ["dpx", "plain", "s32"])
def test_task_scores_equal_the_cpu(emulator, tmp_path, setup, arith):
    db, queries = setup
    chunk = db.chunks[0]
    rng = np.random.default_rng(ARITH[arith])
    cpu = CpuBackend(Scoring.protein(), threads=1)
    by_shape: dict[tuple[int, int], list[int]] = {}
    for k, q in enumerate(queries):
        by_shape.setdefault(task_shape(len(q)), []).append(k)
    for (lanes, r), members in by_shape.items():
        # each query its own subjects, a few to a few dozen, short and long ones (the chunk is sorted by length)
        subjects = [np.unique(rng.integers(0, chunk.n_sequences, int(rng.integers(1, 24)))) for _ in members]
        subjects[0] = np.union1d(subjects[0], [chunk.n_sequences - 1, chunk.n_sequences - 2, 0])
        mine = [queries[k] for k in members]
        got, flagged = emulate(emulator, tmp_path / f"{lanes}x{r}", db, chunk, mine, subjects, "inter", lanes, r, arith, overflow_at=60)
        for q, subj, g in zip(mine, subjects, got):
            want = cpu.subset_scores(db, chunk, q, subj + chunk.first)
            assert np.array_equal(g, want), f"{q.id} ({lanes}x{r}, {arith}): {np.flatnonzero(g != want).size} scores differ"
            if arith != "s32":  # the packed kernels list every entry at or above overflow_at, and only those
                high = {(mine.index(q), int(s)) for s, w in zip(subj, want) if w >= 60}
                assert high == {f for f in flagged if f[0] == mine.index(q)}


@pytest.mark.parametrize("arith", ["dpx", "plain", "s32"])
def test_intra_task_scores_equal_the_cpu(emulator, tmp_path, setup, arith):
    """Blocks of 1, 2 and 4 warps, each launch with queries of one to six passes (boundary rows of
    their own per group), each against its own subjects, the chunk's longest among them."""
    db, queries = setup
    chunk = db.chunks[0]
    rng = np.random.default_rng(10 + ARITH[arith])
    cpu = CpuBackend(Scoring.protein(), threads=1)
    mine = [q for q in queries if len(q) in (200, 300, 700, 1400)]
    for warps in (1, 2, 4):
        subjects = [np.unique(rng.integers(0, chunk.n_sequences, int(rng.integers(1, 6)))) for _ in mine]
        subjects[-1] = np.union1d(subjects[-1], [chunk.n_sequences - 1, chunk.n_sequences - 2])
        got, flagged = emulate(emulator, tmp_path / f"intra{warps}", db, chunk, mine, subjects, "intra", warps, 8, arith, overflow_at=60)
        for k, (q, subj, g) in enumerate(zip(mine, subjects, got)):
            want = cpu.subset_scores(db, chunk, q, subj + chunk.first)
            assert np.array_equal(g, want), f"{q.id} (intra {warps} warps, {arith}): {np.flatnonzero(g != want).size} scores differ"
            if arith != "s32":
                assert {(k, int(s)) for s, w in zip(subj, want) if w >= 60} == {f for f in flagged if f[0] == k}
