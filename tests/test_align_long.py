"""align-long on the CPU: the band rule, sections, planted alignments, big scores, bad input.

The vectorised scan (``cpu_scan.scan_section``: striped blocks, threads) must give
exactly the band keys of the row-by-row reference (``reference_scan_section``), ties
included, on random, planted and repetitive DNA and protein, with tiles small enough that
the inputs cross many block and chunk boundaries.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from long_data import fasta, planted, protein_pair, random_dna

from swgpu_core.align.traceback import forward_end
from swgpu_core.fasta import EncodedSequence
from swgpu_core.long import cpu_scan
from swgpu_core.long.cpu_scan import reference_scan_section, scan_section
from swgpu_core.long.endpoints import GROUP, BandRule, merge, select
from swgpu_core.long.run import alignments, end_points, read_single
from swgpu_core.long.sections import Section, layout
from swgpu_core.scoring import Scoring

DNA_SCORING = Scoring.nucleotide()


def brute_band_keys(q: np.ndarray, t: np.ndarray, scoring: Scoring, width: int) -> dict[int, int]:
    """Full-table Gotoh in numpy rows, and every band's best key by the documented formula."""
    m, n = q.size, t.size
    oe, ge = scoring.first_gap_cost, scoring.gap_extend
    h_prev = np.zeros(n + 1, np.int64)
    f = np.full(n + 1, -(10**9), np.int64)
    keys: dict[int, int] = {}
    col = np.arange(1, n + 1)
    c0 = (col - 1) // GROUP * GROUP
    for i in range(1, m + 1):
        f = np.maximum(f - ge, h_prev - oe)
        d = np.concatenate(([0], h_prev[:-1] + scoring.matrix[q[i - 1], t]))
        h = np.zeros(n + 1, np.int64)
        e = -(10**9)
        for j in range(1, n + 1):
            e = max(e - ge, h[j - 1] - oe)
            h[j] = max(0, d[j], e, f[j])
        dd = c0 + 1 - i + m
        band = dd // width
        lin = i * (width + GROUP) + dd - band * width + (col - 1 - c0)
        for j in np.flatnonzero(h[1:] > 0):
            key = (int(h[j + 1]) << 32) | (0xFFFFFFFF - int(lin[j]))
            keys[int(band[j])] = max(keys.get(int(band[j]), 0), key)
        h_prev = h
    return keys


def cpu_keys(q, t, scoring, width, sections=1, overlap=0):
    rule = BandRule(q.size, width)
    return merge([scan_section(q, t, s, rule, scoring)[0] for s in layout(t.size, sections, overlap)]), rule


@pytest.mark.parametrize("width", [16, 64])
def test_band_keys_match_brute_force(width):
    q, t, _ = planted(700, 45, 300)
    found, _ = cpu_keys(q, t, DNA_SCORING, width)
    assert dict(zip(found.bands.tolist(), map(int, found.keys))) == brute_band_keys(q, t, DNA_SCORING, width)


def test_best_end_point_is_the_table_maximum_on_real_protein():
    q, t = protein_pair(20_000)
    scoring = Scoring.protein()
    found, rule = cpu_keys(q, t, scoring, 64)
    best = select(found, rule, 1)[0]
    score, ie, je = forward_end(q, t, scoring.matrix, scoring.gap_open, scoring.gap_extend)
    assert (best.score, best.qend, best.send) == (score, ie, je)


def test_sections_equal_unsectioned_when_a_cut_crosses_an_alignment():
    q, t, copy = planted(40_000, 600, 19_800)  # the 2-section cut (20,000) falls inside the copy
    whole, rule = cpu_keys(q, t, DNA_SCORING, 64)
    for count in (2, 3, 5):
        parts, _ = cpu_keys(q, t, DNA_SCORING, 64, sections=count, overlap=1000)
        assert np.array_equal(parts.bands, whole.bands) and np.array_equal(parts.keys, whole.keys)
    assert layout(t.size, 2, 1000)[1].own_lo == 20_000


