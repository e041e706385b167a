"""Which GPUs a search or align-long takes where none are named (:mod:`swgpu_core.gpu_choice`),
and that api.search and api.align_long follow it; without a GPU."""

from __future__ import annotations

import gzip

from swgpu_core import gpu_choice
from swgpu_core.gpu_choice import (
    EXACT_GPU_COST_CELLS,
    FAST_CELLS_PER_GPU,
    FAST_MAX_GPUS,
    LONG_GPU_COST_CELLS,
    cells_bound,
    exact_device_count,
    fast_device_count,
    long_cells_bound,
    long_device_count,
)


def test_fast_device_count_grows_with_the_work():
    assert fast_device_count(0, 4) == 1  # always one
    assert fast_device_count(FAST_CELLS_PER_GPU - 1, 4) == 1
    assert fast_device_count(4.9e13, 4) == 1  # bench200M x 500 queries: one GPU was fastest (docstring)
    assert fast_device_count(2.0e14, 4) == 2  # four times the queries: two GPUs gained
    assert fast_device_count(2 * FAST_CELLS_PER_GPU, 4) == 2
    assert FAST_MAX_GPUS == 2 and fast_device_count(3.9e14, 4) == 2  # eight times: four GPUs' wall was longer than two's
    assert fast_device_count(100 * FAST_CELLS_PER_GPU, 1) == 1  # never more than are visible


def test_exact_device_count_takes_a_gpu_while_it_saves_more_than_it_costs():
    c = EXACT_GPU_COST_CELLS
    assert exact_device_count(0, 8) == 1
    assert exact_device_count(2 * c - 1, 8) == 1 and exact_device_count(2 * c, 8) == 2  # k = 2 from k (k - 1) c
    assert exact_device_count(6 * c - 1, 8) == 2 and exact_device_count(6 * c, 8) == 3
    assert exact_device_count(3.8e11, 4) == 1  # uniprot20k x 20: one GPU was the fastest (docstring)
    assert exact_device_count(1.9e12, 4) == 1  # bench200M x 20 of the 500 queries: one was faster than two
    assert exact_device_count(1.36e13, 4) == 3  # x 125 of them: three were the fastest
    assert exact_device_count(4.9e13, 4) == 4 and exact_device_count(4.9e13, 16) == 6  # bench200M x 500
    assert exact_device_count(1e20, 3) == 3  # never more than are visible
    for cells in (0, 1e12, 5e12, 3e13, 1e14):  # the k-th GPU's saving, cells / (k (k - 1)), against its cost
        k = exact_device_count(cells, 64)
        assert k == 1 or cells / (k * (k - 1)) >= c
        assert cells / ((k + 1) * k) < c


def test_the_bound_from_file_sizes_is_at_least_the_work(tmp_path, resources, bundled_db):
    """cells_bound reads only sizes, before any import: never less than the search's cells (so
    the GPUs shown hold those it takes), None where the file cannot tell."""
    from swgpu_core import api

    query = resources / "queries.fasta"
    cells = sum(len(q) for q in api.read_queries(query, bundled_db.alphabet)) * bundled_db.n_residues
    bound = cells_bound(str(bundled_db.path), str(query))
    assert bound is not None and cells <= bound <= 2 * cells
    packed = tmp_path / "q.fasta.gz"
    packed.write_bytes(gzip.compress(query.read_bytes()))
    assert cells_bound(str(bundled_db.path), str(packed)) is None  # compressed: its size says little
    assert cells_bound(str(bundled_db.path), str(tmp_path / "missing.fasta")) is None
    assert cells_bound(str(tmp_path), str(query)) is None  # not a database
    assert cells_bound(str(bundled_db.path), "/dev/stdin") is None


