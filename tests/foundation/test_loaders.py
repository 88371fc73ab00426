"""The data loaders on the real raw files."""

from collections import Counter

import numpy as np
import pytest

from smattn.data import idx, omniglot, spoc, trec, wordpiece


@pytest.fixture(scope="module")
def members(omniglot_zips):
    return omniglot.list_classes(omniglot_zips)


def test_omniglot_counts_and_vinyals_split(members):
    assert len(members) == 964 + 659
    split = omniglot.vinyals_split(members)
    assert {k: len(v) for k, v in split.items()} == {"train": 1028, "val": 172, "test": 423}
    sets = [set(v) for v in split.values()]
    assert not (sets[0] & sets[1]) and not (sets[0] & sets[2]) and not (sets[1] & sets[2])
    assert all(v == sorted(v) for v in split.values())
    # Gurmukhi is cut between train (01-41) and test (42-45).
    assert ("images_evaluation", "Gurmukhi", "character41") in sets[0]
    assert ("images_evaluation", "Gurmukhi", "character42") in sets[2]
    assert split["test"][0] == ("images_evaluation", "Gurmukhi", "character42")
    # Alphabets of each split (Appendix B).
    assert {c[1] for c in split["val"]} == set(omniglot.VAL_BACKGROUND)
    assert {c[1] for c in split["test"]} == set(omniglot.TEST_EVALUATION) | {"Gurmukhi"}


def test_omniglot_images_are_inverted(omniglot_zips, members):
    cls = ("images_background", "Latin", "character01")
    images = omniglot.load_images(omniglot_zips, [cls], members)
    assert images.shape == (1, 20, 105, 105) and images.dtype == np.uint8
    assert set(np.unique(images)) <= {0, 255}
    # strokes are a minority of pixels and now carry the value 255; the border is background (0)
    stroke = (images == 255).mean()
    assert 0.01 < stroke < 0.3
    assert images[:, :, 0, :].max() == 0 and images[:, :, :, 0].max() == 0


def test_omniglot_rejects_a_zip_with_missing_images(tmp_path, omniglot_zips):
    import zipfile

    bad = tmp_path / "images_background.zip"
    with zipfile.ZipFile(omniglot_zips["images_background"]) as src, zipfile.ZipFile(bad, "w") as dst:
        for name in src.namelist()[:200]:
            dst.writestr(name, src.read(name))
    with pytest.raises(ValueError, match="expected 19280"):
        omniglot.list_classes({"images_background": bad})


@pytest.mark.parametrize(
    "folder, train_counts",
    [
        ("mnist", [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]),
        ("fashion-mnist", [6000] * 10),
    ],
)
def test_idx_readers(raw_data, folder, train_counts):
    x, y = idx.load_split(raw_data / folder, "train")
    assert x.shape == (60000, 28, 28) and x.dtype == np.uint8 and y.shape == (60000,)
    assert np.bincount(y, minlength=10).tolist() == train_counts
    xt, yt = idx.load_split(raw_data / folder, "t10k")
    assert xt.shape == (10000, 28, 28) and yt.shape == (10000,)
    if folder == "mnist":
        assert np.bincount(yt).tolist() == [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]


def test_idx_rejects_truncated_file(tmp_path, raw_data):
    import gzip

    data = gzip.open(raw_data / "mnist" / "t10k-labels-idx1-ubyte.gz").read()
    bad = tmp_path / "t10k-labels-idx1-ubyte.gz"
    bad.write_bytes(gzip.compress(data[:-10]))
    with pytest.raises(ValueError, match="truncated"):
        idx.read_idx(bad)


def test_trec_parser(raw_data):
    train = trec.load_trec(raw_data / "trec" / "train_5500.label")
    test = trec.load_trec(raw_data / "trec" / "TREC_10.label")
    assert len(train) == 5452 and len(test) == 500
    assert Counter(q.coarse for q in train) == {
        "ABBR": 86,
        "DESC": 1162,
        "ENTY": 1250,
        "HUM": 1223,
        "LOC": 835,
        "NUM": 896,
    }
    assert Counter(q.coarse for q in test) == {"ABBR": 9, "DESC": 138, "ENTY": 94, "HUM": 65, "LOC": 81, "NUM": 113}
    assert len({(q.coarse, q.fine) for q in train}) == 50 and len({(q.coarse, q.fine) for q in test}) == 42
    assert train[0] == trec.Question("DESC", "manner", "How did serfdom develop in and then leave Russia ?")
    # line 66 holds the file's only non-ASCII byte (0xF0), replaced by a space as the HF loader does
    assert train[65].text == "Which city has the oldest relationship as a sister city with Los Angeles ?"
    assert train[0].coarse_index == trec.COARSE_LABELS.index("DESC")


def test_wordpiece_known_ids(raw_data):
    vocab_path = raw_data / "bert-base-uncased" / "vocab.txt"
    lines = vocab_path.read_text(encoding="utf-8").split("\n")
    tok = wordpiece.make_tokenizer(vocab_path)
    assert tok.get_vocab_size() == 30522
    assert tok.token_to_id("[PAD]") == 0 and tok.token_to_id("[CLS]") == 101 and tok.token_to_id("[SEP]") == 102
    enc = tok.encode("How did serfdom develop in and then leave Russia ?")
    # hand-checked against vocab.txt line numbers (0-based): how 2129, did 2106, ser 14262, ##f 2546, ...
    assert enc.ids == [101, 2129, 2106, 14262, 2546, 9527, 4503, 1999, 1998, 2059, 2681, 3607, 1029, 102]
    assert [lines[i] for i in enc.ids] == enc.tokens
    enc = tok.encode("What is the café's Naïve unbelievability ?")
    assert enc.tokens == [
        "[CLS]",
        "what",
        "is",
        "the",
        "cafe",
        "'",
        "s",
        "naive",
        "un",
        "##bel",
        "##ie",
        "##va",
        "##bility",
        "?",
        "[SEP]",
    ]
    long = tok.encode(" ".join(["word"] * 100))
    assert len(long.ids) == 32 and long.ids[0] == 101 and long.ids[-1] == 102


def test_wordpiece_rejects_a_foreign_vocabulary(tmp_path):
    bad = tmp_path / "vocab.txt"
    bad.write_text("\n".join(["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]))
    with pytest.raises(ValueError, match="not at index"):
        wordpiece.make_tokenizer(bad)


def test_spoc_reference_files(raw_data):
    ref = raw_data / "reference" / "spoc"
    bo = spoc.read_csv(ref / "BO_2w.csv")
    assert set(bo) == {"alpha", "Q11", "Q22"} and len(bo["alpha"]) == 48
    crit = spoc.read_csv(ref / "alpha_critical.csv")
    assert set(crit) == {"skip", "alpha1", "alpha2"} and len(crit["skip"]) == 16
    assert spoc.read_npy(ref / "C1_random.npy").shape == (8, 64600)
    assert spoc.read_npy(ref / "AMP_BO_2w_d1000_alpha1.2_samples1_seed1.npy").shape == (34, 2, 2)
