"""Helpers on overlap matrices Q (L, L) shared by the state evolution and the prediction errors."""

from __future__ import annotations

import numpy as np

__all__ = ["clip_overlap", "sqrtm_psd"]


def clip_overlap(Q, qmax: float = 1.0 - 1e-6):
    """Symmetrise Q (L, L) and clip its eigenvalues to [0, qmax] (an overlap lies between 0 and the identity)."""
    Q = 0.5 * (np.asarray(Q, dtype=np.float64) + np.asarray(Q, dtype=np.float64).T)
    e, v = np.linalg.eigh(Q)
    return (v * np.clip(e, 0.0, qmax)) @ v.T


def sqrtm_psd(M):
    """Symmetric square root of the symmetric part of M (L, L), negative eigenvalues clipped to 0."""
    e, v = np.linalg.eigh(0.5 * (M + M.T))
    return (v * np.sqrt(np.clip(e, 0.0, None))) @ v.T
