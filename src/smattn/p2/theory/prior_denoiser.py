"""Gaussian prior denoiser f_in of P2 (spec §2.3), with optional side information S = sqrt(lam) W + noise."""

from __future__ import annotations

import numpy as np

__all__ = ["f_in"]


def f_in(A, B, lam: float = 0.0, S=None):
    """Posterior mean and covariance of w_i given the Gaussian field (A, b_i).

    A: (p, p) symmetric; B: (p, d) stacking b_i as columns; lam >= 0 side-information strength; S: (p, d) side
    information (required if lam > 0).  Returns (W_hat (p, d), C_hat (p, p)) with
    C_hat = ((1 + lam) I + A)^{-1},  W_hat = C_hat (B + sqrt(lam) S).
    """
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    p = A.shape[0]
    if A.shape != (p, p) or B.ndim != 2 or B.shape[0] != p:
        raise ValueError(f"A must be (p, p) and B (p, d); got {A.shape} and {B.shape}")
    if lam < 0:
        raise ValueError(f"side-information strength lam must be >= 0, got {lam}")
    H = (1.0 + lam) * np.eye(p) + 0.5 * (A + A.T)
    if np.linalg.eigvalsh(H).min() <= 0.0:
        raise FloatingPointError(f"(1 + lam) I + A is not positive definite (eigenvalues {np.linalg.eigvalsh(H)})")
    C = np.linalg.inv(H)
    rhs = B if lam == 0 else B + np.sqrt(lam) * np.asarray(S, dtype=np.float64)
    return C @ rhs, 0.5 * (C + C.T)
