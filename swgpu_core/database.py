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

import bisect
import hashlib
import json
import mmap
import os
import shutil
import tempfile
import threading
import time
import zlib
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from . import __version__
from .alphabet import ALPHABETS, PROTEIN, Alphabet, get_alphabet
from .atomic import WRITE_ERRORS, check_replaceable, owner_tag, remove_owned, sweep_stale
from .errors import DatabaseError, InputError
from .fasta import check_fasta_file, encode_body, record_bodies
from .progress import progress_bar

FORMAT_VERSION = 1
DEFAULT_CHUNK_RESIDUES = 64_000_000
#: residues checked ahead of a search (Database.verify_ahead): about its first device batch
VERIFY_AHEAD_RESIDUES = 1 << 30
_WRITE_BUFFER = 1 << 20  # bytes: the sort pass writes a sequence (or a header) at a time
_BAR_STEP = 1 << 16  # sequences between two updates of the sort pass's progress bar
HEADER_BATCH = 8192  # headers parsed at once (Database.headers), copied into one buffer

_FILES = ("residues.u8", "offsets.i64.npy", "lengths.i32.npy", "order.i64.npy", "headers.bin", "header_offsets.i64.npy")
_ARRAYS = {"offsets.i64.npy": np.int64, "lengths.i32.npy": np.int32, "order.i64.npy": np.int64, "header_offsets.i64.npy": np.int64}
#: What the code reads from manifest.json, with the JSON types it must have (checked on open).
_MANIFEST_TYPES: dict[str, type | tuple[type, ...]] = {
    "format_version": int, "alphabet": str, "source": dict, "n_sequences": int, "n_residues": int,
    "length_stats": dict, "length_histogram": dict, "chunk_residues": int, "chunks": list,
}  # fmt: skip
_CHUNK_KEYS = ("index", "first", "stop", "residue_start", "residue_stop")


