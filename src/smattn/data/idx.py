"""Readers for the IDX files of MNIST and Fashion-MNIST (gzip-compressed or plain)."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

_DTYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path: str | Path) -> np.ndarray:
    """Read one IDX file. Returns an array of shape given by the header (images: (n, 28, 28) uint8)."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        data = fh.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0:
        raise ValueError(f"{path}: not an IDX file (bad magic number)")
    code, ndim = data[2], data[3]
    if code not in _DTYPES:
        raise ValueError(f"{path}: unknown IDX data type 0x{code:02x}")
    shape = tuple(int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    offset = 4 + 4 * ndim
    dtype = np.dtype(_DTYPES[code])
    expected = int(np.prod(shape)) * dtype.itemsize
    if len(data) - offset != expected:
        raise ValueError(
            f"{path}: truncated or padded IDX file ({len(data) - offset} data bytes, header says {expected})"
        )
    arr = np.frombuffer(data, dtype=dtype, offset=offset).reshape(shape)
    return arr.astype(dtype.newbyteorder("=")) if dtype.byteorder == ">" else arr.copy()


def load_split(folder: str | Path, split: str) -> tuple[np.ndarray, np.ndarray]:
    """Images (n, 28, 28) uint8 and labels (n,) uint8 of MNIST / Fashion-MNIST ``split`` ('train' or 't10k')."""
    if split not in ("train", "t10k"):
        raise ValueError(f"split must be 'train' or 't10k', got {split!r}")
    folder = Path(folder)
    images = read_idx(folder / f"{split}-images-idx3-ubyte.gz")
    labels = read_idx(folder / f"{split}-labels-idx1-ubyte.gz")
    if images.shape[0] != labels.shape[0]:
        raise ValueError(f"{folder}: {split} has {images.shape[0]} images but {labels.shape[0]} labels")
    return images, labels
