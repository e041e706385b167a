"""Choosing the inter/intra-task length threshold from the database's length profile.

Subjects up to the threshold go to the inter-task kernel (a few lanes per pair of
subjects: efficient, but one pair's cells are done by few threads), longer ones to the
intra-task kernel (a block per pair: more parallel per subject, less efficient per cell).
A threshold too low sends many subjects to the slower kernel; too high, and the longest
inter-task subjects finish long after the rest of the GPU is idle.

The model predicts the scan time of one query for a threshold ``T`` from the device's
geometry (:class:`DeviceGeometry`: SMs and threads per SM, read from the device by
:mod:`swgpu_core.gpu.device`) and four device constants (measured by
:mod:`swgpu_core.gpu.calibration`, cached per GPU model; defaults measured on an H100
otherwise):

* ``inter_rate``/``intra_rate``: cells per second of each kernel with the GPU full;
* ``inter_step``/``intra_step``: seconds per row of one group running alone;
* ``inter_step_loaded``/``intra_step_loaded``: the same while the GPU is full of other
  work (a long subject's warp then shares its SM's issue slots, about twice as slow).

The kernels start the longest subjects first, so a long subject of ``W`` row steps
(passes x (length + wavefront fill)) runs beside the bulk at the loaded step and, if it
is not done when the bulk is, finishes alone at the lone step::

    time(T) = max(bulk, tail(W_inter(T)), tail(W_intra(T)))
    bulk    = inter cells(T) / inter_rate + intra cells(T) / intra_rate
    tail(W) = bulk + max(0, W - bulk / step_loaded) * step

Cells include the padding of the query to whole passes of each kernel. The batch
characterisation uses, as the issue asks, the mean and maximum length on each side.

The intra-task block's width is chosen with the threshold. By default it is the narrowest
block (up to 8 warps) that covers the query in one pass, or 8 warps in several passes.
Where the long subjects' critical path binds, a wider block (16 or 32 warps) can take a
long query in fewer passes: fewer row steps, at the cost of more wavefront fill and of
padding the query to the wider pass. That binds where the long subjects have no bulk to
run beside: a streamed batch of only the longest subjects (bench200M at a 1/32 budget:
124 subjects of 31,000-36,000 residues), which a query's scan cannot fill the GPU with.
There, a block that takes a 5,478-residue query in one pass instead of three also needs
no boundary rows, so consecutive queries' scans of the batch run at once.

This module decides only; it never touches a GPU (the caller passes the model), so
``swgpu plan`` and the tests run anywhere. Without a GPU the model is
:data:`H100_DEFAULT`, the documented default of ``swgpu plan``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

import numpy as np

from .kernel_abi import intra_fill_steps

#: kernel pass widths (columns) and lanes; gpu.kernels builds its shapes from these
INTER_COLS_PER_LANE = 16
INTRA_COLS_PER_WARP = 32 * 8
#: intra-task block widths in warps (compiled shapes); blocks wider than INTRA_DEFAULT_WARPS only
#: where the planner predicts them faster (the module's docstring)
INTRA_WARPS = (1, 2, 4, 8, 16, 32)
INTRA_DEFAULT_WARPS = 8


@dataclass(frozen=True)
class DeviceGeometry:
    """What the planner and the kernels' launch shapes need to know about a GPU's size."""

    name: str
    sms: int  # streaming multiprocessors
    threads_per_sm: int  # resident threads per SM at most
    memory: int  # bytes of device memory

    @property
    def busy_threads(self) -> int:
        """Threads that fill the GPU: below this, the inter-task kernel gives a pair more lanes."""
        return self.sms * self.threads_per_sm


#: The H100 SXM (132 SMs of 2,048 threads, 80 GB): the geometry of :data:`H100_DEFAULT`.
H100_GEOMETRY = DeviceGeometry("NVIDIA H100 80GB HBM3", 132, 2048, 80 << 30)


@dataclass(frozen=True)
class DeviceModel:
    """Throughput and latency constants of one GPU model, and the GPU's geometry."""

    name: str
    inter_rate: float  # cells/s, GPU full
    intra_rate: float  # cells/s, GPU full
    inter_step: float  # s per row for a lone inter-task group (16 columns per lane)
    intra_step: float  # s per row for a lone intra-task block (8 columns per lane)
    inter_step_loaded: float  # s per row for an inter-task group beside a full GPU
    intra_step_loaded: float  # s per row for an intra-task block beside a full GPU
    measured: bool = False
    geometry: DeviceGeometry = field(default=H100_GEOMETRY)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> DeviceModel:
        """The inverse of :meth:`to_json`; entries written before the geometry existed get the H100's."""
        data = dict(data)
        geometry = data.pop("geometry", None)
        model = cls(**data)
        return replace(model, geometry=DeviceGeometry(**geometry)) if geometry else model


