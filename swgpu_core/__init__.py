"""swgpu: exact Smith-Waterman database search on NVIDIA GPUs.

The data path reads top to bottom: FASTA (:mod:`.fasta`) -> database (:mod:`.database`)
-> plan (:mod:`.plan`) -> device search (:mod:`.backends`) -> hits (:mod:`.search`)
-> alignments -> reports (:mod:`.outfmt`).
"""

__version__ = "0.1.0"

from ._numba_cache import configure as _configure_numba_cache  # noqa: E402

_configure_numba_cache()  # before any module imports numba: a read-only install must not crash
