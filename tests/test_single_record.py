"""align-long's target reader (fasta.read_single_record, long.run.read_single) against the
line reader it replaced (read_fasta + encode_record): the same record, or the same error
message, on 3,000 generated files, plain and gzipped; and encoded_records against the same."""

from __future__ import annotations

import gzip
import os

import numpy as np
import pytest

from swgpu_core.alphabet import DNA, PROTEIN
from swgpu_core.errors import InputError
from swgpu_core.fasta import EncodedSequence, FastaRecord, encoded_records, read_fasta
from swgpu_core.long.run import read_single

HEADERS = [b">t1 a target\n", b">t2\n", b">\xff\n", b">t3 desc\xe9\n"]
HEADER_P = [0.47, 0.47, 0.03, 0.03]
LINES = [b"ACGT\n", b"acgtn\n", b"ACGTACGTACGTACGTACGT\n", b"ACG\n", b"NNNN\n", b"ACGT", b"\n",  # residues, blank
         b"ACGJ\n", b"AC GT\n", b"MKV\n", b"  \n", b"A>C\n", b"A@C+\n", b"@r1\n", b"+\n"]  # fmt: skip
LINE_P = np.array([8, 8, 8, 8, 4, 2, 4, 1, 1, 1, 1, 1, 1, 1, 1], float) / 50


def encode_record(path: str, number: int, record: FastaRecord, alphabet) -> np.ndarray:
    """How swgpu_core.fasta encoded a record of read_fasta before encode_body (its body, verbatim)."""
    if not record.sequence:
        raise InputError(f"{path}: record {number} ({record.id}) has no residues")
    try:
        return alphabet.encode(record.sequence)
    except ValueError as exc:
        raise InputError(f"{path}: record {number} ({record.id}): {exc}") from None


def line_reader(path: str, alphabet) -> EncodedSequence:
    """What read_single did before the whole-file reader (its body, verbatim)."""
    records = read_fasta(path)
    first = next(records)
    extra = next(records, None)
    if extra is not None:
        raise InputError(f"{path}: the target must be a single FASTA record (record 2 is {extra.id}); align-long aligns one pair")
    return EncodedSequence(first.id, first.description, encode_record(path, 1, first, alphabet))


def outcome(fn, path: str, alphabet):
    try:
        seq = fn(path, alphabet)
    except InputError as exc:
        return ("error", str(exc))
    return ("ok", seq.id, seq.description, seq.codes.tobytes())


def generated(rng: np.random.Generator) -> bytes:
    """A file of mostly sound records, now and then a bad byte, a FASTQ line, a second record,
    CRLF line ends or a missing last line end."""

    def lines(most: int) -> bytes:
        return b"".join(LINES[int(k)] for k in rng.choice(len(LINES), int(rng.integers(0, most)), p=LINE_P))

    lead = rng.choice([b"", b"\n", b"  \n"], p=[0.8, 0.1, 0.1])
    header = HEADERS[int(rng.choice(len(HEADERS), p=HEADER_P))]
    text = lead + header + lines(8)
    if rng.random() < 0.25:
        text += HEADERS[int(rng.choice(len(HEADERS), p=HEADER_P))] + lines(4)
    if rng.random() < 0.1:
        text = text.replace(b"\n", b"\r\n")  # CRLF: the line reader's path
    if rng.random() < 0.1:
        text = text.rstrip(b"\n")
    return text


@pytest.mark.parametrize("compress", [False, True])
def test_the_whole_file_reader_equals_the_line_reader(tmp_path, compress):
    rng = np.random.default_rng(17 + compress)
    differing = []
    for case in range(1500):
        text = generated(rng)
        path = str(tmp_path / f"t{case}.fa{'.gz' if compress else ''}")
        with gzip.open(path, "wb") if compress else open(path, "wb") as fh:
            fh.write(text)
        alphabet = DNA if case % 3 else PROTEIN
        want = outcome(line_reader, path, alphabet)
        got = outcome(lambda p, a: read_single(p, a, "target"), path, alphabet)
        if got != want:
            differing.append((text, want, got))
        os.unlink(path)
    assert not differing, differing[:3]


def test_a_truncated_gzip_target_is_refused(tmp_path):
    path = tmp_path / "t.fa.gz"
    data = gzip.compress(b">t\n" + b"ACGT" * 50_000 + b"\n")
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match=r"t\.fa\.gz: .*(truncated|cannot read)"):
        read_single(path, DNA, "target")


def test_a_wrapped_target_reads_as_its_residues(tmp_path):
    codes = np.random.default_rng(3).integers(0, 4, 10_007).astype(np.uint8)
    text = DNA.decode(codes).encode()
    path = tmp_path / "t.fa"
    path.write_bytes(b">big genome\n" + b"\n".join(text[i : i + 60] for i in range(0, len(text), 60)) + b"\n")
    seq = read_single(path, DNA, "target")
    assert (seq.id, seq.description) == ("big", "genome") and np.array_equal(seq.codes, codes) and seq.codes.flags.writeable


def _codes_or_error(fn, *args) -> bytes | str:
    try:
        return fn(*args).tobytes()
    except ValueError as exc:
        return str(exc)