def test_planted_segment_with_indels_has_exact_coordinates():
    q, t, copy = planted(30_000, 500, 12_345)
    found, rule = cpu_keys(q, t, DNA_SCORING, 64)
    ends = select(found, rule, 5)
    query = EncodedSequence("q", "", q)
    target = EncodedSequence("t", "", t)
    best = alignments(query, target, ends[:1], DNA_SCORING, 10_000)[0]
    assert (best.qstart, best.qend) == (1, 500)
    assert (best.sstart, best.send) == (12_346, 12_345 + copy.size)
    assert "7D" in best.cigar or "7I" in best.cigar  # the planted deletion (query residues missing)
    assert best.gap_opens >= 2


def test_score_above_65535_is_exact():
    seg = random_dna(14_000, 3)
    t = np.concatenate([random_dna(3_000, 4), seg, random_dna(3_000, 5)])
    found, rule = cpu_keys(seg, t, DNA_SCORING, 64)
    best = select(found, rule, 1)[0]
    assert (best.score, best.qend, best.send) == (70_000, 14_000, 17_000)
    aln = alignments(EncodedSequence("q", "", seg), EncodedSequence("t", "", t), [best], DNA_SCORING, 20_000)[0]
    assert aln.score == 70_000 and aln.cigar == "14000="


def test_shadows_of_a_strong_alignment_are_not_end_points():
    q, t, _ = planted(20_000, 400, 5_000)
    found, rule = cpu_keys(q, t, DNA_SCORING, 64)
    ends = select(found, rule, 200)
    near = [e for e in ends if abs((e.send - e.qend) - 5_000) < 4 * 64]
    assert len(near) == 1 and near[0].score == ends[0].score


def test_top_orders_by_score_then_position():
    q, t = protein_pair(20_000)
    found, rule = cpu_keys(q, t, Scoring.protein(), 64)
    ends = select(found, rule, 50)
    keys = [(-e.score, e.qend, e.send) for e in ends]
    assert keys == sorted(keys) and len({(e.qend, e.send) for e in ends}) == len(ends)


def test_cli_sections_merge_equals_whole_run(tmp_path, swgpu):
    q, t, _ = planted(9_000, 300, 4_400)
    qf, tf = fasta(tmp_path / "q.fa", "q", q), fasta(tmp_path / "t.fa", "t", t)
    rc, whole, _ = swgpu("align-long", "--query", qf, "--target", tf, "--backend", "cpu", "--top", "20", "--max-alignment-length", "1000")
    assert rc == 0 and whole.splitlines()[0].startswith("q\tt\t")
    parts = []
    for i in range(3):
        parts.append(tmp_path / f"p{i}.npz")
        rc, _, _ = swgpu(
            "align-long",
            "--query",
            qf,
            "--target",
            tf,
            "--backend",
            "cpu",
            "--section",
            f"{i}/3",
            "--save-ends",
            parts[-1],
            "--max-alignment-length",
            "1000",
        )
        assert rc == 0
    rc, merged, _ = swgpu("align-long", "--query", qf, "--target", tf, "--ends", *parts, "--top", "20", "--max-alignment-length", "1000")
    assert rc == 0 and merged == whole
    rc, _, err = swgpu("align-long", "--query", qf, "--target", tf, "--ends", *parts[:2], "--max-alignment-length", "1000")
    assert rc == 2 and "missing" in err
    rc, _, err = swgpu(
        "align-long", "--query", qf, "--target", tf, "--ends", *parts, "--band-width", "32", "--max-alignment-length", "1000"
    )
    assert rc == 2 and "band_width" in err


def test_cli_checksums_the_inputs_only_for_saved_sections(tmp_path, swgpu, monkeypatch):
    """A plain run does not checksum its inputs (a pass over the whole target); --save-ends
    and --ends do, to refuse sections saved for other inputs."""
    from swgpu_core.commands import align_long

    sums: list[int] = []
    real = align_long._checksum
    monkeypatch.setattr(align_long, "_checksum", lambda codes: sums.append(codes.size) or real(codes))
    q, t, _ = planted(3_000, 200, 1_400)
    qf, tf = fasta(tmp_path / "q.fa", "q", q), fasta(tmp_path / "t.fa", "t", t)
    common = ("--query", qf, "--target", tf, "--backend", "cpu", "--max-alignment-length", "600")
    rc, _, _ = swgpu("align-long", *common)
    assert rc == 0 and sums == []
    rc, _, _ = swgpu("align-long", *common, "--section", "0/1", "--save-ends", tmp_path / "s.npz")
    assert rc == 0 and sums == [200, 3_000]
    rc, _, _ = swgpu("align-long", *common, "--ends", tmp_path / "s.npz")
    assert rc == 0 and sums == [200, 3_000] * 2


