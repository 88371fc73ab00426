"""Obtaining and verifying raw files: mirror, checksum mismatch, truncation, offline, atomicity."""

import pytest

from smattn.data import fetch as fetch_mod
from smattn.data.fetch import DataError, fetch
from smattn.data.registry import RAW_FILES, lookup

REL = "trec/TREC_10.label"


def _no_network(*args, **kwargs):
    raise fetch_mod.urllib.error.URLError("network unreachable (test)")


def test_every_mirror_file_verifies(raw_data):
    for entry in RAW_FILES:
        assert fetch_mod.check(entry, raw_data / entry.relpath), entry.relpath


def test_fetch_from_mirror_then_cached(tmp_path, raw_data, monkeypatch):
    monkeypatch.setattr(fetch_mod.urllib.request, "urlopen", _no_network)
    msgs = []
    path = fetch(REL, tmp_path / "data", raw_data, log=msgs.append)
    assert path.read_bytes() == (raw_data / REL).read_bytes()
    assert "copied from mirror" in msgs[-1]
    fetch(REL, tmp_path / "data", None, allow_download=False, log=msgs.append)
    assert "present and verified" in msgs[-1]
    assert [p.name for p in path.parent.iterdir()] == ["TREC_10.label"]  # no temporary left


def test_omniglot_rebuild_is_labelled(tmp_path, raw_data):
    label = fetch_mod.check(lookup("omniglot/images_background.zip"), raw_data / "omniglot/images_background.zip")
    assert "pixel-identical rebuild" in label


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_mirror_mismatch_names_file_and_checksums(tmp_path, raw_data, damage):
    mirror = tmp_path / "mirror"
    (mirror / "trec").mkdir(parents=True)
    data = (raw_data / REL).read_bytes()
    data = data[:1000] if damage == "truncate" else data[:10] + b"X" + data[11:]
    (mirror / REL).write_bytes(data)
    with pytest.raises(DataError) as err:
        fetch(REL, tmp_path / "data", mirror, allow_download=False)
    msg = str(err.value)
    assert REL in msg and "checksum mismatch" in msg
    assert lookup(REL).digests[0].hexdigest in msg  # expected
    assert fetch_mod.file_digests(mirror / REL)["sha256"] in msg  # actual
    assert not (tmp_path / "data" / REL).exists()
    assert list((tmp_path / "data" / "trec").iterdir()) == []  # nothing partial left


def test_offline_without_mirror_says_how_to_provide_one(tmp_path, monkeypatch):
    monkeypatch.setattr(fetch_mod.urllib.request, "urlopen", _no_network)
    with pytest.raises(DataError) as err:
        fetch(REL, tmp_path / "data", None)
    msg = str(err.value)
    assert REL in msg and "no mirror configured" in msg and "network unreachable" in msg
    assert "SMATTN_DATA_MIRROR" in msg and "data_mirror" in msg
    assert not (tmp_path / "data" / REL).exists()


def test_corrupt_file_in_data_folder_is_replaced(tmp_path, raw_data):
    target = tmp_path / "data" / REL
    target.parent.mkdir(parents=True)
    target.write_bytes(b"garbage")
    fetch(REL, tmp_path / "data", raw_data, allow_download=False, log=lambda m: None)
    assert target.read_bytes() == (raw_data / REL).read_bytes()


def test_unknown_file_is_rejected(tmp_path, raw_data):
    with pytest.raises(KeyError, match="not a raw file"):
        fetch("mnist/nope.gz", tmp_path, raw_data)


def test_cli_reports_errors(tmp_path, capsys):
    rc = fetch_mod.main(["--data-dir", str(tmp_path), "--mirror", str(tmp_path / "none"), "--no-download", REL])
    assert rc == 1
    assert REL in capsys.readouterr().err


def test_command_line_mirror_wins_over_environment():
    from smattn.config import data_mirror

    env = {"SMATTN_DATA_MIRROR": "/from/env"}
    assert data_mirror({"data_mirror": "/from/config"}, env) == "/from/config"
    assert data_mirror({"data_mirror": None}, env) == "/from/env"
    assert data_mirror({}, {}) is None


def test_missing_mirror_folder_is_reported_as_such(tmp_path):
    with pytest.raises(DataError) as err:
        fetch(REL, tmp_path / "data", tmp_path / "no-such-mirror", allow_download=False, log=lambda m: None)
    assert f"the mirror folder {tmp_path / 'no-such-mirror'} does not exist" in str(err.value)
    assert "has no" not in str(err.value)


def test_upstream_urls_prefer_https():
    for entry in RAW_FILES:
        assert entry.urls[0].startswith("https://"), entry.relpath
        schemes = [u.split(":", 1)[0] for u in entry.urls]
        assert schemes == sorted(schemes, key=lambda s: s != "https"), f"{entry.relpath}: http before https"


class _Endless:
    """A fake HTTP response that never ends (or announces a length), counting the bytes handed out."""

    def __init__(self, announce=None):
        self.headers = {"Content-Length": str(announce)} if announce else {}
        self.sent = 0

    def read(self, n=-1):
        n = 1 << 16 if n is None or n < 0 else n
        self.sent += n
        return b"x" * n

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("announce", [None, 10**12])
def test_download_stops_past_the_expected_size(tmp_path, monkeypatch, announce):
    resp = _Endless(announce)
    monkeypatch.setattr(fetch_mod.urllib.request, "urlopen", lambda *a, **k: resp)
    with pytest.raises(DataError, match="expected 23354"):
        fetch(REL, tmp_path / "data", None, log=lambda m: None)
    assert resp.sent <= lookup(REL).max_size + 1
    assert not (tmp_path / "data" / REL).exists()


def test_registry_sizes_match_the_mirror(raw_data):
    for entry in RAW_FILES:
        assert (raw_data / entry.relpath).stat().st_size in {d.size for d in entry.digests}, entry.relpath


def test_verify_present_catches_a_changed_file_and_caches_the_rest(tmp_path, raw_data, monkeypatch):
    import os

    data = tmp_path / "data"
    rel_npy = "reference/spoc/dist_1.npy"
    for rel in (REL, rel_npy):
        fetch(rel, data, raw_data, allow_download=False, log=lambda m: None)
    assert (data / fetch_mod.CACHE_NAME).is_file()
    assert sorted(fetch_mod.verify_present(data)) == sorted([REL, rel_npy])

    def no_hashing(path):
        raise AssertionError(f"{path} hashed although its stat is unchanged")

    monkeypatch.setattr(fetch_mod, "file_digests", no_hashing)
    fetch_mod.verify_present(data)  # cache hits cost a stat only
    monkeypatch.undo()

    target = data / rel_npy
    st = target.stat()
    raw = bytearray(target.read_bytes())
    raw[-1] ^= 0xFF  # one flipped byte, same size, and the modification time put back
    target.write_bytes(bytes(raw))
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    with pytest.raises(DataError) as err:
        fetch_mod.verify_present(data)
    msg = str(err.value)
    assert str(target) in msg and lookup(rel_npy).digests[0].hexdigest in msg and "Delete" in msg
    assert REL not in msg


def test_verify_present_skips_missing_files_and_rehashes_without_cache(tmp_path, raw_data):
    data = tmp_path / "data"
    fetch(REL, data, raw_data, allow_download=False, log=lambda m: None)
    (data / fetch_mod.CACHE_NAME).write_text("{garbled")
    assert fetch_mod.verify_present(data) == [REL]
    assert fetch_mod.verify_present(tmp_path / "nothing-here") == []
