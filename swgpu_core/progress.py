"""Progress bars for long work (tqdm), written to stderr so output files stay clean."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tqdm import tqdm


def load() -> None:
    """Import tqdm now, where the caller would otherwise wait (a search, for its GPU's set-up).

    Its first import reads package metadata (25-40 ms). A search made its bar only once its
    GPU was ready, so the import lay between the GPU's set-up and the first scan
    (bench/RESULTS.md, twenty-second and twenty-third sessions).
    """
    import tqdm  # noqa: F401


def progress_bar(**kwargs) -> tqdm:
    """A tqdm bar on stderr that redraws at most twice a second."""
    from tqdm import tqdm  # here, not at start-up: tqdm's import reads package metadata (~40 ms)

    kwargs.setdefault("file", sys.stderr)
    kwargs.setdefault("dynamic_ncols", True)
    kwargs.setdefault("mininterval", 0.5)
    return tqdm(**kwargs)
