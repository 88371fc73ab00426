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
    check_skip,
    link_logits,
    preimage,
    skip_matrix_det,
    skip_matrix_inverse,
    softmax_entries,
)
from .channel_denoiser import g_out
from .overlaps import clip_overlap, sqrtm_psd
from .quadrature import QuadratureSettings, relative_weights
from .state_evolution import TeacherDraws, channel_covariance, overlap_update

__all__ = ["bruteforce_moments", "bruteforce_update"]


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
    f = L - 1  # the sampled layers
    mean = np.empty((n, L, 2))
    ess = np.empty(n)
    for i in range(n):
        om = omega[i]
        wl0, wl1 = om[f]  # the last layer's mean
        # per chunk: the sampled layers (f, 2, m), the + branch of the last layer and the log-weights of both signs
        zs_c, zl_c, lp_c, lm_c = [], [], [], []
        for j0 in range(0, int(n_points), int(chunk_points)):
            m = min(int(chunk_points), int(n_points) - j0)
            u = rng.standard_normal((m, f, 2)).transpose(1, 2, 0)  # (f, 2, m), the draws of shape (m, f, 2)
            zs = om[:f, :, None] + sd[:f, None, None] * u
            p1, q1 = softmax_entries(zs[0].T)
            if L == 2:
                y0, y1 = x[i, 0], x[i, 1]
                logdet = np.log(skip_matrix_det(p1, q1, c))
            else:
                # a2 = A_c(z1) z2, y = A_c(a2)^{-1} x, z3 = A_c(z1)^{-1} y; det B = det A_c(a2) det A_c(z1)
                a20 = (1.0 - p1 + c) * zs[1, 0] + p1 * zs[1, 1]
                a21 = q1 * zs[1, 0] + (1.0 - q1 + c) * zs[1, 1]
                p2, q2 = softmax_entries(np.stack([a20, a21], axis=-1))
                j00, j01, j10, j11 = skip_matrix_inverse(p2, q2, c)
                y0, y1 = j00 * x[i, 0] + j01 * x[i, 1], j10 * x[i, 0] + j11 * x[i, 1]
                logdet = np.log(skip_matrix_det(p1, q1, c) * skip_matrix_det(p2, q2, c))
            i00, i01, i10, i11 = skip_matrix_inverse(p1, q1, c)
            zl0, zl1 = i00 * y0 + i01 * y1, i10 * y0 + i11 * y1
            # Gaussian exponent of (zs, s zl): A + s B, B collecting the terms linear in zl
            D = zs - om[:f, :, None]
            A = np.zeros(m)
            lin0, lin1 = np.zeros(m), np.zeros(m)
            for a in range(f):
                for b in range(f):
                    A += P[a, b] * (D[a, 0] * D[b, 0] + D[a, 1] * D[b, 1])
                lin0 += P[a, f] * D[a, 0]
                lin1 += P[a, f] * D[a, 1]
            A += P[f, f] * (zl0 * zl0 + zl1 * zl1 + (wl0 * wl0 + wl1 * wl1)) - 2.0 * (lin0 * wl0 + lin1 * wl1)
            B = 2.0 * (lin0 * zl0 + lin1 * zl1) - 2.0 * P[f, f] * (zl0 * wl0 + zl1 * wl1)
            base = 0.5 * np.sum(u * u, axis=(0, 1)) - logdet - 0.5 * A  # target / proposal, constants dropped
            for lst, lw in ((lp_c, base - 0.5 * B), (lm_c, base + 0.5 * B)):
                lw[~np.isfinite(lw)] = -np.inf
                lst.append(lw)
            zs_c.append(zs)
            zl_c.append((zl0, zl1))
        mx = max(max(a.max() for a in lp_c), max(a.max() for a in lm_c))
        wp_c = [relative_weights(a - mx) for a in lp_c]
        wm_c = [relative_weights(a - mx) for a in lm_c]
        tot = sum(a.sum() for a in wp_c) + sum(a.sum() for a in wm_c)
        s_first = sum(zs @ (wp + wm) for zs, wp, wm in zip(zs_c, wp_c, wm_c, strict=True))  # (f, 2)
        s_last = sum(
            np.array([zl[0] @ (wp - wm), zl[1] @ (wp - wm)]) for zl, wp, wm in zip(zl_c, wp_c, wm_c, strict=True)
        )
        mean[i, :f] = s_first / tot
        mean[i, f] = s_last / tot
        ess[i] = tot**2 / sum((wp @ wp + wm @ wm) for wp, wm in zip(wp_c, wm_c, strict=True))
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
        gg, _, mom = g_out(link_logits(Z, c), omega, V, c, quad, jacobian=False, covariance=False)
        per_g = np.einsum("nat,nbt->nab", gg, gg)
        out["R_grid"] = per_g.mean(0)
        out["Q_update_grid"] = overlap_update(alpha * per_g.mean(0))
        out["grid_min_ess"] = float(mom.ess.min())
        d = np.einsum("naa->na", per - per_g)
        out["R_diff_se"] = d.std(0, ddof=1) / np.sqrt(len(d))
    return out
