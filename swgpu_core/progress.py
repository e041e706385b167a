"""Progress bars for long work (tqdm), written to stderr so output files stay clean."""

from __future__ import annotations

import sys

from tqdm import tqdm


def progress_bar(**kwargs) -> tqdm:
    """A tqdm bar on stderr that redraws at most twice a second."""
    kwargs.setdefault("file", sys.stderr)
    kwargs.setdefault("dynamic_ncols", True)
    kwargs.setdefault("mininterval", 0.5)
    return tqdm(**kwargs)
