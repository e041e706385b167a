"""The CUDA engine equals the CPU engine on the bundled data (``resources/``): every score of
every subject, the top hits, and the alignments of those hits, through the engine API.

Marked ``gpu``; needs no shared data, so with ``SWGPU_REQUIRE_GPU=1`` on the device it
cannot pass by skipping.
"""

from __future__ import annotations

import numpy as np
import pytest

from swgpu_core.align import align_query_hits
from swgpu_core.engine import get_engine
from swgpu_core.fasta import read_sequences
from swgpu_core.scoring import Scoring
from swgpu_core.search import search

pytestmark = pytest.mark.gpu

TOP = 50


@pytest.fixture(scope="module")
def engines():
    cuda = get_engine("cuda")
    assert cuda.kind == "cuda" and cuda.choice.devices >= 1
    return get_engine("cpu"), cuda


@pytest.fixture(scope="module")
def queries(bundled_db, resources):
    found = read_sequences(resources / "queries.fasta", bundled_db.alphabet)
    assert len(found) >= 5
    return found


def _alignment_key(a):
    return (a.subject_index, a.rank, a.score, a.qstart, a.qend, a.sstart, a.send, a.cigar, a.evalue, a.bitscore)


@pytest.mark.parametrize("scoring", [Scoring.protein(), Scoring.protein("BLOSUM45", 14, 2)], ids=["blosum62", "blosum45"])
def test_every_score_equals_the_cpu(bundled_db, queries, engines, scoring):
    """Each chunk scanned for all its subjects (top = chunk size): every score, not just the best."""
    cpu, cuda = (e.scanner(scoring) for e in engines)
    for chunk in bundled_db.chunks:
        got = cuda.scan_chunk(bundled_db, chunk, queries, chunk.n_sequences)
        want = cpu.scan_chunk(bundled_db, chunk, queries, chunk.n_sequences)
        for q, (gi, gs), (wi, ws) in zip(queries, got, want):
            assert gi.size == ws.size == chunk.n_sequences, q.id
            g, w = np.empty(chunk.n_sequences, np.int32), np.empty(chunk.n_sequences, np.int32)
            g[gi - chunk.first], w[wi - chunk.first] = gs, ws
            bad = np.flatnonzero(g != w)
            assert bad.size == 0, (
                f"{q.id}: {bad.size} scores differ in chunk {chunk.index}, e.g. subject {chunk.first + bad[0]}: gpu {g[bad[0]]} cpu {w[bad[0]]}"
            )


def test_hits_and_alignments_equal_the_cpu(bundled_db, queries, engines):
    scoring = Scoring.protein()
    cpu, cuda = engines
    a = search(bundled_db, queries, scoring, cuda.scanner(scoring), top=TOP, show_progress=False)
    b = search(bundled_db, queries, scoring, cpu.scanner(scoring), top=TOP, show_progress=False)
    assert a.backend == "cuda" and b.backend == "cpu"
    for x, y in zip(a.hits, b.hits):
        assert np.array_equal(x.subjects, y.subjects) and np.array_equal(x.scores, y.scores), x.query.id
    got = align_query_hits(bundled_db, a.hits, scoring, backend=cuda)
    want = align_query_hits(bundled_db, b.hits, scoring, backend=cpu)
    assert got.backend == "cuda" and want.backend == "cpu"
    assert got.count == want.count == sum(len(h) for h in b.hits) > 100
    for x, y in zip(got.alignments, want.alignments):
        assert [_alignment_key(u) for u in x] == [_alignment_key(v) for v in y]
    pairs = [(qh.query.codes, np.asarray(bundled_db.codes(int(s)))) for qh in b.hits for s in qh.subjects[:5]]
    p_gpu = cuda.align_pairs([p[0] for p in pairs], [p[1] for p in pairs], scoring)
    p_cpu = cpu.align_pairs([p[0] for p in pairs], [p[1] for p in pairs], scoring)
    key = lambda t: None if t is None else (t.score, t.qstart, t.qend, t.sstart, t.send, t.ops.tobytes())  # noqa: E731
    assert [key(t) for t in p_gpu] == [key(t) for t in p_cpu]


def test_device_geometry_comes_from_the_device(engines):
    import cupy as cp

    from swgpu_core.gpu.device import geometry

    g = geometry(0)
    assert g.sms == cp.cuda.Device(0).attributes["MultiProcessorCount"] > 0
    assert g.threads_per_sm == cp.cuda.Device(0).attributes["MaxThreadsPerMultiProcessor"] > 0
    assert g.memory >= cp.cuda.runtime.memGetInfo()[0] > 0
    assert g.name == cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    model = engines[1].device_model()
    assert model.geometry == g
