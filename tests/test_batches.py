"""Query batches (``swgpu split-queries``): limits in records and residues, order, stability."""

from __future__ import annotations

from pathlib import Path

import pytest

from swgpu_core.batches import split_queries
from swgpu_core.errors import InputError
from swgpu_core.fasta import read_fasta

LENGTHS = [120, 30, 300, 80, 80, 500, 10, 60, 200, 90]


def write_queries(path: Path, lengths: list[int]) -> Path:
    path.write_text("".join(f">q{k} query {k}\n{'ACDEFGHIKLMNPQRSTVWY' * (n // 20)}{'A' * (n % 20)}\n" for k, n in enumerate(lengths)))
    return path


def batches(paths: list[Path]) -> list[list[tuple[str, int]]]:
    return [[(r.id, len(r.sequence)) for r in read_fasta(p)] for p in paths]


def test_a_residue_limit_cuts_batches_in_order_each_as_full_as_it_allows(tmp_path):
    fasta = write_queries(tmp_path / "q.fa", LENGTHS)
    got = batches(split_queries(fasta, tmp_path / "out", 100, batch_residues=400))
    # greedy in the file's order: a batch ends before the record that would pass 400 residues;
    # the 500-residue record makes a batch alone
    assert [[n for _, n in b] for b in got] == [[120, 30], [300, 80], [80], [500], [10, 60, 200, 90]]
    assert [i for b in got for i, _ in b] == [f"q{k}" for k in range(len(LENGTHS))]


def test_both_limits_apply_and_without_one_records_alone_decide(tmp_path):
    fasta = write_queries(tmp_path / "q.fa", LENGTHS)
    assert [len(b) for b in batches(split_queries(fasta, tmp_path / "a", 3))] == [3, 3, 3, 1]
    assert [len(b) for b in batches(split_queries(fasta, tmp_path / "b", 2, batch_residues=1000))] == [2, 2, 2, 2, 2]
    assert [len(b) for b in batches(split_queries(fasta, tmp_path / "c", 3, batch_residues=400))] == [2, 2, 1, 1, 3, 1]


def test_appended_queries_change_the_last_batch_only(tmp_path):
    first = split_queries(write_queries(tmp_path / "q.fa", LENGTHS), tmp_path / "a", 100, batch_residues=400)
    before = [p.read_bytes() for p in first]
    after = [
        p.read_bytes() for p in split_queries(write_queries(tmp_path / "q2.fa", [*LENGTHS, 40]), tmp_path / "b", 100, batch_residues=400)
    ]
    assert after[:-1] == before[:-1] and after[-1] != before[-1]


@pytest.mark.parametrize("residues", [0, -5])
def test_a_residue_limit_below_one_is_refused(tmp_path, residues):
    with pytest.raises(InputError, match="batch residues"):
        split_queries(write_queries(tmp_path / "q.fa", LENGTHS), tmp_path / "out", 10, batch_residues=residues)
    assert not (tmp_path / "out").exists()
