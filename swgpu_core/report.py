"""One self-contained HTML report of a run: parameters, distributions, top hits, alignments.

Everything is inside the one file (plots are PNGs embedded as base64, no scripts, no
external style sheets), so the report can be mailed, archived with the results or opened
from a cluster's file system without its neighbours.
"""

from __future__ import annotations

import base64
import datetime
import html
import io
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from . import __version__
from .align import AlignedHits
from .atomic import atomic_output
from .database import Database
from .formats.text import format_pairwise
from .scoring import Scoring
from .search import QueryHits
from .stats import format_bitscore, format_evalue

if TYPE_CHECKING:
    import matplotlib.pyplot as plt


def _pyplot() -> ModuleType:
    """matplotlib's pyplot on the Agg backend, imported when a plot is drawn (it takes ~1 s, every command paid it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


@dataclass
class RunInfo:
    """What the report says about how the hits were found."""

    scoring: Scoring
    statistics: str  # where E-values come from, or why there are none
    scan_seconds: float = 0.0  # summed over the search jobs
    scan_cells: int = 0
    backends: list[str] = field(default_factory=list)
    top: int = 0
    threshold: int | None = None  # the long-sequence threshold of the plan
    sources: list[str] = field(default_factory=list)  # hit-list files


_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;font-size:.9em;margin:.5em 0}td,th{border:1px solid #ddd;padding:.2em .5em;text-align:left}
th{background:#f4f4f4}td.n{text-align:right;font-variant-numeric:tabular-nums}
pre{background:#fafafa;border:1px solid #eee;padding:.6em;overflow-x:auto;font-size:.85em}
img{max-width:100%}.plots{display:flex;flex-wrap:wrap;gap:1em}.plots img{width:48%}
"""


def _png(fig: plt.Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    _pyplot().close(fig)
    return f'<img alt="plot" src="data:image/png;base64,{base64.b64encode(buf.getvalue()).decode()}">'


def _score_plot(hits: Sequence[QueryHits]) -> str:
    fig, ax = _pyplot().subplots(figsize=(5.5, 3.5))
    scores = np.concatenate([qh.scores for qh in hits]) if hits else np.zeros(0)
    ax.hist(scores, bins=40, color="#4477aa")
    ax.set(xlabel="Smith-Waterman score", ylabel="hits", title="Score distribution (all reported hits)")
    return _png(fig)


def _evalue_plot(aligned: AlignedHits) -> str:
    values = np.array([a.evalue for alns in aligned.alignments for a in alns if a.evalue is not None])
    fig, ax = _pyplot().subplots(figsize=(5.5, 3.5))
    if values.size:
        ax.hist(np.log10(np.maximum(values, 1e-300)), bins=40, color="#228833")
        ax.axvline(np.log10(0.001), color="#cc3311", linestyle="--", linewidth=1, label="E = 0.001")
        ax.legend()
    else:
        ax.text(0.5, 0.5, "no E-values", ha="center", va="center", transform=ax.transAxes)
    ax.set(xlabel="log10(E-value)", ylabel="alignments", title="E-value distribution (aligned hits)")
    return _png(fig)


def _length_plot(db: Database, threshold: int | None) -> str:
    hist = db.manifest["length_histogram"]
    edges, counts = np.asarray(hist["edges"]), np.asarray(hist["counts"])
    fig, ax = _pyplot().subplots(figsize=(8, 3.5))
    ax.bar(edges[:-1], counts, width=np.diff(edges), align="edge", color="#4477aa", edgecolor="white", linewidth=0.3)
    ax.set_xscale("log")
    if threshold is not None:
        ax.axvline(threshold + 0.5, color="#cc3311", linestyle="--", linewidth=1, label=f"threshold {threshold:,}")
        ax.legend()
    ax.set(xlabel="sequence length (residues)", ylabel="sequences", title=f"Database lengths ({db.n_sequences:,} sequences)")
    return _png(fig)


def _table(header: Sequence[str], rows: Sequence[Sequence[object]], numeric: Sequence[bool]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f'<td{" class=n" if n else ""}>{html.escape(str(v))}</td>' for v, n in zip(row, numeric)) + "</tr>" for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def render(
    db: Database, hits: Sequence[QueryHits], aligned: AlignedHits, info: RunInfo, *, table_rows: int = 10, shown_alignments: int = 3
) -> str:
    """The report as one HTML string."""
    esc = html.escape
    gcups = info.scan_cells / info.scan_seconds / 1e9 if info.scan_seconds > 0 else 0.0
    rate = aligned.count / aligned.seconds if aligned.seconds > 0 else 0.0
    parts = [
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>swgpu report</title><style>{_STYLE}</style></head><body>",
        f"<h1>swgpu report</h1><p>swgpu {esc(__version__)}, generated {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}</p>",
        "<h2>Search parameters</h2>",
        _table(
            ["parameter", "value"],
            [
                ("database", str(db.path)),
                ("database version", f"{db.version_tag} (sha256 of {db.manifest['source']['path']})"),
                ("database size", f"{db.n_sequences:,} sequences, {db.n_residues:,} residues, {len(db.chunks)} chunks"),
                ("scoring", info.scoring.describe() + " (a gap of length k costs open + k*extend)"),
                ("statistics", info.statistics),
                ("queries", f"{len(hits)} ({sum(len(q.query) for q in hits):,} residues)"),
                ("hits kept per query", info.top),
                ("search backend", ", ".join(sorted(set(info.backends))) or "unknown"),
                ("hit lists", f"{len(info.sources)} files"),
            ],
            [False, False],
        ),
        "<h2>Timings</h2>",
        _table(
            ["stage", "time", "throughput"],
            [
                ("scan (sum over jobs)", f"{info.scan_seconds:.2f} s", f"{info.scan_cells / 1e9:.2f} G cells, {gcups:.2f} GCUPS"),
                (f"traceback ({aligned.backend})", f"{aligned.seconds:.2f} s", f"{aligned.count} alignments, {rate:.0f} per second"),
            ],
            [False, True, False],
        ),
        "<h2>Distributions</h2><div class=plots>",
        _score_plot(hits),
        _evalue_plot(aligned),
        "</div>",
        "<h2>Database length histogram</h2>",
        _length_plot(db, info.threshold),
        "<h2>Top hits per query</h2>",
    ]
    for qh, alns in zip(hits, aligned.alignments):
        parts.append(f"<h3>{esc(qh.query.id)} <small>{esc(qh.query.description)} ({len(qh.query)} residues)</small></h3>")
        if not alns:
            parts.append("<p>No aligned hits.</p>")
            continue
        rows = [
            (
                a.rank, a.subject_id, a.subject_description[:60], a.score,
                "*" if a.bitscore is None else format_bitscore(a.bitscore), "*" if a.evalue is None else format_evalue(a.evalue),
                f"{a.pident:.1f}", a.qcovhsp, f"{a.qstart}-{a.qend}", f"{a.sstart}-{a.send}",
            )  # fmt: skip
            for a in alns[:table_rows]
        ]
        parts.append(_table(["#", "subject", "description", "score", "bits", "E-value", "% id", "% qcov", "query", "subject"], rows,
                            [True, False, False, True, True, True, True, True, True, True]))  # fmt: skip
    parts.append("<h2>Alignments</h2>")
    for qh, alns in zip(hits, aligned.alignments):
        for a in alns[:shown_alignments]:
            parts.append(f"<h3>{esc(qh.query.id)} vs {esc(a.subject_id)}</h3><pre>{esc(format_pairwise(a))}</pre>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


def write_report(path: str | os.PathLike, text: str) -> None:
    with atomic_output(path) as fh:
        fh.write(text)