#: Used when no calibration is available (no GPU here, or not yet measured).
H100_DEFAULT = DeviceModel("H100 defaults (not calibrated)", 3.54e12, 1.58e12, 3.24e-7, 2.53e-7, 4.85e-7, 3.31e-7)


@dataclass(frozen=True)
class Side:
    """One side of the threshold: its subjects and the cells the kernel does for them."""

    sequences: int
    residues: int
    mean_length: float
    max_length: int
    cells: float
    seconds: float


@dataclass(frozen=True)
class Plan:
    threshold: int
    query_length: int
    inter: Side
    intra: Side
    predicted_seconds: float
    bound: str  # what limits the predicted time: "bulk", "inter tail" or "intra tail"
    device: str
    intra_cols: int  # the intra-task block's pass width (columns; INTRA_COLS_PER_WARP per warp)

    @property
    def intra_multipass(self) -> bool:
        """Whether its intra-task scan takes several passes, so writes boundary rows."""
        return self.intra.sequences > 0 and self.query_length > self.intra_cols

    @property
    def predicted_gcups(self) -> float:
        return self.query_length * (self.inter.residues + self.intra.residues) / self.predicted_seconds / 1e9

    def describe(self) -> str:
        total_s = self.inter.sequences + self.intra.sequences
        total_r = self.inter.residues + self.intra.residues
        lines = [
            f"threshold {self.threshold} (query length {self.query_length}, model: {self.device})",
            f"  inter-task: {self.inter.sequences} sequences ({100 * self.inter.sequences / max(total_s, 1):.2f}%), "
            f"{self.inter.residues} residues ({100 * self.inter.residues / max(total_r, 1):.2f}%), "
            f"mean {self.inter.mean_length:.0f}, max {self.inter.max_length}",
            f"  intra-task: {self.intra.sequences} sequences ({100 * self.intra.sequences / max(total_s, 1):.2f}%), "
            f"{self.intra.residues} residues ({100 * self.intra.residues / max(total_r, 1):.2f}%), "
            f"mean {self.intra.mean_length:.0f}, max {self.intra.max_length}, "
            f"blocks of {self.intra_cols // INTRA_COLS_PER_WARP} warps ({-(-self.query_length // self.intra_cols)} pass(es))",
            f"  predicted scan: {self.predicted_seconds * 1e3:.2f} ms ({self.predicted_gcups:.0f} GCUPS), bound by {self.bound}",
        ]
        return "\n".join(lines)


#: The longest inter-task subject (residues) up to which a scan's pairs count as filling the GPU
#: with half its resident threads (:func:`inter_lanes`).
SHORT_ROWS = 1024


