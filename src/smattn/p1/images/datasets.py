"""Resized image stores of the image task: Omniglot per Vinyals split, MNIST / Fashion-MNIST classes 0 and 1.

A store is an ``.npz`` of uint8 32x32 images (the output of PIL's bilinear resize, i.e. exactly what torchvision's
``Resize`` hands to ``ToTensor``), small enough (33 MB for all of Omniglot) to keep in memory during training:

* Omniglot: ``{split}_images`` [n_classes, 20, 32, 32] (inverted: strokes 255) and ``{split}_classes`` [n_classes]
  (strings "folder/alphabet/character") for split in train, val, test;
* OOD: ``{mnist|fashion}_{train|test}_{0|1}`` [n, 32, 32].

Raw data are read with the project loaders ``smattn.data.omniglot`` and ``smattn.data.idx``.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from smattn.p1.images.tokens import resize_uint8

OOD_SETS = ("mnist", "fashion")


def omniglot_store(zip_background: str | os.PathLike, zip_evaluation: str | os.PathLike) -> dict[str, np.ndarray]:
    """Resized Omniglot images of the three Vinyals splits (see module docstring)."""
    from smattn.data import omniglot

    splits = omniglot.load_split({omniglot.BACKGROUND: zip_background, omniglot.EVALUATION: zip_evaluation})
    out = {}
    for name, (classes, images) in splits.items():
        n, d = images.shape[:2]
        # the loader already inverted the drawings (strokes 255), so no inversion here
        small = resize_uint8(images.reshape(n * d, *images.shape[2:]), invert=False)
        out[f"{name}_images"] = small.reshape(n, d, *small.shape[1:])
        out[f"{name}_classes"] = np.array(["/".join(c) for c in classes])
    return out


def ood_store(mnist_dir: str | os.PathLike, fashion_dir: str | os.PathLike) -> dict[str, np.ndarray]:
    """Resized images of classes 0 and 1 of the MNIST and Fashion-MNIST train and test sets (file order kept)."""
    from smattn.data.idx import load_split

    out = {}
    for name, folder in (("mnist", mnist_dir), ("fashion", fashion_dir)):
        for split, tag in (("train", "train"), ("t10k", "test")):
            images, labels = load_split(Path(folder), split)
            for c in (0, 1):
                out[f"{name}_{tag}_{c}"] = resize_uint8(images[labels == c], invert=False)
    return out


def load_store(path: str | os.PathLike) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def ood_images(store: dict[str, np.ndarray], name: str) -> tuple[dict, dict]:
    """({0: train class-0, 1: train class-1}, {0: test class-0, 1: test class-1}) of OOD set ``name``."""
    if name not in OOD_SETS:
        raise ValueError(f"ood_images: unknown OOD set {name!r}; expected one of {OOD_SETS}")
    return ({c: store[f"{name}_train_{c}"] for c in (0, 1)}, {c: store[f"{name}_test_{c}"] for c in (0, 1)})
