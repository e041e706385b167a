"""How the fast mode's word hits spread over database words and query positions (issue 15).

``python bench/seed_word_shares.py DB QUERIES.fasta [--thresholds 11 12 13 14]``

Counts every 3-residue word of the database, then per threshold T the word hits of all
queries against it (a query word's hits: the database counts of its T-neighbours, as the
seed kernel finds them; the total equals the GPU seeder's count), and what share of them the
most frequent database words and the query positions with the most hits bring. Would
masking a few words, as frequency-based filters do, cut the hits several times? Only if a
few words carry most of them. CPU only (numpy), a minute for bench200M.
"""

from __future__ import annotations

import argparse

import numpy as np

from swgpu_core.database import Database
from swgpu_core.fasta import read_sequences
from swgpu_core.scoring import Scoring
from swgpu_core.seed import N_WORDS, WORD_CODES, neighbourhoods, word_index


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("db")
    p.add_argument("queries")
    p.add_argument("--thresholds", type=int, nargs="+", default=[11, 12, 13, 14])
    a = p.parse_args()
    db = Database(a.db)
    counts = np.zeros(N_WORDS, np.int64)
    for chunk in db.chunks:  # words across two subjects are counted too: 2 per subject, negligible
        words = word_index(db.chunk_residues(chunk))
        counts += np.bincount(words[words >= 0], minlength=N_WORDS)
    query_words = np.concatenate([word_index(q.codes) for q in read_sequences(a.queries, db.alphabet)])
    query_words = query_words[query_words >= 0]
    per_query_word = np.bincount(query_words, minlength=N_WORDS)
    frequent = np.argsort(-counts)
    matrix = np.asarray(Scoring.protein().matrix).astype(np.int32)
    for t in a.thresholds:
        offsets, neighbours = neighbourhoods(matrix, t)
        summed = np.concatenate([[0], np.cumsum(counts[neighbours])])
        hits_of_word = summed[offsets[1:]] - summed[offsets[:-1]]  # database hits of each query word
        hits = int(hits_of_word[query_words].sum())
        by_position = np.cumsum(np.sort(hits_of_word[query_words])[::-1]) / hits
        position_share = {f"{f:.0%}": round(float(by_position[int(f * by_position.size) - 1]), 3) for f in (0.01, 0.05, 0.2)}
        owner = np.repeat(np.arange(N_WORDS), np.diff(offsets))  # the query word of each neighbour entry
        of_db_word = np.zeros(N_WORDS)
        np.add.at(of_db_word, neighbours, per_query_word[owner] * counts[neighbours])
        word_share = {f"{k / N_WORDS:.1%}": round(float(of_db_word[frequent[:k]].sum() / hits), 3) for k in (40, 400, 1600)}
        print(f"T {t}: {hits:.3e} word hits; share from the most frequent database words {word_share}, "
              f"from the query positions with the most hits {position_share}")  # fmt: skip
    letters = "ARNDCQEGHILKMFPSTWYV"  # swgpu's protein codes 0..19
    names = ["".join(letters[w // WORD_CODES**k % WORD_CODES] for k in (2, 1, 0)) for w in frequent[:5]]
    print(f"most frequent database words: {names}, {counts[frequent[0]] / counts.mean():.1f}x the mean count at most")


if __name__ == "__main__":
    main()