def test_cli_several_outputs_from_one_traceback(tmp_path, swgpu, monkeypatch):
    """`--out a.tsv --out a.jsonl` traces the end points once and writes both (the workflow's merge job)."""
    from swgpu_core import engine

    q, t, _ = planted(2_000, 300, 900)
    qf, tf = fasta(tmp_path / "q.fa", "q", q), fasta(tmp_path / "t.fa", "t", t)
    calls = []
    real = engine.CpuEngine.trace_end_points

    def counting(self, *args, **options):
        calls.append(len(args[2]))
        return real(self, *args, **options)

    monkeypatch.setattr(engine.CpuEngine, "trace_end_points", counting)
    tsv, jsonl = tmp_path / "a.tsv", tmp_path / "a.jsonl"
    rc, _, err = swgpu("align-long", "--query", qf, "--target", tf, "--backend", "cpu", "--top", "5", "--out", tsv, "--out", jsonl)
    assert rc == 0, err
    assert len(calls) == 1 and "tsv, jsonl" in err
    rows = tsv.read_text().splitlines()
    records = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert len(rows) == len(records) == calls[0] > 0
    assert [r.split("\t")[:2] for r in rows] == [[r["query_id"], r["subject_id"]] for r in records]
    rc, _, err = swgpu("align-long", "--query", qf, "--target", tf, "--backend", "cpu", "--out", tsv, "--out", tsv)
    assert rc == 2 and "names a file twice" in err


def test_rna_u_reads_as_t(tmp_path):
    path = tmp_path / "r.fa"
    path.write_text(">r\nACGUACGUN\n")
    from swgpu_core.alphabet import DNA

    assert DNA.decode(read_single(path, DNA, "query").codes) == "ACGTACGTN"


@pytest.mark.parametrize(
    ("content", "args", "message"),
    [
        ("", (), "empty file"),
        (">t\nACGTJACGT\n", (), "unknown residue 'J'"),
        (">a\nACGT\n>b\nACGT\n", (), "single FASTA record"),
        (">t\nACGTACGT\n", ("--top", "0"), "--top"),
        (">t\nACGTACGT\n", ("--band-width", "0"), "--band-width"),
        (">t\nACGTACGT\n", ("--section", "3/2", "--save-ends", "x.npz"), "--section"),
        (">t\nACGTACGT\n", ("--gpu-sections", "0"), "--gpu-sections"),
    ],
)
def test_bad_input_is_one_line(tmp_path, swgpu, content, args, message):
    qf = fasta(tmp_path / "q.fa", "q", random_dna(50, 1))
    tf = tmp_path / "t.fa"
    tf.write_text(content)
    rc, out, err = swgpu("align-long", "--query", qf, "--target", tf, "--backend", "cpu", *args)
    assert rc == 2 and message in err and len(err.strip().splitlines()) == 1 and out == ""


def test_end_points_of_nothing():
    t = np.zeros(64, np.uint8)  # all A
    q = np.full(20, 2, np.uint8)  # all G: no positive cell
    found, rule = cpu_keys(q, t, DNA_SCORING, 64)
    assert end_points([found], rule, 10) == []


def tiled_keys(q, t, scoring, width, section, threads, rows, cols):
    rule = BandRule(q.size, width)
    keys = np.zeros(rule.n_bands(t.size), np.uint64)
    cpu_scan._tiled_scan(q, t[section.scan_lo : section.own_hi], scoring, width, section.scan_lo, section.own_lo, keys, threads, rows, cols)
    return keys


def reference_keys(q, t, scoring, width, section):
    rule = BandRule(q.size, width)
    found = reference_scan_section(q, t, section, rule, scoring)
    keys = np.zeros(rule.n_bands(t.size), np.uint64)
    keys[found.bands] = found.keys
    return keys


