"""The output-field registry: parsing, BLAST ids, and registering alignment fields later."""

from __future__ import annotations

import pytest

from swgpu_core import outfmt
from swgpu_core.errors import InputError


def test_defaults_and_std(monkeypatch: pytest.MonkeyPatch) -> None:
    import swgpu_core.formats  # noqa: F401  registers the alignment fields

    assert [f.name for f in outfmt.parse_outfmt("6").fields] == list(outfmt.STANDARD_FIELDS) == list(outfmt.DEFAULT_FIELDS)
    assert outfmt.parse_outfmt("6 std").needs_alignment
    assert outfmt.parse_outfmt("7 qseqid,sseqid score").kind == 7
    monkeypatch.setattr(outfmt, "FIELDS", dict(outfmt.FIELDS))
    outfmt.register_field("pident", "% identity", None, needs_alignment=True)
    with pytest.raises(InputError, match="field pident needs alignments"):
        outfmt.parse_outfmt("6 std")


@pytest.mark.parametrize(
    ("seq_id", "acc", "accver"),
    [("sp|P69905|HBA_HUMAN", "P69905", "P69905"), ("ref|NP_000549.1|", "NP_000549", "NP_000549.1"), ("my_protein", "my_protein", "my_protein")],
)
def test_accession(seq_id: str, acc: str, accver: str) -> None:
    assert outfmt.accession(seq_id) == acc and outfmt.accession(seq_id, keep_version=True) == accver


def test_registering_an_alignment_field(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(outfmt, "FIELDS", dict(outfmt.FIELDS))
    outfmt.register_field("qstart", "q. start", lambda hit: str(hit.alignment[0]), needs_alignment=True)
    fmt = outfmt.parse_outfmt("6 qseqid qstart")
    assert fmt.needs_alignment
    with pytest.raises(InputError, match="no aligner"):
        outfmt.write_table(None, fmt, None, [])
