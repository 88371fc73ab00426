"""GAMP for the deep tied-attention target (P2 Algorithm 1) with the analytic channel Jacobian.

API for other groups: run_gamp(d, alpha, n_iter, seed, damping, ...) -> GampResult with per-iteration
M (iters, p, p) = W_hat W^T / d, Q (iters, p, p) = W_hat W_hat^T / d and the plug-in test error (iters,).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .attention_link import attention_output, check_skip, link_logits
from .channel_denoiser import g_out
from .prior_denoiser import f_in
from .quadrature import QuadratureSettings

__all__ = ["GampResult", "make_data", "run_gamp"]


@dataclass
class GampResult:
    """Per-iteration record (index t = state after the t-th update, t = 1..n_iter).

    M: (n_iter, p, p) rows = estimate layer, columns = teacher layer; Q: (n_iter, p, p); test_error: (n_iter,)
    plug-in error E||g(W x) - g(W_hat x)||_F^2 on fresh samples; delta: (n_iter,) ||M^t - M^{t-1}||_F;
    A: (n_iter, p, p); min_ess: (n_iter,) smallest effective node count of the denoiser; W_hat, W (p, d).
    """

    M: np.ndarray
    Q: np.ndarray
    test_error: np.ndarray
    delta: np.ndarray
    A: np.ndarray
    min_ess: np.ndarray
    W_hat: np.ndarray
    W: np.ndarray


def make_data(W, n, rng, c):
    """Inputs X (n, T=2, d) i.i.d. N(0,1) and the noiseless observation logits (n, 2) of the deep attention target."""
    p, d = W.shape
    X = rng.standard_normal((n, 2, d))
    Z = np.einsum("ad,ntd->nat", W, X) / np.sqrt(d)
    return X, link_logits(Z, c), Z


def run_gamp(
    d: int,
    alpha: float,
    n_iter: int,
    seed: int = 0,
    *,
    damping: float = 0.8,
    c: float = 1.0,
    L: int = 2,
    lam: float = 0.0,
    n_test: int = 1000,
    v_reg: float = 1e-3,
    quad: QuadratureSettings = QuadratureSettings(),
) -> GampResult:
    """Run GAMP on synthetic data of dimension d with n = floor(alpha d) samples.

    damping: weight of the new iterate (reference 0.8); lam: side-information strength (S = sqrt(lam) W + noise);
    v_reg: added to V inside the denoiser only (reference 1e-3); quad: the denoiser's quadrature.
    Initialisation as the reference: W_hat^0 i.i.d. N(0, 1), C_hat^0 = I, g_out^{-1} = 0.
    """
    if d < 2 or n_iter < 1 or alpha <= 0:
        raise ValueError(f"need d >= 2, n_iter >= 1, alpha > 0; got d={d}, n_iter={n_iter}, alpha={alpha}")
    if not 0 < damping <= 1:
        raise ValueError(f"damping must be in (0, 1], got {damping}")
    check_skip(c)
    rng = np.random.default_rng(seed)
    n = int(np.floor(alpha * d))
    W = rng.standard_normal((L, d))
    X, ell, _ = make_data(W, n, rng, c)
    Xt = rng.standard_normal((n_test, 2, d))
    y_test = attention_output(np.einsum("ad,ntd->nat", W, Xt) / np.sqrt(d), c)
    S = np.sqrt(lam) * W + rng.standard_normal((L, d)) if lam > 0 else None
    W_hat = rng.standard_normal((L, d))
    C_hat = np.eye(L)
    g_prev = np.zeros((n, L, 2))
    rec = {k: [] for k in ("M", "Q", "err", "delta", "A", "ess")}
    M_prev = W_hat @ W.T / d
    sq = np.sqrt(d)
    for _ in range(n_iter):
        V = 0.5 * (C_hat + C_hat.T)
        omega = np.einsum("ad,ntd->nat", W_hat, X) / sq - np.einsum("ab,nbt->nat", V, g_prev)
        gout, dg, mom = g_out(ell, omega, V + v_reg * np.eye(L), c, quad, jacobian=True)
        A = -np.einsum("natbt->ab", dg) / d
        A = 0.5 * (A + A.T)
        B = np.einsum("ntd,nat->ad", X, gout) / sq + A @ W_hat
        W_new, C_new = f_in(A, B, lam, S)
        W_hat = damping * W_new + (1.0 - damping) * W_hat
        C_hat = damping * C_new + (1.0 - damping) * C_hat
        g_prev = gout
        M = W_hat @ W.T / d
        y_hat = attention_output(np.einsum("ad,ntd->nat", W_hat, Xt) / sq, c)
        rec["M"].append(M)
        rec["Q"].append(W_hat @ W_hat.T / d)
        rec["err"].append(float(np.mean(np.sum((y_test - y_hat) ** 2, axis=(1, 2)))))
        rec["delta"].append(float(np.linalg.norm(M - M_prev)))
        rec["A"].append(A)
        rec["ess"].append(float(mom.ess.min()))
        M_prev = M
    return GampResult(
        M=np.array(rec["M"]),
        Q=np.array(rec["Q"]),
        test_error=np.array(rec["err"]),
        delta=np.array(rec["delta"]),
        A=np.array(rec["A"]),
        min_ess=np.array(rec["ess"]),
        W_hat=W_hat,
        W=W,
    )
