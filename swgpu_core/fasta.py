"""Streaming FASTA input with the checks that give one-line errors.

Plain, gzip and bgzip files (and pipes such as ``/dev/stdin``) stream record by record and
no file is ever held in memory as one string. The reader is our own rather than htslib's
``kseq`` because kseq silently starts a new record at a line beginning with ``@`` or ``+``
(it reads FASTA and FASTQ alike), and because the data must be verified to its end:
Python's :mod:`gzip` checks every member's CRC and size and refuses a stream cut inside a
member, and a bgzip file must end with the BGZF end-of-file block, which is what a killed
``bgzip`` leaves out when it stops at a block boundary. Before parsing we look at the
first bytes: an empty file, text that is not FASTA, FASTQ or binary data are each named.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

import numpy as np

from .alphabet import INVALID, PROTEIN, Alphabet, unknown_residue
from .errors import InputError

_PEEK = 1 << 16
_GZIP_MAGIC = b"\x1f\x8b"
#: The 28-byte empty block that ends every complete BGZF file (SAM/BAM specification, 4.1.2).
BGZF_EOF = bytes.fromhex("1f8b08040000000000ff0600424302001b0003000000000000000000")
_NAME_END = re.compile(r"[ \t\v\f]")


@dataclass(frozen=True)
class FastaRecord:
    """One record: its id (first word of the header), the rest of the header, its residues."""

    id: str
    description: str
    sequence: str


@dataclass(frozen=True, slots=True)
class EncodedSequence:
    """A validated, encoded sequence (a query or a database entry)."""

    id: str
    description: str
    codes: np.ndarray

    def __len__(self) -> int:
        return int(self.codes.size)


def _is_bgzf(head: bytes) -> bool:
    """A gzip member with the BGZF extra field (``BC``), as bgzip writes."""
    return len(head) >= 18 and head[:4] == b"\x1f\x8b\x08\x04" and head[12:14] == b"BC"


def _open(path: str) -> IO[bytes]:
    """The decompressed byte stream of ``path`` (opened once, so a pipe works too).

    A seekable BGZF file must end with the BGZF EOF block; gzip trailers (CRC, size) and
    the end of the stream are checked by :mod:`gzip` as the data is read.
    """
    try:
        raw = open(path, "rb")  # noqa: SIM115 (the stream is returned to the caller, who closes it)
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    buffered = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw)
    head = buffered.peek(18)[:18]
    if head[:2] != _GZIP_MAGIC:
        return buffered
    if _is_bgzf(head) and raw.seekable():
        try:
            raw.seek(-len(BGZF_EOF), os.SEEK_END)
            tail = raw.read(len(BGZF_EOF))
            raw.seek(0)
        except OSError:
            tail = b""
        if tail != BGZF_EOF:
            raw.close()
            raise InputError(f"{path}: truncated bgzip file (no BGZF end-of-file block); the file is incomplete")
        buffered = io.BufferedReader(raw)
    return io.BufferedReader(gzip.GzipFile(fileobj=buffered, mode="rb"), buffer_size=1 << 20)  # type: ignore[arg-type]


def compressed_damage(path: str | os.PathLike) -> str | None:
    """What is wrong with a gzip/bgzip file's end, or None when it is complete (or not gzip).

    Reads the whole stream: every member's CRC and size are checked by :mod:`gzip`, a
    stream cut inside a member is found at its end, and a bgzip file must end with the
    BGZF EOF block (a bgzip killed between blocks leaves whole members and no EOF block).
    Used before a download is installed as a release; :func:`read_fasta` checks the same
    as it streams.
    """
    path = os.fspath(path)
    with open(path, "rb") as raw:
        head = raw.read(18)
        if head[:2] != _GZIP_MAGIC:
            return None
        if _is_bgzf(head):
            raw.seek(-min(len(BGZF_EOF), os.fstat(raw.fileno()).st_size), os.SEEK_END)
            if raw.read() != BGZF_EOF:
                return "truncated bgzip file (no BGZF end-of-file block)"
        raw.seek(0)
        try:
            with gzip.GzipFile(fileobj=raw, mode="rb") as fh:
                while fh.read(1 << 22):
                    pass
        except EOFError:
            return "truncated gzip file (the stream ends inside a member)"
        except (OSError, zlib.error) as exc:
            return f"damaged gzip data ({' '.join(str(exc).split())})"
    return None


def _read_error(path: str, exc: BaseException, where: str) -> InputError:
    if isinstance(exc, EOFError):
        return InputError(f"{path}: truncated compressed data {where} (the gzip stream ends early); the file is incomplete")
    return InputError(f"{path}: cannot read compressed data {where} ({' '.join(str(exc).split())})")


_DECOMPRESS_ERRORS = (OSError, EOFError, zlib.error, gzip.BadGzipFile)


def _check_head(path: str, head: bytes) -> None:
    """Name what the first bytes are when they are not FASTA."""
    if b"\x00" in head:
        raise InputError(f"{path}: binary data, not FASTA")
    not_utf8 = False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        first_line_end = head.find(b"\n")
        if head.lstrip()[:1] == b">" and (first_line_end < 0 or exc.start < first_line_end):
            raise InputError(
                f"{path}: record 1 header has a byte that is not UTF-8 (0x{head[exc.start]:02x} at byte offset {exc.start})"
            ) from None
        not_utf8 = exc.start < len(head) - 4  # a multi-byte character cut by the peek is fine
    text = head.lstrip()
    if not text:
        raise InputError(f"{path}: empty file, no FASTA records")
    if not text.startswith(b">"):
        if not_utf8:
            raise InputError(f"{path}: binary data, not FASTA")
        what = "FASTQ" if text.startswith(b"@") else "text"
        raise InputError(f"{path}: {what}, not FASTA (the first record must start with '>')")


def _check_path(path: str) -> None:
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file")
    if os.path.isdir(path):
        raise InputError(f"{path}: is a directory, not a FASTA file")
    if not os.access(path, os.R_OK):
        raise InputError(f"{path}: not readable (permission denied)")


def _peek_stream(path: str, fh: IO[bytes]) -> bytes:
    try:
        head = fh.peek(_PEEK)  # type: ignore[attr-defined]
        while len(head) < _PEEK:  # peek returns what one read gave; a pipe may give less
            more = fh.peek(_PEEK)  # type: ignore[attr-defined]
            if len(more) <= len(head):
                break
            head = more
    except _DECOMPRESS_ERRORS as exc:
        raise _read_error(path, exc, "at the start") from None
    return head[:_PEEK]


def check_fasta_file(path: str | os.PathLike) -> str:
    """Raise :class:`InputError` unless ``path`` looks like a readable FASTA file.

    Only the beginning is looked at (and a bgzip file's end); damage further on is found
    by :func:`read_fasta`, which verifies the data to its end.
    """
    path = os.fspath(path)
    _check_path(path)
    with _open(path) as fh:
        _check_head(path, _peek_stream(path, fh))
    return path


def read_fasta(path: str | os.PathLike) -> Iterator[FastaRecord]:
    """Yield the records of a FASTA file (plain, gzip or bgzip), checked as they stream.

    The file is opened once, so ``/dev/stdin`` and other pipes work. Errors name the file,
    the record and, for bytes that are not UTF-8 in a header, the line.
    """
    for _, name, description, residues in record_bodies(path):
        yield FastaRecord(name, description, residues.decode("latin-1"))


def record_bodies(path: str | os.PathLike) -> Iterator[tuple[int, str, str, bytearray]]:
    """(number, id, description, residues) of each record of a FASTA file, as :func:`read_fasta`
    reads and checks them; the residues as the file's bytes less the line ends, for
    :func:`encode_body` (no text made only to be encoded again)."""
    path = os.fspath(path)
    _check_path(path)
    number, name, description, seq = 0, "", "", []
    line_no = 0
    with _open(path) as fh:
        _check_head(path, _peek_stream(path, fh))
        try:
            for line_no, line in enumerate(fh, start=1):
                first = line[:1]
                if first == b">":
                    if number:
                        yield number, name, description, bytearray().join(seq)
                    number += 1
                    name, description = _header(path, number, line_no, line)
                    seq = []
                elif first in (b"@", b"+") and number:
                    raise _fastq_error(path, number, name, line_no, first)
                else:
                    stripped = line.rstrip(b"\r\n")
                    if stripped:
                        seq.append(stripped)
        except _DECOMPRESS_ERRORS as exc:
            raise _read_error(path, exc, f"after record {number}, line {line_no}") from None
    if number:
        yield number, name, description, bytearray().join(seq)
    else:
        raise InputError(f"{path}: no FASTA records")


@dataclass(frozen=True)
class SingleRecord:
    """What :func:`read_single_record` found: the first record, its residues the span
    ``data[start:stop]`` of the file's bytes with the line ends still in
    (:meth:`swgpu_core.alphabet.Alphabet.encode_span` drops them as it encodes, without
    copying the span out first), and the id of a second record if the file has one."""

    id: str
    description: str
    data: bytearray
    start: int
    stop: int
    second: str | None


def read_single_record(path: str | os.PathLike) -> SingleRecord:
    """The first record of a FASTA file expected to hold one (align-long's target: 10^8 residues
    and more), read in one piece: the file, then a few scans of its bytes in C.

    Why: :func:`read_fasta` walks the lines in Python (1.25 M lines for 10^8 residues at 80 per
    line: 0.76 s of a 2.7 s align-long run on an H200) and copies the residues five times. Here
    a plain file is read straight into one buffer and the body is never copied out of it (each
    100 MB copy holds the interpreter's lock for 0.06-0.08 s, which the GPU's set-up in the
    warm-up thread waits for). The checks are :func:`read_fasta`'s, with its messages and the
    same precedence, which a test compares case by case: the start (:func:`_check_head`), the
    headers (:func:`_header`), a line starting with ``@`` or ``+`` (FASTQ) in the first or
    second record, damaged compressed data anywhere. A body with a carriage return goes
    through :func:`read_fasta` (CRLF line ends; the line reader strips any run of them at a
    line's end).
    """
    path = os.fspath(path)
    _check_path(path)
    with _open(path) as fh:
        _check_head(path, _peek_stream(path, fh))
        try:
            data = _read_whole(fh)
        except _DECOMPRESS_ERRORS as exc:
            raise _read_error(path, exc, "before its end") from None
    start = data.find(b">")  # _check_head: only blank space before it
    eol = data.find(b"\n", start)
    eol = len(data) if eol < 0 else eol
    header_line = data.count(b"\n", 0, start) + 1
    name, description = _header(path, 1, header_line, bytes(data[start:eol]) + b"\n")
    body = min(eol + 1, len(data))  # where the first record's residues start
    if data.find(b"\r", body) >= 0:
        records = read_fasta(path)
        first, second = next(records), next(records, None)
        residues = bytearray(first.sequence.encode("latin-1"))
        return SingleRecord(first.id, first.description, residues, 0, len(residues), None if second is None else second.id)
    stop, mark = _next_mark(data, body)
    if mark in (b"@", b"+"):
        raise _fastq_error(path, 1, name, header_line + data.count(b"\n", body, stop) + 1, mark)
    if mark is None:
        return SingleRecord(name, description, data, body, len(data), None)
    # a second record: read_fasta parses its header and its lines before the caller sees it
    line2 = header_line + data.count(b"\n", body, stop) + 1
    eol2 = data.find(b"\n", stop)
    eol2 = len(data) if eol2 < 0 else eol2
    name2, _ = _header(path, 2, line2, bytes(data[stop:eol2]) + b"\n")
    stop2, mark2 = _next_mark(data, eol2 + 1)
    if mark2 in (b"@", b"+"):
        raise _fastq_error(path, 2, name2, line2 + data.count(b"\n", eol2 + 1, stop2) + 1, mark2)
    return SingleRecord(name, description, data, body, stop, name2)


def _read_whole(fh: IO[bytes]) -> bytearray:
    """The rest of ``fh`` in one writable buffer: a regular file read straight into a buffer of
    its size (no copy); a pipe, which reports no size, or a compressed stream in pieces joined once."""
    raw = getattr(fh, "raw", None)
    if isinstance(raw, io.FileIO):
        try:
            size = os.fstat(raw.fileno()).st_size - fh.tell()
        except OSError:
            size = 0
        if size > 0:
            data = bytearray(size)
            del data[fh.readinto(data) :]  # type: ignore[attr-defined]  # fewer bytes: the file shrank meanwhile
            rest = fh.read()  # more: it grew
            if rest:
                data += rest
            return data
    pieces = []
    while piece := fh.read(1 << 24):
        pieces.append(piece)
    return bytearray().join(pieces)


def _next_mark(body: bytes | bytearray, at: int) -> tuple[int, bytes | None]:
    """The first line at or after offset ``at`` (a line start) of ``body`` that starts with
    ``>``, ``@`` or ``+``: (its offset, that byte), or (len(body), None)."""
    found = [(i, m) for m in (b">", b"@", b"+") for i in [_line_start(body, at, m)] if i >= 0]
    return min(found) if found else (len(body), None)


def _line_start(body: bytes | bytearray, at: int, mark: bytes) -> int:
    """The first offset >= ``at`` of ``mark`` at a line's start, or -1: ``mark`` alone is
    found by memchr (a residue body seldom holds it), then its line start checked."""
    i = body.find(mark, at)
    while i > at and body[i - 1] != 10:  # not after a line end
        i = body.find(mark, i + 1)
    return i


def _fastq_error(path: str, number: int, name: str, line_no: int, first: bytes) -> InputError:
    what = "FASTQ, not FASTA" if first == b"+" else "FASTQ or a damaged file"
    return InputError(f"{path}: record {number} ({name}): line {line_no} starts with {first.decode()!r} ({what})")


def _header(path: str, number: int, line_no: int, line: bytes) -> tuple[str, str]:
    """(id, description) of a header line: the id is the first word, as in BLAST and htslib."""
    header = line[1:].rstrip(b"\r\n")
    try:
        text = header.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{path}: record {number} (line {line_no}) header has a byte that is not UTF-8 (0x{header[exc.start]:02x} at column {exc.start + 2})"
        ) from None
    if "\0" in text:
        raise InputError(f"{path}: record {number} (line {line_no}) header holds a NUL byte: binary data, not FASTA")
    match = _NAME_END.search(text)  # ASCII: the same place in the text as in the bytes
    name = text[: match.start()] if match else text
    if not name:
        raise InputError(f"{path}: record {number} has an empty header")
    rest = text[match.start() + 1 :] if match else ""
    return name, rest.strip()


def encode_body(path: str, number: int, name: str, residues: bytearray, alphabet: Alphabet = PROTEIN) -> np.ndarray:
    """Codes of :func:`record_bodies`' record ``number`` (a writable array of its own), or an
    :class:`InputError` naming file, record and residue. Why from the bytes: through
    :func:`read_fasta`'s text, encoded again, a record cost two more copies and about 1.5 us more
    (bench/RESULTS.md, thirty-second session), on every record of ``makedb`` and ``swgpu pairs``."""
    if not residues:
        raise InputError(f"{path}: record {number} ({name}) has no residues")
    codes = residues.translate(alphabet.lookup)
    bad = codes.find(INVALID)
    if bad >= 0:
        raise InputError(f"{path}: record {number} ({name}): {unknown_residue(residues[bad], bad + 1)}")
    return np.frombuffer(codes, np.uint8)


def encode_single(path: str, record: SingleRecord, alphabet: Alphabet = PROTEIN) -> np.ndarray:
    """Codes of :func:`read_single_record`'s record, with :func:`encode_body`'s errors."""
    try:
        codes = alphabet.encode_span(record.data, record.start, record.stop, delete=b"\n")
    except ValueError as exc:
        raise InputError(f"{path}: record 1 ({record.id}): {exc}") from None
    if not codes.size:
        raise InputError(f"{path}: record 1 ({record.id}) has no residues")
    return codes


def encoded_records(path: str | os.PathLike, alphabet: Alphabet = PROTEIN) -> Iterator[EncodedSequence]:
    """The records of a FASTA file, encoded in order (errors name file and record)."""
    path = os.fspath(path)
    for number, name, description, residues in record_bodies(path):
        yield EncodedSequence(name, description, encode_body(path, number, name, residues, alphabet))


def read_sequences(path: str | os.PathLike, alphabet: Alphabet = PROTEIN) -> list[EncodedSequence]:
    """All records of a (small) FASTA file, encoded; ids must be unique. Used for queries."""
    seen: dict[str, int] = {}
    out: list[EncodedSequence] = []
    for number, seq in enumerate(encoded_records(path, alphabet), start=1):
        if seq.id in seen:
            raise InputError(f"{os.fspath(path)}: record {number} ({seq.id}) repeats the id of record {seen[seq.id]}")
        seen[seq.id] = number
        out.append(seq)
    return out
