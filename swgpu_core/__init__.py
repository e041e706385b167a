"""swgpu: exact Smith-Waterman database search on GPUs and CPUs.

``import swgpu_core as sw`` gives the public API of :mod:`swgpu_core.api` (build or open
a database, scoring, search, E-values, align, pairs, align-long, the result types and
:func:`write_results`); ``docs/api.md`` shows a whole run. The names load on first use,
so importing the package stays cheap (no numba, CuPy, pysam or matplotlib until a
function needs them). ``docs/architecture.md`` draws the data path.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING

__version__ = "0.1.0"

from ._numba_cache import configure as _configure_numba_cache  # noqa: E402

_configure_numba_cache()  # before any module imports numba: a read-only install must not crash

#: The public names, all from :mod:`swgpu_core.api`.
__all__ = [
    "DEFAULT_CHUNK_RESIDUES", "DEFAULT_MAX_EVALUE", "DEFAULT_OUTFMT", "DNA", "FIELDS", "FORMATS", "NO_STATISTICS", "PROTEIN", "SEARCH_MODES",
    "STANDARD_FIELDS", "STATS_MODES", "AlignedHits", "Alignment", "Alphabet", "Database", "EncodedSequence", "LongResult", "LongScan", "PairSet", "QueryHits",
    "Results", "Scoring", "SearchResult", "SeedParams", "Statistics", "align", "align_long", "align_pairs", "build_database", "choose_format",
    "fasta_pairs", "filter_hits", "hit_significance", "open_database", "parse_outfmt", "read_queries", "read_sequence", "saved_statistics",
    "scan_long", "search", "select_hits", "statistics", "table_pairs", "trace_long", "write_results",
]  # fmt: skip

if TYPE_CHECKING:  # for type checkers; at run time __getattr__ loads them
    from .api import (
        DEFAULT_CHUNK_RESIDUES,
        DEFAULT_MAX_EVALUE,
        DEFAULT_OUTFMT,
        DNA,
        FIELDS,
        FORMATS,
        NO_STATISTICS,
        PROTEIN,
        SEARCH_MODES,
        STANDARD_FIELDS,
        STATS_MODES,
        AlignedHits,
        Alignment,
        Alphabet,
        Database,
        EncodedSequence,
        LongResult,
        LongScan,
        PairSet,
        QueryHits,
        Results,
        Scoring,
        SearchResult,
        SeedParams,
        Statistics,
        align,
        align_long,
        align_pairs,
        build_database,
        choose_format,
        fasta_pairs,
        filter_hits,
        hit_significance,
        open_database,
        parse_outfmt,
        read_queries,
        read_sequence,
        saved_statistics,
        scan_long,
        search,
        select_hits,
        statistics,
        table_pairs,
        trace_long,
        write_results,
    )  # fmt: skip


def __getattr__(name: str) -> object:
    """Load a public name from :mod:`swgpu_core.api` when it is first used."""
    if name in __all__:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])


def _api_function(name: str) -> property:
    """``sw.search`` and ``sw.align`` are API functions although submodules share their names.

    Importing a submodule sets it as an attribute of its package; a property of the
    package's class wins over that attribute, so the API name always means the function
    (the submodule stays in ``sys.modules``: ``from swgpu_core.search import ...`` works).
    """

    def get(module: types.ModuleType) -> object:
        from . import api

        return getattr(api, name)

    def put(module: types.ModuleType, value: object) -> None:
        module.__dict__[f"_{name}_module"] = value

    return property(get, put)


class _Package(types.ModuleType):
    search = _api_function("search")
    align = _api_function("align")


sys.modules[__name__].__class__ = _Package
