"""Output-channel denoiser g_out of the deep tied-attention target (P2 Eq. 12).

For each sample the posterior of the indices Z (p x T, p = L layers, T = 2 tokens) is
    P(Z | y, omega, V) ∝ prod_t N(Z[:, t]; omega[:, t], V) * delta(y - g(Z)),
a measure on the constraint manifold.  The delta is solved in closed form and the remaining integral is done on a
fixed Gauss–Hermite grid, shared by all samples, whose nodes are centred on omega and scaled by sqrt(V_kk):

* parametrisation "A" (Corollary E.1): integrate over the first L-1 layers, the last layer is
  z_L = s * B(z_1..z_{L-1})^{-1} x(y), s = ±1, weight 1/det B.
* parametrisation "A*" (L = 2, the sharply peaked regime V_{2|1} -> 0): parametrisation A on a deterministic
  mixture of Gauss–Hermite grids, the prior grid plus grids centred on the modes predicted by the last-layer
  solve (z2 = omega2 mapped back to z1 in closed form) and scaled by their Laplace covariance.

A parametrisation over the last layer z2 with closed-form first-layer branches was rejected: exact as a measure,
but the first-layer attention puts the posterior mass in a boundary layer in z2 coordinates, where fixed grids do
not converge (docs/p2_theory.md).

g_out = V^{-1}(<Z> - omega) and its analytic Jacobian
    d g_out[a,t] / d omega[b,s] = [V^{-1} Cov(Z[:,t], Z[:,s]) V^{-1}]_{ab} - delta_ts (V^{-1})_{ab}
come from the posterior moments (no finite differences).
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from multiprocessing import get_context

import numpy as np

from .attention_link import (
    check_skip,
    preimage,
    skip_matrix_det,
    skip_matrix_inverse,
    softmax_entries,
    solve_softmax_layer,
)
from .depth3_grid import depth3_moments
from .l2_grid import BLOCK_PAIRS, l2_moments_a, l2_moments_local, l2_moments_ridge
from .quadrature import DEFAULT_QUADRATURE, QuadratureSettings, gauss_hermite_grid, relative_weights

__all__ = ["ChannelMoments", "posterior_moments", "g_out", "choose_parametrisation", "ridge_grid", "ridge_reach"]

PRIOR_SHARE = 0.2  # "A*": mixture weight of the prior-centred grid
_LOG_TINY = -700.0
_L2_BLOCK = 12_288  # L = 2: (sample, node) pairs per block of _moments_l2: arrays of ~100 kB (cache; speed only)
_L3_BLOCK = 8_192  # L = 3, NumPy backend: the same for _moments_depth3 (its ~30 arrays of a block fit in L2)


@dataclass
class ChannelMoments:
    """Posterior moments of Z for n samples (p layers, T = 2 tokens).

    mean: (n, p, 2); cov: (n, 2p, 2p) with flat index a*2 + t (None when not asked for); log_norm: (n,) log of the
    (unnormalised) channel partition function up to a sample-independent constant; ess: (n,) effective number of
    grid nodes (a small value flags an under-resolved posterior); method: "A" or "A*".
    """

    mean: np.ndarray
    cov: np.ndarray | None
    log_norm: np.ndarray
    ess: np.ndarray
    method: str


def _softmax_pq(a0, a1):
    """attention_link.softmax_entries of a = (a0, a1) given as two arrays (the same operations, no stacking)."""
    d = a0 - a1
    return _sigmoid_neg(a0 * d), _sigmoid_neg(-a1 * d)


def _sigmoid_neg(t):
    """1/(1+exp(t)), as attention_link's helper."""
    return 0.5 * (1.0 - np.tanh(0.5 * t))


