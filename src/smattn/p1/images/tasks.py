"""One-shot 2-way in-context tasks (docs/p1_images.md#tasks) and the OOD MNIST / Fashion-MNIST 0-vs-1 sequences.

A task on a class split: an ordered pair of distinct classes (c_A, c_B) drawn uniformly; one context and one held-out
drawing per class (two distinct drawings drawn uniformly); context A carries label ``label_a`` in {0, 1} drawn
uniformly, context B the other; the query is the held-out drawing of c_A or c_B with probability 1/2 each; the target
is y = +1 if the query's class carries label 1, else -1. (The reference's torchmeta picks the two drawings of a class
deterministically per ordered pair; drawing them uniformly gives the same task distribution, see
docs/p1_images.md#tasks.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from smattn.p1.images.features import TokenFeatures, assemble_features, patch_values
from smattn.p1.images.tokens import SEQ_LEN, TOKEN_DIM, TOKENS_PER_IMAGE, image_tokens


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


@dataclass
class TaskDraw:
    """The random choices of B tasks (every field [B] int64): classes c_A (``ca``) != c_B (``cb``), context drawings
    ``ia``, ``ib`` and held-out drawings ``ja`` != ``ia``, ``jb`` != ``ib``; ``label_a`` in {0, 1} (label of context A);
    ``query_is_b`` in {0, 1} (the query is the held-out drawing of c_B)."""

    ca: np.ndarray
    cb: np.ndarray
    ia: np.ndarray
    ja: np.ndarray
    ib: np.ndarray
    jb: np.ndarray
    label_a: np.ndarray
    query_is_b: np.ndarray

    def image_index(self, n_drawings: int) -> np.ndarray:
        """[B, 3] flat image ids ``class * n_drawings + drawing`` of (context A, context B, query)."""
        q = np.where(self.query_is_b == 1, self.cb * n_drawings + self.jb, self.ca * n_drawings + self.ja)
        return np.stack([self.ca * n_drawings + self.ia, self.cb * n_drawings + self.ib, q], axis=1)

    def label_index(self) -> np.ndarray:
        """[B, 3] label-vector ids of (context A, context B, query): (label_a, 1 - label_a, 2)."""
        return np.stack([self.label_a, 1 - self.label_a, np.full_like(self.label_a, 2)], axis=1)

    def targets(self) -> np.ndarray:
        """[B] float32: +1 if the query's class carries label 1, else -1."""
        query_label = np.where(self.query_is_b == 1, 1 - self.label_a, self.label_a)
        return np.where(query_label == 1, 1.0, -1.0).astype(np.float32)


def draw_tasks(rng: np.random.Generator, n_classes: int, n_drawings: int, batch: int) -> TaskDraw:
    """Draw the random choices of ``batch`` independent tasks with ``rng`` (the only use of the generator, so a
    task stream is a pure function of the generator's seed)."""
    if batch < 1:
        raise ValueError(f"draw_tasks: batch must be >= 1, got {batch}")
    C, Dn = int(n_classes), int(n_drawings)
    ca = rng.integers(C, size=batch)
    cb = rng.integers(C - 1, size=batch)
    cb = cb + (cb >= ca)

    def two(n):  # two distinct drawings per class: (context, held-out)
        i = rng.integers(Dn, size=n)
        j = rng.integers(Dn - 1, size=n)
        return i, j + (j >= i)

    ia, ja = two(batch)
    ib, jb = two(batch)
    label_a = rng.integers(2, size=batch)
    query_is_b = rng.integers(2, size=batch)
    return TaskDraw(ca=ca, cb=cb, ia=ia, ja=ja, ib=ib, jb=jb, label_a=label_a, query_is_b=query_is_b)


def tokens_of_images(images: np.ndarray, dataset: str, chunk: int = 2048) -> np.ndarray:
    """Patch tokens of every image: uint8 [..., 32, 32] -> float32 [n, 16, 192] (leading axes flattened), computed in
    chunks of ``chunk`` images (the LayerNorm works in float64). Per image exactly ``image_tokens``."""
    flat = np.asarray(images).reshape(-1, 32, 32)
    out = np.empty((flat.shape[0], TOKENS_PER_IMAGE, TOKEN_DIM), dtype=np.float32)
    for i in range(0, flat.shape[0], chunk):
        out[i : i + chunk] = image_tokens(flat[i : i + chunk], dataset)
    return out


