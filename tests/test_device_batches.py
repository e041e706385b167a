"""Device batches: every subject scanned exactly once, sorted by length within a batch, budgets kept."""

from __future__ import annotations

import numpy as np
import pytest

from swgpu_core.device_batches import (
    Batch,
    device_batches,
    device_parts,
    pipeline_runs,
    seeded_order,
    streamed_query_order,
)


def _check(db, chunks, batches, limit):
    covered = np.concatenate([b.sequences() for b in batches])
    assert sorted(covered.tolist()) == [i for c in chunks for i in range(c.first, c.stop)]
    for b in batches:
        runs = b.runs
        assert all(r.stop > r.first for r in runs)
        assert all(x.stop < y.first for x, y in zip(runs, runs[1:])), "runs in database order, adjacent ones merged"
        for r in runs:
            assert r.residue_start == int(db.offsets[r.first]) and r.residue_stop == int(db.offsets[r.stop])
        assert b.n_residues <= limit or b.n_sequences == 1
        lengths = b.lengths(db)
        assert np.all(np.diff(lengths) >= 0), "a batch's subjects are sorted by length"
        assert np.array_equal(np.diff(b.offsets(db)), lengths)
        assert np.array_equal(b.to_database(np.arange(b.n_sequences)), b.sequences())


def test_small_database_is_one_batch(bundled_db):
    batches = device_batches(bundled_db, bundled_db.chunks, 10**9)
    assert len(batches) == 1 and len(batches[0].runs) == 1
    _check(bundled_db, bundled_db.chunks, batches, 10**9)


@pytest.mark.parametrize("budget", [1, 1_000, 250_000, 700_000, 2_000_000])
def test_budget_cuts_chunks(bundled_db, budget):
    total = sum(c.n_residues for c in bundled_db.chunks)
    limit = budget if total <= budget else budget // 2
    batches = device_batches(bundled_db, bundled_db.chunks, budget)
    _check(bundled_db, bundled_db.chunks, batches, max(limit, 1))
    if budget < total:
        assert len(batches) > 1


def test_devices_share_the_work(bundled_db):
    batches = device_batches(bundled_db, bundled_db.chunks, 10**9, n_devices=2)
    assert len(batches) >= 2
    _check(bundled_db, bundled_db.chunks, batches, 10**9)


def test_selected_chunks_only(bundled_db):
    """Chunks with a gap between them still make one batch (of two runs): still sorted by length."""
    chosen = [bundled_db.chunks[0], bundled_db.chunks[2]]
    batches = device_batches(bundled_db, chosen, 10**9)
    assert len(batches) == 1 and len(batches[0].runs) == 2
    _check(bundled_db, chosen, batches, 10**9)


