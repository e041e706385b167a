"""Saved hit lists: the top hits of a search over some chunks, to be merged later.

A workflow searches each chunk (or group of chunks) in its own job with ``--save-hits``
and merges the lists with ``swgpu merge``. Each query's top ``k`` over the scanned chunks
is enough: under the one tie rule (score, then source-FASTA order) the global top ``k``
is the top ``k`` of the union of the parts' top ``k``, so a merge equals a full search.

File format: an ``.npz`` (no pickles) holding a JSON header ``meta`` (format name and
version, database path, version tag and size, scoring, ``top``, scanned chunks) and the
arrays ``query_ids``, ``query_descriptions``, ``query_offsets``, ``query_codes`` (the
queries themselves, so a merge needs no query file), ``hit_offsets``, ``subjects``
(sorted database numbering) and ``scores``, and the ``hist_*`` arrays of each query's score
histogram (:meth:`~swgpu_core.score_stats.ScoreHistograms.to_arrays`), which merge by adding. Merging refuses lists from another database
version or scoring, overlapping chunks, and, unless asked, an incomplete set of chunks.
"""

from __future__ import annotations

import json
import os
import zipfile
from dataclasses import dataclass

import numpy as np

from .alphabet import PROTEIN
from .atomic import atomic_output
from .database import Database
from .errors import InputError
from .fasta import EncodedSequence
from .score_stats import ScoreHistograms
from .scoring import Scoring
from .search import QueryHits, SearchResult, select_top
from .seed import SEARCH_MODES

FORMAT = "swgpu-hits"
FORMAT_VERSION = 1


@dataclass
class HitList:
    """A loaded hit list: where it came from and each query's hits (best first)."""

    path: str
    meta: dict
    hits: list[QueryHits]
    score_stats: ScoreHistograms | None = None  # per-query score histograms, for fitted statistics

    @property
    def chunks(self) -> list[int]:
        return list(self.meta["chunks"])

    @property
    def top(self) -> int:
        return int(self.meta["top"])

    @property
    def mode(self) -> str:
        """``"exact"`` or ``"fast"`` (lists saved before the fast mode existed are exact)."""
        return str(self.meta.get("mode", "exact"))


def _scoring_meta(scoring: Scoring) -> dict:
    return {"matrix": scoring.matrix_name, "gap_open": scoring.gap_open, "gap_extend": scoring.gap_extend}


def save_hits(path: str | os.PathLike, result: SearchResult, top: int, chunks: list[int]) -> None:
    """Write ``result`` (a search over ``chunks`` keeping ``top`` hits per query)."""
    db = result.db
    meta = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "database": {
            "path": str(db.path.resolve()),
            "version_tag": db.version_tag,
            "n_sequences": db.n_sequences,
            "n_chunks": len(db.chunks),
            "chunk_residues": int(db.manifest["chunk_residues"]),
        },
        "scoring": _scoring_meta(result.scoring),
        "top": int(top),
        "chunks": sorted(int(c) for c in chunks),
        "backend": result.backend,
        "mode": result.mode,
        "seconds": result.seconds,  # scan time and cells, for the report's GCUPS
        "cells": result.cells,
    }
    if result.seed is not None:
        meta["seed"] = result.seed.to_json()
    queries = [qh.query for qh in result.hits]
    lengths = np.array([len(q) for q in queries], dtype=np.int64)
    nhits = np.array([len(qh) for qh in result.hits], dtype=np.int64)
    arrays = {
        "meta": np.array(json.dumps(meta)),
        "query_ids": np.array([q.id for q in queries], dtype=str),
        "query_descriptions": np.array([q.description for q in queries], dtype=str),
        "query_offsets": np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
        "query_codes": np.concatenate([q.codes for q in queries]).astype(np.uint8) if queries else np.zeros(0, np.uint8),
        "hit_offsets": np.concatenate([[0], np.cumsum(nhits)]).astype(np.int64),
        "subjects": np.concatenate([qh.subjects for qh in result.hits]).astype(np.int64) if queries else np.zeros(0, np.int64),
        "scores": np.concatenate([qh.scores for qh in result.hits]).astype(np.int32) if queries else np.zeros(0, np.int32),
    }
    if result.score_stats is not None:
        arrays.update(result.score_stats.to_arrays())
    with atomic_output(path, "wb") as fh:
        np.savez(fh, **arrays)


