"""Streaming FASTA input with the checks that give one-line errors.

pysam (htslib) does the parsing, so plain and gzip/bgzip files stream record by record
and no file is ever held in memory as one string. Before handing a file to pysam we look
at its first bytes, because htslib happily reads FASTQ, and garbage in, garbage out: an
empty file, text that is not FASTA, or binary data must each be named as such.
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from .alphabet import PROTEIN, Alphabet
from .errors import InputError

_PEEK = 1 << 16


@dataclass(frozen=True)
class FastaRecord:
    """One record: its id (first word of the header), the rest of the header, its residues."""

    id: str
    description: str
    sequence: str


@dataclass(frozen=True)
class EncodedSequence:
    """A validated, encoded sequence (a query or a database entry)."""

    id: str
    description: str
    codes: np.ndarray

    def __len__(self) -> int:
        return int(self.codes.size)


def _peek(path: str) -> bytes:
    """The first bytes of the (decompressed) file."""
    with open(path, "rb") as fh:
        magic = fh.read(2)
    try:
        if magic == b"\x1f\x8b":
            with gzip.open(path, "rb") as fh:
                return fh.read(_PEEK)
        with open(path, "rb") as fh:
            return fh.read(_PEEK)
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"{path}: cannot read compressed data ({exc})") from None


def check_fasta_file(path: str | os.PathLike) -> str:
    """Raise :class:`InputError` unless ``path`` looks like a readable FASTA file."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file")
    if os.path.isdir(path):
        raise InputError(f"{path}: is a directory, not a FASTA file")
    if not os.access(path, os.R_OK):
        raise InputError(f"{path}: not readable (permission denied)")
    head = _peek(path)
    if b"\x00" in head:
        raise InputError(f"{path}: binary data, not FASTA")
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # a multi-byte character cut by the peek is fine
            raise InputError(f"{path}: binary data, not FASTA") from None
    text = head.lstrip()
    if not text:
        raise InputError(f"{path}: empty file, no FASTA records")
    if not text.startswith(b">"):
        what = "FASTQ" if text.startswith(b"@") else "text"
        raise InputError(f"{path}: {what}, not FASTA (the first record must start with '>')")
    return path


def read_fasta(path: str | os.PathLike) -> Iterator[FastaRecord]:
    """Yield the records of a FASTA file (plain, gzip or bgzip), checked as they stream."""
    import pysam  # here, not at start-up: every command imports this module

    path = check_fasta_file(path)
    number = 0
    try:
        with pysam.FastxFile(path, persist=False) as fh:
            for entry in fh:
                number += 1
                name = entry.name or ""
                if entry.quality:
                    raise InputError(f"{path}: record {number} ({name}) has qualities: FASTQ, not FASTA")
                if not name:
                    raise InputError(f"{path}: record {number} has an empty header")
                yield FastaRecord(name, (entry.comment or "").strip(), entry.sequence or "")
    except InputError:
        raise
    except (OSError, ValueError, zlib.error) as exc:
        raise InputError(f"{path}: unreadable after record {number} ({exc})") from None
    if number == 0:
        raise InputError(f"{path}: no FASTA records")


def encode_record(path: str, number: int, record: FastaRecord, alphabet: Alphabet = PROTEIN) -> np.ndarray:
    """Codes of one record, or an :class:`InputError` naming file, record and residue."""
    if not record.sequence:
        raise InputError(f"{path}: record {number} ({record.id}) has no residues")
    try:
        return alphabet.encode(record.sequence)
    except ValueError as exc:
        raise InputError(f"{path}: record {number} ({record.id}): {exc}") from None


def encoded_records(path: str | os.PathLike, alphabet: Alphabet = PROTEIN) -> Iterator[EncodedSequence]:
    """The records of a FASTA file, encoded in order (errors name file and record)."""
    path = os.fspath(path)
    for number, record in enumerate(read_fasta(path), start=1):
        yield EncodedSequence(record.id, record.description, encode_record(path, number, record, alphabet))


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
