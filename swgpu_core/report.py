"""One self-contained HTML report of a search, written for the people who read the hits.

The report reads what the search and the alignment steps already computed: the hit lists
(scores, scan timings, the queries) and the alignments as :func:`~swgpu_core.formats.text.write_jsonl`
wrote them (coordinates, identities, E-values, the aligned rows). It traces nothing, so a
report never disagrees with the alignment files beside it and costs no traceback.

Its order follows what a biologist asks first, as BLAST's result page does: a per-query
summary (how many significant hits, the best one, its organism), the score and E-value
distributions with the significance threshold drawn in, then per query the significant
hits, the weaker ones apart, and the alignments in BLAST's 60-column pairwise view. How
the hits were computed (scoring, statistics, backend, GCUPS, the plan's length threshold)
comes last, under "Run details".

Everything is inside the one file (plots are PNGs embedded as base64, inline CSS, no
scripts or external links other than the accession links), so the report can be mailed,
archived with the results or opened from a cluster's file system without its neighbours.
"""

from __future__ import annotations

import base64
import datetime
import html
import io
import json
import math
import os
import re
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import __version__
from .align import Alignment
from .atomic import atomic_output
from .database import Database
from .errors import InputError
from .formats.text import alignment_from_record, pairwise_rows
from .scoring import Scoring
from .search import QueryHits
from .stats import format_bitscore, format_evalue

#: E-value at or below which a hit is called significant in the summary, tables and plots.
SIGNIFICANT = 1e-3
#: Hits with a larger E-value are left out of the tables, as BLAST leaves them out by default.
REPORTED = 10.0


@dataclass
class RunInfo:
    """What the report says about how the hits were found (its "Run details")."""

    scoring: Scoring
    statistics: str  # where E-values come from, or why there are none
    scan_seconds: float = 0.0  # summed over the search jobs
    scan_cells: int = 0
    backends: list[str] = field(default_factory=list)
    mode: str = "exact"  # the search mode(s): "exact", "fast" (seeded candidates only)
    seeding: str = ""  # fast mode: the seeding parameters and candidates found
    top: int = 0
    threshold: int | None = None  # the long-sequence threshold of the plan
    sources: list[str] = field(default_factory=list)  # hit-list files
    alignment_sources: list[str] = field(default_factory=list)  # JSON-lines files


#: What the lead paragraph adds for a fast-mode search.
_SEEDED = (
    " of the subjects that seeding selected (spaced seeds and ungapped extension; fast mode: the scores are exact, some hits may be missed)"
)

# ---------------------------------------------------------------------------- reading


def read_alignments(paths: Sequence[str | os.PathLike], db: Database, hits: Sequence[QueryHits]) -> list[list[Alignment]]:
    """The alignments in the JSON-lines files, per query of ``hits`` (in that order), in the hits' order.

    Every alignment must be one of the hits: its query among them, its subject among the
    query's hits with the same score. A report built from the alignments of another run
    would otherwise show numbers that belong to no search; checking costs nothing. The
    files may hold a subset of the hits (``swgpu align`` leaves out hits above its E-value
    cutoff and beyond ``--align``), so alignments are matched by subject, not by rank.
    """
    index = {qh.query.id: k for k, qh in enumerate(hits)}
    names = iter(db.headers([int(s) for qh in hits for s in qh.subjects.tolist()]))  # at once: a header alone costs 1.7 us
    where = [{next(names)[0]: (pos, score) for pos, score in enumerate(qh.scores.tolist())} for qh in hits]
    found: list[dict[int, Alignment]] = [{} for _ in hits]
    for path in paths:
        try:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{path}: cannot read alignments ({exc})") from None
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            at = f"{path}: line {number}"
            try:
                aln = alignment_from_record(json.loads(line))
            except (ValueError, KeyError, TypeError) as exc:
                raise InputError(f"{at}: not an alignment of 'swgpu align --out x.jsonl' ({exc})") from None
            k = index.get(aln.query_id)
            if k is None:
                raise InputError(f"{at}: query {aln.query_id!r} is in none of the hit lists")
            pos, score = where[k].get(aln.subject_id, (None, None))
            if pos is None or score != aln.score:
                had = "not among its hits" if pos is None else f"score {score} there"
                raise InputError(
                    f"{at}: {aln.query_id} vs {aln.subject_id} score {aln.score} is {had} in the hit lists (alignments of another search?)"
                )
            if pos in found[k]:
                raise InputError(f"{at}: {aln.query_id} vs {aln.subject_id} appears twice")
            aln.subject_index = int(hits[k].subjects[pos])
            found[k][pos] = aln
    return [[per_query[p] for p in sorted(per_query)] for per_query in found]


