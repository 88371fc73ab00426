"""Images -> patch tokens -> 48-token sequences ``x_0`` (docs/p1_images.md#tokens).

Pipeline per image (exactly as the reference's torchvision/torchmeta pipeline):

1. Omniglot only: inversion (strokes 255, background 0) of the 105x105 binary drawing.
2. Resize to 32x32 with PIL bilinear (antialiased) on the uint8 image -> uint8 32x32 (``resize_uint8``).
3. To [0, 1], per-dataset affine normalisation ``(v - mean) / std``, replicate to 3 channels.
4. 8x8 patches on a 4x4 grid read row-major -> 16 tokens; each patch flattened as (row, column, channel) with the
   channel fastest -> 192 numbers (``patchify``).
5. Per-patch LayerNorm over the 192 numbers, no affine, eps 1e-5, biased variance (``patch_layer_norm``).

A sequence is [context A (16 tokens), context B (16), query (16)] (T = 48) plus the standardised sinusoidal positional
table (``positional_encoding``) plus the label vector of each image (e_0 / e_1 for the contexts, e_2 for the query).
"""

from __future__ import annotations

import numpy as np

IMAGE_SIZE = 32
PATCH = 8
CHANNELS = 3
TOKENS_PER_IMAGE = (IMAGE_SIZE // PATCH) ** 2  # 16
TOKEN_DIM = PATCH * PATCH * CHANNELS  # 192
SEQ_LEN = 3 * TOKENS_PER_IMAGE  # 48
LN_EPS = 1e-5

#: per-dataset (mean, std) of the affine normalisation applied after scaling to [0, 1]
NORMALISATION = {
    "omniglot": (0.922, 0.084),
    "mnist": (0.1307, 0.3081),
    "fashion": (0.286, 0.353),
}


def resize_uint8(images: np.ndarray, invert: bool) -> np.ndarray:
    """Resize images to 32x32 with PIL bilinear.

    images: [n, h, w] bool or uint8 (bool: True = white background pixel, as in the Omniglot PNGs).
    invert: map v -> 255 - v before resizing (Omniglot: strokes become 255).
    Returns uint8 [n, 32, 32].
    """
    from PIL import Image  # only here: a bare PyTorch + JAX install may lack Pillow

    images = np.asarray(images)
    if images.ndim != 3:
        raise ValueError(f"resize_uint8: expected images of shape [n, h, w], got {images.shape}")
    if images.dtype == bool:
        images = images.astype(np.uint8) * 255
    if images.dtype != np.uint8:
        raise ValueError(f"resize_uint8: expected bool or uint8 images, got dtype {images.dtype}")
    out = np.empty((images.shape[0], IMAGE_SIZE, IMAGE_SIZE), dtype=np.uint8)
    for i, im in enumerate(images):
        if invert:
            im = 255 - im
        out[i] = np.asarray(Image.fromarray(im, mode="L").resize((IMAGE_SIZE, IMAGE_SIZE), Image.BILINEAR))
    return out


def normalise(images_uint8: np.ndarray, dataset: str) -> np.ndarray:
    """[..., 32, 32] uint8 -> float32 (v/255 - mean)/std with the dataset's constants (single channel)."""
    if dataset not in NORMALISATION:
        raise ValueError(f"normalise: unknown dataset {dataset!r}; expected one of {sorted(NORMALISATION)}")
    mean, std = NORMALISATION[dataset]
    return ((np.asarray(images_uint8, dtype=np.float32) / 255.0 - mean) / std).astype(np.float32)


def patchify(images: np.ndarray) -> np.ndarray:
    """[..., 32, 32] single-channel images -> [..., 16, 192] patch tokens.

    The three channels are identical replicas, so each pixel value appears three times in a row (channel fastest);
    patches are read row-major over the 4x4 grid, pixels row-major inside a patch.
    """
    images = np.asarray(images)
    if images.shape[-2:] != (IMAGE_SIZE, IMAGE_SIZE):
        raise ValueError(f"patchify: expected [..., 32, 32] images, got {images.shape}")
    lead = images.shape[:-2]
    g = IMAGE_SIZE // PATCH
    x = images.reshape(*lead, g, PATCH, g, PATCH)  # [..., gr, r, gc, c]
    x = np.moveaxis(x, -3, -2)  # [..., gr, gc, r, c]
    x = x.reshape(*lead, g * g, PATCH * PATCH)
    return np.repeat(x, CHANNELS, axis=-1)


def patch_layer_norm(tokens: np.ndarray, eps: float = LN_EPS) -> np.ndarray:
    """LayerNorm over the last axis (no affine, biased variance). tokens: [..., 192] -> same shape, float32."""
    t = np.asarray(tokens, dtype=np.float64)
    mu = t.mean(axis=-1, keepdims=True)
    var = ((t - mu) ** 2).mean(axis=-1, keepdims=True)
    return ((t - mu) / np.sqrt(var + eps)).astype(np.float32)


def image_tokens(images_uint8: np.ndarray, dataset: str) -> np.ndarray:
    """Resized uint8 images [..., 32, 32] -> LayerNormed patch tokens [..., 16, 192] (float32)."""
    return patch_layer_norm(patchify(normalise(images_uint8, dataset)))


def positional_encoding(n_positions: int = SEQ_LEN, dim: int = TOKEN_DIM) -> np.ndarray:
    """Standardised sinusoidal table [n_positions, dim] (float32).

    PE[p, 2k] = sin(p 10000^(-2k/dim)), PE[p, 2k+1] = cos(p 10000^(-2k/dim)); then (PE - mean)/(std + 1e-6) with
    the mean and the unbiased std over all entries.
    """
    if dim % 2:
        raise ValueError(f"positional_encoding: dim must be even, got {dim}")
    p = np.arange(n_positions, dtype=np.float64)[:, None]
    freq = 10000.0 ** (-np.arange(0, dim, 2, dtype=np.float64) / dim)
    pe = np.zeros((n_positions, dim))
    pe[:, 0::2] = np.sin(p * freq)
    pe[:, 1::2] = np.cos(p * freq)
    pe = (pe - pe.mean()) / (pe.std(ddof=1) + 1e-6)
    return pe.astype(np.float32)


def label_vectors(seed: int, dim: int = TOKEN_DIM) -> np.ndarray:
    """Three fixed label vectors e_0, e_1 (context labels) and e_2 (query marker): [3, dim], entries N(0, 1).

    Drawn with torch's generator (as an ``nn.Embedding`` initialisation would be) seeded with ``seed``.
    """
    import torch

    g = torch.Generator().manual_seed(int(seed))
    return torch.randn(3, dim, generator=g, dtype=torch.float32).numpy()


def assemble_sequences(
    tok_a: np.ndarray,
    tok_b: np.ndarray,
    tok_q: np.ndarray,
    label_a: np.ndarray,
    labels: np.ndarray,
    positions: np.ndarray,
) -> np.ndarray:
    """Build x_0 for a batch of tasks.

    tok_a, tok_b, tok_q: [B, 16, 192] patch tokens of the two context images and the query.
    label_a: [B] int in {0, 1}, the label carried by context A (context B carries 1 - label_a).
    labels: [3, 192] label vectors; positions: [48, 192] positional table.
    Returns x_0: [B, 48, 192] float32.
    """
    label_a = np.asarray(label_a, dtype=np.int64)
    if not np.all((label_a == 0) | (label_a == 1)):
        raise ValueError("assemble_sequences: label_a must contain only 0 and 1")
    x = np.concatenate(
        [
            tok_a + labels[label_a][:, None, :],
            tok_b + labels[1 - label_a][:, None, :],
            tok_q + labels[2][None, None, :],
        ],
        axis=1,
    )
    if x.shape[1:] != positions.shape:
        raise ValueError(f"assemble_sequences: sequence shape {x.shape[1:]} != positions {positions.shape}")
    return (x + positions[None]).astype(np.float32)