def _covers(order: np.ndarray, n: int) -> bool:
    """Whether ``order`` (n values in [0, n)) takes every value: then it is a permutation."""
    seen = np.zeros(n, dtype=bool)
    seen[order] = True
    return bool(seen.all())


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _check_manifest(path: Path, m: dict) -> None:
    """Keys and JSON types of a manifest, so that no later access raises KeyError or TypeError."""
    where = path / "manifest.json"
    for key, kind in _MANIFEST_TYPES.items():
        if key not in m:
            raise DatabaseError(f"{where}: corrupt database (no key {key!r})")
        if not isinstance(m[key], kind) or (kind is int and isinstance(m[key], bool)):
            raise DatabaseError(f"{where}: corrupt database (key {key!r} is {type(m[key]).__name__} {m[key]!r:.40}, not {kind.__name__})")
    if m["alphabet"] not in ALPHABETS:
        raise DatabaseError(f"{where}: corrupt database (alphabet {m['alphabet']!r:.40}; known: {', '.join(ALPHABETS)})")
    if m["n_sequences"] < 1 or m["n_residues"] < 0 or m["chunk_residues"] < 1:
        raise DatabaseError(
            f"{where}: corrupt database (n_sequences {m['n_sequences']}, n_residues {m['n_residues']}, chunk_residues {m['chunk_residues']})"
        )
    if not isinstance(m["source"].get("sha256"), str) or not isinstance(m["source"].get("path"), str):
        raise DatabaseError(f"{where}: corrupt database (source needs a path and a sha256)")
    for key in ("min", "max"):
        if not isinstance(m["length_stats"].get(key), int):
            raise DatabaseError(f"{where}: corrupt database (length_stats has no integer {key!r})")
    for key in ("mean", "median"):
        if not isinstance(m["length_stats"].get(key), (int, float)):
            raise DatabaseError(f"{where}: corrupt database (length_stats has no number {key!r})")
    hist = m["length_histogram"]
    if not (isinstance(hist.get("edges"), list) and isinstance(hist.get("counts"), list) and len(hist["edges"]) == len(hist["counts"]) + 1):
        raise DatabaseError(f"{where}: corrupt database (length_histogram needs edges and one count fewer)")
    for i, c in enumerate(m["chunks"]):
        if not isinstance(c, dict) or sorted(c) != sorted(_CHUNK_KEYS) or not all(type(c[k]) is int for k in _CHUNK_KEYS):
            raise DatabaseError(f"{where}: corrupt database (chunk {i} is not {{{', '.join(_CHUNK_KEYS)}}} of integers)")
    sums = m.get("chunk_checksums", [{"residues": 0, "headers": 0}] * len(m["chunks"]))
    if (
        not isinstance(sums, list)
        or len(sums) != len(m["chunks"])
        or not all(isinstance(x, dict) and type(x.get("residues")) is int and type(x.get("headers")) is int for x in sums)
    ):
        raise DatabaseError(f"{where}: corrupt database (key 'chunk_checksums' is not one {{residues, headers}} CRC-32 pair per chunk)")
    files = m.get("files", {})
    if (
        not isinstance(files, dict)
        or not all(isinstance(f, dict) and type(f.get("size")) is int and isinstance(f.get("sha256"), str) for f in files.values())
        or not set(files) <= set(_FILES)
    ):
        raise DatabaseError(f"{where}: corrupt database (key 'files' is not {{file: {{size, sha256}}}} of the database's files)")


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
            raise DatabaseError(f"{manifest_path}: unreadable manifest ({_one_line(exc)})") from None
        version = self.manifest.get("format_version") if isinstance(self.manifest, dict) else None
        if version != FORMAT_VERSION:
            raise DatabaseError(
                f"{self.path}: database format version {version}, this swgpu reads version {FORMAT_VERSION}; rebuild it with 'swgpu makedb'"
            )
        missing = [f for f in _FILES if not (self.path / f).is_file()]
        if missing:
            raise DatabaseError(f"{self.path}: corrupt database, missing {', '.join(missing)}")
        _check_manifest(self.path, self.manifest)
        self.alphabet: Alphabet = get_alphabet(self.manifest["alphabet"])
        arrays = {}
        for name, dtype in _ARRAYS.items():
            try:
                arrays[name] = np.load(self.path / name, mmap_mode="r", allow_pickle=False)
            except (OSError, ValueError, EOFError) as exc:
                raise DatabaseError(f"{self.path / name}: corrupt database ({_one_line(exc)})") from None
            if arrays[name].dtype != dtype or arrays[name].ndim != 1:
                raise DatabaseError(
                    f"{self.path / name}: corrupt database (an array of {arrays[name].dtype}{arrays[name].shape}, not of {dtype})"
                )
        # Plain ndarray views of the memory maps: the same pages, without np.memmap's Python-level
        # item access (about 5 us each; outputs look up tens of thousands of headers and lengths).
        arrays = {name: np.asarray(array) for name, array in arrays.items()}
        self.offsets = arrays["offsets.i64.npy"]
        self.lengths = arrays["lengths.i32.npy"]
        self.order = arrays["order.i64.npy"]
        self._header_offsets = arrays["header_offsets.i64.npy"]
        n, residues = self.manifest["n_sequences"], self.manifest["n_residues"]
        for name, array, size in (
            ("offsets.i64.npy", self.offsets, n + 1), ("lengths.i32.npy", self.lengths, n),
            ("order.i64.npy", self.order, n), ("header_offsets.i64.npy", self._header_offsets, n + 1),
        ):  # fmt: skip
            if array.shape != (size,):
                raise DatabaseError(
                    f"{self.path / name}: corrupt database (array sizes disagree with manifest.json: {array.size} entries, not {size})"
                )
        if (self.path / "residues.u8").stat().st_size != residues:
            raise DatabaseError(
                f"{self.path / 'residues.u8'}: corrupt database (array sizes disagree with manifest.json: "
                f"{(self.path / 'residues.u8').stat().st_size} bytes, not n_residues {residues})"
            )
        self.residues = np.asarray(np.memmap(self.path / "residues.u8", dtype=np.uint8, mode="r")) if residues else np.zeros(0, np.uint8)
        headers_size = (self.path / "headers.bin").stat().st_size
        self._headers = (
            np.asarray(np.memmap(self.path / "headers.bin", dtype=np.uint8, mode="r")) if headers_size else np.zeros(0, np.uint8)
        )
        self._header_bytes = memoryview(self._headers)  # slices of a memoryview: no numpy call per header
        self._check_arrays(headers_size)
        self._verified: set[tuple[int, str]] = set()  # (chunk, "residues"/"headers") checked against their CRC-32
        self._verify_locks: dict[tuple[int, str], threading.Lock] = {}  # one per check: whichever thread comes first does it
        self._locks_lock = threading.Lock()
        self._ahead: threading.Thread | None = None  # verify_ahead's thread, once started

    def _check_arrays(self, headers_size: int) -> None:
        """O(n) structural checks of the index arrays against each other and the manifest.

        These catch every damage that would otherwise let a search run and give wrong
        answers (offsets, lengths, order, header offsets and chunks that disagree), at the
        cost of reading the small index arrays once; the residues themselves are checked
        per chunk when used (:meth:`chunk_residues`) and fully by ``swgpu check``.
        """
        m, n = self.manifest, self.manifest["n_sequences"]

        def bad(name: str, what: str) -> DatabaseError:
            return DatabaseError(f"{self.path / name}: corrupt database ({what}); rebuild it with 'swgpu makedb' or run 'swgpu check'")

        offsets = np.asarray(self.offsets)
        lengths = np.asarray(self.lengths)  # int32: compared without a widened copy
        if n and (offsets[0] != 0 or offsets[-1] != m["n_residues"]):
            raise bad("offsets.i64.npy", f"offsets run from {offsets[0]} to {offsets[-1]}, not 0 to n_residues {m['n_residues']}")
        if n and (lengths.min() < 1 or np.any(np.diff(offsets) != lengths)):
            raise bad("offsets.i64.npy", "offsets disagree with lengths.i32.npy")
        if np.any(lengths[1:] < lengths[:-1]):
            raise bad("lengths.i32.npy", "lengths are not in ascending order")
        stats = m["length_stats"]
        if n and (stats.get("min") != int(lengths[0]) or stats.get("max") != int(lengths[-1])):
            raise bad("manifest.json", f"length_stats min/max {stats.get('min')}/{stats.get('max')} disagree with lengths.i32.npy")
        order = np.asarray(self.order)
        if n and (order.min() < 0 or order.max() >= n or not _covers(order, n)):
            raise bad("order.i64.npy", "order is not a permutation of the records")
        hoff = np.asarray(self._header_offsets)
        if hoff[0] != 0 or hoff[-1] != headers_size or np.any(np.diff(hoff) < 2):
            raise bad("header_offsets.i64.npy", f"header offsets are not increasing from 0 to the size of headers.bin ({headers_size})")
        expected_first = 0
        for i, c in enumerate(m["chunks"]):
            first, stop = c["first"], c["stop"]
            if c["index"] != i or first != expected_first or not first < stop <= n:
                raise bad(
                    "manifest.json",
                    f"chunk {i} covers sequences {first}-{stop} (index {c['index']}), not contiguous from {expected_first} below {n}",
                )
            if c["residue_start"] != offsets[first] or c["residue_stop"] != offsets[stop]:
                raise bad("manifest.json", f"chunk {i} residues {c['residue_start']}-{c['residue_stop']} disagree with offsets.i64.npy")
            expected_first = stop
        if expected_first != n:
            raise bad("manifest.json", f"the chunks cover {expected_first} of {n} sequences")
        sizes = {name: f.get("size") for name, f in m.get("files", {}).items()}
        for name, size in sizes.items():
            if (self.path / name).stat().st_size != size:
                raise bad(name, f"{(self.path / name).stat().st_size} bytes, manifest.json records {size}")

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
        self._verify_chunk(self._chunk_of(i), "residues")
        return self.residues[self.offsets[i] : self.offsets[i + 1]]

    def codes_of(self, indices: Sequence[int] | np.ndarray) -> list[np.ndarray]:
        """:meth:`codes` of each sequence of ``indices``, their chunks verified once and the
        offsets read at once (a search's traceback gathers tens of thousands)."""
        index = self._verified_indices(indices, "residues")
        residues = self.residues
        return [residues[a:b] for a, b in zip(self.offsets[index].tolist(), self.offsets[index + 1].tolist())]

    def chunk_residues(self, chunk: Chunk, *, verify: bool = True) -> np.ndarray:
        """The residue codes of ``chunk`` (any run of whole sequences, such as a device batch),
        verified: its manifest chunk's checksum, and codes inside the alphabet.

        A damaged ``residues.u8`` would otherwise give silently different scores, or index
        past the scoring tables of every backend. Each manifest chunk is verified once per
        :class:`Database`, when first used: one pass (CRC-32 and a maximum, 3-4 GB/s) over
        bytes the search reads anyway. ``verify=False`` leaves that to the caller, who must
        call :meth:`verify_residues` before any use of the codes (the GPU's upload copies
        them while the check runs in the background, :meth:`verify_ahead`).
        """
        if verify:
            self.verify_residues(chunk)
        return self.residues[chunk.residue_start : chunk.residue_stop]

    def verify_residues(self, chunk: Chunk) -> None:
        """Check the residues of the manifest chunks that ``chunk`` overlaps (once each; see
        :meth:`chunk_residues`), or wait for the thread already checking them."""
        if chunk.stop > chunk.first:
            for index in range(self._chunk_of(chunk.first), self._chunk_of(chunk.stop - 1) + 1):
                self._verify_chunk(index, "residues")

    def verify_ahead(self, chunks: Sequence[int] | None = None, residues: int = VERIFY_AHEAD_RESIDUES) -> threading.Thread:
        """Check, in a background thread, the residues of manifest ``chunks`` (all by default)
        in order, until ``residues`` residues are checked. Once per :class:`Database`: a later
        call returns the first call's thread (a command starts it as soon as it has opened the
        database, :func:`swgpu_core.api.check_ahead`, and the search it then runs asks again).

        Why: a search's first device batch cannot be scanned before its check (about 0.1 s per
        200 M residues), which would otherwise run after the GPU's start-up and before the
        batch's copy; started first thing, it overlaps both (the CUDA calls and the CRC-32
        release the GIL). Later batches are checked while the GPU scans the ones before, so
        only the first ones are worth checking ahead, and a bounded amount keeps a database
        larger than memory from being read twice. A failed check is left to the search's own
        thread, which meets it again where it reads the chunk and raises there. Returns the
        thread (a daemon: nothing waits for it but a reader of the chunk it is checking).
        """
        order = list(range(len(self.chunks)) if chunks is None else chunks)

        def run() -> None:
            done = 0
            for index in order:
                if done >= residues:
                    return
                try:
                    self._verify_chunk(index, "residues")
                except Exception:  # noqa: BLE001 -- the reader of the chunk meets it again and reports it
                    return
                done += self.chunks[index].n_residues

        with self._locks_lock:
            if self._ahead is None:
                self._ahead = threading.Thread(target=run, name="swgpu-verify-ahead", daemon=True)
                self._ahead.start()
        return self._ahead

    @cached_property
    def _chunk_firsts(self) -> list[int]:
        return [c.first for c in self.chunks]

    def _chunk_of(self, i: int) -> int:
        return bisect.bisect_right(self._chunk_firsts, i) - 1

    def _verify_chunk(self, index: int, part: str) -> None:
        """Check manifest chunk ``index``'s ``part`` ("residues" or "headers") once: its CRC-32
        recorded at build time (databases built before have none) and, for residues, the
        alphabet range."""
        key = (index, part)
        if key in self._verified:
            return
        with self._locks_lock:
            lock = self._verify_locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self._verified:
                self._check_chunk(index, part)
                self._verified.add(key)

    def _check_chunk(self, index: int, part: str) -> None:
        c = self.chunks[index]
        sums = self.manifest.get("chunk_checksums")
        if part == "residues":
            name, data = "residues.u8", self.residues[c.residue_start : c.residue_stop]
            if data.size and int(data.max()) >= self.alphabet.size:
                raise DatabaseError(
                    f"{self.path / name}: corrupt database (chunk {index} holds code {int(data.max())}, "
                    f"outside the {self.alphabet.name} alphabet); run 'swgpu check'"
                )
        else:
            name, data = "headers.bin", self._headers[int(self._header_offsets[c.first]) : int(self._header_offsets[c.stop])]
        if sums is not None and zlib.crc32(np.ascontiguousarray(data)) != sums[index][part]:
            raise DatabaseError(f"{self.path / name}: corrupt database (chunk {index} does not match its checksum); run 'swgpu check'")

    def header(self, i: int) -> tuple[str, str]:
        """(id, description) of sequence ``i``."""
        self._verify_chunk(self._chunk_of(i), "headers")
        return self._parse_header(i, int(self._header_offsets[i]), int(self._header_offsets[i + 1]))

    def headers(self, indices: Sequence[int]) -> list[tuple[str, str]]:
        """:meth:`header` of each sequence of ``indices``, their chunks verified once and the offsets
        read at once: a traceback or an output looks up thousands, each a few microseconds alone."""
        index = self._verified_indices(indices, "headers")
        found: list[tuple[str, str]] = []
        for at in range(0, index.size, HEADER_BATCH):
            found.extend(self._parse_headers(index[at : at + HEADER_BATCH]))
        return found

    def _verified_indices(self, indices: Sequence[int] | np.ndarray, part: str) -> np.ndarray:
        """``indices`` as an int64 array, once the ``part`` of every chunk they fall in is verified."""
        index = np.asarray(indices, np.int64).reshape(-1)
        for chunk in np.unique(np.searchsorted(self._chunk_firsts, index, side="right") - 1).tolist():
            self._verify_chunk(chunk, part)
        return index

    def _parse_headers(self, index: np.ndarray) -> list[tuple[str, str]]:
        """:meth:`_parse_header` of each of ``index`` at once: their bytes joined into one
        buffer, checked as the one-by-one parse checks each header (exactly two NULs, the last
        at its end, a non-empty id, a NUL just before it), decoded and split once (a NUL byte
        is never part of a UTF-8 sequence, so the whole decodes where each part does): 0.4
        instead of 0.7 us a header (CPU machine). Where any check fails, the one-by-one parse
        runs, and raises with that header's number."""
        starts, stops = self._header_offsets[index], self._header_offsets[index + 1]
        lengths = stops - starts

        def one_by_one() -> list[tuple[str, str]]:
            return [self._parse_header(i, a, b) for i, a, b in zip(index.tolist(), starts.tolist(), stops.tolist())]

        if not index.size or (lengths < 2).any() or (starts < 0).any():
            return one_by_one()
        joined = b"".join([self._header_bytes[a:b] for a, b in zip(starts.tolist(), stops.tolist())])
        ends = np.cumsum(lengths)
        firsts = ends - lengths
        if len(joined) != int(ends[-1]):  # a header past the end of headers.bin
            return one_by_one()
        nul = np.frombuffer(joined, np.uint8) == 0
        before = self._headers[np.maximum(starts - 1, 0)]
        if not (
            (np.add.reduceat(nul, firsts) == 2).all()
            and nul[ends - 1].all()
            and not nul[firsts].any()
            and ((starts == 0) | (before == 0)).all()
        ):
            return one_by_one()
        try:
            parts = joined.decode().split("\0")
        except UnicodeDecodeError:
            return one_by_one()
        return list(zip(parts[0:-1:2], parts[1::2]))

    def _parse_header(self, i: int, start: int, stop: int) -> tuple[str, str]:
        parts = bytes(self._header_bytes[start:stop]).split(b"\0")
        try:  # a header starts right after the previous one's NUL: a shifted offset cannot pass for a shorter id
            if len(parts) != 3 or parts[2] or not parts[0] or (start and self._header_bytes[start - 1] != 0):
                raise ValueError("not 'id\\0description\\0'")
            return parts[0].decode(), parts[1].decode()
        except ValueError as exc:
            raise DatabaseError(
                f"{self.path / 'headers.bin'}: corrupt database (header of sequence {i}: {_one_line(exc)}); run 'swgpu check'"
            ) from None

    def seq_id(self, i: int) -> str:
        return self.header(i)[0]

    def find_ids(self, ids: Collection[str]) -> dict[str, int]:
        """The number of each of ``ids`` that names a sequence here (ids are unique: ``makedb``
        refuses a repeat), every header read in batches (:meth:`headers`); the ids not here are
        left out. Memory for ``ids`` only: a dict of every id took 1.7 us a sequence and grows
        with the database (bench/RESULTS.md, thirty-second session)."""
        wanted, found, step = set(ids), {}, HEADER_BATCH * 8
        for first in range(0, self.n_sequences if wanted else 0, step):
            stop = min(first + step, self.n_sequences)
            for i, (name, _) in enumerate(self.headers(range(first, stop)), start=first):
                if name in wanted:
                    found.setdefault(name, i)
        return found

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
        chunks.append(dict(index=len(chunks), first=first, stop=stop, residue_start=int(offsets[first]), residue_stop=int(offsets[stop])))
        first = stop
    return chunks


