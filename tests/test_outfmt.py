"""The fixed table of output fields: parsing, BLAST ids, titles and cells."""

from __future__ import annotations

import subprocess
import sys

import pytest

from swgpu_core import outfmt
from swgpu_core.errors import InputError


def test_defaults_and_std() -> None:
    assert [f.name for f in outfmt.parse_outfmt("6").fields] == list(outfmt.STANDARD_FIELDS) == list(outfmt.DEFAULT_FIELDS)
    # blastp 2.12's std: query and subject acc.ver first
    assert outfmt.STANDARD_FIELDS[:2] == ("qaccver", "saccver") and outfmt.STANDARD_FIELDS[-2:] == ("evalue", "bitscore")
    assert outfmt.parse_outfmt("6 std").needs_alignment
    assert outfmt.parse_outfmt("7 qseqid,sseqid score").kind == 7
    assert not outfmt.parse_outfmt("6 qseqid sseqid evalue bitscore score").needs_alignment  # E-values need no traceback
    with pytest.raises(InputError, match="unknown field 'nope'"):
        outfmt.parse_outfmt("6 qseqid nope")
    with pytest.raises(InputError, match="only the tabular formats"):
        outfmt.parse_outfmt("5")


def test_table_is_complete_in_a_fresh_interpreter() -> None:
    """No registry filled by import order: the alignment and E-value fields parse on a bare import."""
    code = "from swgpu_core.outfmt import parse_outfmt; print(len(parse_outfmt('6 qseqid sseqid pident evalue bitscore cigar').fields))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "6"


@pytest.mark.parametrize(
    ("seq_id", "acc", "accver"),
    [
        ("sp|P69905|HBA_HUMAN", "P69905", "P69905"),
        ("tr|A0A0C5RLJ5|A0A0C5RLJ5_9MOLU", "A0A0C5RLJ5", "A0A0C5RLJ5"),
        ("ref|NP_000549.1|", "NP_000549", "NP_000549.1"),
        ("gi|12345|ref|NP_1.2|", "NP_1", "NP_1.2"),  # as blastp 2.12 prints them (makeblastdb -parse_seqids)
        ("AB12345.1", "AB12345.1", "AB12345.1"),
        ("my_protein", "my_protein", "my_protein"),
    ],
)
def test_accession(seq_id: str, acc: str, accver: str) -> None:
    assert outfmt.accession(seq_id) == acc and outfmt.accession(seq_id, keep_version=True) == accver


def test_every_field_has_a_title_and_meaning() -> None:
    text = outfmt.fields_help()
    for field in outfmt.FIELDS.values():
        assert field.title and field.meaning and f"  {field.name} " in text


def test_tabs_in_headers_become_spaces() -> None:
    assert outfmt.clean("a\tb\tc") == "a b c"
    with pytest.raises(InputError, match="no alignments"):
        outfmt.write_table(None, outfmt.parse_outfmt("6 qseqid qstart"), None, [], None)
