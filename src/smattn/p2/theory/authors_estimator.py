"""Recomputation of the authors' depth-3 Monte-Carlo channel estimator and of their state evolution with it.

A reference mode, never used for our own curves: it exists to show where the published depth-3 overlaps come from
(docs/p2_theory.md, "Depth 3"), and, carried over to two layers (z1 in R^2 integrated, z2 = s A_c(z1)^{-1} x(y)),
to test whether it gives the first-layer thresholds of the authors' phase diagram (phase_diagram_hypotheses).
The estimator, as described for the authors' depth-3 code:

* the posterior integral over the first two layers (z1, z2) in R^4 (parametrisation A: z3 = s B^{-1} x(y),
  B = A_c(A_c(z1) z2) A_c(z1), s = +-1, weight 1 / |det B|) is a plain average over uniform points of the box
  [-m1, m1]^2 x [-m2, m2]^2, m_k = 3 (V^{-1/2})_kk, centred at 0 (not at omega);
* the integrand is exp(-sum_t (zeta_t - omega_t)^T V^{-1} (zeta_t - omega_t) / 2) / |det B| summed over s, with the
  Gaussian normalisation dropped, so Z_out is an *unnormalised* number (typically 1e-5 near the depth-3 fixed point);
* Z_out is floored at 1e-5;
* the numerator, the same average with the extra factor V^{-1}(zeta - omega), uses an independent set of points;
* g_out = numerator / max(Z_out, 1e-5); x(y) has 1e-6 added under its square root.

The state evolution around it is the authors' procedure: teacher Z = Q^{1/2} xi + (I - Q + Delta I)^{1/2} U,
V = I - Q + Delta I, Q <- eta Qhat (I + Qhat)^{-1} + (1 - eta) Q symmetrised, a fixed number of iterations, fresh
teacher and box points at every iteration (so the iterates fluctuate; the result is their mean over the last ones).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .attention_link import (
    apply_skip_matrix,
    check_skip,
    link_logits,
    skip_matrix_det,
    skip_matrix_inverse,
    softmax_entries,
)
from .l2_grid import cpu_jax
from .overlaps import clip_overlap, sqrtm_psd
from .state_evolution import channel_covariance, overlap_update

__all__ = ["AuthorsSettings", "authors_g_out", "authors_channel_average", "AuthorsSEResult", "authors_state_evolution"]


KERNELS = ("auto", "compiled", "fused", "direct")


@dataclass(frozen=True)
class AuthorsSettings:
    """The authors' estimator constants: points per integral, box half-width factor, Z_out floor, x(y) epsilon.

    How it is evaluated (not what): the uniform points of each chunk of about chunk_elems box coordinates are drawn
    from the caller's generator (Z_out's points, then the numerator's), so chunk_elems fixes which random numbers
    each sample gets; kernel "fused" (:func:`_box_sums`: both signs from one pair of quadratic forms, in blocks of
    about block_elems points that stay in the cache), "compiled" (L = 2: the same sums compiled with JAX, a chunk
    per call, :func:`_compiled_box_sums`; L = 3 runs "fused"), "direct" (:func:`_box_average`, the reference: one
    pass per sign and layer) or "auto" (default: "compiled" for L = 2, "fused" for L = 3, the faster on a CPU,
    ``studies/p2_thresholds_speed.py``); all give the same numbers to rounding.
    """

    n_points: int = 10_000
    box: float = 3.0
    floor: float = 1e-5
    sqrt_eps: float = 1e-6
    chunk_elems: int = 2_000_000
    block_elems: int = 65_536
    kernel: str = "auto"

    def __post_init__(self):
        if int(self.n_points) != self.n_points or self.n_points < 1:
            raise ValueError(f"n_points must be an integer >= 1, got {self.n_points!r}")
        if self.kernel not in KERNELS:
            raise ValueError(f"kernel must be one of {KERNELS}, got {self.kernel!r}")
        for name in ("box", "sqrt_eps", "chunk_elems", "block_elems"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        if not self.floor >= 0:
            raise ValueError(f"floor must be >= 0, got {self.floor!r}")


def _inv_apply(z, v, c):
    """A_c(z)^{-1} v and det A_c(z) for z, v (..., 2)."""
    p, q = softmax_entries(z)
    i00, i01, i10, i11 = skip_matrix_inverse(p, q, c)
    return np.stack([i00 * v[..., 0] + i01 * v[..., 1], i10 * v[..., 0] + i11 * v[..., 1]], axis=-1), skip_matrix_det(
        p, q, c
    )


def _dot(a, b):
    """Sum over the token axis of a * b, (..., 2) -> (...)."""
    return a[..., 0] * b[..., 0] + a[..., 1] * b[..., 1]


def _box_average(x, omega, P, c, pts, want_numerator):
    """Box averages for m samples over G points each (L = 2 or 3 layers).

    x: (m, 2) pre-images; omega: (m, L, 2); P = V^{-1} (L, L); pts: (m, G, 2 (L - 1)) points of the integrated
    layers (z1 for L = 2; z1, z2 for L = 3). The last layer is z_L = s B^{-1} x with B = A_c(z1) (L = 2) or
    A_c(A_c(z1) z2) A_c(z1) (L = 3), weight 1 / |det B|, both signs s summed.
    Returns the mean integrand (m,) and, if want_numerator, the mean of integrand * V^{-1}(zeta - omega) (m, L, 2).
    """
    L = omega.shape[1]
    xb = np.broadcast_to(x[:, None, :], pts.shape[:2] + (2,))
    if L == 3:
        z1, z2 = pts[..., 0:2], pts[..., 2:4]
        y1, det2 = _inv_apply(apply_skip_matrix(z1, z2, c), xb, c)
        zL, det1 = _inv_apply(z1, y1, c)
        inv_det = 1.0 / np.abs(det1 * det2)
        D = [z1 - omega[:, None, 0, :], z2 - omega[:, None, 1, :]]  # (m, G, 2) each
    else:
        zL, det1 = _inv_apply(pts, xb, c)
        inv_det = 1.0 / np.abs(det1)
        D = [pts - omega[:, None, 0, :]]
    k = L - 1  # index of the last layer
    base = sum((1.0 if a == b else 2.0) * P[a, b] * _dot(D[a], D[b]) for a in range(k) for b in range(a, k))
    tot = np.zeros(pts.shape[:2])
    num = np.zeros((x.shape[0], L, 2)) if want_numerator else None
    for s in (1.0, -1.0):
        DL = s * zL - omega[:, None, k, :]  # (m, G, 2)
        quad = base + 2.0 * sum(P[a, k] * _dot(D[a], DL) for a in range(k)) + P[k, k] * _dot(DL, DL)
        w = np.exp(-0.5 * quad) * inv_det  # (m, G)
        tot += w
        if want_numerator:
            wD = np.stack([np.einsum("ng,ngt->nt", w, d) for d in (*D, DL)], axis=1)  # (m, L, 2)
            num += np.einsum("ab,nbt->nat", P, wD) / w.shape[1]
    return tot.mean(axis=1), num


def _box_sums(x, omega, P, c, pts, want_numerator):
    """The sums of :func:`_box_average` over the G points, both signs of z_L from one pair of quadratic forms.

    With D_a = z_a - omega_a (a < L) and the last layer s z_L - omega_L, the exponent of sign s is (A + s B) / 2 with
    A = sum_{a,b<L} P_ab D_a.D_b - 2 l.omega_L + P_LL (|z_L|^2 + |omega_L|^2), B = 2 l.z_L - 2 P_LL z_L.omega_L,
    l = sum_{a<L} P_aL D_a; so with w_s = exp(-(A + s B)/2) / |det B|, W = w_+ + w_- and Delta = w_+ - w_-:
    sum_s w_s = W, sum_s w_s D_a = W D_a (a < L) and sum_s w_s (s z_L - omega_L) = Delta z_L - W omega_L.
    Arguments as _box_average. Returns sum_g W (m,) and, if want_numerator, the sums of w (zeta - omega) (m, L, 2)
    (not yet multiplied by V^{-1}).
    """
    L = omega.shape[1]
    k = L - 1
    z1 = pts[..., 0:2]
    p1, q1 = softmax_entries(z1)
    if L == 3:
        a2 = apply_skip_matrix(z1, pts[..., 2:4], c)
        p2, q2 = softmax_entries(a2)
        j00, j01, j10, j11 = skip_matrix_inverse(p2, q2, c)
        v0 = j00 * x[:, None, 0] + j01 * x[:, None, 1]
        v1 = j10 * x[:, None, 0] + j11 * x[:, None, 1]
        det = skip_matrix_det(p1, q1, c) * skip_matrix_det(p2, q2, c)
    else:
        v0, v1 = x[:, None, 0], x[:, None, 1]
        det = skip_matrix_det(p1, q1, c)
    i00, i01, i10, i11 = skip_matrix_inverse(p1, q1, c)
    zl0, zl1 = i00 * v0 + i01 * v1, i10 * v0 + i11 * v1
    D = [(pts[..., 2 * a] - omega[:, None, a, 0], pts[..., 2 * a + 1] - omega[:, None, a, 1]) for a in range(k)]
    w0, w1 = omega[:, None, k, 0], omega[:, None, k, 1]
    l0 = sum(P[a, k] * D[a][0] for a in range(k))
    l1 = sum(P[a, k] * D[a][1] for a in range(k))
    A = sum(
        (1.0 if a == b else 2.0) * P[a, b] * (D[a][0] * D[b][0] + D[a][1] * D[b][1])
        for a in range(k)
        for b in range(a, k)
    )
    A = A - 2.0 * (l0 * w0 + l1 * w1) + P[k, k] * (zl0 * zl0 + zl1 * zl1 + (w0 * w0 + w1 * w1))
    B = 2.0 * (l0 * zl0 + l1 * zl1) - 2.0 * P[k, k] * (zl0 * w0 + zl1 * w1)
    inv_det = 1.0 / np.abs(det)
    wp = np.exp(-0.5 * (A + B)) * inv_det
    wm = np.exp(-0.5 * (A - B)) * inv_det
    W = wp + wm
    tot = W.sum(axis=1)
    if not want_numerator:
        return tot, None
    dw = wp - wm
    num = np.empty((x.shape[0], L, 2))
    for a in range(k):
        num[:, a, 0] = np.einsum("ng,ng->n", W, D[a][0])
        num[:, a, 1] = np.einsum("ng,ng->n", W, D[a][1])
    num[:, k, 0] = np.einsum("ng,ng->n", dw, zl0) - omega[:, k, 0] * tot
    num[:, k, 1] = np.einsum("ng,ng->n", dw, zl1) - omega[:, k, 1] * tot
    return tot, num


@lru_cache(maxsize=1)
def _box_kernel():
    """The L = 2 sums of _box_sums for both point sets of a chunk, compiled (float64, on the CPU)."""
    jax, _ = cpu_jax()
    import jax.numpy as jnp

    def sums(x, omega, P, c, pts, want_numerator):
        z10, z11 = pts[..., 0], pts[..., 1]
        dd = z10 - z11
        p1, q1 = 0.5 * (1.0 - jnp.tanh(0.5 * (z10 * dd))), 0.5 * (1.0 - jnp.tanh(0.5 * (-z11 * dd)))
        det = (1.0 + c) * (1.0 + c - p1 - q1)
        i00, i01, i10, i11 = (1.0 - q1 + c) / det, -p1 / det, -q1 / det, (1.0 - p1 + c) / det
        v0, v1 = x[:, None, 0], x[:, None, 1]
        zl0, zl1 = i00 * v0 + i01 * v1, i10 * v0 + i11 * v1
        D0, D1 = z10 - omega[:, None, 0, 0], z11 - omega[:, None, 0, 1]
        w0, w1 = omega[:, None, 1, 0], omega[:, None, 1, 1]
        l0, l1 = P[0, 1] * D0, P[0, 1] * D1
        A = P[0, 0] * (D0 * D0 + D1 * D1)
        A = A - 2.0 * (l0 * w0 + l1 * w1) + P[1, 1] * (zl0 * zl0 + zl1 * zl1 + (w0 * w0 + w1 * w1))
        B = 2.0 * (l0 * zl0 + l1 * zl1) - 2.0 * P[1, 1] * (zl0 * w0 + zl1 * w1)
        inv_det = 1.0 / jnp.abs(det)
        wp = jnp.exp(-0.5 * (A + B)) * inv_det
        wm = jnp.exp(-0.5 * (A - B)) * inv_det
        W = wp + wm
        tot = W.sum(axis=1)
        if not want_numerator:
            return tot, None
        dw = wp - wm
        num = jnp.stack(
            [
                jnp.stack([(W * D0).sum(1), (W * D1).sum(1)], 1),
                jnp.stack([(dw * zl0).sum(1) - omega[:, 1, 0] * tot, (dw * zl1).sum(1) - omega[:, 1, 1] * tot], 1),
            ],
            axis=1,
        )
        return tot, num

    @jax.jit
    def chunk(x, omega, P, c, lo, den_u, num_u):
        G = den_u.shape[1]
        z = sums(x, omega, P, c, lo + 2.0 * (-lo) * den_u, False)[0] / G
        num = jnp.einsum("ab,nbt->nat", P, sums(x, omega, P, c, lo + 2.0 * (-lo) * num_u, True)[1]) / G
        return z, num

    return jax, chunk


def _compiled_box_sums(x, omega, P, c, lo, den_u, num_u, rows):
    """Z_out (m,) and the numerator V^{-1} sum w (zeta - omega) / G (m, 2, 2) of m samples (L = 2) from their
    uniform points den_u, num_u (m, G, 2), in calls of `rows` samples (a short last call padded by repeating its
    first sample; calls of a few samples keep the arrays in the cache, as the fused kernel's blocks)."""
    jax, chunk = _box_kernel()
    cpu = cpu_jax()[1]
    m = x.shape[0]
    z, num = np.empty(m), np.empty((m, 2, 2))
    with jax.enable_x64(True), jax.default_device(cpu):
        for i0 in range(0, m, rows):
            k = min(m, i0 + rows) - i0
            idx = np.concatenate([np.arange(i0, i0 + k), np.full(rows - k, i0)])
            zb, nb = chunk(x[idx], omega[idx], P, float(c), lo, den_u[idx], num_u[idx])
            z[i0 : i0 + k], num[i0 : i0 + k] = np.asarray(zb)[:k], np.asarray(nb)[:k]
    return z, num


def authors_g_out(ell, omega, V, c: float, rng: np.random.Generator, settings: AuthorsSettings = AuthorsSettings()):
    """The authors' Monte-Carlo g_out (n, L, 2), L = 2 or 3, with the unnormalised Z_out (n,) before the floor.

    ell: (n, 2) observation logits; omega: (n, L, 2); V: (L, L) SPD.  Returns (g_out, Z_out, floored (n,) bool).
    """
    c = check_skip(c)
    ell = np.asarray(ell, dtype=np.float64)
    omega = np.asarray(omega, dtype=np.float64)
    if omega.ndim != 3 or omega.shape[1] not in (2, 3) or omega.shape[2] != 2 or ell.shape != (omega.shape[0], 2):
        raise ValueError(f"need omega (n, L, 2) with L in (2, 3) and ell (n, 2); got {omega.shape}, {ell.shape}")
    L = omega.shape[1]
    V = 0.5 * (np.asarray(V, dtype=np.float64) + np.asarray(V, dtype=np.float64).T)
    P = np.linalg.inv(V)
    half = settings.box * np.diag(sqrtm_psd(P))  # m_k = 3 (V^{-1/2})_kk
    lo = -np.repeat(half[: L - 1], 2)  # the integrated layers' box corner, (2 (L - 1),)
    s = ell[:, 0] + ell[:, 1]
    r = np.sqrt(s + settings.sqrt_eps)
    x = np.stack([-ell[:, 0] / r, ell[:, 1] / r], axis=-1)
    n, G, dim = omega.shape[0], int(settings.n_points), 2 * (L - 1)
    per = max(1, int(settings.chunk_elems // (G * dim)))
    g = np.empty((n, L, 2))
    z_out = np.empty(n)
    for i0 in range(0, n, per):
        sl = slice(i0, min(n, i0 + per))
        m = sl.stop - sl.start
        den_u, num_u = rng.random((m, G, dim)), rng.random((m, G, dim))
        if settings.kernel in ("auto", "compiled") and L == 2:
            rows = max(1, int(settings.block_elems // G))
            z, num = _compiled_box_sums(x[sl], omega[sl], P, c, lo, den_u, num_u, rows)
        elif settings.kernel == "direct":
            z, _ = _box_average(x[sl], omega[sl], P, c, lo + 2.0 * (-lo) * den_u, False)
            _, num = _box_average(x[sl], omega[sl], P, c, lo + 2.0 * (-lo) * num_u, True)
        else:
            z, num = np.empty(m), np.empty((m, L, 2))
            bs = max(1, int(settings.block_elems // G))
            for j in range(0, m, bs):
                b, bx = slice(j, min(m, j + bs)), slice(sl.start + j, min(sl.stop, sl.start + j + bs))
                z[b] = _box_sums(x[bx], omega[bx], P, c, lo + 2.0 * (-lo) * den_u[b], False)[0] / G
                num[b] = (
                    np.einsum("ab,nbt->nat", P, _box_sums(x[bx], omega[bx], P, c, lo + 2.0 * (-lo) * num_u[b], True)[1])
                    / G
                )
        z_out[sl] = z
        g[sl] = num / np.maximum(z, settings.floor)[:, None, None]
    return g, z_out, z_out < settings.floor


def authors_channel_average(
    Q, c: float, xi, U, rng: np.random.Generator, *, v_reg: float = 1e-3, settings: AuthorsSettings = AuthorsSettings()
) -> dict:
    """R(Q) (L, L) = E sum_t g_t g_t^T with the authors' estimator, on the teacher draws xi, U (n, L, 2).

    Returns dict with R, R_se, floor_fraction (share of samples whose Z_out was floored) and median_z_out.
    """
    Q = clip_overlap(Q)
    V = channel_covariance(Q, v_reg)
    omega = np.einsum("ab,nbt->nat", sqrtm_psd(Q), xi)
    Z = omega + np.einsum("ab,nbt->nat", sqrtm_psd(V), U)
    g, z, floored = authors_g_out(link_logits(Z, c), omega, V, c, rng, settings)
    per = np.einsum("nat,nbt->nab", g, g)
    return {
        "R": per.mean(0),
        "R_se": per.std(0, ddof=1) / np.sqrt(len(per)),
        "floor_fraction": float(floored.mean()),
        "median_z_out": float(np.median(z)),
    }


@dataclass
class AuthorsSEResult:
    """Iterates (iters + 1, L, L) of the authors' SE, the mean (L, L) and standard error (L, L) of the last
    `tail` iterates, and the floor fraction per iteration (iters,)."""

    history: np.ndarray
    Q_mean: np.ndarray
    Q_se: np.ndarray
    floor_fraction: np.ndarray
    tail: int


def authors_state_evolution(
    alpha: float,
    c: float = 1.0,
    *,
    q0,
    iterations: int,
    n_samples: int,
    seed: int = 0,
    damping: float = 0.6,
    v_reg: float = 1e-3,
    tail: int = 5,
    settings: AuthorsSettings = AuthorsSettings(),
    progress_bar=None,
    L: int = 3,
) -> AuthorsSEResult:
    """The authors' SE iterated `iterations` times from q0 (scalar: q0 I; or an (L, L) matrix), L = 2 or 3.

    n_samples teacher draws per iteration (fresh each time); damping = weight of the new iterate (their 0.6 for
    L = 3, 0.8 for L = 2).
    progress_bar: an optional object with update(1) (smattn.progress.progress) called once per iteration.
    """
    if alpha < 0 or iterations < 1 or n_samples < 2 or not 1 <= tail <= iterations:
        raise ValueError(
            f"need alpha >= 0, iterations >= 1, n_samples >= 2, 1 <= tail <= iterations; got "
            f"{alpha}, {iterations}, {n_samples}, {tail}"
        )
    rng = np.random.default_rng(seed)
    Q = q0 * np.eye(L) if np.ndim(q0) == 0 else np.array(q0, dtype=np.float64)
    if L not in (2, 3) or Q.shape != (L, L):
        raise ValueError(f"need L in (2, 3) and q0 scalar or (L, L); got L = {L}, q0 shape {np.shape(q0)}")
    hist, floors = [Q.copy()], []
    for _ in range(iterations):
        xi, U = rng.standard_normal((n_samples, L, 2)), rng.standard_normal((n_samples, L, 2))
        avg = authors_channel_average(Q, c, xi, U, rng, v_reg=v_reg, settings=settings)
        Q = (1.0 - damping) * Q + damping * overlap_update(alpha * avg["R"])
        Q = clip_overlap(0.5 * (Q + Q.T))
        hist.append(Q.copy())
        floors.append(avg["floor_fraction"])
        if progress_bar is not None:
            progress_bar.update(1)
    H = np.array(hist)
    last = H[-tail:]
    se = last.std(0, ddof=1) / np.sqrt(tail) if tail > 1 else np.full((L, L), np.nan)
    return AuthorsSEResult(history=H, Q_mean=last.mean(0), Q_se=se, floor_fraction=np.array(floors), tail=tail)