def test_a_span_encodes_as_its_bytes_would_alone():
    """Alphabet.encode_span (the reader's, over the whole file without copying the body out)
    against encode of the span copied out: spans with bytes before and after them, line ends
    dropped or not, empty spans, and a bad byte named at its place among the codes."""
    rng = np.random.default_rng(5)
    letters = np.frombuffer(b"ACGTNacgt\n>x\r", np.uint8)
    for case in range(400):
        data = bytearray(letters[rng.integers(0, 9 if case % 4 else letters.size, int(rng.integers(0, 60)))].tobytes())
        start = int(rng.integers(0, len(data) + 1))
        stop = int(rng.integers(start, len(data) + 1))
        delete = [b"", b"\n", b"\n\r"][case % 3]
        got = _codes_or_error(DNA.encode_span, data, start, stop, delete)
        assert got == _codes_or_error(DNA.encode, bytes(data[start:stop]), delete), (data, start, stop, delete)
    span = DNA.encode_span(bytearray(b">h\nACGT\nAC\nxx"), 3, 11, b"\n")
    assert span.tobytes() == DNA.encode(b"ACGTAC").tobytes() and span.flags.writeable


def test_a_bad_byte_is_named_at_its_place_and_the_table_is_made_once(monkeypatch):
    """Every position of a record, the first and the last too, names its bad byte there, with and
    without bytes before the span; records encoded one after another make each alphabet's lookup
    table once (made per record, it cost 14 us a record: bench/RESULTS.md, thirty-first session)."""
    from swgpu_core import alphabet

    body = b"ACGTNACGTA"
    for at in range(len(body)):
        bad = body[:at] + b"!" + body[at + 1 :]
        assert _codes_or_error(DNA.encode, bad) == f"unknown residue '!' at position {at + 1}"
        data = bytearray(b">h\n" + bad[:5] + b"\n" + bad[5:] + b"\nAC")
        assert _codes_or_error(DNA.encode_span, data, 3, len(data) - 2, b"\n") == f"unknown residue '!' at position {at + 1}"
    assert DNA.encode(b"acgu").tobytes() == DNA.encode(b"ACGT").tobytes()
    made = []
    table = alphabet.Alphabet.encode_table
    monkeypatch.setattr(alphabet.Alphabet, "encode_table", property(lambda self: made.append(self.name) or table.fget(self)))
    monkeypatch.setattr(alphabet, "_ENCODE_CACHE", {})
    for _ in range(50):
        DNA.encode(b"ACGT")
        alphabet.PROTEIN.encode(b"MKV")
    assert sorted(made) == ["dna", "protein"]


def _records_or_error(read, path: str, alphabet) -> list | str:
    try:
        return [(name, desc, codes.tobytes(), codes.flags.writeable) for name, desc, codes in read(path, alphabet)]
    except InputError as exc:
        return str(exc)


def _through_text(path: str, alphabet):
    """What the readers did before record_bodies: read_fasta's text, then encode_record."""
    for number, rec in enumerate(read_fasta(path), start=1):
        yield rec.id, rec.description, encode_record(path, number, rec, alphabet)


def _encoded(path: str, alphabet):
    for seq in encoded_records(path, alphabet):
        yield seq.id, seq.description, seq.codes


@pytest.mark.parametrize("compress", [False, True])
def test_encoded_records_equal_the_text_and_its_encoding(tmp_path, compress):
    """encoded_records (record_bodies, then encode_body on the file's bytes) against read_fasta's
    text encoded by encode_record: the same records, writable codes, or the same error, on 1,500
    files of several records with now and then a bad byte, an empty record, a FASTQ line, a bad
    header, CRLF line ends or a missing last line end."""
    rng = np.random.default_rng(29 + compress)

    def record() -> bytes:
        lines = b"".join(LINES[int(k)] for k in rng.choice(len(LINES), int(rng.integers(0, 6)), p=LINE_P))
        return HEADERS[int(rng.choice(len(HEADERS), p=HEADER_P))] + lines

    differing = []
    for case in range(1500):
        text = rng.choice([b"", b"\n", b"  \n"], p=[0.8, 0.1, 0.1]) + b"".join(record() for _ in range(int(rng.integers(1, 6))))
        if rng.random() < 0.1:
            text = text.replace(b"\n", b"\r\n")
        if rng.random() < 0.1:
            text = text.rstrip(b"\n")
        path = str(tmp_path / f"r{case}.fa{'.gz' if compress else ''}")
        with gzip.open(path, "wb") if compress else open(path, "wb") as fh:
            fh.write(text)
        alphabet = DNA if case % 3 else PROTEIN
        want = _records_or_error(_through_text, path, alphabet)
        got = _records_or_error(_encoded, path, alphabet)
        if got != want:
            differing.append((text, want, got))
        os.unlink(path)
    assert not differing, differing[:3]


@pytest.mark.parametrize(
    ("line", "want"),
    [
        (">sp|P1|X_HUMAN Protein X OS=Homo sapiens\n", ("sp|P1|X_HUMAN", "Protein X OS=Homo sapiens")),
        (">π-σ\tβ tail \r\n", ("π-σ", "β tail")),  # multi-byte letters before the tab: the name is counted in characters
        (">ü\x0bv\x0c w\n", ("ü", "v\x0c w")),
        (">name\n", ("name", "")),
        (">näme  two  spaces \n", ("näme", "two  spaces")),
    ],
)
def test_a_header_is_its_first_word_and_the_rest(line: str, want: tuple[str, str]) -> None:
    from swgpu_core.fasta import _header

    assert _header("f.fa", 1, 1, line.encode()) == want


def test_an_empty_name_is_refused() -> None:
    from swgpu_core.fasta import _header

    with pytest.raises(InputError, match=r"f\.fa: record 3 has an empty header"):
        _header("f.fa", 3, 7, b"> x\n")
