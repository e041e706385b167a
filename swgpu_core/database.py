"""The on-disk database: encoded residues sorted by length, cut into chunks.

Layout of a database directory (format :data:`FORMAT_VERSION`)::

    manifest.json        format version, source and checksum, counts, length statistics,
                         length histogram, chunk boundaries
    residues.u8          all residue codes, sequences back to back in ascending length order
    offsets.i64.npy      n+1 start offsets into residues.u8
    lengths.i32.npy      n sequence lengths
    order.i64.npy        n input positions (the record number - 1 in the source FASTA)
    headers.bin          "id\\0description\\0" per sequence, in sorted order
    header_offsets.i64.npy

Every array is memory-mapped on open, so a search touches only the chunks it scans.
Sorting by length lets the GPU kernels hand out subjects of alike lengths together and
cut the database at a length threshold. The build streams the FASTA twice over files on
disk (never the whole database in memory) and writes into a temporary directory that is
renamed into place only when complete.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from . import __version__
from .alphabet import PROTEIN, Alphabet, get_alphabet
from .errors import DatabaseError, InputError
from .fasta import check_fasta_file, encode_record, read_fasta
from .progress import progress_bar

FORMAT_VERSION = 1
DEFAULT_CHUNK_RESIDUES = 64_000_000
_COPY_BATCH = 1 << 22  # residues per step of the sort pass: its index arrays take 8 bytes per residue

_FILES = ("residues.u8", "offsets.i64.npy", "lengths.i32.npy", "order.i64.npy", "headers.bin", "header_offsets.i64.npy")


@dataclass(frozen=True)
class Chunk:
    """A run of consecutive (length-sorted) sequences, the unit a search job streams."""

    index: int
    first: int  # first sequence (sorted numbering)
    stop: int  # one past the last sequence
    residue_start: int
    residue_stop: int

    @property
    def n_sequences(self) -> int:
        return self.stop - self.first

    @property
    def n_residues(self) -> int:
        return self.residue_stop - self.residue_start


class Database:
    """A read-only, memory-mapped database directory."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        manifest_path = self.path / "manifest.json"
        if not self.path.is_dir():
            raise DatabaseError(f"{self.path}: no such database directory (build one with 'swgpu makedb')")
        try:
            self.manifest = json.loads(manifest_path.read_text())
        except FileNotFoundError:
            raise DatabaseError(f"{self.path}: not a swgpu database (no manifest.json)") from None
        except (OSError, ValueError) as exc:
            raise DatabaseError(f"{manifest_path}: unreadable manifest ({exc})") from None
        version = self.manifest.get("format_version") if isinstance(self.manifest, dict) else None
        if version != FORMAT_VERSION:
            raise DatabaseError(
                f"{self.path}: database format version {version}, this swgpu reads version {FORMAT_VERSION}; "
                "rebuild it with 'swgpu makedb'"
            )
        missing = [f for f in _FILES if not (self.path / f).is_file()]
        if missing:
            raise DatabaseError(f"{self.path}: corrupt database, missing {', '.join(missing)}")
        try:
            self.offsets = np.load(self.path / "offsets.i64.npy", mmap_mode="r")
            self.lengths = np.load(self.path / "lengths.i32.npy", mmap_mode="r")
            self.order = np.load(self.path / "order.i64.npy", mmap_mode="r")
            self._header_offsets = np.load(self.path / "header_offsets.i64.npy", mmap_mode="r")
        except (OSError, ValueError) as exc:
            raise DatabaseError(f"{self.path}: corrupt database ({exc})") from None
        n, residues = self.manifest["n_sequences"], self.manifest["n_residues"]
        sizes_ok = (
            self.offsets.shape == (n + 1,)
            and self.lengths.shape == (n,)
            and self.order.shape == (n,)
            and self._header_offsets.shape == (n + 1,)
            and (self.path / "residues.u8").stat().st_size == residues
            and (n == 0 or int(self.offsets[-1]) == residues)
        )
        if not sizes_ok:
            raise DatabaseError(f"{self.path}: corrupt database (array sizes disagree with manifest.json)")
        self.alphabet: Alphabet = get_alphabet(self.manifest["alphabet"])
        self.residues = np.memmap(self.path / "residues.u8", dtype=np.uint8, mode="r") if residues else np.zeros(0, np.uint8)
        self._headers = np.memmap(self.path / "headers.bin", dtype=np.uint8, mode="r")

    # -- size and statistics ------------------------------------------------------------
    @property
    def n_sequences(self) -> int:
        return int(self.manifest["n_sequences"])

    @property
    def n_residues(self) -> int:
        return int(self.manifest["n_residues"])

    @property
    def max_length(self) -> int:
        return int(self.manifest["length_stats"]["max"])

    @property
    def version_tag(self) -> str:
        """Identifies the database release: the checksum of the FASTA it was built from."""
        return self.manifest["source"]["sha256"][:16]

    @cached_property
    def chunks(self) -> list[Chunk]:
        return [Chunk(**c) for c in self.manifest["chunks"]]

    # -- records ------------------------------------------------------------------------
    def codes(self, i: int) -> np.ndarray:
        """Residue codes of sequence ``i`` (sorted numbering)."""
        return self.residues[self.offsets[i] : self.offsets[i + 1]]

    def header(self, i: int) -> tuple[str, str]:
        """(id, description) of sequence ``i``."""
        raw = bytes(self._headers[self._header_offsets[i] : self._header_offsets[i + 1]])
        ident, desc, _ = raw.split(b"\0")
        return ident.decode(), desc.decode()

    def seq_id(self, i: int) -> str:
        return self.header(i)[0]

    def sequence(self, i: int) -> str:
        return self.alphabet.decode(self.codes(i))

    def __len__(self) -> int:
        return self.n_sequences

    def __repr__(self) -> str:
        return f"Database({str(self.path)!r}, {self.n_sequences} sequences, {self.n_residues} residues)"


