"""The GPU seed kernel's logic, without a GPU: ``kernels/seed.cu`` compiled with g++ against
``tests/cuda_emu/cuda_emu.h`` (warps as fibers, warp intrinsics and barriers emulated, the
lanes between barriers run in a seeded random order) on the tables of
:mod:`swgpu_core.seed_tables`, and its candidates compared with the brute-force reference
of the seeding rule (``tests/seed_reference.py``).

The layouts vary what the kernel's bookkeeping depends on: groups of one or several
segments (a query cut into segments when shared memory is small), warps and slices per
group (one warp walking every subject realigns all its diagonal words many times), the
batch width, and the rule's parameters (a window narrower than a batch). Skipped where
g++ is missing.
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
from swgpu_core.seed import SeedParams
from swgpu_core.seed_tables import SeedTables, build_tables, pairs_by_query, slices

BLOSUM62 = Scoring.protein()


def _options(params: SeedParams, batch: int | None) -> list[str]:
    opts = [*kernel_abi.compile_options(), *kernel_abi.seed_options(params)]
    if batch is not None:
        opts = [o for o in opts if not o.startswith("-DSWGPU_SEED_BATCH=")] + [f"-DSWGPU_SEED_BATCH={batch}"]
    return opts


@pytest.fixture(scope="module")
def emulator(tmp_path_factory):
    """``build(params, batch)``: the path of the harness compiled for those macros (cached)."""
    require_gxx()
    built: dict[tuple, Path] = {}

    def build(params: SeedParams, batch: int | None = None) -> Path:
        opts = _options(params, batch)
        key = tuple(opts)
        if key not in built:
            built[key] = build_harness("seed_main.cpp", opts, tmp_path_factory.mktemp("seed_emu") / "seed_emu")
        return built[key]

    return build


def chunk_of(subjects: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(residues, offsets, order): the subjects sorted by length, as a database chunk holds them."""
    order = np.argsort([s.size for s in subjects], kind="stable")
    residues = np.concatenate([subjects[k] for k in order]).astype(np.uint8)
    offsets = np.concatenate(([0], np.cumsum([subjects[k].size for k in order]))).astype(np.int64)
    return residues, offsets, order