def load_hits(path: str | os.PathLike) -> HitList:
    """Read a hit list written by :func:`save_hits`; one-line errors for anything else."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise InputError(f"{path}: no such hit list")
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            if not isinstance(meta, dict) or meta.get("format") != FORMAT:
                raise InputError(f"{path}: not a swgpu hit list")
            if meta.get("format_version") != FORMAT_VERSION:
                raise InputError(f"{path}: hit list format version {meta.get('format_version')}, this swgpu reads version {FORMAT_VERSION}")
            arrays = {k: data[k] for k in data.files if k != "meta"}
    except InputError:
        raise
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as exc:
        raise InputError(f"{path}: not a readable swgpu hit list ({exc})") from None
    _check_hit_list(path, meta, arrays)
    qoff, hoff = arrays["query_offsets"], arrays["hit_offsets"]
    hits = []
    for i, (qid, desc) in enumerate(zip(arrays["query_ids"].tolist(), arrays["query_descriptions"].tolist())):
        query = EncodedSequence(qid, desc, arrays["query_codes"][qoff[i] : qoff[i + 1]])
        hits.append(QueryHits(query, arrays["subjects"][hoff[i] : hoff[i + 1]], arrays["scores"][hoff[i] : hoff[i + 1]]))
    return HitList(path, meta, hits, ScoreHistograms.from_arrays(arrays))


_ARRAY_KINDS = {
    "query_ids": "U", "query_descriptions": "U", "query_offsets": "i", "query_codes": "u",
    "hit_offsets": "i", "subjects": "i", "scores": "i",
}  # fmt: skip


def _check_hit_list(path: str, meta: dict, arrays: dict[str, np.ndarray]) -> None:
    """Everything a merge or an alignment will index, checked once: a damaged or hand-made
    list is refused here with its file and key named, never merged into a wrong result."""

    def bad(what: str) -> InputError:
        return InputError(f"{path}: damaged hit list ({what})")

    for key, kind in _ARRAY_KINDS.items():
        if key not in arrays:
            raise bad(f"no array {key!r}")
        if arrays[key].dtype.kind != kind or arrays[key].ndim != 1:
            raise bad(f"array {key!r} is {arrays[key].dtype}{arrays[key].shape}")
    db, scoring = meta.get("database"), meta.get("scoring")
    if (
        not isinstance(db, dict)
        or not all(type(db.get(k)) is int for k in ("n_sequences", "n_chunks", "chunk_residues"))
        or not all(isinstance(db.get(k), str) for k in ("path", "version_tag"))
    ):
        raise bad("meta key 'database' needs path, version_tag, n_sequences, n_chunks, chunk_residues")
    if (
        not isinstance(scoring, dict)
        or not isinstance(scoring.get("matrix"), str)
        or not all(type(scoring.get(k)) is int for k in ("gap_open", "gap_extend"))
    ):
        raise bad("meta key 'scoring' needs matrix, gap_open, gap_extend")
    if meta.get("mode", "exact") not in SEARCH_MODES:
        raise bad(f"meta key 'mode' is {meta.get('mode')!r}")
    seed = meta.get("seed", {})
    if not isinstance(seed, dict) or (meta.get("mode") == "fast" and not isinstance(seed.get("params"), dict)):
        raise bad("meta key 'seed' needs the fast mode's params")
    top, chunks = meta.get("top"), meta.get("chunks")
    if type(top) is not int or top < 1:
        raise bad(f"meta key 'top' is {top!r}")
    if not isinstance(chunks, list) or not all(type(c) is int for c in chunks) or len(set(chunks)) != len(chunks):
        raise bad("meta key 'chunks' is not a list of distinct chunk indices")
    if any(not 0 <= c < db["n_chunks"] for c in chunks):
        raise bad(f"chunk {max(chunks)} of {db['n_chunks']}")
    nq = arrays["query_ids"].size
    qoff, hoff, subjects = arrays["query_offsets"], arrays["hit_offsets"], arrays["subjects"]
    if arrays["query_descriptions"].size != nq:
        raise bad(f"{arrays['query_descriptions'].size} query descriptions for {nq} queries")
    for key, offsets, total in (("query_offsets", qoff, arrays["query_codes"].size), ("hit_offsets", hoff, subjects.size)):
        if offsets.size != nq + 1 or offsets[0] != 0 or offsets[-1] != total or np.any(np.diff(offsets) < 0):
            raise bad(f"array {key!r} does not run upwards from 0 to {total} over {nq} queries")
    if np.any(np.diff(qoff) < 1):
        raise bad("a query has no residues")
    if np.any(np.diff(hoff) > top):
        raise bad(f"a query has more hits than 'top' {top}")
    if arrays["scores"].size != subjects.size:
        raise bad(f"{arrays['scores'].size} scores for {subjects.size} subjects")
    if subjects.size and (subjects.min() < 0 or subjects.max() >= db["n_sequences"]):
        raise bad(
            f"subject {int(subjects.max() if subjects.max() >= db['n_sequences'] else subjects.min())} outside the database's {db['n_sequences']} sequences"
        )
    if arrays["query_codes"].size and int(arrays["query_codes"].max()) >= PROTEIN.size:
        raise bad(f"query residue code {int(arrays['query_codes'].max())} outside the protein alphabet")


def merge_hits(lists: list[HitList], db: Database, top: int | None = None, *, partial: bool = False) -> list[QueryHits]:
    """The global top ``top`` per query over hit lists of disjoint chunks of ``db``."""
    if not lists:
        raise InputError("no hit lists to merge")
    first = lists[0]
    for hl in lists:
        dbm = hl.meta["database"]
        layout = (dbm["version_tag"], dbm["n_sequences"], dbm["n_chunks"], dbm["chunk_residues"])
        if layout != (db.version_tag, db.n_sequences, len(db.chunks), int(db.manifest["chunk_residues"])):
            raise InputError(
                f"{hl.path}: searched database version {dbm['version_tag']} in {dbm['n_chunks']} chunks ({dbm['path']}), "
                f"not {db.path} version {db.version_tag} in {len(db.chunks)} chunks"
            )
        if (hl.mode, hl.meta.get("seed", {}).get("params")) != (first.mode, first.meta.get("seed", {}).get("params")):
            raise InputError(f"{hl.path}: searched in {_mode(hl)}, {first.path} in {_mode(first)}: merge lists of one search mode")
        if hl.meta["scoring"] != first.meta["scoring"]:
            raise InputError(
                f"{hl.path}: scoring {_describe(hl.meta['scoring'])} differs from {first.path}: {_describe(first.meta['scoring'])}"
            )
        if [qh.query.id for qh in hl.hits] != [qh.query.id for qh in first.hits] or not all(
            np.array_equal(a.query.codes, b.query.codes) for a, b in zip(hl.hits, first.hits)
        ):
            raise InputError(f"{hl.path}: its queries differ from those of {first.path}")
    owner: dict[int, str] = {}
    for hl in lists:
        for c in hl.chunks:
            if c in owner:
                raise InputError(f"{hl.path}: chunk {c} was also searched in {owner[c]}")
            owner[c] = hl.path
    missing = sorted(set(range(len(db.chunks))) - set(owner))
    if missing and not partial:
        raise InputError(
            f"hit lists cover {len(owner)} of {len(db.chunks)} chunks of {db.path}; missing chunks "
            f"{','.join(map(str, missing))} (pass --partial to merge anyway)"
        )
    saved_top = min(hl.top for hl in lists)
    if top is None:
        top = saved_top
    elif top > saved_top:
        raise InputError(f"--top {top} exceeds the {saved_top} hits per query that the hit lists kept")
    merged = []
    for i, qh in enumerate(first.hits):
        subjects = np.concatenate([hl.hits[i].subjects for hl in lists])
        scores = np.concatenate([hl.hits[i].scores for hl in lists])
        subjects, scores = select_top(db, subjects, scores, top)
        merged.append(QueryHits(qh.query, subjects, scores))
    return merged


def merge_score_stats(lists: list[HitList]) -> ScoreHistograms | None:
    """The sum of the lists' score histograms (checked like :func:`merge_hits`); None if one has none."""
    if not lists or any(hl.score_stats is None for hl in lists):
        return None
    total = ScoreHistograms(lists[0].score_stats.caps, lists[0].score_stats.rows)
    for hl in lists:
        total.merge(hl.score_stats)
    return total


def scoring_of(hl: HitList) -> Scoring:
    """The :class:`Scoring` a hit list was searched with."""
    s = hl.meta["scoring"]
    return Scoring.protein(s["matrix"], s["gap_open"], s["gap_extend"])


def _mode(hl: HitList) -> str:
    params = hl.meta.get("seed", {}).get("params")
    return f"{hl.mode} mode" + (f" ({', '.join(f'{k} {v}' for k, v in params.items())})" if params else "")


def _describe(scoring: dict) -> str:
    return f"{scoring['matrix']} gap {scoring['gap_open']}/{scoring['gap_extend']}"
