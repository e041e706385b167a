"""The GPU seed kernel's logic, without a GPU: ``kernels/seed.cu`` compiled with g++ against
``tests/cuda_emu/cuda_emu.h`` (warps as fibers, warp intrinsics and barriers emulated, the
lanes between barriers run in a seeded random order) on a query batch's seed index, and its
candidates compared with the brute-force reference of the seeding rule
(``tests/seed_reference.py``).

The cases vary what the kernel's bookkeeping depends on: rounds of hits spread over lanes
(common keys: a tandem repeat, many queries), the extension queue (a low span minimum: most
hits queued; flushed at each segment's end), few blocks (warps walking many subjects), subjects
cut into segments of 40 and 64 positions (a hit's span and extension reaching past its segment),
other rules (weights, alphabets, shapes). Skipped where g++ is missing.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from emulator import build_harness, require_gxx
from seed_reference import reference_candidates, seed_data

from swgpu_core import kernel_abi
from swgpu_core.scoring import Scoring
from swgpu_core.seed import SeedParams, seed_index, seed_segments

BLOSUM62 = Scoring.protein()


@pytest.fixture(scope="module")
def emulator(tmp_path_factory):
    """``build(params, segment)``: the path of the harness compiled for those macros (cached)."""
    require_gxx()
    built: dict[tuple, Path] = {}

    def build(params: SeedParams, segment: int = kernel_abi.SEED_SEGMENT) -> Path:
        opts = (*kernel_abi.compile_options(), *kernel_abi.seed_options(params), "-USWGPU_SEED_SEGMENT", f"-DSWGPU_SEED_SEGMENT={segment}")
        if opts not in built:
            built[opts] = build_harness("seed_main.cpp", opts, tmp_path_factory.mktemp("seed_emu") / "seed_emu")
        return built[opts]

    return build


def emulate(
    exe: Path, work: Path, queries, subjects, params: SeedParams, n_blocks: int, seed: int, segment: int = kernel_abi.SEED_SEGMENT
) -> tuple[list[np.ndarray], np.ndarray]:
    """Per query its candidates (indices into ``subjects``, sorted), and the counters, from one
    emulated launch over the subjects sorted by length (as a database chunk holds them)."""
    order = np.argsort([s.size for s in subjects], kind="stable")
    residues = np.concatenate([subjects[k] for k in order]).astype(np.uint8)
    offsets = np.concatenate(([0], np.cumsum([subjects[k].size for k in order]))).astype(np.int64)
    index = seed_index(queries, params)
    key_offsets = index.key_offsets(params.n_keys)
    present = (key_offsets[:, 1:] > key_offsets[:, :-1]).astype(np.uint8)
    words = -(-params.n_keys // 32)
    padded = np.zeros((present.shape[0], words * 32), np.uint8)
    padded[:, : params.n_keys] = present
    bitmap = np.packbits(padded, axis=1, bitorder="little").view(np.uint32)
    matrix = np.zeros((kernel_abi.SEED_MATRIX_STRIDE,) * 2, np.int32)
    matrix[: BLOSUM62.matrix.shape[0], : BLOSUM62.matrix.shape[1]] = BLOSUM62.matrix
    n, n_queries = len(subjects), len(queries)
    row_words = -(-n // 32)
    arrays = dict(residues=residues, offsets=offsets, segments=seed_segments(offsets, segment), reduction=params.reduction(), shape_offsets=params.shape_offsets(),
                  shape_lengths=params.shape_lengths(), bitmap=bitmap, key_offsets=key_offsets, positions=index.positions,
                  query_of=index.query_of(), qstart=index.starts.astype(np.int32), qcodes=index.codes, matrix=matrix)  # fmt: skip
    work.mkdir(parents=True, exist_ok=True)
    for name, arr in arrays.items():
        np.ascontiguousarray(arr).tofile(work / f"{name}.bin")
    (work / "scalars.txt").write_text(f"{row_words} {n_queries} {n_blocks}\n")
    done = subprocess.run([str(exe), str(work), str(seed)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    flags = np.fromfile(work / "flags.bin", np.uint32).reshape(n_queries, row_words)
    bits = np.unpackbits(flags.view(np.uint8), axis=1, bitorder="little")[:, :n]
    return [np.sort(order[np.flatnonzero(b)]) for b in bits], np.fromfile(work / "counters.bin", np.uint64)


@pytest.mark.parametrize(
    "params, n_blocks, seed, segment",
    [
        (SeedParams(), 3, 1, kernel_abi.SEED_SEGMENT),
        (SeedParams(), 3, 1, 40),  # subjects cut into segments of 40 positions (not a multiple of 32)
        (SeedParams(span=-100, trigger=40), 1, 2, kernel_abi.SEED_SEGMENT),  # every hit queued, one block walks every subject
        (SeedParams(span=-100, trigger=40), 2, 2, 64),
        (SeedParams(span=5, xdrop=4, trigger=30, alphabet="KREDQN C G H M F Y ILV W P STA", shapes=("1101", "111", "10011")), 2, 3,
         kernel_abi.SEED_SEGMENT),
        (SeedParams(span=10, trigger=35, shapes=("11011", "10111")), 5, 4, kernel_abi.SEED_SEGMENT),
    ],
    ids=["default", "default-segments40", "all-queued", "all-queued-segments64", "weight3-a11", "weight4"],
)  # fmt: skip
def test_candidates_equal_the_reference(emulator, tmp_path, params, n_blocks, seed, segment):
    queries, subjects = seed_data(seed)
    if segment < kernel_abi.SEED_SEGMENT:
        assert max(s.size for s in subjects) > 3 * segment
    want = reference_candidates(queries, subjects, BLOSUM62.matrix, params)
    got, counters = emulate(emulator(params, segment), tmp_path, queries, subjects, params, n_blocks, seed, segment)
    for k, (g, w) in enumerate(zip(got, want)):
        assert np.array_equal(g, w), f"query {k}: missing {np.setdiff1d(w, g)}, extra {np.setdiff1d(g, w)}"
    assert 0 < sum(w.size for w in want) < len(queries) * len(subjects)
    assert counters[kernel_abi.SeedCounter.HITS] >= counters[kernel_abi.SeedCounter.EXTENSIONS] > 0


def test_lane_order_does_not_matter(emulator, tmp_path):
    """The same candidates whatever order the emulator runs the lanes in between barriers."""
    params = SeedParams(span=0, trigger=45)
    queries, subjects = seed_data(6)
    exe = emulator(params)
    first, _ = emulate(exe, tmp_path / "a", queries, subjects, params, 2, 11)
    for seed in (12, 13):
        again, _ = emulate(exe, tmp_path / f"s{seed}", queries, subjects, params, 2, seed)
        assert all(np.array_equal(a, b) for a, b in zip(first, again))