def test_a_fast_search_asks_for_the_gpus_its_work_pays_for(bundled_db, resources, monkeypatch):
    """api.search takes device_count of the visible GPUs where none are named (in the fast mode
    fast_device_count, in the exact mode exact_device_count), every named one otherwise (an
    engine of four GPUs that records what it is asked for and computes on the CPU)."""
    from swgpu_core import api
    from swgpu_core.engine import CpuEngine, CudaEngine, EngineChoice

    asked: list[tuple[str, object]] = []

    class FourGpus(CudaEngine):
        def scanner(self, scoring, *, threads=0, devices=None, threshold=None, memory_budget=None):
            asked.append(("scanner", self.devices(devices)))
            backend = CpuEngine().scanner(scoring, threads=1)
            backend.device_ids = self.devices(devices)  # as CudaBackend's: the result counts them
            return backend

        def seeder(self, scoring, queries, params, *, threads=0, devices=None):
            asked.append(("seeder", self.devices(devices)))
            return CpuEngine().seeder(scoring, queries, params, threads=1)

    engine = FourGpus(EngineChoice("cuda", None, 4))
    queries = api.read_queries(resources / "queries.fasta", bundled_db.alphabet)[:2]
    cells = sum(len(q) for q in queries) * bundled_db.n_residues

    def run(**kwargs) -> list:
        asked.clear()
        result = api.search(bundled_db, queries, backend=engine, top=5, **kwargs)
        assert result.gpus == len(asked[0][1])  # what `swgpu search` reports: "on cuda (3 GPUs)"
        return asked[:]

    assert run(mode="fast") == [("scanner", [0]), ("seeder", [0])]  # a small search: one GPU
    monkeypatch.setattr(gpu_choice, "FAST_CELLS_PER_GPU", cells / 3)
    assert run(mode="fast") == [("scanner", [0, 1]), ("seeder", [0, 1])]  # at most FAST_MAX_GPUS
    monkeypatch.setattr(gpu_choice, "FAST_MAX_GPUS", 4)
    assert run(mode="fast") == [("scanner", [0, 1, 2]), ("seeder", [0, 1, 2])]
    assert run(mode="fast", devices=[1, 3]) == [("scanner", [1, 3]), ("seeder", [1, 3])]
    assert run(mode="exact") == [("scanner", [0])]  # a small search: one GPU
    monkeypatch.setattr(gpu_choice, "EXACT_GPU_COST_CELLS", cells / 6)  # three GPUs pay: 3 * 2 * cells / 6
    assert run(mode="exact") == [("scanner", [0, 1, 2])]
    monkeypatch.setattr(gpu_choice, "EXACT_GPU_COST_CELLS", cells / 100)
    assert run(mode="exact") == [("scanner", [0, 1, 2, 3])]  # no more than are visible
    assert run(mode="exact", devices=[2]) == [("scanner", [2])]


def test_a_search_traces_its_hits_on_a_gpu_it_searched_with(bundled_db, resources, tmp_path, monkeypatch, swgpu):
    """``swgpu search --devices 1,3`` traces on GPU 1, not on GPU 0, which it was not given:
    an engine of four GPUs that records the GPU its traceback is given and computes on the CPU."""
    from swgpu_core import engine
    from swgpu_core.engine import CpuEngine, CudaEngine, EngineChoice

    traced: list[int | None] = []

    class FourGpus(CudaEngine):
        def scanner(self, scoring, *, threads=0, devices=None, threshold=None, memory_budget=None):
            backend = CpuEngine().scanner(scoring, threads=1)
            backend.device_ids = self.devices(devices)  # as CudaBackend's: the result names them
            return backend

        def traceback(self, tasks, scoring, *, threads=0, device=None):
            traced.append(device)
            return CpuEngine().traceback(tasks, scoring, threads=1)

    fake = FourGpus(EngineChoice("cuda", None, 4))
    monkeypatch.setattr(engine, "get_engine", lambda spec="auto": fake)
    args = ["--db", bundled_db.path, "--query", resources / "queries.fasta", "--backend", "cuda", "--top", "5", "--quiet"]
    for devices, want in (("1,3", 1), ("2", 2)):
        rc, _, err = swgpu("search", *args, "--devices", devices, "--out", tmp_path / "a.tsv", "--outfmt", "6 qseqid sseqid pident")
        assert rc == 0, err
        assert traced.pop() == want


def test_long_device_count_takes_a_gpu_while_it_saves_more_than_it_costs():
    c = LONG_GPU_COST_CELLS
    assert long_device_count(0, 8) == 1
    assert long_device_count(2 * c - 1, 8) == 1 and long_device_count(2 * c, 8) == 2
    assert long_device_count(1e11, 4) == 1  # a 10^4 query against 10^7 residues: one GPU
    assert long_device_count(1e12, 4) == 2  # against 10^8: two were the fastest (docstring)
    assert long_device_count(1e13, 16) == 6 and long_device_count(1e13, 2) == 2  # a 10^5 query: every GPU of two


