"""Obtaining and verifying raw files: mirror, checksum mismatch, truncation, offline, atomicity."""

import shutil

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