def emulate(exe: Path, work: Path, tables: SeedTables, residues, offsets, n_slices: int, seed: int, capacity: int = 1 << 16):
    """Per query its candidates (chunk-relative, sorted), and the counters, from one emulated launch."""
    bounds = slices(offsets, n_slices)
    work.mkdir(parents=True, exist_ok=True)
    arrays = dict(residues=residues, offsets=offsets, slices=bounds, blobs=tables.blobs, groups=tables.groups, segs=tables.segs,
                  qcodes=tables.qcodes, matrix=tables.matrix)  # fmt: skip
    for name, arr in arrays.items():
        np.ascontiguousarray(arr).tofile(work / f"{name}.bin")
    n_blocks = tables.n_groups * (bounds.size - 1)
    scalars = [bounds.size - 1, tables.copy_words, tables.ring, tables.smem_bytes, capacity, tables.warps, n_blocks]
    (work / "scalars.txt").write_text(" ".join(map(str, scalars)) + "\n")
    done = subprocess.run([str(exe), str(work), str(seed)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    counters = np.fromfile(work / "counters.bin", np.uint64)
    assert counters[kernel_abi.SeedCounter.ERROR] == 0
    assert counters[kernel_abi.SeedCounter.PAIRS] <= capacity
    return pairs_by_query(np.fromfile(work / "pairs.bin", np.uint64), tables.n_queries), counters


def check(exe, work, queries, subjects, params, *, smem_limit, warps, n_slices, seed, want=None, lut="global", max_span=None):
    residues, offsets, order = chunk_of(subjects)
    tables = build_tables(queries, BLOSUM62.matrix, params, smem_limit=smem_limit, warps=warps, lut=lut, max_span=max_span)
    got, counters = emulate(exe, work, tables, residues, offsets, n_slices, seed)
    want = want if want is not None else reference_candidates(queries, subjects, BLOSUM62.matrix, params)
    for k, (g, w) in enumerate(zip(got, want)):
        g = np.sort(order[g])
        assert np.array_equal(g, w), f"query {k}: missing {np.setdiff1d(w, g)}, extra {np.setdiff1d(g, w)}"
    return tables, counters


@pytest.fixture(scope="module")
def data():
    queries, subjects = seed_data(1)
    return queries, subjects, reference_candidates(queries, subjects, BLOSUM62.matrix, SeedParams())


@pytest.mark.parametrize(
    "lut, smem_limit, warps, n_slices, seed, max_span",
    [
        ("global", 232_448, 4, 3, 1, None),
        ("shared", 232_448, 4, 3, 1, None),
        ("global", 232_448, 2, 2, 2, 160),  # many groups, long queries cut into segments
        ("shared", 60_000, 1, 1, 3, None),  # little shared memory: small groups, one warp walks every subject
        ("global", 232_448, 16, 1, 4, None),
    ],
    ids=["global", "shared", "segments", "small-shared", "many-warps"],
)
def test_candidates_equal_the_reference(emulator, tmp_path, data, lut, smem_limit, warps, n_slices, seed, max_span):
    queries, subjects, want = data
    tables, counters = check(emulator(SeedParams()), tmp_path, queries, subjects, SeedParams(), smem_limit=smem_limit, warps=warps,
                             n_slices=n_slices, seed=seed, want=want, lut=lut, max_span=max_span)  # fmt: skip
    assert tables.lut == lut
    assert sum(w.size for w in want) > 50  # the data has candidates, and non-candidates
    assert counters[kernel_abi.SeedCounter.HITS] > 0
    if max_span is not None or lut == "shared" and smem_limit < 100_000:
        assert tables.n_groups > 1
    if max_span is not None:
        assert tables.segs.shape[0] > len(queries)  # some query is cut into segments


@pytest.mark.parametrize(
    "params, batch",
    [
        (SeedParams(), 1),  # one position per batch
        (SeedParams(window=5), None),  # a window narrower than a batch
        (SeedParams(threshold=13, window=20, xdrop=5, trigger=30), 3),
        (SeedParams(threshold=10, window=60, xdrop=30, trigger=55), 9),
    ],
    ids=["batch-1", "window-5", "t13", "t10"],
)
def test_other_rules_and_batches(emulator, tmp_path, params, batch):
    queries, subjects = seed_data(2, n_queries=4, n_subjects=80)
    check(emulator(params, batch), tmp_path, queries, subjects, params, smem_limit=232_448, warps=2, n_slices=2, seed=5, max_span=400)


def test_lane_order_does_not_matter(emulator, tmp_path):
    """Two interleavings of the lanes between barriers: the same candidates, hits and triggers
    (extensions skipped once a query is a candidate depend on the order)."""
    queries, subjects = seed_data(3, n_queries=3, n_subjects=60)
    exe = emulator(SeedParams())
    tables = build_tables(queries, BLOSUM62.matrix, SeedParams(), smem_limit=232_448, warps=2)
    residues, offsets, _order = chunk_of(subjects)
    a = emulate(exe, tmp_path / "a", tables, residues, offsets, 1, 11)
    b = emulate(exe, tmp_path / "b", tables, residues, offsets, 1, 12)
    assert all(np.array_equal(x, y) for x, y in zip(a[0], b[0]))
    assert np.array_equal(a[1][1:3], b[1][1:3])


def test_full_output_buffer_is_counted(emulator, tmp_path, data):
    """Pairs beyond the buffer are counted, not written: the host sees it and relaunches."""
    queries, subjects, want = data
    tables = build_tables(queries, BLOSUM62.matrix, SeedParams(), smem_limit=232_448, warps=2)
    residues, offsets, _order = chunk_of(subjects)
    _got, counters = emulate(emulator(SeedParams()), tmp_path, tables, residues, offsets, 1, 1, capacity=1 << 16)
    n = int(counters[kernel_abi.SeedCounter.PAIRS])
    assert n >= sum(w.size for w in want)
    work = tmp_path / "small"
    work.mkdir()
    arrays = dict(residues=residues, offsets=offsets, slices=slices(offsets, 1), blobs=tables.blobs, groups=tables.groups,
                  segs=tables.segs, qcodes=tables.qcodes, matrix=tables.matrix)  # fmt: skip
    for name, arr in arrays.items():
        np.ascontiguousarray(arr).tofile(work / f"{name}.bin")
    scalars = [1, tables.copy_words, tables.ring, tables.smem_bytes, 3, tables.warps, tables.n_groups]
    (work / "scalars.txt").write_text(" ".join(map(str, scalars)) + "\n")
    subprocess.run([str(emulator(SeedParams())), str(work), "1"], check=True, timeout=600)
    counters = np.fromfile(work / "counters.bin", np.uint64)
    assert counters[kernel_abi.SeedCounter.PAIRS] == n
    assert np.fromfile(work / "pairs.bin", np.uint64).size == 3


def test_small_shared_memory_is_flagged(emulator, tmp_path, data):
    """A launch with less shared memory than the kernel's layout does nothing but flag it."""
    queries, subjects, _want = data
    tables = build_tables(queries, BLOSUM62.matrix, SeedParams(), smem_limit=232_448, warps=2)
    residues, offsets, _order = chunk_of(subjects)
    work = tmp_path / "w"
    work.mkdir()
    arrays = dict(residues=residues, offsets=offsets, slices=slices(offsets, 1), blobs=tables.blobs, groups=tables.groups,
                  segs=tables.segs, qcodes=tables.qcodes, matrix=tables.matrix)  # fmt: skip
    for name, arr in arrays.items():
        np.ascontiguousarray(arr).tofile(work / f"{name}.bin")
    scalars = [1, tables.copy_words, tables.ring, tables.smem_bytes - 16, 100, tables.warps, tables.n_groups]
    (work / "scalars.txt").write_text(" ".join(map(str, scalars)) + "\n")
    subprocess.run([str(emulator(SeedParams())), str(work), "1"], check=True, timeout=600)
    counters = np.fromfile(work / "counters.bin", np.uint64)
    assert counters[kernel_abi.SeedCounter.ERROR] > 0 and counters[kernel_abi.SeedCounter.HITS] == 0


def test_crowded_words(emulator, tmp_path):
    """A homopolymer query gives one subject word more entries than a batch holds (the kernel
    takes that position in parts); subjects with runs of it hit on many diagonals at once."""
    rng = np.random.default_rng(7)
    leu = 10  # L
    queries = [np.concatenate([rng.integers(0, 20, 30), np.full(300, leu), rng.integers(0, 20, 30)]).astype(np.uint8),
               rng.integers(0, 20, 120).astype(np.uint8)]  # fmt: skip
    subjects = [np.concatenate([rng.integers(0, 20, int(rng.integers(0, 50))), np.full(int(rng.integers(3, 60)), leu),
                                rng.integers(0, 20, int(rng.integers(0, 50)))]).astype(np.uint8) for _ in range(30)]  # fmt: skip
    subjects += [rng.integers(0, 20, 200).astype(np.uint8) for _ in range(10)]
    tables, counters = check(emulator(SeedParams()), tmp_path, queries, subjects, SeedParams(), smem_limit=232_448, warps=2, n_slices=1,
                             seed=9)  # fmt: skip
    assert counters[kernel_abi.SeedCounter.HITS] > 10_000


def test_real_proteins_equal_the_cpu_seeder(emulator, tmp_path, bundled_db, resources):
    """Bundled UniProt sequences (real composition: low-complexity runs, ambiguity codes): a run of
    subjects from the middle of a chunk, against the CPU (numba) seeder's candidates there."""
    from swgpu_core.backends.cpu_seed import CpuSeeder
    from swgpu_core.database import Chunk
    from swgpu_core.fasta import read_sequences

    queries = read_sequences(resources / "queries.fasta", bundled_db.alphabet)
    whole = bundled_db.chunks[1]
    first = whole.first + whole.n_sequences // 2
    stop = first + 160
    chunk = Chunk(whole.index, first, stop, int(bundled_db.offsets[first]), int(bundled_db.offsets[stop]))
    want = CpuSeeder(BLOSUM62, queries, SeedParams(), threads=1).candidates(bundled_db, chunk)
    tables = build_tables([q.codes for q in queries], BLOSUM62.matrix, SeedParams(), smem_limit=120_000, warps=3, lut="shared")
    offsets = np.asarray(bundled_db.offsets[first : stop + 1], np.int64) - chunk.residue_start
    got, counters = emulate(emulator(SeedParams()), tmp_path, tables, bundled_db.chunk_residues(chunk), offsets, 2, 13)
    assert sum(w.size for w in want) > 0
    for q, g, w in zip(queries, got, want):
        assert np.array_equal(g + first, w), q.id
