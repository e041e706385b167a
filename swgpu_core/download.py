"""Fetch a database release (https, http, ftp or a local path) safely and record it.

A database source changes under us between scheduled runs: UniProt and NCBI publish new
releases under the same URL. :func:`fetch` therefore does three things a plain ``curl``
does not:

* it never leaves a partial file under the final name: data goes to ``.NAME.part`` next
  to the destination and is renamed into place only after the size and checksum check,
  so an interrupted transfer is resumed (HTTP ``Range``/``If-Range``, FTP ``REST``) and
  never mistaken for a complete release;
* it verifies what the source publishes: the size it announces, an MD5 or SHA-256 given
  by the caller, or a checksum file next to the data (``md5sum``/``sha256sum`` or BSD
  format, as NCBI's ``nr.gz.md5``);
* it records the release (ETag, Last-Modified, size, SHA-256, the published checksum) in a
  small JSON *version file*, and rewrites the data and the version file only when the
  release changed. A workflow engine that compares modification times (Snakemake) then
  re-runs exactly the work that depends on a new release and nothing when it is the same.

When the probe (HEAD, FTP ``MDTM``/``SIZE``, file size and time) matches the recorded
release the source is not downloaded again.
"""

from __future__ import annotations

import ftplib
import hashlib
import http.client
import json
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .atomic import check_output_path
from .errors import SwgpuError
from .fasta import compressed_damage
from .progress import progress_bar

VERSION_SUFFIX = ".version.json"
_BLOCK = 1 << 20
_HASHES = {32: "md5", 40: "sha1", 64: "sha256", 128: "sha512"}
SCHEMES = ("http", "https", "ftp", "file")


class DownloadError(SwgpuError):
    """The source could not be fetched, or what arrived failed its size or checksum check."""


@dataclass
class Release:
    """What identifies one release of a source; the content of the version file."""

    source: str
    size: int
    sha256: str
    etag: str | None = None
    last_modified: str | None = None
    checksums: dict[str, str] = field(default_factory=dict)  # every digest verified: configured or published
    retrieved: str = ""

    def same_release(self, other: Release) -> bool:
        """Same bytes from the same source; the retrieval time does not matter."""
        return self.source == other.source and self.size == other.size and self.sha256 == other.sha256


@dataclass(frozen=True)
class Probe:
    """What the source says about its current release without sending the data."""

    size: int | None
    etag: str | None
    last_modified: str | None


def version_path(dest: str | os.PathLike) -> Path:
    """The default version file of a destination: ``DEST.version.json``."""
    return Path(f"{os.fspath(dest)}{VERSION_SUFFIX}")


def read_release(path: str | os.PathLike) -> Release | None:
    """The release recorded in a version file, or None when there is none (or it is unreadable)."""
    try:
        data = json.loads(Path(path).read_text())
        return Release(**data)
    except (OSError, ValueError, TypeError):
        return None


def is_url(source: str) -> bool:
    return urllib.parse.urlsplit(source).scheme.lower() in SCHEMES


def normalize_source(source: str) -> str:
    """``source`` with its URL scheme in lower case (schemes are case-insensitive, RFC 3986).

    A scheme this module cannot fetch (``s3:``, ``gopher:``) is refused rather than taken
    for a local path; a local path that merely contains a colon still works when it exists.
    """
    scheme = urllib.parse.urlsplit(source).scheme
    if not scheme:
        return source
    if scheme.lower() in SCHEMES:
        return scheme.lower() + source[len(scheme) :]
    if "://" in source or not os.path.exists(source):
        raise DownloadError(
            f"{source}: unsupported URL scheme {scheme + ':'!r} (use {', '.join(s + '://' for s in SCHEMES)} or a local path)"
        )
    return source


# -- checksums -----------------------------------------------------------------------------
def file_digests(path: str | os.PathLike, algorithms: tuple[str, ...] = ("sha256",)) -> dict[str, str]:
    hashers = {a: hashlib.new(a) for a in algorithms}
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_BLOCK), b""):
            for h in hashers.values():
                h.update(block)
    return {a: h.hexdigest() for a, h in hashers.items()}