# ---------------------------------------------------------------------------- headers


_FIELD = re.compile(r"\s[A-Za-z]+=")


def split_description(description: str) -> tuple[str, str]:
    """``(protein name, organism)`` of a FASTA description.

    UniProt: ``Alcohol dehydrogenase 1A OS=Homo sapiens OX=9606 GN=ADH1A PE=1 SV=2``
    gives the text before ``OS=`` and the ``OS=`` value; NCBI: ``... [Homo sapiens]``
    gives the text before the last brackets and their content; otherwise the whole
    description and no organism.
    """
    pos = description.find(" OS=")
    if pos >= 0:
        rest = description[pos + 4 :]
        end = _FIELD.search(rest)
        return description[:pos].strip(), (rest[: end.start()] if end else rest).strip()
    m = re.fullmatch(r"(.*\S)\s*\[([^\[\]]+)\]\s*", description)
    if m:
        return m.group(1), m.group(2).strip()
    return description.strip(), ""


def short_name(description: str) -> str:
    """The protein's name for a narrow column: Swiss-Prot's recommended name of an NCBI-style
    ``RecName: Full=...; AltName: ...`` title, else :func:`split_description`'s name (whole words, never cut)."""
    m = re.match(r"\s*(?:RecName|SubName):\s*Full=([^;{]+)", description)
    return m.group(1).strip() if m else split_description(description)[0]


_UNIPROT = re.compile(r"(?:^|\|)(?:sp|tr)\|([A-Za-z0-9]+)(?:[.-]\d+)?(?:\||$)")
_NCBI_TAGS = ("ref", "gb", "emb", "dbj", "pdb", "pir", "prf", "sp", "tr")


def accession_link(ident: str) -> tuple[str, str]:
    """``(accession, URL)`` of a sequence id: UniProt for ``sp|``/``tr|``/UniRef ids, NCBI Protein otherwise.

    ``sp|P07327|ADH1A_HUMAN`` and ``gi|1|sp|P07327.2|ADH1A_HUMAN`` link to UniProtKB
    P07327; ``UniRef50_P07327`` to UniRef; ``gi|123|ref|NP_000658.1|`` to NCBI's
    NP_000658.1; any other id is looked up at NCBI Protein as it is.
    """
    m = _UNIPROT.search(ident)
    if m:
        return m.group(1), f"https://www.uniprot.org/uniprotkb/{m.group(1)}/entry"
    if ident.startswith("UniRef"):
        return ident, f"https://www.uniprot.org/uniref/{urllib.parse.quote(ident)}"
    parts = ident.split("|")
    acc = ident
    if len(parts) > 1:
        tagged = [parts[i + 1] for i, p in enumerate(parts[:-1]) if p in _NCBI_TAGS and parts[i + 1]]
        acc = tagged[0] if tagged else (parts[1] if parts[0] == "gi" and parts[1] else ident)
    return acc, f"https://www.ncbi.nlm.nih.gov/protein/{urllib.parse.quote(acc)}"


# ---------------------------------------------------------------------------- HTML pieces

_STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5em auto;max-width:1100px;padding:0 1em;color:#222;line-height:1.4}
h1{font-size:1.5em;margin-bottom:.2em}h2{border-bottom:2px solid #4477aa;padding-bottom:.2em;margin-top:2em}
h3{margin:1.6em 0 .3em;padding:.3em .5em;background:#eef3f8;border-left:4px solid #4477aa}h3 small{font-weight:normal;color:#444}
h4{margin:1.2em 0 .3em}p.lead{color:#444;margin-top:0}
table{border-collapse:collapse;font-size:.88em;margin:.5em 0;width:100%}
td,th{border:1px solid #ddd;padding:.25em .45em;text-align:left;vertical-align:top;overflow-wrap:break-word}
th{background:#f4f4f4;white-space:nowrap}td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.id{white-space:nowrap}td.id small{white-space:normal;color:#555;display:inline-block;min-width:10em}tr.weak td{color:#777}tr.weak a{color:#6b8fb8}
table.kv{width:auto}table.kv th{text-align:left;width:14em;white-space:normal}
a{color:#1a5fa8;text-decoration:none}a:hover{text-decoration:underline}
.aln{margin:1em 0 1.6em}.aln .title{font-family:ui-monospace,monospace;font-size:.85em;margin:0}
.aln .title b{font-weight:600}.aln .stats{font-family:ui-monospace,monospace;font-size:.85em;margin:.2em 0 .4em;color:#333}
pre{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:.85em;background:#fafafa;border:1px solid #eee;
padding:.5em .8em;margin:0;overflow-x:auto;line-height:1.25}
details{margin:.6em 0}summary{cursor:pointer;color:#1a5fa8}
.plots{display:flex;flex-wrap:wrap;gap:1em}.plots figure{flex:1 1 460px;margin:0}figure img{width:100%}
figcaption{font-size:.85em;color:#444}.map p{font-size:.8em;margin:.1em 0 .6em}img{max-width:100%}.muted{color:#777}
"""


def _png(fig) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return f'<img alt="plot" src="data:image/png;base64,{base64.b64encode(buf.getvalue()).decode()}">'


def _figure(image: str, caption: str) -> str:
    return f"<figure>{image}<figcaption>{caption}</figcaption></figure>"


def _subplots(width: float, height: float):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(width, height))


def significance_bits(alignments: Sequence[Alignment], evalue: float = SIGNIFICANT) -> float | None:
    """The bit score at which this query's E-value is ``evalue``, from its own alignments.

    Within one query's search E = m'n' 2^-bits, so the aligned hit whose E is nearest
    ``evalue`` (on a log scale) gives bits + log2(E / evalue); with a finite-size
    correction this holds near that hit, which is where the line is drawn.
    """
    pairs = [(a.bitscore, a.evalue) for a in alignments if a.bitscore is not None and a.evalue is not None and a.evalue > 0]
    if not pairs:
        return None
    bits, e = min(pairs, key=lambda p: abs(math.log10(p[1] / evalue)))
    return bits + math.log2(e / evalue)


def _score_plot(hits: Sequence[QueryHits], alignments: Sequence[Sequence[Alignment]]) -> str:
    fig, ax = _subplots(5.6, 3.4)
    flat = [a for alns in alignments for a in alns]
    if flat and all(a.bitscore is not None for a in flat):
        strong = [a.bitscore for a in flat if a.evalue is not None and a.evalue <= SIGNIFICANT]
        weak = [a.bitscore for a in flat if not (a.evalue is not None and a.evalue <= SIGNIFICANT)]
        edges = np.histogram_bin_edges([a.bitscore for a in flat], bins=40)
        ax.hist([weak, strong], bins=edges, stacked=True, color=["#bbbbbb", "#4477aa"], label=["E > 0.001", "E ≤ 0.001"])
        cuts = [b for b in (significance_bits(alns) for alns in alignments) if b is not None]
        if cuts:
            ax.axvline(float(np.median(cuts)), color="#cc3311", linestyle="--", linewidth=1.2, label="E = 0.001 (median query)")
        ax.legend(fontsize=8)
        ax.set(xlabel="bit score", ylabel="aligned hits (log scale)", title="Scores of the aligned hits", yscale="log")
    else:
        scores = np.concatenate([qh.scores for qh in hits]) if hits else np.zeros(0)
        ax.hist(scores, bins=40, color="#4477aa")
        ax.set(xlabel="Smith-Waterman score", ylabel="hits", title="Scores of the reported hits (no E-values)")
    return _png(fig)


def _evalue_plot(alignments: Sequence[Sequence[Alignment]]) -> str:
    values = np.array([a.evalue for alns in alignments for a in alns if a.evalue is not None], dtype=float)
    fig, ax = _subplots(5.6, 3.4)
    if values.size:
        logs = np.log10(np.maximum(values, 1e-300))
        edges = np.histogram_bin_edges(logs, bins=40)
        ax.hist(
            [logs[values > SIGNIFICANT], logs[values <= SIGNIFICANT]],
            bins=edges,
            stacked=True,
            color=["#bbbbbb", "#228833"],
            label=["E > 0.001", "E ≤ 0.001"],
        )
        ax.axvline(math.log10(SIGNIFICANT), color="#cc3311", linestyle="--", linewidth=1.2, label="E = 0.001")
        if logs.max() > math.log10(REPORTED):
            ax.axvline(math.log10(REPORTED), color="#777777", linestyle=":", linewidth=1.2, label="E = 10 (not tabulated beyond)")
        ax.legend(fontsize=8)
        ax.set_yscale("log")
    else:
        ax.text(0.5, 0.5, "no E-values", ha="center", va="center", transform=ax.transAxes)
    ax.set(
        xlabel="log10(E-value)   (more significant to the left)", ylabel="aligned hits (log scale)", title="E-values of the aligned hits"
    )
    return _png(fig)


def _length_plot(db: Database, threshold: int | None) -> str:
    hist = db.manifest["length_histogram"]
    edges, counts = np.asarray(hist["edges"]), np.asarray(hist["counts"])
    fig, ax = _subplots(8, 3)
    ax.bar(edges[:-1], counts, width=np.diff(edges), align="edge", color="#4477aa", edgecolor="white", linewidth=0.3)
    ax.set_xscale("log")
    if threshold is not None:
        ax.axvline(threshold + 0.5, color="#cc3311", linestyle="--", linewidth=1, label=f"GPU kernel threshold {threshold:,}")
        ax.legend(fontsize=8)
    ax.set(xlabel="sequence length (residues)", ylabel="sequences", title=f"Database lengths ({db.n_sequences:,} sequences)")
    return _png(fig)


def _esc(value: object) -> str:
    return html.escape(str(value))


def _link(ident: str) -> str:
    acc, url = accession_link(ident)
    return f'<a href="{_esc(url)}" title="{_esc(ident)}">{_esc(acc)}</a>'


def _evalue(aln: Alignment) -> str:
    return "–" if aln.evalue is None else format_evalue(aln.evalue)


def _bits(aln: Alignment) -> str:
    return "–" if aln.bitscore is None else format_bitscore(aln.bitscore)


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _significant(aln: Alignment) -> bool:
    return aln.evalue is not None and aln.evalue <= SIGNIFICANT


def _kv_table(rows: Sequence[tuple[str, str]]) -> str:
    body = "".join(f"<tr><th>{_esc(k)}</th><td>{v}</td></tr>" for k, v in rows)
    return f"<table class=kv>{body}</table>"


def _hit_table(alns: Sequence[Alignment]) -> str:
    """BLAST's web columns: accession, description, organism, scores, E, identity, coverage, length."""
    head = "".join(
        f"<th>{h}</th>"
        for h in ("#", "Accession", "Description", "Organism", "Bits", "Score", "E-value", "Identity", "Query cover", "Length")
    )
    rows = []
    for a in alns:
        name, organism = split_description(a.subject_description)
        rows.append(
            f"<tr{'' if _significant(a) or a.evalue is None else ' class=weak'}><td class=n>{a.rank}</td>"
            f"<td class=id>{_link(a.subject_id)}</td><td>{_esc(name)}</td><td><i>{_esc(organism)}</i></td>"
            f"<td class=n>{_bits(a)}</td><td class=n>{a.score}</td><td class=n>{_evalue(a)}</td>"
            f"<td class=n>{a.pident:.1f}%</td><td class=n>{a.qcovhsp}%</td><td class=n>{a.slen:,}</td></tr>"
        )
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def blast_midline(aln: Alignment) -> str:
    """The match line as BLAST writes it: the residue where both are identical, ``+`` where the score is positive.

    The alignment files keep SSEARCH's ``|``; the report shows what BLAST users read.
    """
    return "".join(q if m == "|" else m for q, m in zip(aln.qseq, aln.midline))


def _alignment_block(aln: Alignment) -> str:
    """One alignment as BLAST's pairwise view: title, Length, Score/Identities lines, 60-column rows."""
    name, organism = split_description(aln.subject_description)
    org = f" <i>[{_esc(organism)}]</i>" if organism else ""
    expect = "" if aln.evalue is None else f",  Expect = {format_evalue(aln.evalue)}"
    bits = f"{format_bitscore(aln.bitscore)} bits ({aln.score})" if aln.bitscore is not None else f"{aln.score}"

    def pct(part: int) -> str:
        return f"{part}/{aln.length} ({round(100 * part / aln.length)}%)"

    return (
        f"<div class=aln><p class=title>&gt;<b>{_link(aln.subject_id)}</b> {_esc(name)}{org}  Length={aln.slen:,}</p>"
        f"<p class=stats>Score = {bits}{expect}<br>Identities = {pct(aln.identities)}, Positives = {pct(aln.positives)}, "
        f"Gaps = {pct(aln.gaps)}</p><pre>{_esc(chr(10).join(pairwise_rows(aln, blast_midline(aln))).rstrip())}</pre></div>"
    )


#: BLAST's colour key of the graphic summary: bit-score lower bounds and colours.
_BIT_COLOURS = ((200, "#e8262e"), (80, "#d53bd1"), (50, "#3fb24a"), (40, "#2a4ed8"), (float("-inf"), "#222222"))


def _colour(bits: float | None) -> str:
    return next(c for low, c in _BIT_COLOURS if (bits if bits is not None else 0.0) >= low)


def hit_map(qlen: int, alns: Sequence[Alignment], rows: int = 20) -> str:
    """BLAST's graphic summary as inline SVG: the query as a ruler, each hit a bar over the part it aligns.

    Bars are coloured by bit score with BLAST's key (< 40, 40-50, 50-80, 80-200, >= 200)
    and link to the hit's alignment or entry; one glance shows which domains of the query
    the hits cover.
    """
    width, left, right, top, step = 960, 8, 8, 34, 9
    scale = (width - left - right) / max(qlen, 1)
    shown = list(alns[:rows])
    height = top + step * len(shown) + 6
    parts = [
        (
            f'<svg viewBox="0 0 {width} {height}" width="100%" role="img" aria-label="hits along the query" '
            'style="max-width:960px;font:11px sans-serif">'
        ),
        f'<rect x="{left}" y="14" width="{qlen * scale:.1f}" height="8" fill="#9a9a9a"/>',
    ]
    tick = 10 ** max(0, len(str(qlen)) - 1)
    if qlen / tick < 4:
        tick = max(tick // 2, 1)
    for pos in range(0, qlen + 1, tick):
        x = left + pos * scale
        parts.append(f'<line x1="{x:.1f}" y1="22" x2="{x:.1f}" y2="27" stroke="#555"/>')
        parts.append(f'<text x="{x:.1f}" y="10" text-anchor="middle">{max(pos, 1)}</text>')
    for i, a in enumerate(shown):
        x, w = left + (a.qstart - 1) * scale, max((a.qend - a.qstart + 1) * scale, 1.5)
        title = _esc(f"{a.subject_id} {split_description(a.subject_description)[0]}: {_bits(a)} bits, E = {_evalue(a)}, "
                     f"query {a.qstart}-{a.qend}")  # fmt: skip
        parts.append(
            f'<rect x="{x:.1f}" y="{top + i * step}" width="{w:.1f}" height="6" fill="{_colour(a.bitscore)}"><title>{title}</title></rect>'
        )
    parts.append("</svg>")
    key = " ".join(
        f'<span style="display:inline-block;width:.9em;height:.7em;background:{c}"></span> {label}'
        for label, c in (("&lt; 40", "#222222"), ("40–50", "#2a4ed8"), ("50–80", "#3fb24a"), ("80–200", "#d53bd1"), ("≥ 200", "#e8262e"))
    )
    more = f" (the first {len(shown)} of {len(alns)})" if len(alns) > len(shown) else ""
    return f"<div class=map>{''.join(parts)}<p class=muted>Hits along the query{more}, coloured by bit score: {key}</p></div>"


def _count(alns: Sequence[Alignment], qh: QueryHits, top: int) -> str:
    """Significant hits of one query, "at least" where the search's top-hit limit may have cut them off.

    That is when every hit the search kept was aligned and is significant: the database
    may hold more. (Hits the align step left out had E > 10 or were beyond ``--align``.)
    """
    n = sum(_significant(a) for a in alns)
    if n and n == len(alns) == len(qh) >= top > 0:
        return f"≥ {n}"
    return str(n)


def _summary(hits: Sequence[QueryHits], alignments: Sequence[Sequence[Alignment]], top: int, have_evalues: bool) -> str:
    head = "".join(
        f"<th>{h}</th>"
        for h in ("Query", "Length", "Hits<br>E ≤ 0.001", "Best hit", "Description", "Organism", "E-value", "Identity", "Query<br>cover")
    )
    rows = []
    for k, (qh, alns) in enumerate(zip(hits, alignments)):
        qname = short_name(qh.query.description)
        acc = accession_link(qh.query.id)[0]
        query = f'<a href="#q{k + 1}" title="{_esc(qh.query.id)}">{_esc(acc)}</a>' + (f"<br><small>{_esc(qname)}</small>" if qname else "")
        if not alns:
            rows.append(
                f"<tr><td class=id>{query}</td><td class=n>{len(qh.query):,}</td><td class=n>0</td><td colspan=6 class=muted>no hits</td></tr>"
            )
            continue
        best = alns[0]
        name, organism = split_description(best.subject_description)
        rows.append(
            f"<tr{'' if _significant(best) or best.evalue is None else ' class=weak'}><td class=id>{query}</td>"
            f"<td class=n>{len(qh.query):,}</td><td class=n>{_count(alns, qh, top) if have_evalues else '–'}</td><td class=id>{_link(best.subject_id)}</td>"
            f"<td>{_esc(name)}</td><td><i>{_esc(organism)}</i></td><td class=n>{_evalue(best)}</td>"
            f"<td class=n>{best.pident:.1f}%</td><td class=n>{best.qcovhsp}%</td></tr>"
        )
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def _query_section(k: int, qh: QueryHits, alns: Sequence[Alignment], shown_alignments: int, have_evalues: bool) -> list[str]:
    q = qh.query
    name, organism = split_description(q.description)
    org = f" · <i>{_esc(organism)}</i>" if organism else ""
    parts = [f"<h3 id=q{k + 1}>{_esc(q.id)} <small>{_esc(name)}{org} · {len(q):,} residues</small></h3>"]
    if not alns:
        parts.append(
            f"<p>No aligned hits ({len(qh)} hits in the hit lists, none aligned: E &gt; 10 or --align 0).</p>"
            if len(qh)
            else "<p>No hits found.</p>"
        )
        return parts
    if not have_evalues:
        parts.append(f"<p>{len(alns)} aligned hits, ranked by score (no E-values for this scoring system).</p>")
        parts.append(_hit_table(alns))
        shown = list(alns[:shown_alignments])
    else:
        strong = [a for a in alns if _significant(a)]
        weak = [a for a in alns if not _significant(a) and a.evalue is not None and a.evalue <= REPORTED]
        beyond = len(alns) - len(strong) - len(weak)
        note = f"; {beyond} with E &gt; 10 are not listed (they are in the alignment files)" if beyond else ""
        unaligned = (
            f"; {len(qh) - len(alns)} further hits of the hit lists have no alignment here (E &gt; 10 or beyond --align)"
            if len(qh) > len(alns)
            else ""
        )
        parts.append(f"<p>{_plural(len(strong), 'significant hit')} (E ≤ 0.001), {len(weak)} weaker (E ≤ 10){note}{unaligned}.</p>")
        parts.append(_hit_table(strong) if strong else "<p class=muted>No significant hits.</p>")
        if weak:
            parts.append(
                f"<details><summary>{len(weak)} weaker hits, 0.001 &lt; E ≤ 10 (may be chance matches)</summary>{_hit_table(weak)}</details>"
            )
        shown = (strong + weak)[:shown_alignments]
        if strong + weak:
            parts.insert(2, hit_map(len(q), strong + weak))
    if shown:
        weak_only = have_evalues and not any(_significant(a) for a in shown)
        parts.append(f"<h4>Alignments of the best {len(shown)}{' (none significant: E &gt; 0.001)' if weak_only else ''}</h4>")
        parts.extend(_alignment_block(a) for a in shown)
    return parts


def render(
    db: Database, hits: Sequence[QueryHits], alignments: Sequence[Sequence[Alignment]], info: RunInfo, *, shown_alignments: int = 5
) -> str:
    """The report as one HTML string: summary, distributions, hits and alignments per query, run details.

    ``alignments`` holds each query's alignments (of ``hits``, in that order, best
    first), as :func:`read_alignments` returns them or a search's
    :class:`~swgpu_core.align.AlignedHits` holds them.
    """
    flat = [a for alns in alignments for a in alns]
    have_evalues = any(a.evalue is not None for a in flat)
    gcups = info.scan_cells / info.scan_seconds / 1e9 if info.scan_seconds > 0 else 0.0
    n_sig = sum(_significant(a) for a in flat)
    with_sig = sum(any(_significant(a) for a in alns) for alns in alignments)
    name = os.path.basename(os.path.normpath(str(db.path)))
    stats_line = _esc(info.statistics[0].upper() + info.statistics[1:]) if info.statistics else ""
    head = (
        "<!DOCTYPE html><html lang=en><head><meta charset='utf-8'><meta name=viewport content='width=device-width,initial-scale=1'>"
        f"<title>swgpu search report: {_esc(name)}</title><style>{_STYLE}</style></head><body>"
    )
    lead = (
        f"<h1>Protein search report</h1><p class=lead>{len(hits)} queries against <b>{_esc(name)}</b> "
        f"({db.n_sequences:,} sequences, {db.n_residues:,} residues) with exact Smith-Waterman local alignment"
        f"{_SEEDED if 'fast' in info.mode else ''}, "
        f"{_esc(info.scoring.describe())} (a gap of length k costs open + k × extend). {stats_line}.</p>"
    )
    if have_evalues:
        intro = (
            f"<p>{with_sig} of {len(hits)} queries have a significant hit (E ≤ 0.001); {_plural(n_sig, 'significant hit')} in all. "
            "The best hit of each query is its highest-scoring one; greyed rows are not significant.</p>"
        )
        score_caption = (
            "Bit scores of all aligned hits; the dashed line is the score at which E = 0.001 "
            "(the median over queries: the threshold depends on the query's length)."
        )
        evalue_caption = "E-values of all aligned hits (log scale); hits left of the dashed line are significant."
    else:
        intro = f"<p>{len(hits)} queries; hits are ranked by score.</p>"
        score_caption, evalue_caption = "Raw Smith-Waterman scores of all reported hits.", "No E-values for this scoring system."
    parts = [
        head,
        lead,
        "<h2>Summary</h2>",
        intro,
        _summary(hits, alignments, info.top, have_evalues),
        "<h2>Score and E-value distributions</h2><div class=plots>",
        _figure(_score_plot(hits, alignments), score_caption),
        _figure(_evalue_plot(alignments), evalue_caption),
        "</div>",
        "<h2>Hits and alignments per query</h2>",
    ]
    for k, (qh, alns) in enumerate(zip(hits, alignments)):
        parts.extend(_query_section(k, qh, alns, shown_alignments, have_evalues))
    rate = f"{info.scan_cells / 1e9:,.1f} G cells in {info.scan_seconds:.2f} s summed over the search jobs: {gcups:,.1f} GCUPS"
    source = db.manifest["source"]["path"]
    threshold = "–" if info.threshold is None else f"{info.threshold:,} residues (longer subjects go to the intra-task kernel)"
    details = [
        ("program", f"swgpu {_esc(__version__)} (report written {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')})"),
        ("database", f"{_esc(db.path)}, version {_esc(db.version_tag)} (start of the SHA-256 of {_esc(source)}), {len(db.chunks)} chunks"),
        ("database size", f"{db.n_sequences:,} sequences, {db.n_residues:,} residues"),
        ("scoring", f"{_esc(info.scoring.describe())}; a gap of length k costs open + k × extend"),
        ("statistics", _esc(info.statistics)),
        ("queries", f"{len(hits)} ({sum(len(q.query) for q in hits):,} residues)"),
        ("hits kept per query", f"{info.top:,}"),
        ("alignments", f"{len(flat):,} from {len(info.alignment_sources)} file(s)"),
        ("search backend", _esc(", ".join(sorted(set(info.backends))) or "unknown")),
        ("search mode", _esc(info.mode + (f": {info.seeding}" if info.seeding else ""))),
        ("scan", rate),
        ("GPU length threshold", threshold),
        ("hit lists", f"{len(info.sources)} file(s)"),
    ]
    parts += [
        "<h2>Run details</h2>",
        _kv_table(details),
        _figure(_length_plot(db, info.threshold), "Database sequence lengths (log scale) and the GPU plan's inter/intra-task threshold."),
        "</body></html>\n",
    ]
    return "\n".join(parts)


def write_report(path: str | os.PathLike, text: str) -> None:
    """Write the report atomically (never a half-written file under the final name)."""
    with atomic_output(path) as fh:
        fh.write(text)
