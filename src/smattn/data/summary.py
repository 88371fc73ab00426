"""A summary of every raw data set as the loaders see it (counts, shapes, label balance)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np

from . import idx, omniglot, spoc, trec, wordpiece


def summarise(
    omniglot_zips: dict[str, str],
    mnist_dir: str | Path,
    fashion_dir: str | Path,
    trec_train: str | Path,
    trec_test: str | Path,
    vocab: str | Path,
    spoc_files: list[str],
) -> dict:
    """Counts of every data set; raises ValueError if a count differs from the spec's."""
    members = omniglot.list_classes(omniglot_zips)
    split = omniglot.vinyals_split(members)
    sample = omniglot.load_images(omniglot_zips, split["test"][:1], members)
    out: dict = {
        "omniglot": {
            "images": {f: omniglot.N_IMAGES[f] for f in omniglot_zips},
            "classes": {k: len(v) for k, v in split.items()},
            "stroke_fraction_first_test_class": float((sample == 255).mean()),
        }
    }
    for name, folder in (("mnist", mnist_dir), ("fashion_mnist", fashion_dir)):
        entry = {}
        for s in ("train", "t10k"):
            images, labels = idx.load_split(folder, s)
            entry[s] = {
                "shape": list(images.shape),
                "label_counts": [int(c) for c in np.bincount(labels, minlength=10)],
            }
        out[name] = entry
    train, test = trec.load_trec(trec_train), trec.load_trec(trec_test)
    if (len(train), len(test)) != (5452, 500):
        raise ValueError(f"TREC: {len(train)} + {len(test)} questions, expected 5452 + 500")
    out["trec"] = {
        "train": len(train),
        "test": len(test),
        "train_coarse": dict(sorted(Counter(q.coarse for q in train).items())),
        "train_fine_labels": len({(q.coarse, q.fine) for q in train}),
    }
    tok = wordpiece.make_tokenizer(vocab)
    out["wordpiece"] = {"vocab_size": tok.get_vocab_size(), "first_question_ids": tok.encode(train[0].text).ids}
    ref = {}
    for f in spoc_files:
        p = Path(f)
        ref[p.name] = list(spoc.read_npy(p).shape) if p.suffix == ".npy" else len(next(iter(spoc.read_csv(p).values())))
    out["reference_spoc"] = ref
    return out
