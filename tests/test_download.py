"""swgpu download: resume, verification, release records; against a local HTTP server only."""

from __future__ import annotations

import hashlib
import http.server
import os
import subprocess
import sys
import threading
import time
from email.utils import formatdate
from pathlib import Path

import pytest

from swgpu_core.atomic import check_output_path
from swgpu_core.download import DownloadError, fetch, parse_checksum_file, read_release, version_path
from swgpu_core.errors import SwgpuError


class _Handler(http.server.BaseHTTPRequestHandler):
    """Serves files of ``root`` with ETag, Last-Modified, Range and If-Range; can cut a body short."""

    root: Path
    cut_after: int | None = None  # bytes of body to send before dropping the connection
    log: list[tuple[str, str, dict]]

    def _file(self) -> Path | None:
        path = self.root / self.path.lstrip("/")
        return path if path.is_file() else None

    def _validators(self, path: Path) -> tuple[str, str]:
        st = path.stat()
        return f'"{st.st_size}-{st.st_mtime_ns}"', formatdate(st.st_mtime, usegmt=True)

    def do_HEAD(self) -> None:
        self._serve(body=False)

    def do_GET(self) -> None:
        self._serve(body=True)

    def _serve(self, body: bool) -> None:
        self.log.append((self.command, self.path, dict(self.headers)))
        path = self._file()
        if path is None:
            self.send_error(404)
            return
        data = path.read_bytes()
        etag, modified = self._validators(path)
        start = 0
        rng, if_range = self.headers.get("Range"), self.headers.get("If-Range")
        if rng and (if_range is None or if_range in (etag, modified)):
            start = int(rng.removeprefix("bytes=").split("-")[0])
            if start >= len(data):
                self.send_error(416)
                return
        self.send_response(206 if start else 200)
        self.send_header("Content-Length", str(len(data) - start))
        self.send_header("ETag", etag)
        self.send_header("Last-Modified", modified)
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.end_headers()
        if body:
            payload = data[start:]
            if type(self).cut_after is not None:
                payload = payload[: type(self).cut_after]
                self.wfile.write(payload)
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(payload)

    def log_message(self, *args) -> None:  # keep pytest output quiet
        pass


@pytest.fixture
def server(tmp_path):
    root = tmp_path / "www"
    root.mkdir()
    handler = type("H", (_Handler,), {"root": root, "log": [], "cut_after": None})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{httpd.server_address[1]}", handler
    httpd.shutdown()
    httpd.server_close()


def _publish(path: Path, data: bytes) -> None:
    """Write ``data`` and move the modification time so validators change as with a new release."""
    previous = path.stat().st_mtime if path.exists() else time.time() - 100
    path.write_bytes(data)
    os.utime(path, (previous + 10, previous + 10))


def test_http_download_records_release_and_skips_unchanged(server, tmp_path):
    root, url, handler = server
    data = os.urandom(300_000)
    _publish(root / "db.fasta.gz", data)
    dest = tmp_path / "out" / "db.fasta.gz"
    release, changed = fetch(f"{url}/db.fasta.gz", dest, progress=False)
    assert changed and dest.read_bytes() == data
    recorded = read_release(version_path(dest))
    assert recorded == release and recorded.sha256 == hashlib.sha256(data).hexdigest()
    assert recorded.etag and recorded.last_modified and recorded.size == len(data)
    assert sorted(p.name for p in dest.parent.iterdir()) == ["db.fasta.gz", "db.fasta.gz.version.json"]

    stamps = (dest.stat().st_mtime_ns, version_path(dest).stat().st_mtime_ns)
    handler.log.clear()
    _, changed = fetch(f"{url}/db.fasta.gz", dest, progress=False)
    assert not changed
    assert [c for c, _, _ in handler.log] == ["HEAD"]  # no data transferred
    assert (dest.stat().st_mtime_ns, version_path(dest).stat().st_mtime_ns) == stamps

    new = os.urandom(200_000)
    _publish(root / "db.fasta.gz", new)
    release2, changed = fetch(f"{url}/db.fasta.gz", dest, progress=False)
    assert changed and dest.read_bytes() == new and release2.sha256 != release.sha256