def _check_inputs(ell, omega, V):
    ell = np.asarray(ell, dtype=np.float64)
    omega = np.asarray(omega, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    if omega.ndim != 3 or omega.shape[2] != 2 or omega.shape[1] not in (2, 3):
        raise ValueError(f"omega must have shape (n, L, 2) with L in (2, 3); got {omega.shape}")
    n, L, _ = omega.shape
    if ell.shape != (n, 2):
        raise ValueError(f"observation logits must have shape ({n}, 2); got {ell.shape}")
    if V.shape != (L, L):
        raise ValueError(f"V must have shape ({L}, {L}); got {V.shape}")
    if not np.allclose(V, V.T, atol=1e-10):
        raise ValueError("V must be symmetric")
    if np.linalg.eigvalsh(V).min() <= 0.0:
        raise ValueError(f"V must be positive definite; eigenvalues {np.linalg.eigvalsh(V)}")
    if not (np.all(np.isfinite(ell)) and np.all(np.isfinite(omega))):
        raise ValueError("observation and omega must be finite")
    return ell, omega, 0.5 * (V + V.T)


def _conditional_variance(V, k):
    """Variance of layer k given all other layers under N(0, V)."""
    P = np.linalg.inv(V)
    return 1.0 / P[k, k]


def choose_parametrisation(V, v_switch: float = 0.05) -> str:
    """Parametrisation for a given V: "A" unless the last layer is pinned, V_{L|rest} < v_switch, then "A*" (L = 2).

    In the peaked regime "A*" integrates the last-layer Gaussian factor on grids centred on the modes predicted by
    the first-layer solve, in first-layer coordinates, where the integrand is smooth.
    """
    V = np.asarray(V, dtype=np.float64)
    L = V.shape[0]
    v_last = _conditional_variance(V, L - 1)
    if v_last >= v_switch or L != 2:
        return "A"
    return "A*"


def _apply_Ainv(z, v, c):
    """A_c(z)^{-1} v and log det A_c(z) for z, v (..., 2)."""
    p, q = softmax_entries(z)
    i00, i01, i10, i11 = skip_matrix_inverse(p, q, c)
    return (
        np.stack([i00 * v[..., 0] + i01 * v[..., 1], i10 * v[..., 0] + i11 * v[..., 1]], axis=-1),
        np.log(skip_matrix_det(p, q, c)),
    )


def ridge_grid(omega1, sd1: float, c: float, n1d: int, reach: float | None = None):
    """First-layer nodes for L = 2, parametrisation "A", resolving the ridge of 1/det A_c(z1) on z11 = z12.

    det A_c(z1) = (1 + c)(c + 1 - p - q) and 1 - p - q ~ (z11 - z12)^2 / 4 near the diagonal, so the weight
    1/det A_c is a peak of width ~ sqrt(2c) in v = (z11 - z12)/sqrt(2), centred on v = 0 whatever omega is: for
    c <= 0.01 a Gauss-Hermite grid centred on omega misses it. Here z1 is rotated to (u, v) with
    u = (z11 + z12)/sqrt(2) on n1d Gauss-Hermite nodes around omega_u (scale sd1), and v = a sinh(t), a = sqrt(2c),
    on 2 n1d uniform nodes in t covering |v| <= max |omega_v| + 8 sd1 (the trapezoid rule in t converges
    exponentially for integrands that are smooth in t; the sinh map spaces the v nodes geometrically from a).

    omega1: (n, 2) first-layer means; sd1: proposal scale; reach: the half-width in v (default: from omega1 as
    above; give the value of all samples to build the nodes of a block of them). Returns z1 (n, G, 2) and node
    log-weights lw (G,) (with the same constants dropped as the Gauss-Hermite grid's importance weights, so
    log_norm is comparable).
    """
    omega1 = np.asarray(omega1, dtype=np.float64)
    if reach is None:
        reach = ridge_reach(omega1, sd1)
    uh, v, lw = _ridge_axes(sd1, c, n1d, reach)
    u = (omega1[:, 0] + omega1[:, 1])[:, None] / np.sqrt(2.0) + sd1 * uh[None, :]  # (n, n1d)
    U = np.repeat(u, len(v), axis=1)  # (n, G), G = n1d * 2 n1d, u-major
    Vv = np.tile(v, n1d)[None, :]
    z1 = np.stack([(U + Vv) / np.sqrt(2.0), np.broadcast_to((U - Vv) / np.sqrt(2.0), U.shape)], axis=-1)
    return z1, lw


def _ridge_axes(sd1: float, c: float, n1d: int, reach: float):
    """The ridge grid's axes: Gauss-Hermite nodes uh (n1d,) in u, the sinh-mapped nodes v (2 n1d,) and the node
    log-weights (n1d * 2 n1d,), u-major."""
    a = np.sqrt(2.0 * c)
    uh, lwu = gauss_hermite_grid(n1d, 1)
    t = np.linspace(-1.0, 1.0, 2 * n1d) * np.arcsinh(reach / a)
    v = a * np.sinh(t)
    # v: Lebesgue weights a h cosh(t), divided by the proposal normalisation sqrt(2 pi) sd1 that the 2-D
    # Gauss-Hermite importance weights drop
    lwv = np.log(a * (t[1] - t[0]) * np.cosh(t)) - np.log(np.sqrt(2.0 * np.pi) * sd1)
    lw_u = lwu + 0.5 * uh[:, 0] ** 2
    return uh[:, 0], v, (lw_u[:, None] + lwv[None, :]).ravel()


def ridge_reach(omega1, sd1: float) -> float:
    """Half-width in v = (z11 - z12)/sqrt(2) that ridge_grid covers for first-layer means omega1 (n, 2)."""
    omega1 = np.asarray(omega1, dtype=np.float64)
    return float(np.max(np.abs(omega1[:, 0] - omega1[:, 1])) / np.sqrt(2.0) + 8.0 * sd1)


def _moments_l2(x, omega, P, c, z1, lw, n1d, method, covariance=True):
    """L = 2, parametrisation "A" on given first-layer nodes: posterior moments of one chunk of m samples.

    The two branches z2 = s A_c(z1)^{-1} x, s = +-1, share the node z1, its log-weight lw and the Jacobian
    1/det A_c(z1); only the last-layer terms of the Gaussian exponent differ.  With the normalised branch weights
    w_+, w_-, W = w_+ + w_- and Delta = w_+ - w_-, the moments of the configuration (z1, s z2) are sums of W (even in
    s: z1, z1 z1^T, z2 z2^T) and of Delta (odd: s z2, z1 (s z2)^T), so no configuration array of both branches is
    built.  x: (m, 2) pre-images; omega: (m, 2, 2); P = V^{-1} (2, 2); z1: (m, K, 2) nodes, or (1, K, 2) nodes shared
    by all samples (their first-layer means omega[:, 0] are then all equal); lw: (K,) or (m, K) node log-weights
    without the Jacobian.  Returns mean (m, 2, 2), cov (m, 4, 4) (flat index a*2 + t; None unless covariance),
    log_norm (m,) and ess (m,).  n1d, method: for the error message of a sample without an admissible node.  A
    diagonal V (P[0, 1] = 0) skips the cross term, which is then exactly zero.
    """
    # attention_link's softmax_entries, skip_matrix_det and skip_matrix_inverse written out on the two components
    # (the same operations), sharing the determinant. The first-layer terms depend on the node only: with nodes
    # shared by all samples (z1 of shape (1, K, 2), e.g. at Q11 = 0) they are computed once per node, not per sample
    r = z1.shape[0]
    z10, z11 = z1[..., 0], z1[..., 1]
    p, q = _softmax_pq(z10, z11)
    det = (1.0 + c) * (1.0 + c - p - q)
    i00, i01, i10, i11 = (1.0 - q + c) / det, -p / det, -q / det, (1.0 - p + c) / det
    x0, x1 = x[:, None, 0], x[:, None, 1]
    z20, z21 = i00 * x0 + i01 * x1, i10 * x0 + i11 * x1
    d0, d1 = z10 - omega[:r, None, 0, 0], z11 - omega[:r, None, 0, 1]
    base = np.asarray(lw) - np.log(det) - 0.5 * P[0, 0] * (d0 * d0 + d1 * d1)
    if r != x.shape[0]:
        z10, z11 = np.broadcast_to(z10, z20.shape), np.broadcast_to(z11, z20.shape)
    logw = []
    for s in (1.0, -1.0):
        e0, e1 = s * z20 - omega[:, None, 1, 0], s * z21 - omega[:, None, 1, 1]
        if P[0, 1] == 0.0:
            lw_s = base - 0.5 * P[1, 1] * (e0 * e0 + e1 * e1)
        else:
            lw_s = base - (P[0, 1] * (d0 * e0 + d1 * e1) + 0.5 * P[1, 1] * (e0 * e0 + e1 * e1))
        lw_s[np.isnan(lw_s)] = -np.inf
        logw.append(lw_s)
    mx = np.maximum(np.max(logw[0], axis=1), np.max(logw[1], axis=1))[:, None]
    if not np.all(np.isfinite(mx)):
        bad = int(np.sum(~np.isfinite(mx)))
        raise FloatingPointError(
            f"{bad} sample(s) have no admissible grid node (method {method}, n1d {n1d}); "
            "increase n1d or use the other parametrisation"
        )
    wp, wm = relative_weights(logw[0] - mx), relative_weights(logw[1] - mx)
    tot = (wp.sum(axis=1) + wm.sum(axis=1))[:, None]
    wp /= tot
    wm /= tot
    W, Dw = wp + wm, wp - wm
    # row-wise dot products (one pass each, no temporaries): much faster than batched 4 x K matmuls
    Wz10, Wz11, Dz20, Dz21 = W * z10, W * z11, Dw * z20, Dw * z21
    mu = np.stack([Wz10.sum(axis=1), Wz11.sum(axis=1), Dz20.sum(axis=1), Dz21.sum(axis=1)], axis=1)
    log_norm = (mx + np.log(tot))[:, 0]
    ess = 1.0 / (np.sum(wp * wp, axis=1) + np.sum(wm * wm, axis=1))
    if not covariance:
        return mu.reshape(-1, 2, 2), None, log_norm, ess
    S = np.empty((x.shape[0], 4, 4))
    Wz20 = W * z20
    for i, j, a, b in (
        (0, 0, Wz10, z10), (0, 1, Wz10, z11), (1, 1, Wz11, z11),  # z1 z1^T: even
        (0, 2, Dz20, z10), (0, 3, Dz21, z10), (1, 2, Dz20, z11), (1, 3, Dz21, z11),  # z1 (s z2)^T: odd
        (2, 2, Wz20, z20), (2, 3, Wz20, z21), (3, 3, W * z21, z21),  # z2 z2^T: even
    ):  # fmt: skip
        S[:, i, j] = np.einsum("ng,ng->n", a, b)
        S[:, j, i] = S[:, i, j]
    return mu.reshape(-1, 2, 2), S - mu[:, :, None] * mu[:, None, :], log_norm, ess


def _dz2_dz1(z1, z2, c):
    """Jacobian d z2 / d z1 (…, 2, 2) of z2 = s A_c(z1)^{-1} x at fixed x (L = 2, parametrisation A)."""
    p, q = softmax_entries(z1)
    dp = -(p * (1.0 - p))[..., None] * np.stack([2.0 * z1[..., 0] - z1[..., 1], -z1[..., 0]], axis=-1)
    dq = -(q * (1.0 - q))[..., None] * np.stack([-z1[..., 1], 2.0 * z1[..., 1] - z1[..., 0]], axis=-1)
    dz = z2[..., 1] - z2[..., 0]
    M = np.stack([dz[..., None] * dp, -dz[..., None] * dq], axis=-2)  # d(A z2)/dz1 at fixed z2
    i00, i01, i10, i11 = skip_matrix_inverse(p, q, c)
    Ai = np.stack([np.stack([i00, i01], -1), np.stack([i10, i11], -1)], -2)
    return -np.einsum("...ij,...jk->...ik", Ai, M)


def _local_components(x, omega, V, c, inflate):
    """Mode-centred Gaussian proposals in z1 for the peaked regime of L = 2 (n samples, up to 4 modes each).

    The modes are the first-layer vectors that map exactly onto the conditional centre z2 = omega2 (the first-layer
    solve); their covariance is the Laplace approximation (J^T V_{2|1}^{-1} J + V11^{-1})^{-1} inflated by `inflate`.
    Returns means (n, 4, 2), Cholesky factors (n, 4, 2, 2), validity (n, 4) and each mode's log Laplace mass (n, 4)
    (target density at the mode, with its own sign branch of z2, times the Gaussian volume; -inf where invalid).
    """
    n = x.shape[0]
    P = np.linalg.inv(V)
    v21 = V[1, 1] - V[0, 1] ** 2 / V[0, 0]
    means = np.zeros((n, 4, 2))
    chol = np.zeros((n, 4, 2, 2))
    valid = np.zeros((n, 4), dtype=bool)
    log_mass = np.full((n, 4), -np.inf)
    eye = np.eye(2)
    for si, s in enumerate((1.0, -1.0)):
        w, _, ok = solve_softmax_layer(omega[:, 1, :], s * x, c)
        for bi, b in enumerate((1.0, -1.0)):
            k = 2 * si + bi
            z1 = b * w
            z2, logdet = _apply_Ainv(z1, s * x, c)
            J = _dz2_dz1(z1, z2, c)
            H = np.einsum("...ji,...jk->...ik", J, J) / v21 + eye / V[0, 0]
            S = np.linalg.inv(H) * inflate**2
            S = 0.5 * (S + np.swapaxes(S, -1, -2)) + 1e-12 * eye
            good = ok & np.all(np.isfinite(S), axis=(-1, -2))
            S = np.where(good[..., None, None], S, eye)
            means[:, k] = np.where(good[..., None], z1, 0.0)
            chol[:, k] = np.linalg.cholesky(S)
            valid[:, k] = good
            D = np.stack([z1, z2], axis=1) - omega  # (n, 2 layers, 2)
            lm = -0.5 * np.einsum("nat,ab,nbt->n", D, P, D) - logdet + np.log(chol[:, k, 0, 0] * chol[:, k, 1, 1])
            log_mass[:, k] = np.where(good & np.isfinite(lm), lm, -np.inf)
    return means, chol, valid, log_mass


def _nodes_local(omega, V, components, u, lw, u_loc, lw_loc):
    """Parametrisation A (L = 2) on a deterministic mixture of grids: the global prior grid plus mode-centred grids.

    Every node z1 of component j gets the weight  pi_j w_k target(z1) / q_mix(z1) with q_mix = sum_j pi_j q_j: each
    component's grid integrates q_j (f / q_mix) and the pi_j-weighted sum is the integral of f.  The prior component
    uses the grid (u, lw); the four mode components use the grid (u_loc, lw_loc), which may be smaller, since the
    posterior is close to Gaussian around each mode.  components: _local_components of the n samples.
    Returns the nodes z1 (n, K, 2) and their log-weights log(pi_j w_k / q_mix(z1)) (n, K) (the Jacobian and the
    Gaussian term are added by _moments_l2).
    """
    n = omega.shape[0]
    G = u.shape[0]
    Gl = u_loc.shape[0]
    sd1 = np.sqrt(V[0, 0])
    means, chol, valid, log_mass = components
    comp_m = np.concatenate([omega[:, None, 0, :], means], axis=1)  # (n, 5, 2)
    comp_L = np.concatenate([np.broadcast_to(sd1 * np.eye(2), (n, 1, 2, 2)), chol], axis=1)
    comp_ok = np.concatenate([np.ones((n, 1), dtype=bool), valid], axis=1)
    # mixture weights that vary continuously with omega: the prior grid keeps PRIOR_SHARE, the modes share the rest
    # in proportion to their Laplace mass (target density at the mode x Gaussian volume); a mode that turns
    # inadmissible does so at |z1| -> infinity, where its mass -> 0, so the quadrature rule has no jumps
    mmax = np.max(log_mass, axis=1, keepdims=True)
    any_mode = np.isfinite(mmax)
    rel = np.exp(log_mass - np.where(any_mode, mmax, 0.0))
    with np.errstate(divide="ignore"):
        log_share = np.log(rel / np.maximum(rel.sum(axis=1, keepdims=True), 1e-300))
    log_pi = np.concatenate([np.where(any_mode, np.log(PRIOR_SHARE), 0.0), np.log1p(-PRIOR_SHARE) + log_share], axis=1)
    log_pi = np.where(comp_ok, log_pi, -np.inf)
    z_prior = comp_m[:, 0, None, :] + sd1 * u[None, :, :]  # (n, G, 2)
    # z_loc[n, j, k] = means[n, j] + chol[n, j] @ u_loc[k], (n, 4, Gl, 2)
    z_loc = means[:, :, None, :] + chol[:, :, None, :, 0] * u_loc[:, 0, None]
    z_loc += chol[:, :, None, :, 1] * u_loc[:, 1, None]
    z1 = np.concatenate([z_prior, z_loc.reshape(n, -1, 2)], axis=1)  # (n, G + 4 Gl, 2)
    # log q_mix at every node: a log-sum-exp over the five components, accumulated component by component;
    # log pi_j N(z; m_j, L_j L_j^T) = const_j - |y|^2 / 2 with y = L_j^{-1} (z - m_j) from per-component coefficients
    inv00, inv11 = 1.0 / comp_L[..., 0, 0], 1.0 / comp_L[..., 1, 1]  # (n, 5)
    inv10 = -comp_L[..., 1, 0] * inv00 * inv11
    const = log_pi + np.log(inv00 * inv11) - np.log(2.0 * np.pi)
    z10, z11 = np.ascontiguousarray(z1[..., 0]), np.ascontiguousarray(z1[..., 1])  # read by every component
    lq = []
    for j in range(5):
        d0, d1 = z10 - comp_m[:, j, None, 0], z11 - comp_m[:, j, None, 1]
        y0, y1 = inv00[:, j, None] * d0, inv10[:, j, None] * d0 + inv11[:, j, None] * d1
        lq.append(const[:, j, None] - 0.5 * (y0 * y0 + y1 * y1))
    lqmax = lq[0]
    for t in lq[1:]:
        lqmax = np.maximum(lqmax, t)
    acc = relative_weights(lq[0] - lqmax)
    for t in lq[1:]:
        acc += relative_weights(t - lqmax)
    log_qmix = lqmax + np.log(acc)
    node_lw = np.concatenate([lw, np.tile(lw_loc, 4)])[None, :] + np.concatenate(
        [np.repeat(log_pi[:, :1], G, axis=1), np.repeat(log_pi[:, 1:], Gl, axis=1)], axis=1
    )
    off = node_lw - log_qmix  # (n, K)
    return z1, np.where(np.isfinite(off), off, -np.inf)


def _moments_depth3(x, omega, P, sd, u, lwp, c, n1d, covariance=True):
    """Parametrisation A for L = 3 on one chunk of m samples, sharing the work of the two signs of z3.

    The two branches z3 = +-B^{-1}x have the same (z1, z2) and Jacobian, and their quadratic forms differ only in
    the terms linear in z3: quad_s = A + s B.  With the branch weights w_+, w_- the moments follow from the sums
    W = w_+ + w_- (even in z3) and Delta = w_+ - w_- (odd in z3), without building the configuration array.
    The chunk is processed in blocks of about _L3_BLOCK (sample, node) pairs that stay in the cache, each
    coordinate as its own (m, G) array, and the moments are row-wise dot products.  x: (m, 2); omega: (m, 3, 2);
    P = V^{-1} (3, 3); sd: (3,) proposal scales; u: (G, 4) nodes; lwp: (G,) node log-weights.
    Returns mean (m, 3, 2), cov (m, 6, 6) (None unless covariance), log_norm (m,), ess (m,).
    """
    m = x.shape[0]
    out = np.empty((m, 3, 2)), np.empty((m, 6, 6)) if covariance else None, np.empty(m), np.empty(m)
    per = max(1, _L3_BLOCK // u.shape[0])
    su = tuple(np.ascontiguousarray(sd[k // 2] * u[:, k]) for k in range(4))  # (G,) each: z = omega + su
    for i0 in range(0, m, per):
        b = slice(i0, min(m, i0 + per))
        vals = _moments_depth3_block(x[b], omega[b], P, su, lwp, c, covariance)
        for arr, val in zip(out, vals, strict=True):
            if arr is not None:
                arr[b] = val
    if not np.all(np.isfinite(out[2])):
        bad = int(np.sum(~np.isfinite(out[2])))
        raise FloatingPointError(f"{bad} sample(s) have no admissible grid node (method A, n1d {n1d}); increase n1d")
    return out


def _moments_depth3_block(x, omega, P, su, lwp, c, covariance=True):
    """One cache-sized block of _moments_depth3 (a sample without an admissible node gets log_norm -inf).

    A diagonal V (P off the diagonal zero) skips the cross-layer terms of the Gaussian exponent, which are then
    exactly zero; without covariance only the mean, log_norm and ess are formed (cov is None).
    """
    m = x.shape[0]
    # the nodes' offsets sd_k u (four contiguous columns, see _moments_depth3), one row of each per sample
    z10, z11 = omega[:, None, 0, 0] + su[0][None, :], omega[:, None, 0, 1] + su[1][None, :]
    z20, z21 = omega[:, None, 1, 0] + su[2][None, :], omega[:, None, 1, 1] + su[3][None, :]
    # a2 = A_c(z1) z2, y1 = A_c(a2)^{-1} x, z3 = A_c(z1)^{-1} y1 (the + branch), det B = det A_c(a2) det A_c(z1);
    # attention_link's softmax_entries, skip_matrix_det and skip_matrix_inverse written out on the components (the
    # same operations), sharing the diagonal entries 1 - p + c, 1 - q + c and the determinants
    p1, q1 = _softmax_pq(z10, z11)
    e1p, e1q = 1.0 - p1 + c, 1.0 - q1 + c
    p2, q2 = _softmax_pq(e1p * z20 + p1 * z21, q1 * z20 + e1q * z21)
    det1, det2 = (1.0 + c) * (1.0 + c - p1 - q1), (1.0 + c) * (1.0 + c - p2 - q2)
    j00, j01, j10, j11 = (1.0 - q2 + c) / det2, -p2 / det2, -q2 / det2, (1.0 - p2 + c) / det2
    x0, x1 = x[:, None, 0], x[:, None, 1]
    y0, y1 = j00 * x0 + j01 * x1, j10 * x0 + j11 * x1
    i00, i01, i10, i11 = e1q / det1, -p1 / det1, -q1 / det1, e1p / det1
    z30, z31 = i00 * y0 + i01 * y1, i10 * y0 + i11 * y1
    off = lwp[None, :] - np.log(det1 * det2)
    d10, d11 = z10 - omega[:, None, 0, 0], z11 - omega[:, None, 0, 1]
    d20, d21 = z20 - omega[:, None, 1, 0], z21 - omega[:, None, 1, 1]
    w30, w31 = omega[:, None, 2, 0], omega[:, None, 2, 1]
    if P[0, 1] == 0.0 and P[0, 2] == 0.0 and P[1, 2] == 0.0:
        A = (
            P[0, 0] * (d10 * d10 + d11 * d11)
            + P[1, 1] * (d20 * d20 + d21 * d21)
            + P[2, 2] * (z30 * z30 + z31 * z31 + (w30 * w30 + w31 * w31))
        )
        B = -(2.0 * P[2, 2]) * (z30 * w30 + z31 * w31)
    else:
        l0, l1 = P[0, 2] * d10 + P[1, 2] * d20, P[0, 2] * d11 + P[1, 2] * d21
        A = (
            P[0, 0] * (d10 * d10 + d11 * d11)
            + 2.0 * P[0, 1] * (d10 * d20 + d11 * d21)
            + P[1, 1] * (d20 * d20 + d21 * d21)
            - 2.0 * (l0 * w30 + l1 * w31)
            + P[2, 2] * (z30 * z30 + z31 * z31 + (w30 * w30 + w31 * w31))
        )
        B = 2.0 * (l0 * z30 + l1 * z31) - 2.0 * P[2, 2] * (z30 * w30 + z31 * w31)
    lp, lm = off - 0.5 * (A + B), off - 0.5 * (A - B)
    lp[np.isnan(lp)] = -np.inf
    lm[np.isnan(lm)] = -np.inf
    mx = np.maximum(np.max(lp, axis=1), np.max(lm, axis=1))[:, None]
    safe = np.where(np.isfinite(mx), mx, 0.0)
    lp -= safe
    lm -= safe
    wp, wm = relative_weights(lp), relative_weights(lm)
    tot = (wp.sum(axis=1) + wm.sum(axis=1))[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        wp /= tot
        wm /= tot
    W, Dw = wp + wm, wp - wm
    even, odd = (z10, z11, z20, z21), (z30, z31)  # flat index a*2 + t: z1, z2 even in the sign, z3 odd
    We, Do = [W * v for v in even], [Dw * v for v in odd]
    mu = np.concatenate([np.stack([a.sum(axis=1) for a in We], 1), np.stack([a.sum(axis=1) for a in Do], 1)], 1)
    with np.errstate(invalid="ignore"):
        log_norm = np.where(np.isfinite(mx), mx + np.log(tot), -np.inf)[:, 0]
        ess = 1.0 / (np.sum(wp * wp, axis=1) + np.sum(wm * wm, axis=1))
    if not covariance:
        return mu.reshape(m, 3, 2), None, log_norm, ess
    S = np.empty((m, 6, 6))
    for i in range(4):
        for j in range(i, 4):
            S[:, i, j] = np.einsum("ng,ng->n", We[i], even[j])
        for j in range(2):
            S[:, i, 4 + j] = np.einsum("ng,ng->n", Do[j], even[i])
    S[:, 4, 4] = np.einsum("ng,ng->n", W * z30, z30)
    S[:, 4, 5] = np.einsum("ng,ng->n", W * z30, z31)
    S[:, 5, 5] = np.einsum("ng,ng->n", W * z31, z31)
    iu = np.triu_indices(6, 1)
    S[:, iu[1], iu[0]] = S[:, iu[0], iu[1]]
    with np.errstate(invalid="ignore"):
        return mu.reshape(m, 3, 2), S - mu[:, :, None] * mu[:, None, :], log_norm, ess


def _depth3_block(x, omega, P, sd, u, lwp, c, n1d, backend, per, covariance=True):
    """L = 3, parametrisation "A" moments of n samples in chunks of ``per``: mean, cov (None unless covariance),
    log_norm, ess."""
    n = x.shape[0]
    mean, cov, log_norm, ess = np.empty((n, 3, 2)), np.empty((n, 6, 6)), np.empty(n), np.empty(n)
    for i0 in range(0, n, per):
        sl = slice(i0, min(n, i0 + per))
        if backend == "numpy":
            mean[sl], cov_sl, log_norm[sl], ess[sl] = _moments_depth3(
                x[sl], omega[sl], P, sd, u, lwp, c, n1d, covariance
            )
            if covariance:
                cov[sl] = cov_sl
            continue
        # every chunk padded to `per` rows (repeating its first sample): one compiled shape per grid
        m = sl.stop - sl.start
        idx = np.concatenate([np.arange(sl.start, sl.stop), np.full(min(per, n) - m, sl.start)])
        out = depth3_moments(x[idx], omega[idx], P, sd, u, lwp, c)
        mean[sl], cov[sl], log_norm[sl], ess[sl] = (a[:m] for a in out)
    return mean, cov if covariance else None, log_norm, ess


@lru_cache(maxsize=2)
def _worker_pool(workers: int) -> ProcessPoolExecutor:
    """A process pool kept for the life of the process (spawned: safe next to JAX's threads)."""
    return ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn"))


def posterior_moments(
    ell, omega, V, c: float, quad: QuadratureSettings = DEFAULT_QUADRATURE, *, covariance: bool = True
) -> ChannelMoments:
    """Posterior moments of Z given the observation (logits ell), omega and V.

    ell: (n, 2) observation logits (attention_link.link_logits); omega: (n, L, 2); V: (L, L) SPD, shared;
    c: skip strength > 0; quad: grids and parametrisation (QuadratureSettings; its n_local = 16 default gives R
    within 0.5% of n_local = 32, far below the Monte-Carlo error of the SE averages); covariance: False leaves out
    the posterior covariance (cov is None; the mean, log_norm and ess are the same numbers).
    """
    ell, omega, V = _check_inputs(ell, omega, V)
    c = check_skip(c)
    if not isinstance(quad, QuadratureSettings):
        raise TypeError(f"quad must be a QuadratureSettings, got {type(quad).__name__}")
    n, L, _ = omega.shape
    method = choose_parametrisation(V, quad.v_switch) if quad.method == "auto" else quad.method
    if method == "A*" and L != 2:
        raise ValueError("the mode-centred parametrisation 'A*' is implemented for L = 2 only")
    n1d = quad.nodes_per_dim(method, L)
    inflate = quad.inflate
    dim = 2 * (L - 1)
    u, lw = gauss_hermite_grid(n1d, dim)
    # importance correction of the GH proposal: node weight / standard normal density (constants dropped)
    lwp = lw + 0.5 * np.sum(u * u, axis=1)
    sd = quad.spread * np.sqrt(np.diag(V))
    P = np.linalg.inv(V)
    x = preimage(ell)
    u_loc, lw_loc = gauss_hermite_grid(int(quad.n_local), dim)
    nodes = {"A": 2 * u.shape[0], "A*": 2 * (u.shape[0] + 4 * u_loc.shape[0])}[method]
    per = max(1, int(quad.chunk_elems // (nodes * L * 2)))
    mean = np.empty((n, L, 2))
    cov = np.empty((n, 2 * L, 2 * L))
    log_norm = np.empty(n)
    ess = np.empty(n)
    ridge = L == 2 and method == "A" and c < quad.ridge_c
    if ridge:
        # one v-range for all samples (the grid must not depend on the block), nodes built block by block
        reach = ridge_reach(omega[:, 0, :], float(sd[0]))
        lw_ridge = ridge_grid(omega[:1, 0, :], float(sd[0]), c, n1d, reach)[1]
        per = max(1, int(quad.chunk_elems // (2 * lw_ridge.size * L * 2)))
    if L == 3 and method == "A":
        per = max(1, int(quad.chunk_elems // (u.shape[0] * 6)))
        args = (P, sd, u, lwp, c, n1d, "jax" if quad.backend == "jax" else "numpy", per, covariance)
        if quad.workers > 1 and n > per:
            # samples are independent: contiguous blocks on worker processes give the serial result exactly
            blocks = np.array_split(np.arange(n), quad.workers)
            futures = [_worker_pool(quad.workers).submit(_depth3_block, x[b], omega[b], *args) for b in blocks]
            parts = list(zip(*(f.result() for f in futures), strict=True))
            mean, log_norm, ess = (np.concatenate(parts[k]) for k in (0, 2, 3))
            cov = np.concatenate(parts[1]) if covariance else None
        else:
            mean, cov, log_norm, ess = _depth3_block(x, omega, *args)
        if not np.all(np.isfinite(log_norm)):
            bad = int(np.sum(~np.isfinite(log_norm)))
            raise FloatingPointError(
                f"{bad} sample(s) have no admissible grid node (method A, n1d {n1d}); increase n1d"
            )
        if covariance:
            cov = 0.5 * (cov + np.swapaxes(cov, 1, 2))
        return ChannelMoments(mean=mean, cov=cov, log_norm=log_norm, ess=ess, method=method)
    pairs = n * (2 * lw_ridge.size if ridge else nodes)  # (sample, node) pairs of the call, both signs
    if quad.backend == "jax" or (quad.backend == "auto" and pairs >= BLOCK_PAIRS):
        # L = 2 compiled (l2_grid: the same nodes and weights, agrees to rounding)
        if method == "A*":
            comps = _local_components(x, omega, V, c, inflate)
            sd1 = float(np.sqrt(V[0, 0]))
            out = l2_moments_local(x, omega, P, c, sd1, comps, u, lw, u_loc, lw_loc, PRIOR_SHARE)
        elif ridge:
            uh, v, _ = _ridge_axes(float(sd[0]), c, n1d, reach)
            out = l2_moments_ridge(x, omega, P, c, float(sd[0]), np.repeat(uh, len(v)), np.tile(v, n1d), lw_ridge)
        else:
            out = l2_moments_a(x, omega, P, c, float(sd[0]), u, lwp)
        mean, cov, log_norm, ess = out
        if not np.all(np.isfinite(log_norm)):
            bad = int(np.sum(~np.isfinite(log_norm)))
            raise FloatingPointError(
                f"{bad} sample(s) have no admissible grid node (method {method}, n1d {n1d}); "
                "increase n1d or use the other parametrisation"
            )
        cov = 0.5 * (cov + np.swapaxes(cov, 1, 2)) if covariance else None
        return ChannelMoments(mean=mean, cov=cov, log_norm=log_norm, ess=ess, method=method)
    # L = 2: blocks of about _L2_BLOCK (sample, node) pairs, so that the arrays of a block stay in the cache
    per = min(per, max(1, _L2_BLOCK // (nodes // 2)))
    if method == "A*":
        comps = _local_components(x, omega, V, c, inflate)
    shared = bool(np.all(omega[:, 0, :] == omega[:1, 0, :]))
    for i0 in range(0, n, per):
        sl = slice(i0, min(n, i0 + per))
        if method == "A*":
            z1, node_lw = _nodes_local(omega[sl], V, tuple(a[sl] for a in comps), u, lw, u_loc, lw_loc)
        else:  # parametrisation "A", L = 2 (L = 3 returned above)
            rows = slice(i0, i0 + 1) if shared else sl  # shared first-layer means: one row of nodes
            if ridge:
                z1 = ridge_grid(omega[rows, 0, :], float(sd[0]), c, n1d, reach)[0]
            else:
                z1 = omega[rows, None, 0, :] + sd[0] * u[None, :, :]
            node_lw = lw_ridge if ridge else lwp
        mean[sl], cov_sl, log_norm[sl], ess[sl] = _moments_l2(
            x[sl], omega[sl], P, c, z1, node_lw, n1d, method, covariance
        )
        if covariance:
            cov[sl] = cov_sl
    cov = 0.5 * (cov + np.swapaxes(cov, 1, 2)) if covariance else None
    return ChannelMoments(mean=mean, cov=cov, log_norm=log_norm, ess=ess, method=method)


def g_out(
    ell,
    omega,
    V,
    c: float,
    quad: QuadratureSettings = DEFAULT_QUADRATURE,
    *,
    jacobian: bool = True,
    covariance: bool = True,
):
    """g_out (n, L, 2) and, if jacobian, its analytic Jacobian d g_out[a,t]/d omega[b,s] as (n, L, 2, L, 2).

    quad goes to posterior_moments; covariance: False (only with jacobian False) leaves the posterior covariance
    out of the returned moments (their cov is None; g_out is the same).  Returns (gout, dgout_or_None, moments).
    """
    if jacobian and not covariance:
        raise ValueError("the Jacobian of g_out needs the posterior covariance")
    mom = posterior_moments(ell, omega, V, c, quad, covariance=covariance)
    omega = np.asarray(omega, dtype=np.float64)
    P = np.linalg.inv(0.5 * (np.asarray(V) + np.asarray(V).T))
    gout = np.einsum("ab,nbt->nat", P, mom.mean - omega)
    if not jacobian:
        return gout, None, mom
    n, L, T = omega.shape
    C = mom.cov.reshape(n, L, T, L, T)
    dg = np.einsum("ab,nbtcs,cd->natds", P, C, P)
    dg -= np.einsum("ts,ab->atbs", np.eye(T), P)[None]
    return gout, dg, mom
