"""The threshold planner: its model, its choice, and ``swgpu plan`` (no GPU needed)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from swgpu_core.dbstats import default_threshold
from swgpu_core.kernel_abi import intra_fill_steps
from swgpu_core.plan import (
    H100_DEFAULT,
    INTER_COLS_PER_LANE,
    INTER_NARROW_COLS_PER_LANE,
    INTRA_COLS_PER_WARP,
    TOLERANCE,
    DeviceModel,
    LengthProfile,
    candidate_thresholds,
    choose_threshold,
    evaluate,
    inter_cols_per_lane,
    intra_cols,
    intra_widths,
    sweep,
)


@pytest.fixture(scope="module")
def profile() -> LengthProfile:
    rng = np.random.default_rng(3)
    lengths = np.sort(np.concatenate([rng.integers(50, 800, 50_000), rng.integers(3_000, 40_000, 40)]))
    return LengthProfile(lengths)


def test_split_is_even_and_respects_threshold(profile: LengthProfile) -> None:
    for t in (1, 100, 799, 5_000, 10**6):
        cut = profile.split(t)
        assert cut % 2 == 0 or cut == profile.lengths.size
        assert (profile.lengths[: max(cut - 1, 0)] <= t).all()
        assert (profile.lengths[cut:] > t).all()


def test_sides_account_for_every_subject(profile: LengthProfile) -> None:
    plan = evaluate(profile, 1000, 3_000, H100_DEFAULT)
    assert plan.inter.sequences + plan.intra.sequences == profile.lengths.size
    assert plan.inter.residues + plan.intra.residues == int(profile.lengths.sum())
    assert plan.inter.max_length <= 3_000 < plan.intra.max_length or plan.intra.sequences == 0
    assert plan.predicted_seconds >= max(plan.inter.seconds + plan.intra.seconds, 0) - 1e-12


def test_choice_is_the_smallest_near_the_minimum_of_the_sweep(profile: LengthProfile) -> None:
    for qlen in (144, 1000, 5478):
        plans = sweep(profile, qlen)
        fastest = min(p.predicted_seconds for p in plans)
        chosen = choose_threshold(profile, qlen)
        assert chosen.predicted_seconds <= fastest * (1 + TOLERANCE)
        assert all(p.predicted_seconds > fastest * (1 + TOLERANCE) for p in plans if p.threshold < chosen.threshold)
        assert chosen.threshold in candidate_thresholds(profile.lengths)
        assert choose_threshold(profile, qlen, tolerance=0).predicted_seconds == pytest.approx(fastest)


def bench200m_like() -> LengthProfile:
    """Lengths drawn like bench200M's (407,808 subjects in the strata its streamed batches show,
    498 of 15,500-36,000 residues), without its 200 MB."""
    rng = np.random.default_rng(7)
    strata = [rng.integers(7, 340, 200_566), rng.integers(340, 528, 88_491), rng.integers(528, 738, 60_080),
              rng.integers(738, 1_244, 40_194), np.exp(rng.uniform(np.log(1_244), np.log(15_452), 17_979)).astype(np.int64),
              rng.integers(15_498, 36_000, 498)]  # fmt: skip
    return LengthProfile(np.sort(np.concatenate(strata)))


def test_wider_intra_blocks_only_where_the_long_subjects_bind(profile: LengthProfile) -> None:
    """A batch of only the longest subjects (a streamed tail: 124 of 31,000-36,000 residues)
    gets blocks that take a long query in one pass, as their critical path binds there; a
    database whose bulk hides that path keeps the default, narrower blocks."""
    tail = LengthProfile(np.linspace(31_069, 36_000, 124).astype(np.int64))
    for qlen in (2504, 5478):
        chosen = choose_threshold(tail, qlen)
        assert chosen.intra_cols >= qlen > intra_cols(qlen)  # one pass instead of two or three
        default = min((p for p in sweep(tail, qlen) if p.intra_cols == intra_cols(qlen)), key=lambda p: p.predicted_seconds)
        assert chosen.predicted_seconds < default.predicted_seconds / (1 + TOLERANCE)
        assert "pass(es)" in chosen.describe()
    bench = bench200m_like()
    for qlen in (144, 1000, 2504, 4548, 5478):
        assert choose_threshold(bench, qlen).intra_cols == intra_cols(qlen), qlen
    # 40 subjects of up to 40,000 residues beside only 21 M others: their path binds a 2,504-residue query's scan
    assert choose_threshold(profile, 2504).intra_cols == 4096 and choose_threshold(profile, 144).intra_cols == 256
    assert intra_widths(144) == [256] and intra_widths(5478) == [2048, 4096, 8192]


def test_a_streamed_batch_of_long_subjects_takes_one_pass_where_it_costs_nothing() -> None:
    """On a streamed batch of only long subjects (bench200M's at a 1/32 budget: 424 of 13-31 k
    residues), a multi-pass intra-task plan is traded for a one-pass one predicted as fast
    (16-warp blocks do a 2,504-4,096-residue query's cells in one pass as 8-warp blocks do in
    two); where one pass costs more, or the plan keeps a bulk on the inter-task kernel, the
    choice is the one of a resident scan."""
    rng = np.random.default_rng(11)
    long_only = LengthProfile(np.sort(rng.integers(13_400, 31_000, 424)))
    for qlen in (2_504, 3_005, 4_061):
        resident, streamed = choose_threshold(long_only, qlen), choose_threshold(long_only, qlen, streamed=True)
        assert resident.inter.sequences == 0 and resident.intra_multipass and resident.intra_cols == 8 * INTRA_COLS_PER_WARP
        assert streamed.inter.sequences == 0 and not streamed.intra_multipass and streamed.intra_cols == 16 * INTRA_COLS_PER_WARP
        assert streamed.predicted_seconds <= resident.predicted_seconds * (1 + TOLERANCE)
    five = choose_threshold(long_only, 5_478, streamed=True)  # one pass would be 32 warps and a third more cells
    assert five == choose_threshold(long_only, 5_478) and five.intra_multipass
    with_bulk = LengthProfile(np.sort(np.concatenate([rng.integers(1_244, 3_000, 5_000), rng.integers(3_000, 15_452, 1_500)])))
    for qlen in (2_504, 4_548, 5_478):
        assert choose_threshold(with_bulk, qlen, streamed=True) == choose_threshold(with_bulk, qlen)


def test_the_intra_tail_counts_the_kernels_wavefront_fill() -> None:
    """One long subject alone: its row steps are the kernel's (passes x (length + fill))."""
    one = LengthProfile(np.array([30_000]))
    d = H100_DEFAULT
    lone = DeviceModel("lone steps", 1e30, 1e30, 1e-6, 1e-6, 1e-6, 1e-6)
    for cols in intra_widths(5478):
        plan = evaluate(one, 5478, 1, lone, cols)
        steps = -(-5478 // cols) * (30_000 + intra_fill_steps(cols // INTRA_COLS_PER_WARP))
        assert plan.bound == "intra tail" and plan.predicted_seconds == pytest.approx(steps * 1e-6, rel=1e-9), cols
    assert d.intra_step > 0


def test_slow_intra_kernel_pushes_threshold_up(profile: LengthProfile) -> None:
    """The model reacts to the device: a weaker intra-task kernel sends more to inter-task."""
    d = H100_DEFAULT
    weak = DeviceModel("weak intra", d.inter_rate, d.intra_rate / 20, d.inter_step, 1e-9, d.inter_step_loaded, 1e-9)
    strong = DeviceModel("strong intra", d.inter_rate, d.inter_rate, 1e-3, 1e-9, 1e-3, 1e-9)
    assert choose_threshold(profile, 1000, weak).threshold > choose_threshold(profile, 1000, strong).threshold


def test_long_subject_overlaps_the_bulk() -> None:
    """A long subject that finishes beside the bulk costs nothing; past it, it runs alone.

    With the bulk taking 1 s, a subject of 2e6 row steps at 1 us loaded (2 s) is half
    done when the bulk ends and takes 1e6 lone steps of 0.5 us more: 1.5 s in all.
    """
    from swgpu_core.plan import _tail

    assert _tail(1.0, 500_000, 0.5e-6, 1e-6) == pytest.approx(1.0)
    assert _tail(1.0, 2_000_000, 0.5e-6, 1e-6) == pytest.approx(1.5)
    assert _tail(0.0, 2_000_000, 0.5e-6, 1e-6) == pytest.approx(1.0)


def test_dbstats_threshold_is_the_planners(bundled_db) -> None:
    assert default_threshold(bundled_db) == choose_threshold(LengthProfile(bundled_db.lengths), 1000).threshold


def test_plan_command(bundled_db, swgpu, tmp_path: Path) -> None:
    out, png = tmp_path / "plan.json", tmp_path / "plan.png"
    rc, stdout, err = swgpu("plan", bundled_db.path, "--query-length", "500", "--json", out, "--png", png, "--no-gpu")
    assert rc == 0, err
    plan = json.loads(out.read_text())
    assert plan["version"] == bundled_db.version_tag and plan["model"]["measured"] is False
    p = plan["plan"]
    assert p["query_length"] == 500 and f"threshold {p['threshold']}" in stdout
    assert p["inter"]["sequences"] + p["intra"]["sequences"] == bundled_db.n_sequences
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rc, stdout, _ = swgpu("plan", bundled_db.path, "--threshold", "300", "--no-gpu")
    assert rc == 0 and "threshold 300 " in stdout


def test_plan_rejects_bad_length(bundled_db, swgpu) -> None:
    rc, _, err = swgpu("plan", bundled_db.path, "--query-length", "0", "--no-gpu")
    assert rc != 0 and "--query-length must be at least 1" in err and "Traceback" not in err


def test_geometry_comes_with_the_model(profile: LengthProfile) -> None:
    """Lanes per pair follow the device's size (no H100 constant): a small GPU is full with
    fewer threads, so pairs keep 8 lanes where an H100 gives them 32."""
    from dataclasses import replace

    from swgpu_core.plan import H100_GEOMETRY, SHORT_ROWS, DeviceGeometry, inter_lanes

    small = DeviceGeometry("small", 20, 1024, 8 << 30)
    assert small.busy_threads == 20 * 1024 and H100_GEOMETRY.busy_threads == 132 * 2048
    assert inter_lanes(5_000, small.busy_threads) == 8 and inter_lanes(5_000, H100_GEOMETRY.busy_threads) == 32
    # short subjects count as filling the GPU with half its threads (a streamed batch of 339-380
    # residues: 13,000 pairs get 16 lanes, not 32); longer ones, with all of them
    assert inter_lanes(13_000, H100_GEOMETRY.busy_threads, longest=380) == 16
    assert inter_lanes(13_000, H100_GEOMETRY.busy_threads, longest=SHORT_ROWS + 1) == 32
    assert inter_lanes(13_000, H100_GEOMETRY.busy_threads) == 32
    model = replace(H100_DEFAULT, geometry=small)
    a, b = evaluate(profile, 1000, 1_000_000, H100_DEFAULT), evaluate(profile, 1000, 1_000_000, model)
    assert a.inter.sequences == b.inter.sequences and a.predicted_seconds != b.predicted_seconds  # other lanes, other rows
    assert DeviceModel.from_json(model.to_json()) == model
    old = {k: v for k, v in H100_DEFAULT.to_json().items() if k != "geometry"}  # a calibration cached before geometry
    assert DeviceModel.from_json(old) == H100_DEFAULT


def test_the_narrow_inter_shape_serves_only_the_lengths_it_scans_faster():
    """8 columns per lane (64-column passes) for 1-64 and 129-192 residues, where its odd number
    of passes beats the wide shape's (measured per pass on an H100: 0.6 of a wide pass); 16
    elsewhere, and always with more than 8 lanes (the narrow shape has no wider form)."""
    narrow = [n for n in range(1, 1200) if inter_cols_per_lane(n, 8) == INTER_NARROW_COLS_PER_LANE]
    assert narrow == [*range(1, 65), *range(129, 193)]
    assert {inter_cols_per_lane(n, lanes) for n in (10, 150, 300) for lanes in (16, 32)} == {INTER_COLS_PER_LANE}
