"""The alignment fields of BLAST's tabular formats, registered with :mod:`swgpu_core.outfmt`.

Importing this module gives every alignment field (pident, qstart, evalue, cigar, ...) its
function, so ``--outfmt 6 std`` works; numbers are printed as BLAST prints them. ``cigar``
is a swgpu extension (BLAST has ``btop``): the aligned part only, query as read, subject
as reference, ``=``/``X``/``I``/``D``. E-value and bit score print ``*`` when the scoring
system has no Karlin-Altschul parameters.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .. import outfmt
from ..align import Alignment
from ..search import QueryHits
from ..stats import format_bitscore, format_evalue

_FIELDS: tuple[tuple[str, str, Callable[[Alignment], str]], ...] = (
    ("pident", "% identity", lambda a: f"{a.pident:.3f}"),
    ("nident", "identical", lambda a: str(a.identities)),
    ("positive", "positives", lambda a: str(a.positives)),
    ("ppos", "% positives", lambda a: f"{a.ppos:.2f}"),
    ("length", "alignment length", lambda a: str(a.length)),
    ("mismatch", "mismatches", lambda a: str(a.mismatches)),
    ("gapopen", "gap opens", lambda a: str(a.gap_opens)),
    ("gaps", "gaps", lambda a: str(a.gaps)),
    ("qstart", "q. start", lambda a: str(a.qstart)),
    ("qend", "q. end", lambda a: str(a.qend)),
    ("sstart", "s. start", lambda a: str(a.sstart)),
    ("send", "s. end", lambda a: str(a.send)),
    ("qseq", "query seq", lambda a: a.qseq),
    ("sseq", "subject seq", lambda a: a.sseq),
    ("cigar", "cigar", lambda a: a.cigar),
    ("btop", "BTOP", lambda a: a.btop),
    ("qcovhsp", "% query coverage per hsp", lambda a: str(a.qcovhsp)),
    ("evalue", "evalue", lambda a: "*" if a.evalue is None else format_evalue(a.evalue)),
    ("bitscore", "bit score", lambda a: "*" if a.bitscore is None else format_bitscore(a.bitscore)),
)


def register_alignment_fields() -> None:
    """Give the alignment fields of the registry their functions (idempotent)."""
    for name, title, fn in _FIELDS:
        outfmt.register_field(name, title, lambda hit, fn=fn: fn(hit.alignment), needs_alignment=True)


register_alignment_fields()


def table_input(hits: Sequence[QueryHits], alignments: Sequence[Sequence[Alignment]]) -> tuple[list[QueryHits], Callable]:
    """The hits that have alignments, and the ``align`` callback of :func:`outfmt.write_table`.

    Only aligned hits get rows when a field needs an alignment: ``--align N`` and
    ``--evalue`` cut each query's list from the end, so ranks stay those of the search.
    """
    by_key: dict[tuple[str, int], Alignment] = {}
    kept: list[QueryHits] = []
    for qh, alns in zip(hits, alignments):
        for a in alns:
            by_key[(qh.query.id, a.rank)] = a
        kept.append(
            QueryHits(qh.query, np.array([a.subject_index for a in alns], np.int64), np.array([a.score for a in alns], np.int32))
        )
    return kept, lambda hit: by_key[(hit.query.id, hit.rank)]