def length_histogram(lengths: np.ndarray, bins: int = 60) -> tuple[np.ndarray, np.ndarray]:
    """Counts over log-spaced length bins (edges are integers, first edge 1)."""
    top = max(int(lengths.max()) if lengths.size else 1, 1)
    edges = np.unique(np.round(np.logspace(0, np.log10(top + 1), bins + 1)).astype(np.int64))
    edges[-1] = max(edges[-1], top + 1)
    counts, _ = np.histogram(lengths, bins=edges)
    return edges, counts


def _chunk_bounds(offsets: np.ndarray, chunk_residues: int) -> list[dict]:
    """Cut the sorted sequences into chunks of about ``chunk_residues`` residues."""
    n = offsets.size - 1
    chunks, first = [], 0
    while first < n:
        stop = int(np.searchsorted(offsets, offsets[first] + chunk_residues, side="right")) - 1
        stop = min(max(stop, first + 1), n)
        chunks.append(
            dict(index=len(chunks), first=first, stop=stop, residue_start=int(offsets[first]), residue_stop=int(offsets[stop]))
        )
        first = stop
    return chunks


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def build_database(
    fasta: str | os.PathLike,
    dbdir: str | os.PathLike,
    *,
    chunk_residues: int = DEFAULT_CHUNK_RESIDUES,
    alphabet: Alphabet = PROTEIN,
    show_progress: bool = True,
) -> Database:
    """Build a database from a FASTA file; the directory appears only when complete."""
    fasta, dbdir = os.fspath(fasta), Path(dbdir)
    if chunk_residues < 1:
        raise InputError(f"chunk size must be at least one residue (got {chunk_residues})")
    check_fasta_file(fasta)
    _check_replaceable(dbdir)
    started = time.time()
    created = _make_parents(dbdir.parent)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{dbdir.name}.tmp-", dir=dbdir.parent))
    except OSError as exc:
        _remove_empty(created)
        raise InputError(f"{dbdir}: cannot create the database here ({exc.strerror})") from None
    umask = os.umask(0)
    os.umask(umask)
    tmp.chmod(0o777 & ~umask)  # mkdtemp makes it private; a database is shared like any directory
    try:
        _build_into(fasta, tmp, chunk_residues, alphabet, show_progress, started)
        if dbdir.exists():
            old = dbdir.with_name(f".{dbdir.name}.old-{os.getpid()}")
            dbdir.rename(old)
            tmp.rename(dbdir)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(dbdir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        _remove_empty(created)
        raise
    return Database(dbdir)


def _check_replaceable(dbdir: Path) -> None:
    """Refuse to replace anything but an earlier database or an empty directory.

    A rebuild swaps the new directory in and deletes the old one, so a mistyped DBDIR
    (``.``, a project directory) must not be taken for a database.
    """
    if not dbdir.exists():
        return
    if not dbdir.is_dir():
        raise InputError(f"{dbdir}: exists and is not a directory; refusing to replace it with a database")
    if not (dbdir / "manifest.json").is_file() and any(dbdir.iterdir()):
        raise InputError(f"{dbdir}: exists and is not a swgpu database; refusing to replace it")


def _make_parents(directory: Path) -> list[Path]:
    """Create ``directory`` and missing ancestors; returns those created, outermost first."""
    missing = [d for d in (directory, *directory.parents) if not d.exists()][::-1]
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{directory}: cannot create directory ({exc.strerror})") from None
    return missing


def _remove_empty(directories: list[Path]) -> None:
    """Remove the directories a failed build created (innermost first), if still empty."""
    for d in reversed(directories):
        try:
            d.rmdir()
        except OSError:
            break


def _build_into(fasta: str, out: Path, chunk_residues: int, alphabet: Alphabet, show_progress: bool, started: float) -> None:
    unsorted_path = out / "unsorted.u8"
    lengths: list[int] = []
    seen: dict[str, int] = {}
    size = os.path.getsize(fasta) if os.path.exists(fasta) else 0
    # Pass 1: validate, encode and append residues in input order; keep only ids and lengths.
    with open(unsorted_path, "wb") as res, open(out / "headers.unsorted", "wb") as hdr:
        header_lengths: list[int] = []
        bar = progress_bar(desc=f"reading {os.path.basename(fasta)}", unit=" seq", disable=not show_progress)
        for number, record in enumerate(read_fasta(fasta), start=1):
            if record.id in seen:
                raise InputError(f"{fasta}: record {number} ({record.id}) repeats the id of record {seen[record.id]}")
            seen[record.id] = number
            codes = encode_record(fasta, number, record, alphabet)
            res.write(codes.tobytes())
            lengths.append(codes.size)
            blob = record.id.encode() + b"\0" + record.description.replace("\0", " ").encode() + b"\0"
            hdr.write(blob)
            header_lengths.append(len(blob))
            bar.update(1)
        bar.close()
    del seen
    lens = np.asarray(lengths, dtype=np.int64)
    del lengths
    src_offsets = np.zeros(lens.size + 1, dtype=np.int64)
    np.cumsum(lens, out=src_offsets[1:])
    hlens = np.asarray(header_lengths, dtype=np.int64)
    src_hoffsets = np.zeros(hlens.size + 1, dtype=np.int64)
    np.cumsum(hlens, out=src_hoffsets[1:])

    # Pass 2: write residues and headers in ascending length order (ties keep input order).
    order = np.argsort(lens, kind="stable")
    sorted_lens = lens[order]
    offsets = np.zeros(lens.size + 1, dtype=np.int64)
    np.cumsum(sorted_lens, out=offsets[1:])
    _gather(unsorted_path, out / "residues.u8", src_offsets, order, offsets, show_progress, "sorting residues")
    header_offsets = np.zeros(lens.size + 1, dtype=np.int64)
    np.cumsum(hlens[order], out=header_offsets[1:])
    _gather(out / "headers.unsorted", out / "headers.bin", src_hoffsets, order, header_offsets, False, "")
    unsorted_path.unlink()
    (out / "headers.unsorted").unlink()

    np.save(out / "offsets.i64.npy", offsets)
    np.save(out / "lengths.i32.npy", sorted_lens.astype(np.int32))
    np.save(out / "order.i64.npy", order.astype(np.int64))
    np.save(out / "header_offsets.i64.npy", header_offsets)
    edges, counts = length_histogram(sorted_lens)
    manifest = {
        "format_version": FORMAT_VERSION,
        "swgpu_version": __version__,
        "alphabet": alphabet.name,
        "source": {"path": os.path.abspath(fasta), "size": size, "sha256": _sha256(fasta)},
        "n_sequences": int(lens.size),
        "n_residues": int(offsets[-1]),
        "length_stats": {
            "min": int(sorted_lens[0]),
            "mean": float(sorted_lens.mean()),
            "median": float(np.median(sorted_lens)),
            "max": int(sorted_lens[-1]),
        },
        "length_histogram": {"edges": edges.tolist(), "counts": counts.tolist()},
        "chunk_residues": int(chunk_residues),
        "chunks": _chunk_bounds(offsets, chunk_residues),
        "build_seconds": round(time.time() - started, 3),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")


def _gather(src: Path, dst: Path, src_offsets: np.ndarray, order: np.ndarray, dst_offsets: np.ndarray, show: bool, desc: str) -> None:
    """Write the byte ranges of ``src`` in ``order``, a bounded batch at a time."""
    total = int(dst_offsets[-1])
    source = np.memmap(src, dtype=np.uint8, mode="r") if total else np.zeros(0, np.uint8)
    with open(dst, "wb") as fh:
        bar = progress_bar(total=total, desc=desc, unit="B", unit_scale=True, disable=not show)
        for first, stop in _batches(dst_offsets, _COPY_BATCH):
            seqs = order[first:stop]
            lens = src_offsets[seqs + 1] - src_offsets[seqs]
            starts = np.repeat(src_offsets[seqs] - (dst_offsets[first:stop] - dst_offsets[first]), lens)
            index = starts + np.arange(int(lens.sum()), dtype=np.int64)
            fh.write(source[index].tobytes())
            bar.update(int(lens.sum()))
        bar.close()


def _batches(offsets: np.ndarray, size: int) -> Iterator[tuple[int, int]]:
    n, first = offsets.size - 1, 0
    while first < n:
        stop = int(np.searchsorted(offsets, offsets[first] + size, side="right")) - 1
        stop = min(max(stop, first + 1), n)
        yield first, stop
        first = stop