def parse_checksum_file(text: str, filename: str) -> tuple[str, str]:
    """(algorithm, hex digest) for ``filename`` from a checksum file's text.

    Accepts ``md5sum``/``sha256sum`` lines (``HEX  name`` or ``HEX *name``), BSD lines
    (``MD5 (name) = HEX``) and a file holding a single bare digest. The algorithm follows
    from the digest's length.
    """
    candidates: list[tuple[str, str | None]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        bsd = re.fullmatch(r"(\w+) \((.+)\) = ([0-9a-fA-F]+)", line)
        if bsd:
            candidates.append((bsd.group(3), bsd.group(2)))
            continue
        gnu = re.fullmatch(r"([0-9a-fA-F]+)(?:\s+\*?(.+))?", line)
        if gnu:
            candidates.append((gnu.group(1), gnu.group(2)))
    named = [hexd for hexd, name in candidates if name is not None and os.path.basename(name.strip()) == filename]
    if named:
        digest = named[0]
    elif len(candidates) == 1 and candidates[0][1] is None:  # a bare digest names no file: it is this one's
        digest = candidates[0][0]
    else:
        listed = ", ".join(sorted({os.path.basename(n.strip()) for _, n in candidates if n})[:3])
        raise DownloadError(f"checksum file does not list {filename}" + (f" (it lists {listed})" if listed else ""))
    algorithm = _HASHES.get(len(digest))
    if algorithm is None:
        raise DownloadError(f"checksum for {filename} is not an MD5/SHA digest: {digest!r}")
    return algorithm, digest.lower()


# -- transports ----------------------------------------------------------------------------
def _request(url: str, *, method: str = "GET", headers: dict[str, str] | None = None, timeout: float):
    req = urllib.request.Request(url, method=method, headers={"User-Agent": "swgpu-download", **(headers or {})})
    return urllib.request.urlopen(req, timeout=timeout)


def _probe_http(url: str, timeout: float) -> Probe:
    try:
        with _request(url, method="HEAD", timeout=timeout) as resp:
            length = resp.headers.get("Content-Length")
            return Probe(int(length) if length else None, resp.headers.get("ETag"), resp.headers.get("Last-Modified"))
    except urllib.error.HTTPError as exc:
        if exc.code in (403, 405, 501):  # some servers refuse HEAD; the GET will tell us
            return Probe(None, None, None)
        raise DownloadError(f"{url}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise DownloadError(f"{url}: {getattr(exc, 'reason', exc)}") from None


def _get_http(url: str, part: Path, probe: Probe, timeout: float, progress: bool) -> Probe:
    """Download into ``part``, resuming when it holds the beginning of the same release.

    The validator (ETag or Last-Modified) that the part was started under is kept next to
    it; sent as ``If-Range`` it makes the server send the rest only if the release is
    still that one, and the whole new release otherwise.
    """
    marker = part.with_name(part.name + ".validator")
    offset = part.stat().st_size if part.exists() else 0
    validator = marker.read_text() if offset and marker.exists() else ""
    headers = {"Range": f"bytes={offset}-", "If-Range": validator} if offset and validator else {}
    try:
        resp = _request(url, headers=headers, timeout=timeout)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and headers:  # the part is already as long as the file: start over
            part.unlink()
            return _get_http(url, part, probe, timeout, progress)
        raise DownloadError(f"{url}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise DownloadError(f"{url}: {getattr(exc, 'reason', exc)}") from None
    with resp:
        if resp.status != 206:
            offset = 0
        length = resp.headers.get("Content-Length")
        total = offset + int(length) if length else None
        got = Probe(total, resp.headers.get("ETag"), resp.headers.get("Last-Modified"))
        if offset == 0:
            marker.write_text(got.etag or got.last_modified or "")
        _copy_stream(resp.read, part, offset, total, url, progress)
    return got


def _probe_ftp(url: str, timeout: float) -> Probe:
    with _ftp(url, timeout) as (ftp, path):
        try:
            size = ftp.size(path)
        except ftplib.all_errors:
            size = None
        try:
            mdtm = ftp.sendcmd(f"MDTM {path}").split()[-1]
        except ftplib.all_errors:
            mdtm = None
        return Probe(size, None, mdtm)


def _get_ftp(url: str, part: Path, probe: Probe, timeout: float, progress: bool) -> Probe:
    offset = part.stat().st_size if part.exists() else 0
    if probe.size is not None and offset > probe.size:
        part.unlink()
        offset = 0
    with _ftp(url, timeout) as (ftp, path), open(part, "ab" if offset else "wb") as out:
        bar = progress_bar(total=probe.size, initial=offset, desc=os.path.basename(path), unit="B", unit_scale=True, disable=not progress)
        ftp.voidcmd("TYPE I")

        def write(block: bytes) -> None:
            out.write(block)
            bar.update(len(block))

        try:
            ftp.retrbinary(f"RETR {path}", write, blocksize=_BLOCK, rest=offset or None)
        except ftplib.all_errors as exc:
            raise DownloadError(f"{url}: {exc}") from None
        finally:
            bar.close()
    return probe


class _ftp:
    """An anonymous (or user:password@) FTP session on the URL's host, and the URL's path."""

    def __init__(self, url: str, timeout: float):
        self.parts = urllib.parse.urlsplit(url)
        self.timeout = timeout
        self.ftp: ftplib.FTP | None = None

    def __enter__(self) -> tuple[ftplib.FTP, str]:
        p = self.parts
        try:
            self.ftp = ftplib.FTP(timeout=self.timeout)
            self.ftp.connect(p.hostname or "", p.port or 21)
            self.ftp.login(urllib.parse.unquote(p.username or "anonymous"), urllib.parse.unquote(p.password or "anonymous@"))
        except ftplib.all_errors as exc:
            raise DownloadError(f"{urllib.parse.urlunsplit(p)}: {exc}") from None
        return self.ftp, urllib.parse.unquote(p.path)

    def __exit__(self, *exc) -> None:
        if self.ftp is not None:
            try:
                self.ftp.quit()
            except ftplib.all_errors:
                self.ftp.close()


def _probe_local(path: Path) -> Probe:
    try:
        st = path.stat()
    except OSError as exc:
        raise DownloadError(f"{path}: {exc.strerror}") from None
    if not path.is_file():
        raise DownloadError(f"{path}: is a directory, not a file to download" if path.is_dir() else f"{path}: not a regular file")
    return Probe(st.st_size, None, time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(st.st_mtime)))


def _get_local(path: Path, part: Path, probe: Probe, progress: bool) -> Probe:
    with open(path, "rb") as src:
        _copy_stream(src.read, part, 0, probe.size, str(path), progress)
    return probe


def _copy_stream(read: Callable[[int], bytes], part: Path, offset: int, total: int | None, name: str, progress: bool) -> None:
    bar = progress_bar(total=total, initial=offset, desc=os.path.basename(name), unit="B", unit_scale=True, disable=not progress)
    try:
        with open(part, "ab" if offset else "wb") as out:
            for block in iter(lambda: read(_BLOCK), b""):
                out.write(block)
                bar.update(len(block))
    except (OSError, http.client.HTTPException) as exc:
        raise DownloadError(f"{name}: transfer interrupted ({exc!r}); run again to resume") from None
    finally:
        bar.close()


# -- the public entry point ---------------------------------------------------------------
def _published_checksum(checksum_url: str | None, filename: str, timeout: float) -> dict[str, str]:
    if not checksum_url:
        return {}
    checksum_url = normalize_source(checksum_url)
    if is_url(checksum_url) and not checksum_url.startswith("ftp:"):
        try:
            with _request(checksum_url, timeout=timeout) as resp:
                text = resp.read().decode("utf-8", "replace")
        except (urllib.error.URLError, OSError) as exc:
            raise DownloadError(f"{checksum_url}: {getattr(exc, 'reason', exc)}") from None
    elif checksum_url.startswith("ftp:"):
        lines: list[str] = []
        with _ftp(checksum_url, timeout) as (ftp, path):
            ftp.retrlines(f"RETR {path}", lines.append)
        text = "\n".join(lines)
    else:
        try:
            text = Path(checksum_url).read_text()
        except OSError as exc:
            raise DownloadError(f"{checksum_url}: {exc.strerror}") from None
    try:
        algorithm, digest = parse_checksum_file(text, filename)
    except DownloadError as exc:
        raise DownloadError(f"{checksum_url}: {exc}") from None
    return {algorithm: digest}


def _write_json_atomically(path: Path, data: dict) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)


def fetch(
    source: str,
    dest: str | os.PathLike,
    *,
    version_file: str | os.PathLike | None = None,
    md5: str | None = None,
    sha256: str | None = None,
    checksum_url: str | None = None,
    size: int | None = None,
    timeout: float = 60.0,
    progress: bool = True,
) -> tuple[Release, bool]:
    """Bring ``dest`` up to the current release of ``source``; return (release, changed).

    ``changed`` is False when ``dest`` already held this release; then neither ``dest``
    nor the version file is written (their modification times stay as they were).
    """
    source = normalize_source(source)
    dest = Path(dest)
    vfile = Path(version_file) if version_file else version_path(dest)
    check_output_path(dest, vfile)
    for path, what in ((dest, "destination"), (vfile, "version file")):
        if path.exists() and not path.is_file():  # /dev/null, a pipe: the rename below would replace the node
            raise DownloadError(f"{path}: the {what} is not a regular file")
    expected: dict[str, str] = {k: v.lower() for k, v in (("md5", md5), ("sha256", sha256)) if v}
    remote = is_url(source)
    local_path = Path(urllib.parse.urlsplit(source).path if source.startswith("file:") else source)
    filename = os.path.basename(urllib.parse.urlsplit(source).path) if remote else local_path.name
    published = _published_checksum(checksum_url, filename, timeout)
    for algorithm, digest in published.items():
        if algorithm in expected and expected[algorithm] != digest:
            raise DownloadError(f"{checksum_url}: {algorithm} {digest} disagrees with the configured {expected[algorithm]}")
    expected.update(published)

    if source.startswith(("http:", "https:")):
        probe = _probe_http(source, timeout)
    elif source.startswith("ftp:"):
        probe = _probe_ftp(source, timeout)
    else:
        probe = _probe_local(local_path)

    recorded = read_release(vfile) if dest.exists() else None
    local = None if remote and not source.startswith("file:") else local_path
    if recorded is not None and recorded.source == source and _unchanged(recorded, probe, expected, size, local):
        return recorded, False

    for directory in (dest.parent, vfile.parent):  # both, before anything is replaced
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DownloadError(f"{directory}: cannot create directory ({exc.strerror})") from None
    part = dest.with_name(f".{dest.name}.part")
    if source.startswith(("http:", "https:")):
        got = _get_http(source, part, probe, timeout, progress)
    elif source.startswith("ftp:"):
        got = _get_ftp(source, part, probe, timeout, progress)
    else:
        got = _get_local(local_path, part, probe, progress)

    actual_size = part.stat().st_size
    if got.size is not None and actual_size < got.size:
        # The connection ended early: keep the part so that the next run resumes it.
        raise DownloadError(f"{source}: transfer interrupted at {actual_size} of {got.size} bytes; run again to resume")
    for announced, what in ((size, "configured"), (got.size, "announced")):
        if announced is not None and actual_size != announced:
            _forget_part(part)
            raise DownloadError(f"{source}: got {actual_size} bytes, the {what} size is {announced}")
    digests = file_digests(part, tuple(sorted({"sha256", *expected})))
    for algorithm, digest in expected.items():
        if digests[algorithm] != digest:
            _forget_part(part)
            raise DownloadError(f"{source}: {algorithm} {digests[algorithm]} does not match the expected {digest}")

    damage = compressed_damage(part)
    if damage:
        _forget_part(part)
        raise DownloadError(f"{source}: {damage}; not installed (the source itself may be incomplete)")

    release = Release(
        source=source,
        size=actual_size,
        sha256=digests["sha256"],
        etag=got.etag,
        last_modified=got.last_modified,
        checksums={a: digests[a] for a in expected},
        retrieved=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    )
    if recorded is not None and recorded.same_release(release) and dest.exists():
        # Same bytes under new server metadata (a re-upload): remember the new validators
        # so the next probe matches, but keep the old modification time: nothing changed.
        _forget_part(part)
        stamp = vfile.stat()
        _write_json_atomically(vfile, asdict(release))
        os.utime(vfile, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
        return release, False
    os.replace(part, dest)
    _write_json_atomically(vfile, asdict(release))
    _forget_part(part)
    return release, True


def _forget_part(part: Path) -> None:
    for path in (part, part.with_name(part.name + ".validator")):
        path.unlink(missing_ok=True)


def _unchanged(recorded: Release, probe: Probe, expected: dict[str, str], size: int | None, local: Path | None) -> bool:
    """Whether the recorded release is still the source's current one, judged without downloading."""
    if expected:
        # A published or configured checksum is the strongest statement of the release.
        return all(recorded.checksums.get(a) == d or (a == "sha256" and recorded.sha256 == d) for a, d in expected.items())
    if size is not None and size != recorded.size:
        return False
    if probe.size is not None and probe.size != recorded.size:
        return False
    if local is not None:
        if probe.last_modified == recorded.last_modified:
            return True
        return file_digests(local)["sha256"] == recorded.sha256  # touched but same bytes
    if probe.etag or probe.last_modified:
        return probe.etag == recorded.etag and probe.last_modified == recorded.last_modified
    return False  # the source tells us nothing: fetch and compare the bytes