def inter_lanes(n_pairs: int, busy_threads: int, longest: int = 1 << 30) -> int:
    """Lanes per pair of subjects in the inter-task kernel (as the CUDA backend picks them):
    more lanes while the pairs alone would not fill ``busy_threads`` threads, or half of them
    where no subject is longer than SHORT_ROWS (``longest``: the longest inter-task subject).

    More lanes per pair cost a pass lanes - 1 steps of wavefront fill and drain beside its rows,
    and pad the query to wider passes; fewer lanes leave fewer groups, so SMs idle at the
    scan's end, and lengthen each group's run of passes, the scan's critical path. The kernel's
    launch bounds keep 512-768 of an SM's 2,048 threads resident, so ``busy_threads`` (all
    of them) is two to three waves of groups. Where the subjects are short, the fill is the
    larger cost (32 lanes over 300 residues: one step in eleven) and the groups are short, so
    one and a half waves end together well enough; where they are long, a pair's passes are
    the critical path. This matters where a scan has few pairs: a streamed batch. H100,
    bench200M x 20, three runs each in one call (bench/RESULTS.md): a 1/32 budget 2.331-2.334
    against 2.366-2.381 s, 1/8 2.062-2.072 against 2.085-2.097 s, resident 1.91 s and
    uniprot20k x 20 (0.14 s) unchanged. Half the threads for every scan instead gained as much
    at 1/32, but lost at 1/8 (2.09 -> 2.14-2.18 s: its batches of 1-15 k residues got fewer
    lanes and their long subjects, larger thresholds) and on uniprot20k (kernels 0.12 -> 0.13 s).
    """
    lanes = 8
    target = busy_threads // 2 if longest <= SHORT_ROWS else busy_threads
    while lanes < 32 and n_pairs * lanes < target:
        lanes *= 2
    return lanes


#: the narrow inter-task shape: 8 columns per lane, only with 8 lanes per pair (64-column passes)
INTER_NARROW_COLS_PER_LANE = 8
#: the numbers of 64-column passes for which the narrow shape is the faster one (see inter_cols_per_lane)
INTER_NARROW_PASSES = (1, 3)


