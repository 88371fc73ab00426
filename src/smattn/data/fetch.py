"""Obtain and verify raw data files.

Sources, in order: the file already in the data folder (if it verifies); a local mirror folder laid out like
the shared data folder (config ``data_mirror`` or environment ``SMATTN_DATA_MIRROR``); the official upstream
URLs. Every file is checked against the project's checksum table (``registry``) and written under a
temporary name, then renamed, so nothing partial is ever left under the final name.

Command line (for users preparing a data folder by hand)::

    python -m smattn.data.fetch --data-dir resources/data --mirror /path/to/mirror [relpath ...]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import urllib.error
import urllib.request
from pathlib import Path

from ..io import atomic_path
from .registry import RAW_FILES, RawFile, lookup

MIRROR_HINT = (
    "To work offline, point the workflow at a local mirror folder laid out like the shared data folder "
    "(e.g. <mirror>/omniglot/images_background.zip): set data_mirror in config.yaml, pass "
    "--config data_mirror=/path/to/mirror, or export SMATTN_DATA_MIRROR=/path/to/mirror."
)


class DataError(RuntimeError):
    """A raw file could not be obtained or did not verify; the message names the file."""


def file_digests(path: Path) -> dict[str, str]:
    sha, md5 = hashlib.sha256(), hashlib.md5()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            sha.update(chunk)
            md5.update(chunk)
    return {"sha256": sha.hexdigest(), "md5": md5.hexdigest()}


def check(entry: RawFile, path: Path) -> str | None:
    """Return the label of the matching checksum, or None if the file matches none."""
    got = file_digests(path)
    for d in entry.digests:
        if got[d.algorithm] == d.hexdigest:
            return d.label
    return None


def _mismatch(entry: RawFile, path: Path, source: str) -> DataError:
    got = file_digests(path)
    expected = "; ".join(f"{d.algorithm} {d.hexdigest} ({d.label})" for d in entry.digests)
    return DataError(
        f"{entry.relpath}: checksum mismatch for the copy from {source} "
        f"({path.stat().st_size} bytes; sha256 {got['sha256']}, md5 {got['md5']}); expected {expected}. "
        "The file is truncated or corrupt; replace it at its source."
    )


def _download(url: str, dest: Path, timeout: float) -> None:
    req = urllib.request.Request(url, headers={"User-Agent": "smattn-workflow"})
    with urllib.request.urlopen(req, timeout=timeout) as resp, open(dest, "wb") as out:
        shutil.copyfileobj(resp, out, 1 << 20)


def fetch(
    relpath: str,
    data_dir: str | os.PathLike,
    mirror: str | os.PathLike | None = None,
    allow_download: bool = True,
    timeout: float = 60.0,
    log=print,
) -> Path:
    """Make ``data_dir/relpath`` exist and verify; return its path. Raises DataError naming the file."""
    entry = lookup(relpath)
    final = Path(data_dir) / relpath
    if final.exists():
        label = check(entry, final)
        if label:
            log(f"{relpath}: present and verified ({label})")
            return final
        log(f"{relpath}: present but does not verify; obtaining it again")
    tried: list[str] = []
    if mirror:
        src = Path(mirror) / relpath
        if src.is_file():
            with atomic_path(final) as tmp:
                shutil.copyfile(src, tmp)
                label = check(entry, tmp)
                if not label:
                    raise _mismatch(entry, tmp, f"mirror {src}")
            log(f"{relpath}: copied from mirror {src} ({label})")
            return final
        tried.append(f"mirror {Path(mirror)} has no {relpath}")
    else:
        tried.append("no mirror configured")
    if allow_download:
        for url in entry.urls:
            try:
                with atomic_path(final) as tmp:
                    _download(url, tmp, timeout)
                    label = check(entry, tmp)
                    if not label:
                        raise _mismatch(entry, tmp, url)
                log(f"{relpath}: downloaded from {url} ({label})")
                return final
            except (urllib.error.URLError, OSError, TimeoutError) as exc:
                tried.append(f"download {url} failed: {exc}")
    else:
        tried.append("downloads disabled")
    raise DataError(f"{relpath}: could not be obtained ({'; '.join(tried)}). {MIRROR_HINT}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Obtain and verify the workflow's raw data files.")
    ap.add_argument("relpaths", nargs="*", help="files to fetch (default: all)")
    ap.add_argument("--data-dir", default="resources/data")
    ap.add_argument("--mirror", default=os.environ.get("SMATTN_DATA_MIRROR"))
    ap.add_argument("--no-download", action="store_true")
    ns = ap.parse_args(argv)
    targets = ns.relpaths or [f.relpath for f in RAW_FILES]
    try:
        for rel in targets:
            fetch(rel, ns.data_dir, ns.mirror, allow_download=not ns.no_download)
    except (DataError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