def test_the_long_bound_from_file_sizes_is_at_least_the_work(tmp_path):
    """long_cells_bound reads sizes only: never less than the scan's cells, None where a file cannot tell."""
    from swgpu_core import api
    from swgpu_core.alphabet import DNA

    q, t = tmp_path / "q.fa", tmp_path / "t.fa"
    q.write_text(">q query\n" + "ACGT" * 50 + "\n")
    t.write_text(">t\n" + "\n".join(["ACGTTGCA" * 10] * 30) + "\n")
    cells = len(api.read_sequence(q, DNA)) * len(api.read_sequence(t, DNA))
    bound = long_cells_bound(str(q), str(t))
    assert bound is not None and cells <= bound <= 1.2 * cells
    packed = tmp_path / "t.fa.gz"
    packed.write_bytes(gzip.compress(t.read_bytes()))
    assert long_cells_bound(str(q), str(packed)) is None
    assert long_cells_bound(str(q), str(tmp_path / "missing.fa")) is None


def test_align_long_scans_and_traces_on_the_gpus_its_work_pays_for(monkeypatch):
    """api.align_long takes long_device_count of the visible GPUs where none are named, one
    section per GPU, and traces on the GPUs that scanned; a ``section`` scan takes the first;
    named GPUs are followed (an engine of four GPUs that records what it is asked for and
    computes on the CPU, whose results the choice must not change)."""
    import numpy as np

    from swgpu_core import api
    from swgpu_core.alphabet import DNA
    from swgpu_core.engine import CpuEngine, CudaEngine, EngineChoice
    from swgpu_core.fasta import EncodedSequence
    from swgpu_core.scoring import Scoring

    asked: list[tuple[str, list[int]]] = []

    class FourGpus(CudaEngine):
        def scan_sections(self, query, target, sections, rule, scoring, *, devices=(0,), parts=None):
            asked.append(("scan", list(devices)))
            assert len(sections) <= len(devices)  # one section per GPU
            return CpuEngine().scan_sections(query, target, sections, rule, scoring)

        def trace_end_points(self, query, target, ends, scoring, max_length, *, threads=0, devices=(0,)):
            asked.append(("trace", list(devices)))
            return CpuEngine().trace_end_points(query, target, ends, scoring, max_length, threads=1)

    rng = np.random.default_rng(5)
    q = rng.integers(0, 4, 300).astype(np.uint8)
    t = rng.integers(0, 4, 6000).astype(np.uint8)
    t[2000:2300] = q
    query, target = EncodedSequence("q", "", q), EncodedSequence("t", "", t)
    scoring = Scoring.nucleotide()
    engine = FourGpus(EngineChoice("cuda", None, 4))
    cells = len(q) * len(t)

    def run(**kwargs) -> tuple[list, list]:
        asked.clear()
        result = api.align_long(query, target, scoring, top=3, backend=engine, max_alignment_length=400, **kwargs)
        assert result.scan.devices == asked[0][1][: len(result.scan.sections)]
        return asked[:], [(a.score, a.qstart, a.sstart) for a in result.alignments]

    assert DNA is scoring.alphabet
    got, best = run()
    assert got == [("scan", [0]), ("trace", [0])]  # a small scan: one GPU
    monkeypatch.setattr(gpu_choice, "LONG_GPU_COST_CELLS", cells / 6)  # three GPUs pay: 3 * 2 * cells / 6
    got, same = run()
    assert got == [("scan", [0, 1, 2]), ("trace", [0, 1, 2])] and same == best
    monkeypatch.setattr(gpu_choice, "LONG_GPU_COST_CELLS", cells / 100)
    assert run()[0] == [("scan", [0, 1, 2, 3]), ("trace", [0, 1, 2, 3])]  # no more than are visible
    assert run(devices=[1, 3])[0] == [("scan", [1, 3]), ("trace", [1, 3])]
    asked.clear()
    scan = api.scan_long(query, target, scoring, backend=engine, max_alignment_length=400, section=(1, 3))
    assert asked == [("scan", [0])] and scan.devices == [0]  # one section per process: the first GPU
