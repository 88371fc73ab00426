"""Similarity of a layer's Gram matrix to its final value (P2 Fig. 3 right;
docs/p2_dynamics.md#similarity-measures).

For a projection weight ``W(t)`` of shape (h, k) (h = hidden width, k = embedding width) the Gram matrix is
``G(t) = W(t) W(t)^T`` (h x h) and the similarity to the last step ``t_f`` is

    S(t) = tr(G(t) G(t_f)) / (||G(t)||_F ||G(t_f)||_F)   in [0, 1],   S(t_f) = 1.

Trajectories are long (10,920 steps of 64 x 128 weights per run), so :class:`GramRecorder` stores the packed
upper triangle of each ``G(t)`` in a file on disk (memory-mapped) and computes ``S`` in a second, streaming
pass once the final Gram is known; memory stays at one chunk of steps.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

__all__ = ["gram", "gram_similarity", "pack_symmetric", "packed_weights", "GramRecorder"]


def gram(W):
    """``W W^T`` over the last axis: W (..., h, k) -> (..., h, h), float64."""
    W = np.asarray(W, np.float64)
    if W.ndim < 2:
        raise ValueError(f"gram: expected an array of shape (..., h, k), got shape {W.shape}")
    return W @ np.swapaxes(W, -1, -2)


def gram_similarity(G, G_final):
    """``tr(G G_f) / (||G||_F ||G_f||_F)`` for symmetric G (..., h, h) and G_final (h, h); returns (...,)."""
    G = np.asarray(G, np.float64)
    Gf = np.asarray(G_final, np.float64)
    if G.shape[-2:] != Gf.shape or Gf.shape[0] != Gf.shape[1]:
        raise ValueError(f"gram_similarity: shapes {G.shape} and {Gf.shape} are not (..., h, h) and (h, h)")
    num = np.einsum("...ij,ji->...", G, Gf)
    den = np.linalg.norm(G, axis=(-2, -1)) * np.linalg.norm(Gf)
    if np.any(den == 0):
        raise ValueError("gram_similarity: a Gram matrix is zero")
    return num / den


def pack_symmetric(G):
    """Upper triangle (diagonal included) of symmetric G (..., h, h) -> (..., h (h + 1) / 2)."""
    G = np.asarray(G)
    h = G.shape[-1]
    iu = np.triu_indices(h)
    return G[..., iu[0], iu[1]]


def packed_weights(h: int) -> np.ndarray:
    """Weights making ``sum(w * pack(A) * pack(B)) = tr(A B)`` for symmetric A, B: 1 on the diagonal, 2 off it."""
    iu = np.triu_indices(h)
    return np.where(iu[0] == iu[1], 1.0, 2.0)


class GramRecorder:
    """Record the packed Gram matrices of ``n_layers`` layers for ``n_steps`` steps in a file on disk.

    ``record(step, grams)`` takes grams of shape (n_layers, h, h) (NumPy or torch, any float dtype) and stores
    them as float32; ``similarity_to_final()`` returns ``S`` of shape (n_layers, n_steps) in float64 (inner
    products accumulated in float64), using the last recorded step as ``t_f``. ``close()`` deletes the file.
    """

    def __init__(self, path: str | os.PathLike, n_steps: int, n_layers: int, h: int):
        if n_steps < 1 or n_layers < 1 or h < 1:
            raise ValueError(f"GramRecorder: n_steps, n_layers, h must be >= 1, got {n_steps}, {n_layers}, {h}")
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.n_steps, self.n_layers, self.h = int(n_steps), int(n_layers), int(h)
        self.size = self.h * (self.h + 1) // 2
        self._iu = np.triu_indices(self.h)
        self._mm = np.lib.format.open_memmap(
            self.path, mode="w+", dtype=np.float32, shape=(self.n_steps, self.n_layers, self.size)
        )
        self._filled = np.zeros(self.n_steps, bool)

    def record(self, step: int, grams) -> None:
        if not 0 <= step < self.n_steps:
            raise IndexError(f"GramRecorder.record: step {step} outside [0, {self.n_steps})")
        if hasattr(grams, "detach"):
            grams = grams.detach().cpu().numpy()
        grams = np.asarray(grams)
        if grams.shape != (self.n_layers, self.h, self.h):
            raise ValueError(
                f"GramRecorder.record: expected shape {(self.n_layers, self.h, self.h)}, got {grams.shape}"
            )
        self._mm[step] = grams[:, self._iu[0], self._iu[1]]
        self._filled[step] = True

    def record_packed(self, start: int, packed) -> None:
        """Store already packed Grams of consecutive steps: ``packed`` (k, n_layers, h (h + 1) / 2) from ``start``."""
        packed = np.asarray(packed)
        k = packed.shape[0] if packed.ndim == 3 else -1
        if packed.shape[1:] != (self.n_layers, self.size) or k < 1:
            raise ValueError(
                f"GramRecorder.record_packed: expected shape (k, {self.n_layers}, {self.size}), got {packed.shape}"
            )
        if not (0 <= start and start + k <= self.n_steps):
            raise IndexError(f"GramRecorder.record_packed: steps {start}..{start + k - 1} outside [0, {self.n_steps})")
        self._mm[start : start + k] = packed
        self._filled[start : start + k] = True

    def similarity_to_final(self, chunk: int = 1024) -> np.ndarray:
        return self.similarity_to(self.n_steps - 1, chunk)

    def similarity_to(self, ref_step: int, chunk: int = 1024) -> np.ndarray:
        """S of every recorded step against the Gram of step ``ref_step`` instead of the last: (n_layers, n_steps)."""
        if not 0 <= ref_step < self.n_steps:
            raise IndexError(f"GramRecorder.similarity_to: step {ref_step} outside [0, {self.n_steps})")
        if not self._filled.all():
            missing = int((~self._filled).sum())
            raise RuntimeError(f"GramRecorder: {missing} of {self.n_steps} steps were never recorded")
        self._mm.flush()
        w = packed_weights(self.h)
        final = self._mm[ref_step].astype(np.float64)  # (L, size)
        norm_f = np.sqrt(np.einsum("ls,ls,s->l", final, final, w))
        out = np.empty((self.n_layers, self.n_steps))
        for a in range(0, self.n_steps, chunk):
            block = self._mm[a : a + chunk].astype(np.float64)  # (c, L, size)
            num = np.einsum("cls,ls,s->lc", block, final, w)
            norm = np.sqrt(np.einsum("cls,cls,s->lc", block, block, w))
            out[:, a : a + chunk] = num / (norm * norm_f[:, None])
        return out

    def close(self) -> None:
        mm = getattr(self, "_mm", None)
        if mm is not None:
            del self._mm
            del mm
        self.path.unlink(missing_ok=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