def _chunk_checksums(out: Path, chunks: list[dict], header_offsets: np.ndarray) -> list[dict]:
    residues = np.memmap(out / "residues.u8", dtype=np.uint8, mode="r") if (out / "residues.u8").stat().st_size else np.zeros(0, np.uint8)
    headers = np.memmap(out / "headers.bin", dtype=np.uint8, mode="r")
    return [
        {
            "residues": zlib.crc32(np.ascontiguousarray(residues[c["residue_start"] : c["residue_stop"]])),
            "headers": zlib.crc32(np.ascontiguousarray(headers[int(header_offsets[c["first"]]) : int(header_offsets[c["stop"]])])),
        }
        for c in chunks
    ]


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
    _check_replaceable(dbdir, fasta)
    started = time.time()
    created = _make_parents(dbdir.parent)
    try:
        sweep_stale(dbdir.parent, f".{dbdir.name}.tmp-")  # what killed builds left
        tmp = Path(tempfile.mkdtemp(prefix=f".{dbdir.name}.tmp-{owner_tag()}-", dir=dbdir.parent))
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
            _check_replaceable(dbdir, fasta)  # again: the build took a while
            dbdir.rename(old)
            tmp.rename(dbdir)
            remove_owned(old, "manifest.json", _FILES.__contains__)
        else:
            tmp.rename(dbdir)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        _remove_empty(created)
        if isinstance(exc, OSError) and exc.errno in WRITE_ERRORS:
            raise InputError(f"{dbdir}: cannot write the database ({exc.strerror}); nothing was kept") from None
        raise
    return Database(dbdir)


