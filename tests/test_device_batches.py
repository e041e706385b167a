"""Device batches: every subject scanned exactly once, budgets kept, chunks reported once."""

from __future__ import annotations

import pytest

from swgpu_core.device_batches import device_batches


def _check(db, chunks, batches, limit):
    covered = [i for _, b in batches for i in range(b.first, b.stop)]
    assert covered == [i for c in chunks for i in range(c.first, c.stop)]
    for _, b in batches:
        assert b.residue_start == int(db.offsets[b.first]) and b.residue_stop == int(db.offsets[b.stop])
        assert b.n_residues <= limit or b.n_sequences == 1
    assert [c for done, _ in batches for c in done] == chunks


def test_small_database_is_one_batch(bundled_db):
    batches = device_batches(bundled_db, bundled_db.chunks, 10**9)
    assert len(batches) == 1 and batches[0][0] == bundled_db.chunks
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
    chosen = [bundled_db.chunks[0], bundled_db.chunks[2]]
    batches = device_batches(bundled_db, chosen, 10**9)
    assert len(batches) == 2  # not consecutive: never merged across the gap
    _check(bundled_db, chosen, batches, 10**9)


def test_streamed_limit(bundled_db):
    """A selection over the budget is cut at ``streamed_residues`` when given (the CUDA backend's
    two batches beside one boundary buffer), not at half the budget."""
    total = sum(c.n_residues for c in bundled_db.chunks)
    budget = total // 2
    batches = device_batches(bundled_db, bundled_db.chunks, budget, streamed_residues=budget // 5)
    _check(bundled_db, bundled_db.chunks, batches, budget // 5)
    assert len(batches) > len(device_batches(bundled_db, bundled_db.chunks, budget))
