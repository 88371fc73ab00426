"""Obtain and verify raw data files.

Sources, in order: the file already in the data folder (if it verifies); a local mirror folder laid out like
the shared data folder (config ``data_mirror`` or environment ``SMATTN_DATA_MIRROR``); the official upstream
URLs (https first; a download stops as soon as it exceeds the expected size). Every file is checked against the
project's checksum table (``registry``) and written under a temporary name, then renamed, so nothing partial is
ever left under the final name.

Files already in the data folder are checked again by ``verify_present`` at the start of every workflow run
(rules/data.smk, while the workflow is parsed, before any job). Its cache ``<data_dir>/.verified.json`` records,
per file, the size, modification and status-change times (ns) and inode at which the file last hashed to a
listed checksum: a file whose stat is unchanged costs one ``stat``; any change makes it hashed again.

Command line (for users preparing a data folder by hand)::

    python -m smattn.data.fetch --data-dir resources/data --mirror /path/to/mirror [relpath ...]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import urllib.error
import urllib.request
from pathlib import Path

from ..io import atomic_path
from .registry import RAW_FILES, Digest, RawFile, lookup

CACHE_NAME = ".verified.json"  # in the data folder: stat of each file at its last successful hash

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


def matching_digest(entry: RawFile, path: Path) -> Digest | None:
    """The table checksum ``path`` matches, or None (a file of none of the listed sizes is not hashed)."""
    if path.stat().st_size not in {d.size for d in entry.digests}:
        return None
    got = file_digests(path)
    for d in entry.digests:
        if got[d.algorithm] == d.hexdigest:
            return d
    return None


def check(entry: RawFile, path: Path) -> str | None:
    """Return the label of the matching checksum, or None if the file matches none."""
    d = matching_digest(entry, path)
    return d.label if d else None


def _stat_key(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def _read_cache(data_dir: Path) -> dict:
    try:
        with open(data_dir / CACHE_NAME, encoding="utf-8") as fh:
            cache = json.load(fh)
        return cache if isinstance(cache, dict) else {}
    except (OSError, ValueError):
        return {}  # no cache, unreadable or garbled: everything is hashed again


def _write_cache(data_dir: Path, updates: dict) -> None:
    """Merge ``updates`` into the cache (atomic rename; a lost concurrent update only costs a re-hash later)."""
    cache = _read_cache(data_dir)
    cache.update(updates)
    try:
        with atomic_path(data_dir / CACHE_NAME) as tmp:
            tmp.write_text(json.dumps(cache, indent=1, sort_keys=True), encoding="utf-8")
    except OSError:
        pass  # a read-only data folder: verification still happens, only without the cache


def _remember(data_dir: Path, relpath: str, digest: Digest) -> None:
    _write_cache(data_dir, {relpath: {"stat": _stat_key(data_dir / relpath), digest.algorithm: digest.hexdigest}})


def _expected(entry: RawFile) -> str:
    return "; ".join(f"{d.algorithm} {d.hexdigest} ({d.label}, {d.size} bytes)" for d in entry.digests)


def verify_present(data_dir: str | os.PathLike, relpaths=None) -> list[str]:
    """Check every raw file present in ``data_dir`` against the checksum table, cheaply; return those checked.

    A file whose (size, mtime_ns, ctime_ns, inode) equals the cache's record for a still-listed checksum costs
    one ``stat``; any other present file is hashed (and the cache updated when it verifies). Missing files are
    skipped (rule fetch_raw obtains them). Raises DataError naming every file that no longer verifies, with its
    expected checksums and what to do.
    """
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        return []
    cache = _read_cache(data_dir)
    updates, bad, checked = {}, [], []
    for rel in relpaths if relpaths is not None else [f.relpath for f in RAW_FILES]:
        entry, path = lookup(rel), data_dir / rel
        if not path.is_file():
            continue
        checked.append(rel)
        rec = cache.get(rel)
        if (
            isinstance(rec, dict)
            and rec.get("stat") == _stat_key(path)
            and any(rec.get(d.algorithm) == d.hexdigest for d in entry.digests)
        ):
            continue
        d = matching_digest(entry, path)
        if d is None:
            got = file_digests(path)
            bad.append(
                f"{path} ({path.stat().st_size} bytes, sha256 {got['sha256']}) does not match the expected "
                f"{_expected(entry)}"
            )
        else:
            updates[rel] = {"stat": _stat_key(path), d.algorithm: d.hexdigest}
    if updates:
        _write_cache(data_dir, updates)
    if bad:
        raise DataError(
            "raw data changed after it was verified: " + "; ".join(bad) + ". Delete the file(s) named to fetch "
            "them again (snakemake then also reruns every job that read them), or restore the original bytes."
        )
    return checked


def _mismatch(entry: RawFile, path: Path, source: str) -> DataError:
    got = file_digests(path)
    return DataError(
        f"{entry.relpath}: checksum mismatch for the copy from {source} "
        f"({path.stat().st_size} bytes; sha256 {got['sha256']}, md5 {got['md5']}); expected {_expected(entry)}. "
        "The file is truncated or corrupt; replace it at its source."
    )


def _download(url: str, dest: Path, timeout: float, max_bytes: int) -> None:
    """Copy ``url`` to ``dest``; DataError as soon as the body exceeds ``max_bytes`` (announced or read)."""
    req = urllib.request.Request(url, headers={"User-Agent": "smattn-workflow"})
    with urllib.request.urlopen(req, timeout=timeout) as resp, open(dest, "wb") as out:
        announced = resp.headers.get("Content-Length") if getattr(resp, "headers", None) else None
        if announced and announced.isdigit() and int(announced) > max_bytes:
            raise DataError(f"{url}: announces {int(announced)} bytes, more than the expected {max_bytes}")
        total = 0
        while chunk := resp.read(min(1 << 20, max_bytes + 1 - total)):
            total += len(chunk)
            if total > max_bytes:
                raise DataError(f"{url}: sent more than the expected {max_bytes} bytes; download stopped")
            out.write(chunk)


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
        d = matching_digest(entry, final)
        if d:
            _remember(Path(data_dir), relpath, d)
            log(f"{relpath}: present and verified ({d.label})")
            return final
        log(f"{relpath}: present but does not verify; obtaining it again")
    tried: list[str] = []
    if mirror and not Path(mirror).is_dir():
        tried.append(f"the mirror folder {Path(mirror)} does not exist")
        log(f"{relpath}: the mirror folder {Path(mirror)} does not exist (check data_mirror / SMATTN_DATA_MIRROR)")
    elif mirror:
        src = Path(mirror) / relpath
        if src.is_file():
            with atomic_path(final) as tmp:
                shutil.copyfile(src, tmp)
                d = matching_digest(entry, tmp)
                if not d:
                    raise _mismatch(entry, tmp, f"mirror {src}")
            _remember(Path(data_dir), relpath, d)
            log(f"{relpath}: copied from mirror {src} ({d.label})")
            return final
        tried.append(f"mirror {Path(mirror)} has no {relpath}")
    else:
        tried.append("no mirror configured")
    if allow_download:
        for url in entry.urls:
            try:
                with atomic_path(final) as tmp:
                    _download(url, tmp, timeout, entry.max_size)
                    d = matching_digest(entry, tmp)
                    if not d:
                        raise _mismatch(entry, tmp, url)
                _remember(Path(data_dir), relpath, d)
                log(f"{relpath}: downloaded from {url} ({d.label})")
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
    ap.add_argument("--mirror", default=os.environ.get("SMATTN_DATA_MIRROR"), help="default: $SMATTN_DATA_MIRROR")
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
