"""``swgpu download SOURCE DEST``: fetch a database release, resumably and verified.

Prints whether the release changed. DEST and its version file are rewritten only when it
did, so a scheduler that compares modification times re-runs only what depends on it.
"""

from __future__ import annotations

import argparse
import sys

from ..download import fetch, version_path

NAME = "download"
HELP = "fetch a database FASTA from an https/ftp URL or a local path; resume, verify, record the release"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", help="https://, http://, ftp:// or file:// URL, or a local path")
    parser.add_argument("dest", help="where the file goes (written only when complete and verified)")
    parser.add_argument("--version-file", help="JSON file recording the release (default: DEST.version.json)")
    parser.add_argument("--md5", help="expected MD5 of the file")
    parser.add_argument("--sha256", help="expected SHA-256 of the file")
    parser.add_argument("--checksum-url", help="URL or path of a published checksum file (md5sum/sha256sum/BSD format)")
    parser.add_argument("--size", type=int, help="expected size in bytes")
    parser.add_argument("--timeout", type=float, default=60.0, help="network timeout in seconds (default 60)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    vfile = args.version_file or version_path(args.dest)
    release, changed = fetch(
        args.source,
        args.dest,
        version_file=vfile,
        md5=args.md5,
        sha256=args.sha256,
        checksum_url=args.checksum_url,
        size=args.size,
        timeout=args.timeout,
        progress=not args.quiet,
    )
    state = "new release" if changed else "unchanged"
    tag = release.etag or release.last_modified or ""
    print(
        f"{args.dest}: {state} ({release.size} bytes, sha256 {release.sha256[:16]}{', ' + tag if tag else ''}); version in {vfile}",
        file=sys.stderr,
    )
    return 0