def test_interrupted_download_leaves_no_final_file_and_resumes(server, tmp_path):
    root, url, handler = server
    data = os.urandom(500_000)
    _publish(root / "big.gz", data)
    dest = tmp_path / "big.gz"
    handler.cut_after = 123_456
    with pytest.raises(DownloadError):
        fetch(f"{url}/big.gz", dest, progress=False, timeout=5)
    assert not dest.exists() and not version_path(dest).exists()
    part = tmp_path / ".big.gz.part"
    assert part.stat().st_size == 123_456

    handler.cut_after = None
    handler.log.clear()
    _, changed = fetch(f"{url}/big.gz", dest, progress=False)
    assert changed and dest.read_bytes() == data and not part.exists()
    get = [h for c, _, h in handler.log if c == "GET"][0]
    assert get["Range"] == "bytes=123456-" and get["If-Range"]


def test_resume_across_a_new_release_restarts(server, tmp_path):
    root, url, handler = server
    _publish(root / "db.gz", os.urandom(400_000))
    dest = tmp_path / "db.gz"
    handler.cut_after = 50_000
    with pytest.raises(DownloadError):
        fetch(f"{url}/db.gz", dest, progress=False, timeout=5)
    new = os.urandom(400_000)
    _publish(root / "db.gz", new)  # the server's If-Range no longer matches: full body
    handler.cut_after = None
    fetch(f"{url}/db.gz", dest, progress=False)
    assert dest.read_bytes() == new


def test_published_checksum_is_verified(server, tmp_path):
    root, url, _ = server
    data = b">a\nMKV\n" * 1000
    _publish(root / "nr.gz", data)
    (root / "nr.gz.md5").write_text(f"{hashlib.md5(data).hexdigest()}  nr.gz\n")
    release, _ = fetch(f"{url}/nr.gz", tmp_path / "nr.gz", checksum_url=f"{url}/nr.gz.md5", progress=False)
    assert release.checksums == {"md5": hashlib.md5(data).hexdigest()}

    (root / "nr.gz.md5").write_text(f"{'0' * 32}  nr.gz\n")  # the published checksum moved on...
    with pytest.raises(DownloadError, match="md5"):  # ...and the bytes do not match it
        fetch(f"{url}/nr.gz", tmp_path / "nr.gz", checksum_url=f"{url}/nr.gz.md5", progress=False)
    assert (tmp_path / "nr.gz").read_bytes() == data  # the previous release is untouched
    assert not (tmp_path / ".nr.gz.part").exists()


def test_configured_checksum_and_size(server, tmp_path):
    root, url, _ = server
    _publish(root / "x.gz", b"0123456789")
    with pytest.raises(DownloadError, match="sha256"):
        fetch(f"{url}/x.gz", tmp_path / "x.gz", sha256="ab" * 32, progress=False)
    with pytest.raises(DownloadError, match="size"):
        fetch(f"{url}/x.gz", tmp_path / "x.gz", size=11, progress=False)
    assert list(tmp_path.glob("*x.gz*")) == []
    good = hashlib.sha256(b"0123456789").hexdigest()
    _, changed = fetch(f"{url}/x.gz", tmp_path / "x.gz", sha256=good.upper(), size=10, progress=False)
    assert changed


def test_local_source(tmp_path):
    src = tmp_path / "src.fasta"
    src.write_text(">a\nMKV\n")
    dest = tmp_path / "copy" / "db.fasta"
    _, changed = fetch(str(src), dest, progress=False)
    assert changed and dest.read_text() == ">a\nMKV\n"
    stamp = version_path(dest).stat().st_mtime_ns
    os.utime(src, (time.time() + 5, time.time() + 5))  # touched, same bytes: same release
    assert fetch(str(src), dest, progress=False)[1] is False
    assert version_path(dest).stat().st_mtime_ns == stamp
    src.write_text(">a\nMKVL\n")
    assert fetch(str(src), dest, progress=False)[1] is True
    assert dest.read_text() == ">a\nMKVL\n"


