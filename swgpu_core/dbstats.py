"""Length characterisation of a database: statistics, a log-binned histogram, long sequences.

The long tail of the length distribution decides how a GPU search is planned: subjects
up to a threshold go to the many-pairs-per-warp kernel, longer ones to the one-pair-per-
block kernel. :func:`default_threshold` asks the planner (:mod:`swgpu_core.plan`) for it
with its built-in device model, so that statistics need no GPU; the histogram marks what
lies above it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from .atomic import atomic_output
from .database import Database, length_histogram

#: Query length the statistics plan for when no query is given.
PLAN_QUERY_LENGTH = 1000


def default_threshold(db: Database, query_length: int = PLAN_QUERY_LENGTH) -> int:
    """The planner's threshold for ``db`` and a query of ``query_length`` (built-in H100
    model: a search on a calibrated GPU may choose a nearby value)."""
    from .plan import LengthProfile, choose_threshold

    return choose_threshold(LengthProfile(db.lengths), query_length).threshold


@dataclass(frozen=True)
class LengthStats:
    """Summary of a database's sequence lengths and of the part above the threshold."""

    path: str
    n_sequences: int
    n_residues: int
    min: int
    mean: float
    median: float
    max: int
    n_chunks: int
    threshold: int
    n_long: int
    long_residues: int

    def lines(self) -> list[str]:
        """Human-readable ``name: value`` lines."""
        share = self.long_residues / self.n_residues if self.n_residues else 0.0
        return [
            f"database:        {self.path}",
            f"sequences:       {self.n_sequences:,}",
            f"residues:        {self.n_residues:,}",
            f"length min:      {self.min:,}",
            f"length mean:     {self.mean:,.1f}",
            f"length median:   {self.median:,.1f}",
            f"length max:      {self.max:,}",
            f"chunks:          {self.n_chunks}",
            f"long threshold:  {self.threshold:,}",
            f"long sequences:  {self.n_long:,} ({self.long_residues:,} residues, {share:.2%} of all)",
        ]


@dataclass(frozen=True)
class LengthTable:
    """Histogram over log-spaced length bins ``[edges[i], edges[i+1])``."""

    edges: np.ndarray
    counts: np.ndarray
    residues: np.ndarray
    long_counts: np.ndarray  # sequences of the bin longer than the threshold


def length_stats(db: Database, threshold: int) -> LengthStats:
    lengths = np.asarray(db.lengths)
    long = lengths > threshold
    s = db.manifest["length_stats"]
    return LengthStats(
        str(db.path), db.n_sequences, db.n_residues, s["min"], s["mean"], s["median"], s["max"],
        len(db.chunks), threshold, int(long.sum()), int(lengths[long].sum(dtype=np.int64)),
    )  # fmt: skip


def length_table(db: Database, threshold: int, bins: int = 60) -> LengthTable:
    lengths = np.asarray(db.lengths, dtype=np.int64)
    edges, counts = length_histogram(lengths, bins)
    residues, _ = np.histogram(lengths, bins=edges, weights=lengths)
    long_counts, _ = np.histogram(lengths[lengths > threshold], bins=edges)
    return LengthTable(edges, counts, residues.astype(np.int64), long_counts)


def write_tsv(path: str | os.PathLike, table: LengthTable, threshold: int) -> None:
    """One row per bin: bounds, sequences, residues, and how many exceed the threshold."""
    with atomic_output(path) as fh:
        fh.write(f"# long-sequence threshold: {threshold}\n")
        fh.write("length_from\tlength_to\tsequences\tresidues\tlong_sequences\n")
        for i, count in enumerate(table.counts):
            lo, hi = int(table.edges[i]), int(table.edges[i + 1]) - 1
            fh.write(f"{lo}\t{hi}\t{int(count)}\t{int(table.residues[i])}\t{int(table.long_counts[i])}\n")


def plot_histogram(path: str | os.PathLike, table: LengthTable, threshold: int, title: str) -> None:
    """A PNG of the histogram on a log length axis; sequences over the threshold in red."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    left, widths = table.edges[:-1], np.diff(table.edges)
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    ax.bar(left, table.counts - table.long_counts, width=widths, align="edge", color="#4477aa", label="sequences")
    ax.bar(left, table.long_counts, width=widths, bottom=table.counts - table.long_counts, align="edge",
           color="#cc3311", label=f"longer than {threshold}")  # fmt: skip
    ax.axvline(threshold + 0.5, color="#cc3311", linestyle="--", linewidth=1)
    ax.set_xscale("log")
    ax.set_xlabel("sequence length (residues, log scale)")
    ax.set_ylabel("sequences")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    with atomic_output(path, "wb") as fh:
        fig.savefig(fh, format="png")
    plt.close(fig)
