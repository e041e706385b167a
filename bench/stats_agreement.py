"""How swgpu's E-values agree with blastp's and ssearch36's on the same pairs (the README's statistics table).

    python bench/stats_agreement.py DB.fasta[.gz] QUERIES.fasta WORKDIR

Builds the database three ways (swgpu, makeblastdb), runs ``blastp -comp_based_stats 0
-seg no`` and ``ssearch36 -m 8 -f -11 -g -1 -s BL62``, scores every subject with swgpu's CPU
backend and prints, for the pairs each tool reports with the same raw score, how often
swgpu's BLAST statistics are within 2x of blastp's E (and print the same bit score), and
how often swgpu's fitted statistics are within 2x / 3x of ssearch36's E, by E range.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from swgpu_core.backends.cpu import CpuBackend
from swgpu_core.database import Database, build_database
from swgpu_core.fasta import read_sequences
from swgpu_core.scoring import Scoring
from swgpu_core.search import search
from swgpu_core.stats import format_bitscore, format_evalue, statistics

RANGES = ((0.0, 1e-10, "E < 1e-10"), (1e-10, 1e-3, "1e-10 <= E < 1e-3"), (1e-3, 10.0, "1e-3 <= E <= 10"))


def main(db_fasta: str, queries_fasta: str, work: str) -> None:
    out = Path(work)
    out.mkdir(parents=True, exist_ok=True)
    plain = out / "db.fasta"
    subprocess.run(["sh", "-c", 'gzip -dcf "$1" > "$2"', "sh", db_fasta, str(plain)], check=True)
    subprocess.run(["makeblastdb", "-in", str(plain), "-dbtype", "prot", "-out", str(out / "blastdb")], check=True, capture_output=True)
    blast = subprocess.run(
        ["blastp", "-query", queries_fasta, "-db", str(out / "blastdb"), "-comp_based_stats", "0", "-seg", "no",
         "-outfmt", "6 qseqid sseqid score evalue bitscore", "-max_target_seqs", "500", "-evalue", "1000"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    fasta = subprocess.run(
        ["ssearch36", "-m", "8", "-f", "-11", "-g", "-1", "-s", "BL62", "-E", "10", "-b", "500", "-d", "0", "-T", "2", queries_fasta, str(plain)],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    db = build_database(plain, out / "swdb", show_progress=False) if not (out / "swdb").exists() else Database(out / "swdb")
    scoring = Scoring.protein()
    queries = read_sequences(queries_fasta, scoring.alphabet)
    result = search(db, queries, scoring, CpuBackend(scoring), top=db.n_sequences, show_progress=False)
    lengths = [len(q) for q in queries]
    blast_stats = statistics(scoring, db, mode="blast")
    fit_stats = statistics(scoring, db, mode="fit", histograms=result.score_stats, query_lengths=lengths)
    index = {db.seq_id(i): i for i in range(db.n_sequences)}
    which = {qh.query.id: qi for qi, qh in enumerate(result.hits)}
    scores = [dict(zip(qh.subjects.tolist(), qh.scores.tolist())) for qh in result.hits]

    def ours(stats, qid: str, sid: str) -> tuple[int, float, float]:
        qi, si = which[qid], index[sid]
        s, n = scores[qi][si], int(db.lengths[si])
        return s, float(stats.evalue(qi, lengths[qi], s, n)), float(stats.bitscore(qi, lengths[qi], s, n))

    rows = same = within = bits = text = 0
    for line in blast.splitlines():
        qid, sid, score, evalue, bit = line.split("\t")
        rows += 1
        s, e, b = ours(blast_stats, qid, sid)
        if s != int(score):
            continue
        same += 1
        ref = float(evalue)
        within += (ref == 0 and e < 1e-180) or (ref > 0 and 0.5 <= e / ref <= 2)
        bits += format_bitscore(b) == bit
        text += format_evalue(e) == evalue
    print(
        f"blastp: {rows} rows, {same} with swgpu's raw score; E within 2x {within / same:.2%}, bit score text equal {bits / same:.2%}, E text equal {text / same:.2%}"
    )
    seen: set[tuple[str, str]] = set()
    ratios: dict[str, list[tuple[float, float]]] = {name: [] for *_, name in RANGES}
    for line in fasta.splitlines():
        c = line.split("\t")
        if (c[0], c[1]) in seen:
            continue
        seen.add((c[0], c[1]))
        ref = float(c[10])
        for lo, hi, name in RANGES:
            if ref > 0 and lo <= ref < hi or (hi == 10.0 and ref == hi):
                ratios[name].append((ours(fit_stats, c[0], c[1])[1] / ref, ours(blast_stats, c[0], c[1])[1] / ref))
    for name, v in ratios.items():
        if not v:
            continue
        r = np.array(v)
        print(
            f"ssearch36 {name}: {len(r)} hits; fit within 2x {np.mean((r[:, 0] >= 0.5) & (r[:, 0] <= 2)):.2%}, within 3x "
            f"{np.mean((r[:, 0] >= 1 / 3) & (r[:, 0] <= 3)):.2%}; BLAST statistics / ssearch36 median {np.median(r[:, 1]):.2g}"
        )


if __name__ == "__main__":
    main(*sys.argv[1:4])