def test_parse_checksum_file_formats():
    md5 = "d41d8cd98f00b204e9800998ecf8427e"
    sha = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert parse_checksum_file(f"{md5}  other.gz\n{md5.upper()} *nr.gz\n", "nr.gz") == ("md5", md5)
    assert parse_checksum_file(f"SHA256 (pdb_seqres.txt.gz) = {sha}\n", "pdb_seqres.txt.gz") == ("sha256", sha)
    assert parse_checksum_file(f"{sha}\n", "anything") == ("sha256", sha)
    with pytest.raises(DownloadError):
        parse_checksum_file(f"{md5}  a\n{md5}  b\n", "c")


def test_cli_error_is_one_line(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "swgpu_core", "download", str(tmp_path / "missing.fasta"), str(tmp_path / "out.fasta")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "missing.fasta" in proc.stderr
    assert not (tmp_path / "out.fasta").exists()


# -- incomplete data is never installed ----------------------------------------------------------
import gzip  # noqa: E402


class _NoLengthHandler(http.server.BaseHTTPRequestHandler):
    """HTTP/1.0-style: no Content-Length, the body ends when the connection closes (cut short here)."""

    body = b""

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.end_headers()

    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(type(self).body)
        self.close_connection = True

    def log_message(self, *args) -> None:
        pass


def test_http_without_length_cut_short_is_not_installed(tmp_path):
    full = gzip.compress(b">a\nMKV\n" * 20000 + os.urandom(20000).hex().encode())
    handler = type("N", (_NoLengthHandler,), {"body": full[: len(full) // 2]})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}/db.fasta.gz"
        dest = tmp_path / "db.fasta.gz"
        with pytest.raises(DownloadError, match="truncated gzip"):
            fetch(url, dest, progress=False)
        assert not dest.exists() and not version_path(dest).exists()
        handler.body = full
        assert fetch(url, dest, progress=False)[1] and dest.read_bytes() == full
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.parametrize("via", ["http", "file", "path"])
def test_truncated_upstream_gzip_is_refused(server, tmp_path, via):
    root, url, _ = server
    blob = gzip.compress(b">a\nMKV\n" * 5000)
    _publish(root / "db.fa.gz", blob[:-20])
    source = {"http": f"{url}/db.fa.gz", "file": f"file://{root}/db.fa.gz", "path": str(root / "db.fa.gz")}[via]
    dest = tmp_path / "out" / "db.fa.gz"
    with pytest.raises(DownloadError, match="truncated gzip"):
        fetch(source, dest, progress=False)
    assert not dest.exists() and not version_path(dest).exists()
    assert not list((tmp_path / "out").glob(".*"))


def test_bgzip_without_eof_block_is_refused(tmp_path):
    import pysam

    (tmp_path / "x.fa").write_bytes(b">a\nMKV\n" * 50000)
    pysam.tabix_compress(str(tmp_path / "x.fa"), str(tmp_path / "x.fa.gz"), force=True)
    blob = (tmp_path / "x.fa.gz").read_bytes()
    (tmp_path / "cut.fa.gz").write_bytes(blob[:-28])  # every block whole, the EOF block missing
    with pytest.raises(DownloadError, match="BGZF end-of-file"):
        fetch(str(tmp_path / "cut.fa.gz"), tmp_path / "out.fa.gz", progress=False)
    assert fetch(str(tmp_path / "x.fa.gz"), tmp_path / "out.fa.gz", progress=False)[1]


# -- bad destinations and sources: one-line errors, nothing replaced ----------------------------
def test_bad_destinations(tmp_path):
    src = tmp_path / "src.fasta"
    src.write_text(">a\nMKV\n")
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").write_text("x")
    with pytest.raises(SwgpuError, match="adir: is a directory; give a file name"):
        fetch(str(src), tmp_path / "adir", progress=False)
    with pytest.raises(SwgpuError, match="db.fasta: cannot write under .*afile, which is not a directory"):
        fetch(str(src), tmp_path / "afile" / "db.fasta", progress=False)
    with pytest.raises(DownloadError, match="is a directory, not a file"):
        fetch(str(tmp_path / "adir"), tmp_path / "db.fasta", progress=False)
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(DownloadError, match="fifo: the destination is not a regular file"):
        fetch(str(src), tmp_path / "fifo", progress=False)
    with pytest.raises(DownloadError, match="fifo: the version file is not a regular file"):
        fetch(str(src), tmp_path / "db.fasta", version_file=tmp_path / "fifo", progress=False)
    with pytest.raises(SwgpuError, match="v.json: cannot write under .*afile, which is not a directory"):
        fetch(str(src), tmp_path / "db.fasta", version_file=tmp_path / "afile" / "v.json", progress=False)
    assert not (tmp_path / "db.fasta").exists()
    # a version file in a directory that does not exist yet: created before anything is replaced
    release, changed = fetch(str(src), tmp_path / "db.fasta", version_file=tmp_path / "new" / "v.json", progress=False)
    assert changed and read_release(tmp_path / "new" / "v.json") == release


@pytest.mark.parametrize("what", ["destination", "version file"])
@pytest.mark.parametrize("bad", ["adir", "afile/x.fasta", "afile/deeper/x.fasta"])
def test_download_refuses_an_output_path_by_the_rule_of_every_command(tmp_path, what, bad):
    """download checks its two outputs with atomic.check_output_path, the one rule for
    output paths: the same paths are refused, with the same message, before any work."""
    src = tmp_path / "src.fasta"
    src.write_text(">a\nMKV\n")
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").write_text("x")
    with pytest.raises(SwgpuError) as rule:
        check_output_path(tmp_path / bad)
    dest, vfile = (tmp_path / bad, None) if what == "destination" else (tmp_path / "db.fasta", tmp_path / bad)
    with pytest.raises(SwgpuError) as refused:
        fetch(str(src), dest, version_file=vfile, progress=False)
    assert str(refused.value) == str(rule.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir", "afile", "src.fasta"]  # nothing written


@pytest.mark.parametrize("source", ["gopher://example.org/db.fa", "s3://bucket/db.fa", "s3:bucket/db.fa"])
def test_unknown_schemes_are_refused(tmp_path, source):
    with pytest.raises(DownloadError, match="unsupported URL scheme"):
        fetch(source, tmp_path / "db.fa", progress=False)
    assert list(tmp_path.iterdir()) == []


def test_scheme_is_case_insensitive(server, tmp_path):
    root, url, _ = server
    _publish(root / "db.fa", b">a\nMKV\n")
    _, changed = fetch(url.replace("http:", "HTTP:") + "/db.fa", tmp_path / "db.fa", progress=False)
    assert changed and (tmp_path / "db.fa").read_bytes() == b">a\nMKV\n"


def test_checksum_file_must_list_the_file(server, tmp_path):
    root, url, _ = server
    data = b">a\nMKV\n"
    _publish(root / "nr.gz", data)
    (root / "other.md5").write_text(f"{hashlib.md5(data).hexdigest()}  swissprot.gz\n")
    with pytest.raises(DownloadError, match="does not list nr.gz .it lists swissprot.gz"):
        fetch(f"{url}/nr.gz", tmp_path / "nr.gz", checksum_url=f"{url}/other.md5", progress=False)
    assert not (tmp_path / "nr.gz").exists()
    with pytest.raises(DownloadError):
        parse_checksum_file(f"{'0' * 32}  a.gz\n", "b.gz")
