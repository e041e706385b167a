"""align-long on the CPU: the band rule, sections, planted alignments, big scores, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from long_data import fasta, planted, protein_pair, random_dna

from swgpu_core.align.traceback import forward_end
from swgpu_core.errors import InputError
from swgpu_core.long.cpu_scan import scan_section
from swgpu_core.long.endpoints import GROUP, BandRule, merge, select
from swgpu_core.long.run import alignments, end_points, read_single
from swgpu_core.long.sections import layout
from swgpu_core.fasta import EncodedSequence
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
        rc, _, _ = swgpu("align-long", "--query", qf, "--target", tf, "--backend", "cpu", "--section", f"{i}/3", "--save-ends", parts[-1], "--max-alignment-length", "1000")
        assert rc == 0
    rc, merged, _ = swgpu("align-long", "--query", qf, "--target", tf, "--ends", *parts, "--top", "20", "--max-alignment-length", "1000")
    assert rc == 0 and merged == whole
    rc, _, err = swgpu("align-long", "--query", qf, "--target", tf, "--ends", *parts[:2], "--max-alignment-length", "1000")
    assert rc == 2 and "missing" in err
    rc, _, err = swgpu("align-long", "--query", qf, "--target", tf, "--ends", *parts, "--band-width", "32", "--max-alignment-length", "1000")
    assert rc == 2 and "band_width" in err


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