def _check_replaceable(dbdir: Path, fasta: str) -> None:
    """Refuse to replace anything but an earlier database or an empty directory.

    A rebuild swaps the new directory in and deletes the old one's files, so a mistyped
    DBDIR (``.``, ``..``, a project directory) must not be taken for a database, and the
    FASTA being read must not lie inside the directory about to be replaced.
    """
    check_replaceable(dbdir, "database", "makedb", "manifest.json", _FILES.__contains__, source=fasta)


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
        for number, name, description, residues in record_bodies(fasta):
            if name in seen:
                raise InputError(f"{fasta}: record {number} ({name}) repeats the id of record {seen[name]}")
            seen[name] = number
            codes = encode_body(fasta, number, name, residues, alphabet)
            res.write(codes)
            lengths.append(codes.size)
            blob = name.encode() + b"\0" + description.replace("\0", " ").encode() + b"\0"
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
    _gather(unsorted_path, out / "residues.u8", src_offsets, order, show_progress, "sorting residues")
    header_offsets = np.zeros(lens.size + 1, dtype=np.int64)
    np.cumsum(hlens[order], out=header_offsets[1:])
    _gather(out / "headers.unsorted", out / "headers.bin", src_hoffsets, order, False, "")
    unsorted_path.unlink()
    (out / "headers.unsorted").unlink()

    np.save(out / "offsets.i64.npy", offsets)
    np.save(out / "lengths.i32.npy", sorted_lens.astype(np.int32))
    np.save(out / "order.i64.npy", order.astype(np.int64))
    np.save(out / "header_offsets.i64.npy", header_offsets)
    edges, counts = length_histogram(sorted_lens)
    files = {name: {"size": (out / name).stat().st_size, "sha256": _sha256(str(out / name))} for name in _FILES}
    chunks = _chunk_bounds(offsets, chunk_residues)
    chunk_checksums = _chunk_checksums(out, chunks, header_offsets)
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
        "chunks": chunks,
        "chunk_checksums": chunk_checksums,  # CRC-32 per chunk, verified when a search first uses the chunk
        "files": files,  # sizes checked on open, SHA-256 by 'swgpu check'
        "build_seconds": round(time.time() - started, 3),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")


