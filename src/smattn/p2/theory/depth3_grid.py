"""Posterior moments of the depth-3 channel on the fixed Gauss–Hermite grid, compiled with JAX (float64).

The same computation as :func:`smattn.p2.theory.channel_denoiser` does in NumPy for L = 3, parametrisation "A":
nodes (z1, z2) = omega_{1,2} + sd_{1,2} u, the last layer z3 = s B^{-1} x with B = A_c(A_c(z1) z2) A_c(z1) and
s = +-1, node log-weight lwp - log det B - (quadratic form of the Gaussian prior) / 2. The two signs share (z1, z2)
and the Jacobian; their quadratic forms differ only by the terms linear in z3 (A +- B below), so the moments follow
from the sums W = w_+ + w_- (even in z3) and Delta = w_+ - w_- (odd in z3).

Why a second implementation: one state-evolution iteration at the paper's depth-3 settings (2000 teacher draws,
8^4 nodes, two signs) evaluates 16 million nodes; XLA fuses the elementwise chain (two softmax layers, two 2x2
solves, logarithms, exponentials) that NumPy runs as ~40 separate array passes. The NumPy path, run on cache-sized
blocks, is the faster on a CPU and the default (``QuadratureSettings.backend``; ``studies/p2_paper_cost.py
denoiser`` times both in CPU seconds); this one stays as the compiled alternative, and a test checks that they
agree to rounding.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

__all__ = ["depth3_moments"]


@lru_cache(maxsize=1)
def _kernel():
    import jax
    import jax.numpy as jnp

    def sigmoid_neg(t):  # 1 / (1 + e^t), as attention_link's NumPy helper
        return 0.5 * (1.0 - jnp.tanh(0.5 * t))

    def softmax_entries(a):
        d = a[..., 0] - a[..., 1]
        return sigmoid_neg(a[..., 0] * d), sigmoid_neg(-a[..., 1] * d)

    def apply_skip(z, v, c):
        p, q = softmax_entries(z)
        return jnp.stack([(1.0 - p + c) * v[..., 0] + p * v[..., 1], q * v[..., 0] + (1.0 - q + c) * v[..., 1]], -1)

    def solve_skip(z, v, c):
        p, q = softmax_entries(z)
        det = (1.0 + c) * (1.0 + c - p - q)
        out = jnp.stack(
            [((1.0 - q + c) * v[..., 0] - p * v[..., 1]) / det, (-q * v[..., 0] + (1.0 - p + c) * v[..., 1]) / det], -1
        )
        return out, jnp.log(det)

    def dot(a, b):
        return a[..., 0] * b[..., 0] + a[..., 1] * b[..., 1]

    @jax.jit
    def moments(x, omega, P, sd, u, lwp, c):
        z1 = omega[:, None, 0, :] + sd[0] * u[None, :, 0:2]  # (m, G, 2)
        z2 = omega[:, None, 1, :] + sd[1] * u[None, :, 2:4]
        y1, ld1 = solve_skip(apply_skip(z1, z2, c), jnp.broadcast_to(x[:, None, :], z1.shape), c)
        z3, ld2 = solve_skip(z1, y1, c)
        D1, D2 = z1 - omega[:, None, 0, :], z2 - omega[:, None, 1, :]
        w3 = omega[:, None, 2, :]
        lin = P[0, 2] * D1 + P[1, 2] * D2
        A = (
            P[0, 0] * dot(D1, D1)
            + 2.0 * P[0, 1] * dot(D1, D2)
            + P[1, 1] * dot(D2, D2)
            - 2.0 * dot(lin, w3)
            + P[2, 2] * (dot(z3, z3) + dot(w3, w3))
        )
        B = 2.0 * dot(lin, z3) - 2.0 * P[2, 2] * dot(z3, w3)
        off = lwp[None, :] - (ld1 + ld2)
        lp = jnp.nan_to_num(off - 0.5 * (A + B), nan=-jnp.inf)
        lm = jnp.nan_to_num(off - 0.5 * (A - B), nan=-jnp.inf)
        mx = jnp.maximum(jnp.max(lp, axis=1), jnp.max(lm, axis=1))[:, None]
        wp, wm = jnp.exp(lp - mx), jnp.exp(lm - mx)
        tot = (wp.sum(axis=1) + wm.sum(axis=1))[:, None]
        wp, wm = wp / tot, wm / tot
        W, Dw = wp + wm, wp - wm
        Y = jnp.concatenate([z1, z2], axis=-1)  # (m, G, 4)
        mu = jnp.concatenate([jnp.einsum("ng,ngk->nk", W, Y), jnp.einsum("ng,ngk->nk", Dw, z3)], axis=1)
        WY = Y * W[..., None]
        S44 = jnp.einsum("ngk,ngl->nkl", WY, Y)
        S43 = jnp.einsum("ngk,ngl->nkl", Y * Dw[..., None], z3)
        S33 = jnp.einsum("ngk,ngl->nkl", z3 * W[..., None], z3)
        S = jnp.concatenate(
            [jnp.concatenate([S44, S43], axis=2), jnp.concatenate([jnp.swapaxes(S43, 1, 2), S33], axis=2)], axis=1
        )
        ess = 1.0 / (jnp.sum(wp * wp, axis=1) + jnp.sum(wm * wm, axis=1))
        return mu, S - mu[:, :, None] * mu[:, None, :], (mx + jnp.log(tot))[:, 0], ess

    return jax, moments


def depth3_moments(x, omega, P, sd, u, lwp, c: float):
    """Moments of one chunk of m samples (all float64 NumPy arrays).

    x: (m, 2) pre-images of the observations; omega: (m, 3, 2); P = V^{-1} (3, 3); sd: (3,) proposal scales;
    u: (G, 4) nodes; lwp: (G,) node log-weights with the Gaussian proposal divided out; c: skip strength.
    Returns mean (m, 3, 2), cov (m, 6, 6) (flat index a*2 + t), log_norm (m,) and ess (m,); log_norm is -inf or NaN
    for a sample without an admissible node (the caller refuses it).
    """
    jax, moments = _kernel()
    with jax.enable_x64(True):
        mu, cov, log_norm, ess = moments(
            np.asarray(x, np.float64),
            np.asarray(omega, np.float64),
            np.asarray(P, np.float64),
            np.asarray(sd, np.float64),
            np.asarray(u, np.float64),
            np.asarray(lwp, np.float64),
            float(c),
        )
        return np.asarray(mu).reshape(-1, 3, 2), np.asarray(cov), np.asarray(log_norm), np.asarray(ess)