def assemble_from_tokens(tokens, image, label, labels, positions, out=None):
    """x_0 of a batch from a token table: ``tokens[image[b, k]] + labels[label[b, k]]`` for the three slots k (A, B,
    query), concatenated, plus the positional table (the additions in the order of ``assemble_sequences``, so the
    result is bit for bit the same).

    Works on numpy arrays or on torch tensors of one device. tokens: [n_images, 16, 192]; image, label: [B, 3] int;
    labels: [3, 192]; positions: [48, 192]. out: optional float32 torch tensor [B, 48, 192] to fill in place (no new
    allocation: one gather and two in-place additions). Returns [B, 48, 192] float32 (``out`` when given).
    """
    B = image.shape[0]
    if out is not None:
        torch.index_select(tokens, 0, image.reshape(-1), out=out.view(3 * B, TOKENS_PER_IMAGE, TOKEN_DIM))
        out.view(B, 3, TOKENS_PER_IMAGE, TOKEN_DIM).add_(labels[label.reshape(-1)].view(B, 3, 1, TOKEN_DIM))
        return out.add_(positions)
    x = tokens[image.reshape(-1)].reshape(B, 3, TOKENS_PER_IMAGE, TOKEN_DIM)
    x = x + labels[label.reshape(-1)].reshape(B, 3, 1, TOKEN_DIM)
    return x.reshape(B, SEQ_LEN, TOKEN_DIM) + positions[None]