def inter_cols_per_lane(query_length: int, lanes: int) -> int:
    """Query columns per lane of the inter-task kernel: INTER_COLS_PER_LANE (16), or the narrow
    shape's 8 where that scans the query faster.

    Measured on an H100 over bench200M (``bench/shape_sweep.py``, bench/RESULTS.md), a pass
    of the narrow shape (8 lanes x 8 columns = 64) takes about 0.6 of a pass of the wide one
    (8 x 16 = 128; 3.1-3.7 ms against 5.7-6.4 ms), not half: its lanes do less work per
    shuffle of the wavefront. A query whose length needs 2k + 1 narrow passes needs k + 1
    wide ones, and (2k + 1) * 0.6 < k + 1 only for k < 2; an even number of narrow passes is
    never faster. So the narrow shape serves queries of 1-64 and 129-192 residues, and only
    where a pair gets 8 lanes (the narrow shape has no wider form). The rule it replaces
    (narrow wherever the wide shape padded the query by over 25%) also took it for 65-102,
    193-204, 257-307 and 385-409 residues, 3-24% slower there: 0.85% of the inter-task
    kernel's time over the 500 UniProt queries.
    """
    if lanes == 8 and -(-query_length // (8 * INTER_NARROW_COLS_PER_LANE)) in INTER_NARROW_PASSES:
        return INTER_NARROW_COLS_PER_LANE
    return INTER_COLS_PER_LANE


def _padded(query_length: int, cols: int) -> int:
    return -(-query_length // cols) * cols


def intra_cols(query_length: int) -> int:
    """The default intra-task pass width: the narrowest block covering the query in one pass,
    up to INTRA_DEFAULT_WARPS warps (wider blocks shorten the critical path only while they
    have columns, and their wavefront fills for longer)."""
    warps = 1
    while warps < INTRA_DEFAULT_WARPS and warps * INTRA_COLS_PER_WARP < query_length:
        warps *= 2
    return warps * INTRA_COLS_PER_WARP


def intra_widths(query_length: int) -> list[int]:
    """The intra-task pass widths worth predicting for a query: the default and each wider
    block up to the first that covers the query in one pass."""
    widths = [intra_cols(query_length)]
    for warps in INTRA_WARPS:
        cols = warps * INTRA_COLS_PER_WARP
        if cols > widths[-1] and widths[-1] < query_length:
            widths.append(cols)
    return widths


class LengthProfile:
    """Sorted subject lengths with prefix sums, so each threshold is evaluated in O(log n)."""

    def __init__(self, lengths: np.ndarray):
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.prefix = np.concatenate(([0], np.cumsum(self.lengths)))

    def split(self, threshold: int) -> int:
        """Subjects up to ``threshold``, rounded up to an even count (kernels pair them)."""
        cut = int(np.searchsorted(self.lengths, threshold, side="right"))
        return cut + 1 if cut % 2 and cut < self.lengths.size else cut

    def side(self, first: int, stop: int, cells: float, seconds: float) -> Side:
        n, res = stop - first, int(self.prefix[stop] - self.prefix[first])
        return Side(n, res, res / n if n else 0.0, int(self.lengths[stop - 1]) if n else 0, cells, seconds)


def _tail(bulk: float, rows: int, step: float, step_loaded: float) -> float:
    """When a subject of ``rows`` row steps, started with the bulk, finishes."""
    return bulk + max(0.0, rows - bulk / step_loaded) * step


def evaluate(profile: LengthProfile, query_length: int, threshold: int, model: DeviceModel, intra_pass: int | None = None) -> Plan:
    """Predicted scan time of one query over the profiled subjects for ``threshold``, the
    intra-task blocks ``intra_pass`` columns wide (default :func:`intra_cols`)."""
    n = profile.lengths.size
    cut = profile.split(threshold)
    longest_short = int(profile.lengths[cut - 1]) if cut else 0
    lanes = inter_lanes(cut // 2, model.geometry.busy_threads, longest_short)
    inter_pass, intra_pass = lanes * INTER_COLS_PER_LANE, intra_pass or intra_cols(query_length)
    q_inter, q_intra = _padded(query_length, inter_pass), _padded(query_length, intra_pass)
    inter_cells = float(q_inter) * float(profile.prefix[cut])
    intra_cells = float(q_intra) * float(profile.prefix[n] - profile.prefix[cut])
    t_inter, t_intra = inter_cells / model.inter_rate, intra_cells / model.intra_rate
    longest = int(profile.lengths[-1]) if n > cut else 0
    bulk = t_inter + t_intra
    rows_inter = (q_inter // inter_pass) * (longest_short + lanes) if cut else 0
    rows_intra = (q_intra // intra_pass) * (longest + intra_fill_steps(intra_pass // INTRA_COLS_PER_WARP)) if n > cut else 0
    crit_inter = _tail(bulk, rows_inter, model.inter_step, model.inter_step_loaded)
    crit_intra = _tail(bulk, rows_intra, model.intra_step, model.intra_step_loaded)
    bound, seconds = max((("bulk", bulk), ("inter tail", crit_inter), ("intra tail", crit_intra)), key=lambda x: x[1])
    return Plan(
        threshold, query_length, profile.side(0, cut, inter_cells, t_inter), profile.side(cut, n, intra_cells, t_intra),
        seconds, bound, model.name, intra_pass,
    )  # fmt: skip


#: 256 x powers of two, and 1.5 times those (made once: the planner runs per query and batch)
_THRESHOLD_GRID = np.array(sorted({int(b * m) for b in 2 ** np.arange(8, 20) for m in (1, 1.5)}))


def candidate_thresholds(lengths: np.ndarray) -> np.ndarray:
    """Thresholds worth trying: 256 x powers of two, and 1.5 times those, up to the longest subject."""
    top = int(lengths[-1]) if len(lengths) else 1
    return np.append(_THRESHOLD_GRID[: np.searchsorted(_THRESHOLD_GRID, top)], top)


def sweep(profile: LengthProfile, query_length: int, model: DeviceModel = H100_DEFAULT) -> list[Plan]:
    """Predictions for every candidate threshold and intra-task block width."""
    widths = intra_widths(query_length)
    return [evaluate(profile, query_length, int(t), model, w) for t in candidate_thresholds(profile.lengths) for w in widths]


#: Thresholds predicted within this fraction of the fastest count as equally fast.
TOLERANCE = 0.03


def choose_threshold(
    profile: LengthProfile, query_length: int, model: DeviceModel = H100_DEFAULT, tolerance: float = TOLERANCE, streamed: bool = False
) -> Plan:
    """The smallest threshold predicted within ``tolerance`` of the fastest.

    Why not simply the fastest: the model's error is about 5% and one-sided at large
    thresholds, where it underestimates how much hundreds of long inter-task subjects slow
    each other down (measured on an H100 with bench200M: predicted best 12,288-16,384,
    measured best 6,000-8,192, 25% faster). Below the optimum the measured curve is flat,
    above it it falls steeply, so ties go to the smaller threshold. The intra-task blocks keep
    their default width (:func:`intra_cols`) unless a wider one is predicted faster by more
    than ``tolerance`` (a wider block is as fast in the model wherever the bulk binds, and
    measured 2% slower there: more warps to synchronise).

    ``streamed``: the profile is one of several streamed batches, whose queries' scans the
    pipeline runs side by side. Where the chosen plan puts every subject on the intra-task
    kernel (a batch of only long subjects, with no bulk to fill the GPU beside them) in several
    passes, a plan of one pass within ``tolerance`` of the fastest is taken instead: a
    multi-pass scan writes the batch's boundary rows, so the next query's scan waits for all
    of it, and consecutive queries' scans run one after another. H100, bench200M x 20 at a
    budget of 1/32: on the batch of 424 subjects of 13-31 k residues, the scans of the eight
    queries of 2,504-5,478 residues (8-warp blocks, two or three passes) ran back to back,
    17-40 ms each, beside the overlapping one-pass scans of the shorter queries; with 16-warp
    blocks in one pass for the queries of 2,504-4,061 residues (the same cells and fill as
    8-warp blocks in two passes) the batch took 0.181-0.188 s against 0.213-0.220 s (three
    runs each in one call). That call applied the rule to every streamed batch, and at a 1/8
    budget a batch of 1-15 k residues, which keeps a bulk on the inter-task kernel, lost
    0.02 s (there one pass meant a larger threshold), so the rule is limited to batches of
    only long subjects: the whole scan at 1/32 then took 2.386 / 2.389 / 2.402 s against
    2.403 / 2.404 / 2.414 s, 1/8 unchanged (another call, bench/RESULTS.md).
    """

    def smallest_near_fastest(plans: list[Plan]) -> Plan:
        fastest = min(p.predicted_seconds for p in plans)
        return min((p for p in plans if p.predicted_seconds <= fastest * (1 + tolerance)), key=lambda p: (p.threshold, p.intra_cols))

    plans = sweep(profile, query_length, model)
    fastest = min(p.predicted_seconds for p in plans)
    chosen = smallest_near_fastest([p for p in plans if p.intra_cols == intra_cols(query_length)])
    if chosen.predicted_seconds > fastest * (1 + tolerance):
        chosen = smallest_near_fastest(plans)
    if streamed and chosen.inter.sequences == 0 and chosen.intra_multipass:
        one_pass = [
            p for p in plans if p.inter.sequences == 0 and not p.intra_multipass and p.predicted_seconds <= fastest * (1 + tolerance)
        ]
        if one_pass:
            chosen = min(one_pass, key=lambda p: (p.threshold, p.intra_cols))
    return chosen


def plot_sweep(plans: list[Plan], chosen: Plan, path: str) -> None:
    """Predicted GCUPS against threshold (log axis), a line per intra-task block width, the
    chosen threshold marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .atomic import atomic_output

    fig, ax = plt.subplots(figsize=(7, 4))
    for cols in sorted({p.intra_cols for p in plans}):
        line = [p for p in plans if p.intra_cols == cols]
        label = f"intra-task blocks of {cols // INTRA_COLS_PER_WARP} warps"
        ax.plot([p.threshold for p in line], [p.predicted_gcups for p in line], marker="o", label=label)
    ax.axvline(chosen.threshold, color="tab:red", linestyle="--", label=f"chosen {chosen.threshold}")
    ax.set_xscale("log")
    ax.set_xlabel("inter/intra-task length threshold (residues)")
    ax.set_ylabel("predicted GCUPS")
    ax.set_title(f"query length {chosen.query_length} - {chosen.device}")
    ax.legend()
    fig.tight_layout()
    with atomic_output(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=110)
    plt.close(fig)