def _gather(src: Path, dst: Path, src_offsets: np.ndarray, order: np.ndarray, show: bool, desc: str) -> None:
    """Write the byte ranges of ``src`` in ``order``: a slice of the mapped file for each,
    through one buffered writer.

    Why slices: an index of every byte (``np.repeat`` and ``arange``, 8 bytes a residue, then a
    fancy index of a memory map) took about 1 s of bench200M's 4 s build on the CPU machine;
    a write per sequence costs under a microsecond whatever its length (bench/RESULTS.md,
    thirty-second session).
    """
    lengths = src_offsets[order + 1] - src_offsets[order]
    starts = src_offsets[order].tolist()
    with open(dst, "wb", buffering=_WRITE_BUFFER) as fh:
        bar = progress_bar(total=int(lengths.sum()), desc=desc, unit="B", unit_scale=True, disable=not show)
        if starts and src_offsets[-1]:  # an empty file cannot be mapped
            with open(src, "rb") as raw, mmap.mmap(raw.fileno(), 0, access=mmap.ACCESS_READ) as mapped, memoryview(mapped) as view:
                for first in range(0, len(starts), _BAR_STEP):
                    for a, n in zip(starts[first : first + _BAR_STEP], lengths[first : first + _BAR_STEP].tolist()):
                        fh.write(view[a : a + n])
                    bar.update(int(lengths[first : first + _BAR_STEP].sum()))
        bar.close()