class TaskSet:
    """A fixed set of sequences held as indices into a token table (host memory, numpy).

    tokens: float32 [n_images, 16, 192]; image, label: int64 [n, 3] (slots A, B, query); y: float32 [n];
    labels: [3, 192]; positions: [48, 192]. ``x(i, j)`` assembles sequences i..j-1; ``to(device)`` moves the set.
    """

    def __init__(self, tokens, image, label, y, labels, positions):
        self.tokens = np.asarray(tokens, dtype=np.float32)
        self.image = np.asarray(image, dtype=np.int64)
        self.label = np.asarray(label, dtype=np.int64)
        self.y = np.asarray(y, dtype=np.float32)
        self.labels = np.asarray(labels, dtype=np.float32)
        self.positions = np.asarray(positions, dtype=np.float32)
        if not (self.image.shape == self.label.shape == (len(self.y), 3)):
            raise ValueError(
                f"TaskSet: image {self.image.shape}, label {self.label.shape} and y {self.y.shape} "
                "must be [n, 3], [n, 3] and [n]"
            )
        if len(self.image) and (self.image.min() < 0 or self.image.max() >= len(self.tokens)):
            raise ValueError(f"TaskSet: image ids outside 0..{len(self.tokens) - 1}")

    def __len__(self) -> int:
        return len(self.y)

    def x(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Sequences start..stop-1: [n, 48, 192] float32."""
        sl = slice(start, stop)
        return assemble_from_tokens(self.tokens, self.image[sl], self.label[sl], self.labels, self.positions)

    def to(self, device) -> DeviceTaskSet:
        return DeviceTaskSet(self, device)


class DeviceTaskSet:
    """A ``TaskSet`` on a torch device: tokens, indices and targets live there, sequences are assembled there.

    ``batches(size)`` yields (x [b, 48, 192], y [b]) device tensors in order, ``feature_batches(size)`` the same with
    x as ``TokenFeatures``; ``y``: [n] float32 tensor.
    """

    def __init__(self, tasks: TaskSet, device):
        self.device = torch.device(device)
        self._host_tokens = tasks.tokens
        self._tokens = self._values = None  # the device's token table and its patch values, each made on first use
        self.labels = to_device(tasks.labels, self.device)
        self.positions = to_device(tasks.positions, self.device)
        self.image = to_device(tasks.image, self.device)
        self.label = to_device(tasks.label, self.device)
        self.y = to_device(tasks.y, self.device)

    def __len__(self) -> int:
        return int(self.y.shape[0])

    @property
    def tokens(self) -> torch.Tensor:
        if self._tokens is None:
            self._tokens = to_device(self._host_tokens, self.device)
        return self._tokens

    @property
    def values(self) -> torch.Tensor:
        if self._values is None:
            self._values = to_device(patch_values(self._host_tokens), self.device)
        return self._values

    def feature_batches(self, size: int):
        """Like ``batches``, with the sequences as ``TokenFeatures`` (smattn.p1.images.features)."""
        for i in range(0, len(self), size):
            sl = slice(i, i + size)
            x = assemble_features(self.values, self.image[sl], self.label[sl], self.labels, self.positions)
            yield x, self.y[sl]

    def batches(self, size: int):
        for i in range(0, len(self), size):
            yield (
                assemble_from_tokens(
                    self.tokens, self.image[i : i + size], self.label[i : i + size], self.labels, self.positions
                ),
                self.y[i : i + size],
            )


def to_device(a: np.ndarray, device) -> torch.Tensor:
    """numpy array -> tensor on ``device``; through pinned memory with a non-blocking copy when the device is a GPU
    (the pinned block is not reused before its copy is done: torch's caching host allocator tracks it)."""
    t = torch.from_numpy(np.ascontiguousarray(a))
    device = torch.device(device)
    if device.type == "cpu":
        return t
    return t.pin_memory().to(device, non_blocking=True)


class TaskSampler:
    """Sampler of one-shot 2-way tasks on one class split.

    images: uint8 [n_classes, n_drawings, 32, 32] resized images of the split (already inverted for Omniglot).
    labels: [3, 192] label vectors; positions: [48, 192] positional table; dataset: normalisation constants to use.
    The patch tokens of every image (``tokens``, float32 [n_classes n_drawings, 16, 192]) are computed once, on first
    use; a task then costs one gather and two additions.
    """

    def __init__(self, images: np.ndarray, labels: np.ndarray, positions: np.ndarray, dataset: str = "omniglot"):
        self.images = _check_images(images, "TaskSampler")
        self.labels = np.asarray(labels, dtype=np.float32)
        self.positions = np.asarray(positions, dtype=np.float32)
        self.dataset = dataset
        self.n_classes, self.n_drawings = self.images.shape[:2]
        self._tokens = None

    @property
    def tokens(self) -> np.ndarray:
        if self._tokens is None:
            self._tokens = tokens_of_images(self.images, self.dataset)
        return self._tokens

    def draw(self, rng: np.random.Generator, batch: int) -> TaskDraw:
        """The random choices of ``batch`` independent tasks drawn with ``rng``."""
        if batch < 1:
            raise ValueError(f"TaskSampler.sample: batch must be >= 1, got {batch}")
        return draw_tasks(rng, self.n_classes, self.n_drawings, batch)

    def sample(self, rng: np.random.Generator, batch: int) -> TaskBatch:
        """Draw ``batch`` independent tasks with ``rng``."""
        d = self.draw(rng, batch)
        x = assemble_from_tokens(
            self.tokens, d.image_index(self.n_drawings), d.label_index(), self.labels, self.positions
        )
        return TaskBatch(x=x, y=d.targets(), classes=np.stack([d.ca, d.cb], axis=1), query_class=d.query_is_b)

    def task_set(self, rng: np.random.Generator, n: int) -> TaskSet:
        """The ``n`` tasks ``sample(rng, n)`` would draw, kept as indices into the token table."""
        d = self.draw(rng, n)
        return TaskSet(
            self.tokens, d.image_index(self.n_drawings), d.label_index(), d.targets(), self.labels, self.positions
        )

    def on(self, device) -> DeviceTaskSampler:
        return DeviceTaskSampler(self, device)


class DeviceTaskSampler:
    """``TaskSampler`` whose token table lives on a torch device: ``sample(rng, B)`` draws the tasks on the host (the
    same generator calls as ``TaskSampler.sample``, hence the same tasks) and assembles x_0 on the device from one
    [B, 7] index copy. Returns (x [B, 48, 192] float32, y [B] float32) device tensors; with ``out`` (a float32
    [B, 48, 192] tensor on the device) x is written into it. ``sample_features`` gives x as ``TokenFeatures`` from
    the table of patch values (the training loop's input, one reused [B, 48, 67] buffer).
    Nothing here waits for the device."""

    def __init__(self, sampler: TaskSampler, device):
        self.sampler = sampler
        self.device = torch.device(device)
        self.values = to_device(patch_values(sampler.tokens), self.device)
        self._tokens = None  # the 192-wide table ``sample`` reads: on the device only once asked for
        self.labels = to_device(sampler.labels, self.device)
        self.positions = to_device(sampler.positions, self.device)

    @property
    def tokens(self) -> torch.Tensor:
        if self._tokens is None:
            self._tokens = to_device(self.sampler.tokens, self.device)
        return self._tokens

    def sample(
        self, rng: np.random.Generator, batch: int, out: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        idx = self._indices(rng, batch)
        x = assemble_from_tokens(self.tokens, idx[:, :3], idx[:, 3:6], self.labels, self.positions, out=out)
        return x, idx[:, 6].to(torch.float32) * 2.0 - 1.0

    def _indices(self, rng: np.random.Generator, batch: int) -> torch.Tensor:
        """One draw of ``batch`` tasks as a [B, 7] device index array: image ids (A, B, query), label-vector ids,
        target bit."""
        d = self.sampler.draw(rng, batch)
        packed = np.concatenate(
            [d.image_index(self.sampler.n_drawings), d.label_index(), (d.targets() > 0).astype(np.int64)[:, None]],
            axis=1,
        )
        return to_device(packed, self.device)

    def sample_features(
        self, rng: np.random.Generator, batch: int, out: torch.Tensor | None = None
    ) -> tuple[TokenFeatures, torch.Tensor]:
        """``sample`` with the sequences as ``TokenFeatures`` (the same tasks for the same generator); ``out``: an
        optional [B, 48, 67] float32 device tensor that holds the features (reused by the training loop)."""
        idx = self._indices(rng, batch)
        x = assemble_features(self.values, idx[:, :3], idx[:, 3:6], self.labels, self.positions, out=out)
        return x, idx[:, 6].to(torch.float32) * 2.0 - 1.0


def ood_sequences(
    train_images: dict, test_images: dict, dataset: str, labels: np.ndarray, positions: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """OOD 0-vs-1 sequences (MNIST or Fashion-MNIST) (docs/p1_images.md#tasks).

    train_images / test_images: {0: uint8 [n0, 32, 32], 1: uint8 [n1, 32, 32]} resized images of classes 0 and 1.
    For the i-th image of the concatenated test set [class 0 ..., class 1 ...] the sequence is
    [i-th training image of class 0 with e_0, i-th training image of class 1 with e_1, test image i with e_2];
    target -1 for class 0, +1 for class 1.
    Returns x: [n0 + n1, 48, 192] float32, y: [n0 + n1] float32.
    """
    ts = ood_task_set(train_images, test_images, dataset, labels, positions)
    return ts.x(), ts.y


def ood_task_set(
    train_images: dict, test_images: dict, dataset: str, labels: np.ndarray, positions: np.ndarray
) -> TaskSet:
    """The sequences of ``ood_sequences`` as a ``TaskSet`` (token table: the n class-0 training images, the n class-1
    training images, the n test images)."""
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
    toks = tokens_of_images(np.concatenate([train_images[0][:n], train_images[1][:n], test]), dataset)
    i = np.arange(n)
    image = np.stack([i, n + i, 2 * n + i], axis=1)
    label = np.broadcast_to(np.array([0, 1, 2]), (n, 3))
    return TaskSet(toks, image, label, y, labels, positions)


def balanced_subset(y: np.ndarray, n: int) -> np.ndarray:
    """Indices of the first n/2 examples with y = +1 followed by the first n/2 with y = -1
    (docs/p1_images.md#export)."""
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
