"""One-shot 2-way in-context tasks (P1 spec §5.2) and the OOD MNIST / Fashion-MNIST 0-vs-1 sequences.

A task on a class split: an ordered pair of distinct classes (c_A, c_B) drawn uniformly; one context and one held-out
drawing per class (two distinct drawings drawn uniformly); context A carries label ``label_a`` in {0, 1} drawn
uniformly, context B the other; the query is the held-out drawing of c_A or c_B with probability 1/2 each; the target
is y = +1 if the query's class carries label 1, else -1. (The reference's torchmeta picks the two drawings of a class
deterministically per ordered pair; drawing them uniformly gives the same task distribution, see the spec.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from smattn.p1.images.tokens import assemble_sequences, image_tokens


def _check_images(images: np.ndarray, name: str, min_classes: int = 2) -> np.ndarray:
    images = np.asarray(images)
    if images.ndim != 4 or images.shape[2:] != (32, 32) or images.dtype != np.uint8:
        raise ValueError(
            f"{name}: expected uint8 images of shape [classes, drawings, 32, 32], got {images.dtype} {images.shape}"
        )
    if images.shape[0] < min_classes or images.shape[1] < 2:
        raise ValueError(
            f"{name}: need at least {min_classes} classes and 2 drawings per class, got {images.shape[:2]}"
        )
    return images


@dataclass
class TaskBatch:
    """x: [B, 48, 192] float32 sequences x_0; y: [B] float32 in {-1, +1};
    classes: [B, 2] (c_A, c_B) class indices within the split; query_class: [B] (0 = c_A, 1 = c_B)."""

    x: np.ndarray
    y: np.ndarray
    classes: np.ndarray
    query_class: np.ndarray


class TaskSampler:
    """Sampler of one-shot 2-way tasks on one class split.

    images: uint8 [n_classes, n_drawings, 32, 32] resized images of the split (already inverted for Omniglot).
    labels: [3, 192] label vectors; positions: [48, 192] positional table; dataset: normalisation constants to use.
    """

    def __init__(self, images: np.ndarray, labels: np.ndarray, positions: np.ndarray, dataset: str = "omniglot"):
        self.images = _check_images(images, "TaskSampler")
        self.labels = np.asarray(labels, dtype=np.float32)
        self.positions = np.asarray(positions, dtype=np.float32)
        self.dataset = dataset
        self.n_classes, self.n_drawings = self.images.shape[:2]

    def sample(self, rng: np.random.Generator, batch: int) -> TaskBatch:
        """Draw ``batch`` independent tasks with ``rng``."""
        if batch < 1:
            raise ValueError(f"TaskSampler.sample: batch must be >= 1, got {batch}")
        C, Dn = self.n_classes, self.n_drawings
        ca = rng.integers(C, size=batch)
        cb = rng.integers(C - 1, size=batch)
        cb = cb + (cb >= ca)

        # two distinct drawings per class: (context, held-out)
        def two(n):
            i = rng.integers(Dn, size=n)
            j = rng.integers(Dn - 1, size=n)
            return i, j + (j >= i)

        ia, ja = two(batch)
        ib, jb = two(batch)
        label_a = rng.integers(2, size=batch)
        query_is_b = rng.integers(2, size=batch)
        q_img = np.where(query_is_b[:, None, None] == 1, self.images[cb, jb], self.images[ca, ja])
        toks = image_tokens(np.stack([self.images[ca, ia], self.images[cb, ib], q_img]), self.dataset)
        x = assemble_sequences(toks[0], toks[1], toks[2], label_a, self.labels, self.positions)
        query_label = np.where(query_is_b == 1, 1 - label_a, label_a)
        y = np.where(query_label == 1, 1.0, -1.0).astype(np.float32)
        return TaskBatch(x=x, y=y, classes=np.stack([ca, cb], axis=1), query_class=query_is_b)


def ood_sequences(
    train_images: dict, test_images: dict, dataset: str, labels: np.ndarray, positions: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """OOD 0-vs-1 sequences (MNIST or Fashion-MNIST), spec §5.2.

    train_images / test_images: {0: uint8 [n0, 32, 32], 1: uint8 [n1, 32, 32]} resized images of classes 0 and 1.
    For the i-th image of the concatenated test set [class 0 ..., class 1 ...] the sequence is
    [i-th training image of class 0 with e_0, i-th training image of class 1 with e_1, test image i with e_2];
    target -1 for class 0, +1 for class 1.
    Returns x: [n0 + n1, 48, 192] float32, y: [n0 + n1] float32.
    """
    for d, name in ((train_images, "train_images"), (test_images, "test_images")):
        if set(d) != {0, 1}:
            raise ValueError(f"ood_sequences: {name} must have keys {{0, 1}}, got {sorted(d)}")
    test = np.concatenate([test_images[0], test_images[1]])
    n = test.shape[0]
    if min(len(train_images[0]), len(train_images[1])) < n:
        raise ValueError(
            f"ood_sequences: need >= {n} training images of each class, got "
            f"{len(train_images[0])} and {len(train_images[1])}"
        )
    y = np.concatenate([-np.ones(len(test_images[0])), np.ones(len(test_images[1]))]).astype(np.float32)
    toks = image_tokens(np.stack([train_images[0][:n], train_images[1][:n], test]), dataset)
    x = assemble_sequences(toks[0], toks[1], toks[2], np.zeros(n, dtype=np.int64), labels, positions)
    return x, y


def balanced_subset(y: np.ndarray, n: int) -> np.ndarray:
    """Indices of the first n/2 examples with y = +1 followed by the first n/2 with y = -1 (spec §5.4)."""
    if n % 2:
        raise ValueError(f"balanced_subset: n must be even, got {n}")
    y = np.asarray(y)
    pos = np.flatnonzero(y > 0)[: n // 2]
    neg = np.flatnonzero(y < 0)[: n // 2]
    if len(pos) < n // 2 or len(neg) < n // 2:
        raise ValueError(
            f"balanced_subset: asked for {n // 2} per label, have {int((y > 0).sum())} positive and "
            f"{int((y < 0).sum())} negative examples"
        )
    return np.concatenate([pos, neg])