_CHECK_BLOCK = 1 << 26  # bytes per step of the full check


def check_database(path: str | os.PathLike) -> list[str]:
    """Verify everything about a database: structure, checksums, residue codes, headers.

    Returns lines describing what was checked; raises :class:`DatabaseError` naming the
    file at the first problem. Unlike opening a :class:`Database` (cheap checks of the
    index arrays), this reads every byte.
    """
    db = Database(path)
    lines = [f"{db.path}: structure ok ({db.n_sequences:,} sequences, {db.n_residues:,} residues, {len(db.chunks)} chunk(s))"]
    files = db.manifest.get("files")
    if files:
        for name in _FILES:
            if name not in files:
                raise DatabaseError(f"{db.path / 'manifest.json'}: corrupt database (no checksum for {name})")
            digest = _sha256(str(db.path / name))
            if digest != files[name]["sha256"]:
                raise DatabaseError(
                    f"{db.path / name}: corrupt database (sha256 {digest[:16]}..., manifest.json records {files[name]['sha256'][:16]}...)"
                )
        lines.append(f"{db.path}: sha256 of {len(_FILES)} files ok")
    else:
        lines.append(
            f"{db.path}: no checksums recorded (built by swgpu {db.manifest.get('swgpu_version', '?')}); contents checked, not checksums"
        )
    for start in range(0, db.n_residues, _CHECK_BLOCK):
        block = np.asarray(db.residues[start : start + _CHECK_BLOCK])
        if block.size and int(block.max()) >= db.alphabet.size:
            at = start + int(np.flatnonzero(block >= db.alphabet.size)[0])
            seq = int(np.searchsorted(db.offsets, at, side="right")) - 1
            raise DatabaseError(
                f"{db.path / 'residues.u8'}: corrupt database (byte {at}, in sequence {seq}, is code {int(db.residues[at])}, "
                f"outside the {db.alphabet.name} alphabet)"
            )
    hoff = np.asarray(db._header_offsets)
    first = 0
    while first < db.n_sequences:
        stop = min(int(np.searchsorted(hoff, hoff[first] + _CHECK_BLOCK, side="right")) - 1, db.n_sequences)
        stop = max(stop, first + 1)
        base = int(hoff[first])
        raw = np.asarray(db._headers[base : int(hoff[stop])])
        rel = hoff[first : stop + 1] - base
        per_header = np.diff(np.searchsorted(np.flatnonzero(raw == 0), rel))  # NULs in each header: 2
        bad = (per_header != 2) | (raw[rel[1:] - 1] != 0) | (raw[rel[:-1]] == 0)
        if bad.any():
            seq = first + int(np.argmax(bad))
            raise DatabaseError(f"{db.path / 'headers.bin'}: corrupt database (header of sequence {seq} is not 'id\\0description\\0')")
        try:
            raw.tobytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            seq = first + int(np.searchsorted(hoff[first : stop + 1] - base, exc.start, side="right")) - 1
            raise DatabaseError(f"{db.path / 'headers.bin'}: corrupt database (header of sequence {seq} is not UTF-8)") from None
        first = stop
    lines.append(f"{db.path}: residue codes and headers ok")
    return lines
