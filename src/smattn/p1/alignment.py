"""Kernel-task alignment (docs/p1_theory.md#predictor-and-alignment): overlaps of the training kernel's
principal components with the labels.

``overlap_k = |v_k . y| / sqrt(P)`` for the eigenvectors ``v_k`` of K (no temperature term), ordered by
decreasing eigenvalue; K: [P, P], y: [P] (entries +-1) -> overlaps [k_max].
"""

from __future__ import annotations

import numpy as np


def pc_overlaps(K: np.ndarray, y: np.ndarray, k_max: int) -> np.ndarray:
    """Cosines between the top ``k_max`` principal components of K [P, P] and the label vector y [P]."""
    K = np.asarray(K, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if K.ndim != 2 or K.shape[0] != K.shape[1] or y.shape != (K.shape[0],):
        raise ValueError(f"need a square K [P, P] and y [P], got {K.shape} and {y.shape}")
    if not 1 <= k_max <= K.shape[0]:
        raise ValueError(f"k_max must be in 1..{K.shape[0]}, got {k_max}")
    w, V = np.linalg.eigh((K + K.T) / 2)
    order = np.argsort(w)[::-1][:k_max]
    return np.abs(V[:, order].T @ y) / np.linalg.norm(y)
