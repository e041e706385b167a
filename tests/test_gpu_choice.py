"""Which GPUs a fast search takes where none are named (:mod:`swgpu_core.gpu_choice`), and that
api.search follows it; without a GPU."""

from __future__ import annotations

from swgpu_core import gpu_choice
from swgpu_core.gpu_choice import FAST_CELLS_PER_GPU, FAST_MAX_GPUS, fast_device_count


def test_fast_device_count_grows_with_the_work():
    assert fast_device_count(0, 4) == 1  # always one
    assert fast_device_count(FAST_CELLS_PER_GPU - 1, 4) == 1
    assert fast_device_count(4.9e13, 4) == 1  # bench200M x 500 queries: one GPU was fastest (docstring)
    assert fast_device_count(2.0e14, 4) == 2  # four times the queries: two GPUs gained
    assert fast_device_count(2 * FAST_CELLS_PER_GPU, 4) == 2
    assert FAST_MAX_GPUS == 2 and fast_device_count(3.9e14, 4) == 2  # eight times: four GPUs' wall was longer than two's
    assert fast_device_count(100 * FAST_CELLS_PER_GPU, 1) == 1  # never more than are visible


def test_a_fast_search_asks_for_the_gpus_its_work_pays_for(bundled_db, resources, monkeypatch):
    """api.search's fast mode takes fast_device_count of the visible GPUs where none are named,
    every named one otherwise, and the exact mode every visible GPU (an engine of four GPUs
    that records what it is asked for and computes on the CPU)."""
    from swgpu_core import api
    from swgpu_core.engine import CpuEngine, CudaEngine, EngineChoice

    asked: list[tuple[str, object]] = []

    class FourGpus(CudaEngine):
        def scanner(self, scoring, *, threads=0, devices=None, threshold=None, memory_budget=None):
            asked.append(("scanner", self.devices(devices)))
            return CpuEngine().scanner(scoring, threads=1)

        def seeder(self, scoring, queries, params, *, threads=0, devices=None):
            asked.append(("seeder", self.devices(devices)))
            return CpuEngine().seeder(scoring, queries, params, threads=1)

    engine = FourGpus(EngineChoice("cuda", None, 4))
    queries = api.read_queries(resources / "queries.fasta", bundled_db.alphabet)[:2]
    cells = sum(len(q) for q in queries) * bundled_db.n_residues

    def run(**kwargs) -> list:
        asked.clear()
        api.search(bundled_db, queries, backend=engine, top=5, **kwargs)
        return asked[:]

    assert run(mode="fast") == [("scanner", [0]), ("seeder", [0])]  # a small search: one GPU
    monkeypatch.setattr(gpu_choice, "FAST_CELLS_PER_GPU", cells / 3)
    assert run(mode="fast") == [("scanner", [0, 1]), ("seeder", [0, 1])]  # at most FAST_MAX_GPUS
    monkeypatch.setattr(gpu_choice, "FAST_MAX_GPUS", 4)
    assert run(mode="fast") == [("scanner", [0, 1, 2]), ("seeder", [0, 1, 2])]
    assert run(mode="fast", devices=[1, 3]) == [("scanner", [1, 3]), ("seeder", [1, 3])]
    assert run(mode="exact") == [("scanner", [0, 1, 2, 3])]