def test_streamed_limit(bundled_db):
    """A selection over the budget is cut at ``streamed_residues`` when given (the CUDA backend's
    two batches beside one boundary buffer), not at half the budget."""
    total = sum(c.n_residues for c in bundled_db.chunks)
    budget = total // 2
    batches = device_batches(bundled_db, bundled_db.chunks, budget, streamed_residues=budget // 5)
    _check(bundled_db, bundled_db.chunks, batches, budget // 5)
    assert len(batches) > len(device_batches(bundled_db, bundled_db.chunks, budget))


def test_batch_of_one_chunk(bundled_db):
    chunk = bundled_db.chunks[1]
    b = Batch.of(chunk)
    assert b.n_sequences == chunk.n_sequences and b.n_residues == chunk.n_residues
    assert np.array_equal(b.offsets(bundled_db), np.asarray(bundled_db.offsets[chunk.first : chunk.stop + 1]) - chunk.residue_start)
    assert np.array_equal(b.to_database(np.array([0, chunk.n_sequences - 1])), [chunk.first, chunk.stop - 1])


def test_streamed_query_order_alternates_long_and_short():
    lengths = [144, 5478, 375, 1000, 222, 3005, 657]
    order = streamed_query_order(lengths)
    assert sorted(order) == list(range(len(lengths)))
    assert [lengths[q] for q in order] == [5478, 144, 3005, 222, 1000, 375, 657]


def test_streamed_query_order_ties_and_edges():
    assert streamed_query_order([]) == []
    assert streamed_query_order([7]) == [0]
    # equal lengths keep their input order at each end
    assert streamed_query_order([5, 5, 5, 5]) == [3, 0, 2, 1]


@pytest.mark.parametrize("n_devices", [1, 2, 3])
def test_device_parts_cover_each_chunk_once_in_order(bundled_db, n_devices):
    """The fast mode's cut: every subject of every chunk in exactly one run, at most one run per
    device and chunk (run k on device k), each about an equal share of the chunk's residues."""
    db = bundled_db
    parts = device_parts(db, db.chunks, n_devices)
    assert len(parts) == n_devices
    longest = int(np.max(np.diff(db.offsets)))
    for c, chunk in enumerate(db.chunks):
        runs = [(d, p) for d in range(n_devices) for k, p in parts[d] if k == c]
        assert [d for d, _p in runs] == sorted({d for d, _p in runs}), "one run per device, in device order"
        assert runs[0][1].first == chunk.first and runs[-1][1].stop == chunk.stop
        assert all(a.stop == b.first for (_d, a), (_e, b) in zip(runs, runs[1:]))
        for _d, p in runs:
            assert p.index == chunk.index and p.n_sequences > 0
            assert p.residue_start == int(db.offsets[p.first]) and p.residue_stop == int(db.offsets[p.stop])
            assert p.n_residues <= chunk.n_residues // n_devices + longest
        assert n_devices == 1 or len(runs) == n_devices
    for per_device in parts:
        assert [k for k, _p in per_device] == sorted(k for k, _p in per_device), "each device's runs in chunk order"


@pytest.mark.parametrize("n_chunks", [1, 2, None])
def test_pipeline_runs_cut_the_first_and_last_run_short(bundled_db, n_chunks):
    """The pipeline's first run is the longest subjects' 1/4 of the first run's residues, its
    last the shortest subjects' 1/4 of the last run's; every subject stays in exactly one run,
    the runs between as they were."""
    db = bundled_db
    chunks = db.chunks[:n_chunks] if n_chunks else db.chunks
    in_db_order = device_parts(db, chunks, 1)[0]
    cut = pipeline_runs(db, in_db_order, 4)
    runs = in_db_order[::-1]  # as the pipeline takes them (seeded_order): the longest subjects first
    assert [c for c, _ in runs] == seeded_order([c for c, _ in in_db_order])
    longest = int(np.max(np.diff(db.offsets)))
    assert len(cut) == len(runs) + 2
    (c0, first), (c1, rest) = cut[0], cut[1]
    assert c0 == c1 == runs[0][0] and first.stop == runs[0][1].stop and rest.stop == first.first
    assert len(runs) == 1 or rest.first == runs[0][1].first
    assert 0 < first.n_residues <= runs[0][1].n_residues // 4 + longest
    (_, rest), (c2, last) = cut[-2], cut[-1]
    assert c2 == runs[-1][0] and last.first == runs[-1][1].first and rest.stop >= last.stop
    assert 0 < last.n_residues <= runs[-1][1].n_residues // 4 + longest
    for c, chunk in enumerate(chunks):
        mine = sorted((p for k, p in cut if k == c), key=lambda p: p.first)
        assert mine[0].first == chunk.first and mine[-1].stop == chunk.stop
        assert all(a.stop == b.first for a, b in zip(mine, mine[1:]))
        assert all(p.residue_start == int(db.offsets[p.first]) and p.residue_stop == int(db.offsets[p.stop]) for p in mine)
    assert cut[2:-2] == runs[1:-1]
    assert pipeline_runs(db, [], 4) == []
