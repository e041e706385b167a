"""The database scan kernels (``sw_inter`` and ``sw_intra`` in ``kernels/sw_scan.cu``, every
exact GPU search's scores), without a GPU: their source compiled with g++ against
``tests/cuda_emu/cuda_emu.h`` (packed 16-bit DPX and SIMD intrinsics emulated per halfword,
lanes as fibers interleaved in a seeded random order between warp operations and barriers),
launched as :class:`swgpu_core.gpu.kernels.ScanKernels` launches them on profiles of
:mod:`swgpu_core.scan_profile`, and compared with the CPU backend's exact scores (pyopal).
Queries of one pass and several for each shape (8, 16 and 32 lanes per pair), subjects from 1
residue up, some identical to a query (high scores, which the packed kernels must list for the
32-bit rescoring). The harness starts the boundary rows as a large positive poison, so a kernel
that reads a row before the pass before wrote it returns scores far above the CPU's (a variant
of the inter-task kernel whose passes overlapped by one step too many failed here).
Skipped where g++ is missing.
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
from swgpu_core.fasta import EncodedSequence
from swgpu_core.scan_profile import build_profile
from swgpu_core.scoring import Scoring

ARITH = {"dpx": 0, "plain": 1, "s32": 2}
LETTERS = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWYBZX", np.uint8)
OVERFLOW_AT = 60
#: (kind, r, lanes or warps): query lengths of one pass and of several
SHAPES = {
    ("inter", 16, 8): (40, 128, 129, 300),
    ("inter", 8, 8): (64, 65, 150),
    ("inter", 16, 16): (256, 257, 800),
    ("inter", 16, 32): (512, 1100),
    ("intra", 8, 1): (200, 257, 600),
    ("intra", 8, 2): (300, 700),
}


@pytest.fixture(scope="module")
def emulator(tmp_path_factory) -> Path:
    require_gxx()
    return build_harness("scan_main.cpp", kernel_abi.compile_options(), tmp_path_factory.mktemp("scan_emu") / "scan_emu")


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """A one-chunk database of random subjects (1 to 340 residues) and queries; some subjects
    are pieces of a query, so that their scores pass OVERFLOW_AT."""
    rng = np.random.default_rng(5)
    queries = {n: rng.choice(LETTERS[:20], n).tobytes().decode() for lengths in SHAPES.values() for n in lengths}
    seqs = [rng.choice(LETTERS, int(n)).tobytes().decode() for n in (*range(1, 6), *rng.integers(6, 340, 40))]
    seqs += [q[: int(rng.integers(20, 200))] for q in queries.values()]
    fasta = tmp_path_factory.mktemp("scan") / "db.fasta"
    fasta.write_text("".join(f">s{i}\n{s}\n" for i, s in enumerate(seqs)))
    db = build_database(fasta, fasta.parent / "db", show_progress=False)
    assert len(db.chunks) == 1
    return db, {n: EncodedSequence(f"q{n}", "", db.alphabet.encode(s)) for n, s in queries.items()}


def emulate(exe: Path, work: Path, db, query: EncodedSequence, kind: str, r: int, width: int, arith: str, seed: int = 1):
    """Scores of ``query`` against every subject of the chunk from one emulated launch over all of
    them, and the subjects the kernel put on its overflow list."""
    scoring = Scoring.protein()
    chunk = db.chunks[0]
    cols = r * width * (32 if kind == "intra" else 1)
    profile = build_profile(query.codes, scoring, cols, r)
    work.mkdir(parents=True, exist_ok=True)
    offsets = np.asarray(db.offsets[chunk.first : chunk.stop + 1], np.int64) - chunk.residue_start
    arrays = dict(
        residues=db.chunk_residues(chunk), offsets=offsets, subjects=np.arange(chunk.n_sequences, dtype=np.int32), profile=profile
    )
    for name, arr in arrays.items():
        np.ascontiguousarray(arr).tofile(work / f"{name}.bin")
    n = chunk.n_sequences
    overflow_at = 0 if arith == "s32" else OVERFLOW_AT
    # the rows the host gives a batch (a guard band past them fails the harness if written)
    rows = kernel_abi.boundary_rows(chunk.n_residues, int(np.max(np.diff(offsets))), 1 if arith == "s32" else 2)
    scalars = [ARITH[arith], int(kind == "intra"), r, width, n, profile.shape[1], profile.shape[1] // cols, scoring.first_gap_cost,
               scoring.gap_extend, overflow_at, rows, n]  # fmt: skip
    (work / "scalars.txt").write_text(" ".join(map(str, scalars)) + "\n")
    done = subprocess.run([str(exe), str(work), str(seed)], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    overflow = np.fromfile(work / "overflow.bin", np.int32)
    return np.fromfile(work / "scores.bin", np.int32), set(overflow[1 : 1 + overflow[0]].tolist())


@pytest.mark.parametrize("arith", ["dpx", "plain", "s32"])
@pytest.mark.parametrize("shape", list(SHAPES), ids=lambda s: f"{s[0]}{s[2]}x{s[1]}")
def test_scan_scores_equal_the_cpu(emulator, tmp_path, setup, shape, arith):
    db, queries = setup
    kind, r, width = shape
    cpu = CpuBackend(Scoring.protein(), threads=1)
    for k, n in enumerate(SHAPES[shape]):
        got, flagged = emulate(emulator, tmp_path / str(n), db, queries[n], kind, r, width, arith, seed=k + 1)
        want = cpu.scores(db, db.chunks[0], queries[n])
        assert np.array_equal(got, want), f"query of {n} ({kind} {width}x{r}, {arith}): {np.flatnonzero(got != want).size} scores differ"
        if arith != "s32":  # every subject at or above the mark is listed for rescoring, and only those
            assert flagged == set(np.flatnonzero(want >= OVERFLOW_AT).tolist())
            assert flagged, "no score reached the overflow mark: the listing is not tested"


@pytest.mark.parametrize("seed", range(6))
def test_packed_scans_rows_are_disjoint_and_within_the_buffer(seed):
    """The rows that the two packed scans of a batch write (kernel_abi.scan_rows, which the
    workers' claims use) never overlap when the batch is split at an even subject, every
    group's rows as the kernels place them (boundary_row) lie inside its scan's range and
    apart from the others', and all fit kernel_abi.boundary_rows. The harness test above
    checks the kernels against the same bound."""
    rng = np.random.default_rng(seed)
    lengths = np.sort(rng.integers(1, 3000, int(rng.integers(1, 300))))
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    n = lengths.size
    rows = kernel_abi.boundary_rows(int(offsets[-1]), int(lengths.max()), 2)
    for split in [*range(0, n, 2), n]:  # even splits, or all subjects in one kernel (DeviceWorker._launch)
        scans = [(0, split), (split, n)]
        ranges = [kernel_abi.scan_rows(offsets, first, stop, 2) for first, stop in scans]
        assert ranges[0][1] <= ranges[1][0] or split in (0, n)
        spans = []
        for (first, stop), (lo, hi) in zip(scans, ranges):
            for g in range(first, stop, 2):
                start = (offsets[g] + lengths[g]) // 2  # boundary_row of sw_scan.cu
                spans.append((start, start + lengths[min(g + 1, stop - 1)]))
                assert lo <= spans[-1][0] and spans[-1][1] <= hi
        spans.sort()
        assert all(x[1] <= y[0] for x, y in zip(spans, spans[1:]))
        assert not spans or spans[-1][1] <= rows


@pytest.mark.parametrize("seed", range(6))
def test_even_cuts_balance_the_bulk_and_keep_its_parts_rows_apart(seed):
    """kernel_abi.even_cuts, which cuts a query's bulk into the parts that DeviceWorker._launch
    scans on its inter streams: even, ascending cuts from 0 to the bulk's end; no part more
    than a pair's residues above an equal share; and the parts' and the long subjects' scans
    write disjoint rows (so consecutive queries' parts on different streams may overlap)."""
    rng = np.random.default_rng(seed)
    lengths = np.sort(rng.integers(1, 3000, int(rng.integers(1, 300))))
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    n = lengths.size
    for n_short in {*range(0, n, 2), n}:
        for parts in (1, 2, 3):
            cuts = kernel_abi.even_cuts(offsets, n_short, parts)
            assert len(cuts) == parts + 1 and cuts[0] == 0 and cuts[-1] == n_short
            assert all(a <= b for a, b in zip(cuts, cuts[1:])) and all(c % 2 == 0 for c in cuts[1:-1])
            share = offsets[n_short] / parts
            assert all(offsets[b] - offsets[a] <= share + 2 * lengths.max() for a, b in zip(cuts, cuts[1:]))
            ranges = [kernel_abi.scan_rows(offsets, a, b, 2) for a, b in [*zip(cuts, cuts[1:]), (n_short, n)]]
            used = sorted(r for r in ranges if r[1] > r[0])
            assert all(x[1] <= y[0] for x, y in zip(used, used[1:])), (cuts, ranges)
