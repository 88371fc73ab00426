"""Weak-recovery thresholds of the two-layer attention target (P2 Thm 2.3, App. E.2).

* last layer (initial recovery): alpha_last = 1 / max_a K_aa with K_aa = E_y || E[z_a z_a^T | y] - I ||_F^2 at Q = 0;
* first layer given the last, two readings of App. E.2:
  - literal ("last layer perfectly recovered", z2 known): K_lit = E || E[z1 z1^T | y, z2] - I ||_F^2, computed
    exactly by enumerating the closed-form first-layer branches (no grid); alpha_first_literal = 1 / K_lit;
  - self-consistent: on the phase-II branch Q = diag(0, q2) of the state evolution,
    alpha(q2) = q2 / ((1 - q2) R_2(q2)) and K1(q2) = E || d g_out[1] / d omega[1] ||_F^2; the first layer becomes
    unstable where alpha(q2) K1(q2) = 1, i.e. q2 K1(q2) = (1 - q2) R_2(q2).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .attention_link import check_skip, link_logits, preimage, solve_softmax_layer
from .channel_denoiser import posterior_moments
from .quadrature import DEFAULT_QUADRATURE, QuadratureSettings
from .state_evolution import TeacherDraws, channel_average, draw_teacher

__all__ = [
    "initial_operator",
    "alpha_last",
    "first_layer_literal",
    "phase_two_curve",
    "alpha_first",
    "Thresholds",
    "thresholds",
]


def initial_operator(c: float, draws: TeacherDraws, quad: QuadratureSettings = DEFAULT_QUADRATURE):
    """K (L, L) of the Hadamard-form linear operator F(M)_ab = alpha K_ab M_ab at Q = 0 (Thm 2.3).

    Uses the cross-layer-block form K_ab = sum_{t,s} E[G^a_ts G^b_ts], G^a = E[z_a z_a^T | y] - I.
    Returns (K, K_se, min_ess).
    """
    L = draws.xi.shape[1]
    Z = draws.U
    ell = link_logits(Z, c)
    mom = posterior_moments(ell, np.zeros_like(Z), np.eye(L), c, quad)
    G = np.empty((Z.shape[0], L, 2, 2))
    for a in range(L):
        blk = mom.cov[:, 2 * a : 2 * a + 2, 2 * a : 2 * a + 2] + np.einsum("nt,ns->nts", mom.mean[:, a], mom.mean[:, a])
        G[:, a] = blk - np.eye(2)
    per = np.einsum("nats,nbts->nab", G, G)
    return per.mean(0), per.std(0, ddof=1) / np.sqrt(len(per)), float(mom.ess.min())


def alpha_last(c: float, quad: QuadratureSettings = DEFAULT_QUADRATURE, *, n_samples: int = 20000, seed: int = 0):
    """Initial-recovery threshold 1 / max_a K_aa and the K matrix (dict)."""
    check_skip(c)
    K, K_se, ess = initial_operator(c, draw_teacher(n_samples, 2, seed), quad)
    a = int(np.argmax(np.diag(K)))
    return {
        "alpha": float(1.0 / K[a, a]),
        "layer": a + 1,
        "K": K,
        "K_se": K_se,
        "min_ess": ess,
        "alpha_se": float(K_se[a, a] / K[a, a] ** 2),
    }


def first_layer_literal(c: float, *, n_samples: int = 200000, seed: int = 0):
    """K_lit = E || E[z1 z1^T | y, z2] - I ||_F^2 with z2 known exactly (branch enumeration; no quadrature).

    Returns dict with K, its standard error, alpha = 1/K and the fraction of samples with a second admissible
    first-layer pre-image of the other sign class (which is what makes K < 6).
    """
    check_skip(c)
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n_samples, 2, 2))
    x = preimage(link_logits(Z, c))
    z2 = Z[:, 1, :]
    cand, logw = [], []
    for s in (1.0, -1.0):
        w, lj, ok = solve_softmax_layer(z2, s * x, c)
        for b in (1.0, -1.0):
            z1 = b * w
            cand.append(z1)
            logw.append(np.where(ok, -0.5 * np.sum(z1 * z1, axis=-1) - lj, -np.inf))
    cand = np.stack(cand, 1)
    logw = np.stack(logw, 1)
    mx = logw.max(1, keepdims=True)
    good = np.isfinite(mx[:, 0])
    n_bad = int(np.sum(~good))
    if n_bad > max(10, n_samples // 1000):
        raise FloatingPointError(f"{n_bad} samples have no admissible first-layer pre-image")
    # rounding can push the true branch out of the open admissible set when z11 ~ z12 (p + q ~ 1): drop those
    cand, logw, mx = cand[good], logw[good], mx[good]
    w = np.exp(logw - mx)
    w /= w.sum(1, keepdims=True)
    second = np.einsum("nk,nkt,nks->nts", w, cand, cand)
    k = np.sum((second - np.eye(2)) ** 2, axis=(1, 2))
    n_ok = np.sum(np.isfinite(logw), axis=1)
    return {
        "K": float(k.mean()),
        "K_se": float(k.std(ddof=1) / np.sqrt(len(k))),
        "alpha": float(1.0 / k.mean()),
        "frac_extra_branch": float(np.mean(n_ok > 2)),
        "dropped": n_bad,
    }


def phase_two_curve(
    q_grid,
    c: float,
    quad: QuadratureSettings = DEFAULT_QUADRATURE,
    *,
    n_samples: int = 4000,
    seed: int = 0,
    v_reg: float = 0.0,
):
    """Explicit phase-II fixed-point curve and first-layer growth rate on Q = diag(0, q2).

    q_grid: (m,) values of q2 in (0, 1).  Returns dict of arrays (m,): q2, R2, alpha = q2/((1-q2)R2), K1, K1_se,
    min_ess.  Common random numbers across q2.
    """
    check_skip(c)
    q_grid = np.asarray(q_grid, dtype=np.float64)
    if np.any((q_grid <= 0) | (q_grid >= 1)):
        raise ValueError("q_grid values must lie in (0, 1)")
    draws = draw_teacher(n_samples, 2, seed)
    out = {k: np.empty(len(q_grid)) for k in ("R2", "R2_se", "alpha", "K1", "K1_se", "min_ess")}
    for i, q in enumerate(q_grid):
        avg = channel_average(np.diag([0.0, q]), c, draws, quad, want_k1=True, v_reg=v_reg)
        out["R2"][i] = avg["R"][1, 1]
        out["R2_se"][i] = avg["R_se"][1, 1]
        out["alpha"][i] = q / ((1.0 - q) * avg["R"][1, 1])
        out["K1"][i] = avg["K1"]
        out["K1_se"][i] = avg["K1_se"]
        out["min_ess"][i] = avg["min_ess"]
    out["q2"] = q_grid
    return out


def alpha_first(curve: dict, alpha_last: float | None = None, K11: float | None = None):
    """Self-consistent first-layer threshold from a phase_two_curve: first sign change of alpha(q2) K1(q2) - 1.

    If alpha_last and K11 (the K operator at Q = 0) are given, the branch's end point q2 = 0 (alpha = alpha_last,
    K1 = K11) is prepended, so that a crossing below the first grid point is found too.  Linear interpolation in
    q2 between the bracketing points.  Returns dict(alpha, q2, found); alpha = nan if no crossing on the grid.
    """
    q2, a_c, k1 = curve["q2"], curve["alpha"], curve["K1"]
    if alpha_last is not None and K11 is not None:
        q2 = np.concatenate([[0.0], q2])
        a_c = np.concatenate([[alpha_last], a_c])
        k1 = np.concatenate([[K11], k1])
    h = a_c * k1 - 1.0
    if h[0] >= 0:
        return {"alpha": float(a_c[0]), "q2": float(q2[0]), "found": True}
    idx = np.nonzero((h[:-1] < 0) & (h[1:] >= 0))[0]
    if len(idx) == 0:
        return {"alpha": float("nan"), "q2": float("nan"), "found": False}
    i = int(idx[0])
    t = -h[i] / (h[i + 1] - h[i])
    q = q2[i] + t * (q2[i + 1] - q2[i])
    a = a_c[i] + t * (a_c[i + 1] - a_c[i])
    return {"alpha": float(a), "q2": float(q), "found": True}


@dataclass
class Thresholds:
    c: float
    alpha_last: float
    alpha_last_se: float
    alpha_first: float
    q2_at_first: float
    alpha_first_literal: float
    K: np.ndarray
    curve: dict


def thresholds(
    c: float,
    q_grid,
    quad: QuadratureSettings = DEFAULT_QUADRATURE,
    *,
    n_k: int = 20000,
    n_curve: int = 4000,
    seed: int = 0,
    n_literal: int = 200000,
) -> Thresholds:
    """All three thresholds at skip strength c (noiseless model)."""
    last = alpha_last(c, quad, n_samples=n_k, seed=seed)
    curve = phase_two_curve(q_grid, c, quad, n_samples=n_curve, seed=seed + 1)
    first = alpha_first(curve, last["alpha"], last["K"][0, 0])
    lit = first_layer_literal(c, n_samples=n_literal, seed=seed + 2)
    return Thresholds(
        c=c,
        alpha_last=last["alpha"],
        alpha_last_se=last["alpha_se"],
        alpha_first=first["alpha"],
        q2_at_first=first["q2"],
        alpha_first_literal=lit["alpha"],
        K=last["K"],
        curve=curve,
    )