def _inputs(kind: str, m: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, Scoring]:
    """Random codes (all of the alphabet's, ambiguity codes included) with a mutated copy of the query planted."""
    rng = np.random.default_rng(seed)
    scoring = DNA_SCORING if kind == "dna" else Scoring.protein()
    size = scoring.matrix.shape[0]
    q = rng.integers(0, size, m).astype(np.uint8)
    q[0] = 0  # a residue that scores: even a one-residue query has positive cells
    t = rng.integers(0, size, n).astype(np.uint8)
    copy = q[: min(m, n // 2)].copy()
    copy[rng.random(copy.size) < 0.1] = 0
    at = int(rng.integers(0, n - copy.size + 1))
    t[at : at + copy.size] = copy
    return q, t, scoring


@pytest.mark.parametrize("kind", ["dna", "protein"])
@pytest.mark.parametrize(
    ("m", "n", "width", "section", "threads", "rows", "cols"),
    [
        (37, 1_001, 64, (0, 0, 1_001), 1, 512, 16_384),  # one block, padded to 128 rows; last segment partial
        (200, 3_000, 16, (32, 512, 3_000), 2, 128, 64),  # overlap not owned; 2 threads, many chunks
        (300, 5_003, 40, (0, 0, 5_003), 3, 128, 512),  # width not a power of two; 3 threads of 128-row blocks
        (700, 4_000, 64, (16, 16, 4_000), 2, 256, 1_024),
        (400, 3_000, 500, (0, 0, 3_000), 3, 128, 64),  # bands wider than a thread's rows: three band-key arrays
        (1_000, 2_000, 16, (0, 0, 2_000), 1, 1_024, 16_384),  # stripes of 64 rows: five bands each
        (5, 300, 16, (0, 0, 300), 2, 128, 16),  # 5 rows: one thread; chunks of one segment
        (1, 50, 16, (0, 0, 50), 2, 512, 16),  # one row: one thread
        (64, 17, 16, (0, 0, 17), 5, 128, 16),  # target shorter than the query
    ],
)
def test_tiled_scan_equals_the_reference(kind, m, n, width, section, threads, rows, cols):
    q, t, scoring = _inputs(kind, m, n, seed=m + n)
    sec = Section(0, 1, *section, overlap=section[1] - section[0])
    got = tiled_keys(q, t, scoring, width, sec, threads, rows, cols)
    want = reference_keys(q, t, scoring, width, sec)
    assert np.count_nonzero(want) > 0 and np.array_equal(got, want)


@pytest.mark.parametrize("kind", ["dna", "protein"])
def test_tiled_scan_equals_the_reference_on_ties(kind):
    """Periodic sequences: many cells of equal score in every segment and band, so every tie rule is exercised."""
    scoring = DNA_SCORING if kind == "dna" else Scoring.protein()
    q = np.tile(np.array([0, 1, 2, 3, 0, 1], np.uint8), 40)
    t = np.concatenate([np.tile(np.array([0, 1, 2, 3], np.uint8), 500), np.zeros(333, np.uint8), np.tile(q[:12], 30)])
    sec = Section(0, 1, 0, 0, t.size, 0)
    want = reference_keys(q, t, scoring, 64, sec)
    for threads, rows, cols in [(1, 512, 16_384), (2, 128, 32), (3, 128, 160)]:
        assert np.array_equal(tiled_keys(q, t, scoring, 64, sec, threads, rows, cols), want)
    _, counts = np.unique(want >> np.uint64(32), return_counts=True)
    assert counts.max() > 10  # many bands share a score: the position decides


def test_scan_section_is_the_tiled_scan_on_real_protein_and_planted_dna():
    q, t = protein_pair(30_000)
    sec = layout(t.size, 3, 2_000)[1]
    rule = BandRule(q.size, 64)
    for scoring, (qq, tt) in [(Scoring.protein(), (q, t)), (DNA_SCORING, planted(30_000, 900, 11_000)[:2])]:
        rule = BandRule(qq.size, 64)
        got = scan_section(qq, tt, sec, rule, scoring, threads=2)[0]
        want = reference_scan_section(qq, tt, sec, rule, scoring)
        assert np.array_equal(got.bands, want.bands) and np.array_equal(got.keys, want.keys)


def test_scores_too_large_to_pack_use_the_reference(monkeypatch):
    q, t, _ = planted(3_000, 200, 1_000)
    sec = layout(t.size, 1, 0)[0]
    rule = BandRule(q.size, 64)
    want = reference_scan_section(q, t, sec, rule, DNA_SCORING)
    monkeypatch.setattr(cpu_scan, "PACK_LIMIT", 1000)  # 200 x 5 >= 1000: the reference path
    monkeypatch.setattr(cpu_scan, "_tiled_scan", None)  # ... and nothing else
    got = scan_section(q, t, sec, rule, DNA_SCORING)[0]
    assert np.array_equal(got.keys, want.keys)


def test_other_dna_scorings_equal_the_reference():
    q, t, _ = planted(2_000, 150, 700)
    sec = layout(t.size, 1, 0)[0]
    for scoring in [Scoring.nucleotide(2, -3, 5, 2), Scoring.nucleotide(1, -7, 0, 2)]:  # the second: mismatches heavy, gaps open free
        assert np.array_equal(tiled_keys(q, t, scoring, 32, sec, 2, 64, 256), reference_keys(q, t, scoring, 32, sec))


def _random_scoring(rng: np.random.Generator) -> Scoring:
    if rng.random() < 0.5:
        return Scoring.nucleotide(int(rng.integers(1, 6)), -int(rng.integers(1, 8)), int(rng.integers(0, 4)), int(rng.integers(1, 3)))
    return Scoring.protein(str(rng.choice(["BLOSUM62", "PAM30", "BLOSUM45"])), int(rng.integers(0, 12)), int(rng.integers(1, 3)))


@pytest.mark.parametrize("seed", range(40))
def test_tiled_scan_equals_the_reference_on_random_scorings(seed):
    """Random sizes, scorings (gap opening 0, mismatch-heavy), alphabets of 2 letters (ties everywhere) and more, sections, threads, blocks, chunks."""
    rng = np.random.default_rng(seed)
    scoring = _random_scoring(rng)
    letters = min(int(rng.choice([2, 4, 24])), scoring.matrix.shape[0])
    m, n = int(rng.integers(1, 300)), int(rng.integers(1, 2_500))
    q = rng.integers(0, letters, m).astype(np.uint8)
    t = rng.integers(0, letters, n).astype(np.uint8)
    if n > 2 * m:
        t[n // 3 : n // 3 + m] = q  # a planted copy: one strong alignment
    own_lo = int(rng.integers(0, n // GROUP + 1)) * GROUP % max(n, 1)
    sec = Section(0, 1, max(0, own_lo - int(rng.integers(0, 5)) * GROUP), own_lo, n, 0)
    width = int(rng.choice([16, 40, 64]))
    threads, rows, cols = int(rng.integers(1, 4)), int(rng.choice([128, 512])), int(rng.choice([16, 48, 160, 16_384]))
    assert np.array_equal(tiled_keys(q, t, scoring, width, sec, threads, rows, cols), reference_keys(q, t, scoring, width, sec))


@pytest.mark.parametrize("rows", [128, 512])
def test_long_gaps_cross_many_stripes(rows):
    """A 300-residue gap in the query (vertical: the lazy-F loop carries it across stripes and blocks) and one in the target."""
    rng = np.random.default_rng(5)
    a, b, extra = (rng.integers(0, 4, k).astype(np.uint8) for k in (300, 300, 300))
    scoring = Scoring.nucleotide(5, -3, 2, 1)
    for q, t in [(np.concatenate([a, extra, b]), np.concatenate([a, b])), (np.concatenate([a, b]), np.concatenate([a, extra, b]))]:
        sec = layout(t.size, 1, 0)[0]
        want = reference_keys(q, t, scoring, 64, sec)
        assert (want >> np.uint64(32)).max() > 2 * 5 * 300 - 400  # the alignment takes the gap
        assert np.array_equal(tiled_keys(q, t, scoring, 64, sec, 2, rows, 96), want)


def test_row_parts_are_whole_blocks_but_the_last():
    for m, threads, rows in [(1, 2, 512), (1_000, 2, 512), (10_000, 2, 2_048), (700, 3, 128), (4_097, 5, 1_000)]:
        parts = cpu_scan._row_parts(m, threads, rows)
        blocks = [b for part in parts for b in part]
        assert [i0 for i0, _ in blocks] == list(np.cumsum([1] + [r for _, r in blocks[:-1]]))
        assert sum(r for _, r in blocks) == m and len(parts) <= threads
        step = cpu_scan.ROW_STEP
        assert all(r % step == 0 for _, r in blocks[:-1]) and all(0 < r <= -(-rows // step) * step for _, r in blocks)


def test_threads_sharing_band_keys_are_a_band_width_apart():
    for m, threads, width in [(1_000, 2, 64), (10_000, 64, 1_000), (400, 3, 500), (300, 3, 16), (5_000, 7, 4_000)]:
        parts = cpu_scan._row_parts(m, threads, cpu_scan.ROWS)
        arrays = cpu_scan._key_arrays(parts, width)
        rows = [sum(r for _, r in part) for part in parts]
        assert len(parts) == 1 or 2 <= arrays <= len(parts)
        for k in range(len(parts) - arrays):  # thread k and thread k + arrays share an array
            assert 17 + sum(rows[k + 1 : k + arrays]) >= width


def test_state_arrays_are_aligned_and_apart_in_the_page():
    """The scan's arrays start on cache lines, at different places in the 4 KiB page (no 4K aliasing between them)."""
    for dtype, sizes in [(np.int32, [2_048, 2_048, 2_048, 16]), (np.int8, [27 * 128 * 16]), (np.int64, [16, 16, 16])]:
        arrays = cpu_scan._fields(dtype, sizes)
        assert [a.size for a in arrays] == sizes and all(a.dtype == dtype for a in arrays)
        places = [a.ctypes.data % 4096 for a in arrays]
        assert all(p % 64 == 0 for p in places) and len(set(places)) == len(places)
        ends = sorted((a.ctypes.data, a.ctypes.data + a.nbytes) for a in arrays)
        assert all(end <= start for (_, end), (start, _) in zip(ends, ends[1:]))  # no overlap


def test_large_scores_use_the_reference(monkeypatch):
    """A matrix score of 2^11 or more does not fit the int16 profile (16 x score): the reference scans it."""
    q, t, _ = planted(3_000, 200, 1_000)
    sec = layout(t.size, 1, 0)[0]
    rule = BandRule(q.size, 64)
    big = Scoring("big", 8, 1, DNA_SCORING.alphabet, DNA_SCORING.matrix * 500)
    want = reference_scan_section(q, t, sec, rule, big)
    monkeypatch.setattr(cpu_scan, "_tiled_scan", None)
    got = scan_section(q, t, sec, rule, big)[0]
    assert np.array_equal(got.keys, want.keys) and got.keys.size > 0


def _merge_reference(parts):
    """The merge before its linear-time version: a lexsort of bands and keys, the last key of each band."""
    from swgpu_core.long.endpoints import BandKeys

    bands = np.concatenate([p.bands for p in parts])
    keys = np.concatenate([p.keys for p in parts])
    order = np.lexsort((keys, bands))
    bands, keys = bands[order], keys[order]
    last = np.ones(bands.size, bool)
    last[:-1] = bands[1:] != bands[:-1]
    return BandKeys(bands[last], keys[last])


def _select_reference(found, rule, top):
    """The selection before it ranked only the best local maxima: every one decoded and sorted."""
    from swgpu_core.long.endpoints import EndPoint

    score, i, j = rule.decode(found.bands, found.keys)
    b = found.bands
    left, right = np.zeros_like(score), np.zeros_like(score)
    adj = b[1:] == b[:-1] + 1
    left[1:][adj] = score[:-1][adj]
    right[:-1][adj] = score[1:][adj]
    keep = np.flatnonzero((score > left) & (score >= right))
    order = keep[np.lexsort((j[keep], i[keep], -score[keep]))][:top]
    return [EndPoint(int(score[k]), int(i[k]), int(j[k])) for k in order]


@pytest.mark.parametrize("seed", range(6))
def test_merge_and_select_equal_the_sorting_reference(seed):
    """Overlapping sections' band keys (ascending within each, repeated bands where sections
    overlap, few distinct scores so that ties are everywhere): the linear merge and the
    partial ranking give exactly the lexsort versions' end points."""
    from swgpu_core.long.endpoints import BandKeys, BandRule, merge, select

    rng = np.random.default_rng(seed)
    rule = BandRule(300, 64)
    parts, start = [], 0
    for _ in range(int(rng.integers(1, 5))):
        bands = np.unique(rng.integers(start, start + 5000, int(rng.integers(1, 3000))))
        score = rng.integers(1, 12, bands.size).astype(np.uint64)
        lin = rng.integers(0, 300 * 80, bands.size).astype(np.uint64)
        parts.append(BandKeys(bands.astype(np.int64), (score << np.uint64(32)) | (np.uint64(0xFFFFFFFF) - lin)))
        start += int(rng.integers(1000, 5000))  # the next section overlaps this one's end
    merged, want = merge(parts), _merge_reference(parts)
    assert np.array_equal(merged.bands, want.bands) and np.array_equal(merged.keys, want.keys)
    for top in (1, 7, 200, 10**6):
        assert select(merged, rule, top) == _select_reference(want, rule, top)
    single = merge(parts[:1])
    assert single is parts[0]


def _sections_keys(rng, lengths_and_overlaps):
    """Band keys of consecutive sections (random bands, few scores), each overlapping the one before by the given bands."""
    from swgpu_core.long.endpoints import BandKeys

    parts, start = [], 0
    for length, overlap in lengths_and_overlaps:
        start = max(0, start - overlap)
        bands = np.unique(rng.integers(start, start + length, max(1, length // 3)))
        score = rng.integers(1, 12, bands.size).astype(np.uint64)
        parts.append(BandKeys(bands.astype(np.int64), (score << np.uint64(32)) | rng.integers(0, 1 << 32, bands.size).astype(np.uint64)))
        start += length
    return parts


@pytest.mark.parametrize("seed", range(8))
def test_sections_in_order_merge_without_the_sort(seed):
    """Sections in target order, each overlapping only the one before (by 0 to a whole short
    section): the in-order merge takes them, and gives the sorting reference's keys."""
    from swgpu_core.long.endpoints import _merge_in_order, merge

    rng = np.random.default_rng(seed)
    spec = [(int(rng.integers(50, 3000)), int(rng.integers(0, 40))) for _ in range(int(rng.integers(2, 7)))]
    parts = _sections_keys(rng, spec)
    fast, want = _merge_in_order(parts), _merge_reference(parts)
    assert fast is not None
    assert np.array_equal(fast.bands, want.bands) and np.array_equal(fast.keys, want.keys)
    merged = merge(parts)
    assert np.array_equal(merged.bands, want.bands) and np.array_equal(merged.keys, want.keys)


def test_parts_out_of_order_go_to_the_sort():
    """A part that reaches into bands already taken (those of a part before the one before it)
    or one that does not ascend is not the in-order case: the sort merges them. Parts given in
    reverse order meet in one zone, which the sort merges: the result is the same."""
    from swgpu_core.long.endpoints import BandKeys, _merge_in_order, merge

    def keys(*bands):
        b = np.asarray(bands, np.int64)
        return BandKeys(b, (b.astype(np.uint64) % np.uint64(7) + np.uint64(1)) << np.uint64(32))

    cases = [
        ([keys(0, 5, 100), keys(200, 300), keys(50, 400)], False),  # the third reaches back into the first
        ([keys(0, 10), keys(10, 20), keys(10, 30)], False),  # the third starts on the band the first two shared
        ([keys(0, 9, 5), keys(20, 30)], False),  # not ascending
        ([keys(200, 300), keys(0, 5)], True),  # in reverse: one zone
    ]
    for parts, taken in cases:
        assert (_merge_in_order(parts) is not None) == taken
        merged, want = merge(parts), _merge_reference(parts)
        assert np.array_equal(merged.bands, want.bands) and np.array_equal(merged.keys, want.keys)
