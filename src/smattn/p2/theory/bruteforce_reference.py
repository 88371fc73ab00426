"""Brute-force importance-sampling reference for the channel posterior (L = 2, 3) and for one SE update.

Independent of the Gauss-Hermite grids of channel_denoiser: for each sample, n_points random first-layer (and, for
L = 3, second-layer) indices are drawn from N(omega_k, spread^2 V_kk) per layer and token, the last layer is solved
from the observation (z_L = s B^{-1} x(y), s = +-1, weight 1 / |det B|) and the self-normalised importance weights
target / proposal give the posterior moments.  Slow and noisy per sample, but with a known effective sample size;
it cross-checks the fixed points of the state evolution (docs/p2_theory.md, "Depth 3").
"""

from __future__ import annotations

import numpy as np

from .attention_link import (
    apply_skip_matrix,
    check_skip,
    link_logits,
    preimage,
    skip_matrix_det,
    skip_matrix_inverse,
    softmax_entries,
)
from .channel_denoiser import g_out
from .overlaps import clip_overlap, sqrtm_psd
from .quadrature import QuadratureSettings
from .state_evolution import TeacherDraws, channel_covariance, overlap_update

__all__ = ["bruteforce_moments", "bruteforce_update"]


def _inv_apply(z, v, c):
    p, q = softmax_entries(z)
    i00, i01, i10, i11 = skip_matrix_inverse(p, q, c)
    return (
        np.stack([i00 * v[..., 0] + i01 * v[..., 1], i10 * v[..., 0] + i11 * v[..., 1]], axis=-1),
        np.log(skip_matrix_det(p, q, c)),
    )


def bruteforce_moments(
    ell,
    omega,
    V,
    c: float,
    rng: np.random.Generator,
    *,
    n_points: int = 200_000,
    spread: float = 1.5,
    chunk_points: int = 50_000,
):
    """Posterior mean (n, L, 2) and effective sample size (n,) by importance sampling, n_points per sample.

    ell: (n, 2) logits; omega: (n, L, 2), L in (2, 3); V: (L, L) SPD.  The proposal of the integrated layers is
    N(omega_k, spread^2 V_kk) per token; the points are processed in chunks of chunk_points (memory only).
    """
    c = check_skip(c)
    omega = np.asarray(omega, dtype=np.float64)
    n, L, _ = omega.shape
    if L not in (2, 3):
        raise ValueError(f"L must be 2 or 3, got {L}")
    V = 0.5 * (np.asarray(V, dtype=np.float64) + np.asarray(V, dtype=np.float64).T)
    P = np.linalg.inv(V)
    sd = spread * np.sqrt(np.diag(V))
    x = preimage(np.asarray(ell, dtype=np.float64))
    mean = np.empty((n, L, 2))
    ess = np.empty(n)
    for i in range(n):
        logs, first, lasts = [], [], []
        for j0 in range(0, int(n_points), int(chunk_points)):
            m = min(int(chunk_points), int(n_points) - j0)
            u = rng.standard_normal((m, L - 1, 2))
            zs = omega[i, None, : L - 1, :] + sd[None, : L - 1, None] * u  # (m, L-1, 2)
            if L == 2:
                zl, logdet = _inv_apply(zs[:, 0], np.broadcast_to(x[i], (m, 2)), c)
            else:
                a2 = apply_skip_matrix(zs[:, 0], zs[:, 1], c)
                y1, ld2 = _inv_apply(a2, np.broadcast_to(x[i], (m, 2)), c)
                zl, ld1 = _inv_apply(zs[:, 0], y1, c)
                logdet = ld1 + ld2
            lq = -0.5 * np.sum(u * u, axis=(1, 2))  # proposal, constants dropped
            for s in (1.0, -1.0):
                Z = np.concatenate([zs, s * zl[:, None, :]], axis=1)  # (m, L, 2)
                D = Z - omega[i]
                logs.append(-0.5 * np.einsum("kat,ab,kbt->k", D, P, D) - logdet - lq)
                first.append(zs)
                lasts.append(s * zl)
        lw = np.concatenate(logs)
        lw[~np.isfinite(lw)] = -np.inf
        w = np.exp(lw - lw.max())
        w /= w.sum()
        zs_all = np.concatenate(first)
        zl_all = np.concatenate(lasts)
        mean[i, : L - 1] = np.einsum("k,kat->at", w, zs_all)
        mean[i, L - 1] = w @ zl_all
        ess[i] = 1.0 / np.sum(w * w)
    return mean, ess


def bruteforce_update(
    Q,
    alpha: float,
    c: float,
    draws: TeacherDraws,
    rng: np.random.Generator,
    *,
    v_reg: float = 1e-3,
    n_points: int = 200_000,
    quad: QuadratureSettings | None = None,
) -> dict:
    """One undamped SE update Q -> (alpha R)(I + alpha R)^{-1} with R from the brute-force posterior, on draws.

    Q: (L, L); draws: teacher draws (n, L, 2) (use a subset of the SE's draws).  If quad is given, the grid
    denoiser's R on the same draws is computed as well, so the two differ only by the inner integration.
    Returns dict with Q_update (L, L), R, R_se, R_diag_cov (covariance (L, L) of the mean's diagonal over the
    draws), min_ess, median_ess and, with quad, Q_update_grid, R_grid and R_diff_se (standard error of the paired
    per-sample difference of the diagonal of R, (L,)).
    """
    Q = clip_overlap(np.asarray(Q, dtype=np.float64))
    V = channel_covariance(Q, v_reg)
    omega = np.einsum("ab,nbt->nat", sqrtm_psd(Q), draws.xi)
    Z = omega + np.einsum("ab,nbt->nat", sqrtm_psd(V), draws.U)
    mean, ess = bruteforce_moments(link_logits(Z, c), omega, V, c, rng, n_points=n_points)
    g = np.einsum("ab,nbt->nat", np.linalg.inv(V), mean - omega)
    per = np.einsum("nat,nbt->nab", g, g)
    out = {
        "R": per.mean(0),
        "R_se": per.std(0, ddof=1) / np.sqrt(len(per)),
        "R_diag_cov": np.atleast_2d(np.cov(np.einsum("naa->na", per), rowvar=False)) / len(per),
        "Q_update": overlap_update(alpha * per.mean(0)),
        "min_ess": float(ess.min()),
        "median_ess": float(np.median(ess)),
    }
    if quad is not None:
        gg, _, mom = g_out(link_logits(Z, c), omega, V, c, quad, jacobian=False)
        per_g = np.einsum("nat,nbt->nab", gg, gg)
        out["R_grid"] = per_g.mean(0)
        out["Q_update_grid"] = overlap_update(alpha * per_g.mean(0))
        out["grid_min_ess"] = float(mom.ess.min())
        d = np.einsum("naa->na", per - per_g)
        out["R_diff_se"] = d.std(0, ddof=1) / np.sqrt(len(d))
    return out
