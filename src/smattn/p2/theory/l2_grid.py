"""Posterior moments of the two-layer channel on its quadrature nodes, compiled with JAX (float64).

The same computation as :mod:`smattn.p2.theory.channel_denoiser` does in NumPy for L = 2 (``_moments_l2`` on the
nodes of parametrisation "A", of the ridge grid of small c, or of the mode-centred mixture of "A*" built by
``_nodes_local``):
nodes z1, the two branches z2 = s A_c(z1)^{-1} x, node log-weight lw - log det A_c(z1) - (Gaussian exponent) / 2,
and the moments from the sums W = w_+ + w_- (even in s) and Delta = w_+ - w_- (odd in s).

Why a second implementation: NumPy runs the elementwise chain (softmax entries, a 2 x 2 solve, a logarithm, two
exponentials and, for "A*", a log-sum-exp over five Gaussian components at every node) as ~150 array passes per
block of samples; XLA fuses it into a few loops.  On a CPU this one is the faster for L = 2 at the sizes of the
phase-diagram, GAMP and state-evolution jobs (``studies/p2_thresholds_speed.py``), while for L = 3 the NumPy
path stays the faster (:mod:`.depth3_grid`).  Samples are processed in blocks of a fixed number of rows (the last
block padded by repeating a sample), so one compiled program serves every block and every call with the same grid;
c, V and the nodes are arguments, not constants, so a new skip strength or overlap does not recompile.  A test
checks that both implementations agree to rounding.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

__all__ = ["l2_moments_a", "l2_moments_local", "l2_moments_ridge", "cpu_jax", "BLOCK_PAIRS"]

BLOCK_PAIRS = 131_072  # (sample, node) pairs per compiled block (rows = BLOCK_PAIRS // nodes; speed only)


def cpu_jax():
    """JAX, configured for these kernels: no GPU memory preallocation (smattn.device), computations on the CPU (the
    jobs that use them are CPU jobs; a visible GPU is left alone).  Returns (jax, the CPU device)."""
    from smattn.device import configure_jax_memory

    configure_jax_memory()
    import jax

    return jax, jax.devices("cpu")[0]


@lru_cache(maxsize=1)
def _kernels():
    jax, _ = cpu_jax()
    import jax.numpy as jnp

    def sigmoid_neg(t):  # 1 / (1 + e^t), as attention_link's NumPy helper
        return 0.5 * (1.0 - jnp.tanh(0.5 * t))

    def moments(x, omega, P, c, z10, z11, lw):
        """_moments_l2 on nodes (z10, z11) (m, K) with node log-weights lw (K,) or (m, K)."""
        dd = z10 - z11
        p, q = sigmoid_neg(z10 * dd), sigmoid_neg(-z11 * dd)
        det = (1.0 + c) * (1.0 + c - p - q)
        i00, i01, i10, i11 = (1.0 - q + c) / det, -p / det, -q / det, (1.0 - p + c) / det
        x0, x1 = x[:, None, 0], x[:, None, 1]
        z20, z21 = i00 * x0 + i01 * x1, i10 * x0 + i11 * x1
        d0, d1 = z10 - omega[:, None, 0, 0], z11 - omega[:, None, 0, 1]
        base = lw - jnp.log(det) - 0.5 * P[0, 0] * (d0 * d0 + d1 * d1)
        logw = []
        for s in (1.0, -1.0):
            e0, e1 = s * z20 - omega[:, None, 1, 0], s * z21 - omega[:, None, 1, 1]
            lw_s = base - (P[0, 1] * (d0 * e0 + d1 * e1) + 0.5 * P[1, 1] * (e0 * e0 + e1 * e1))
            logw.append(jnp.where(jnp.isnan(lw_s), -jnp.inf, lw_s))
        mx = jnp.maximum(jnp.max(logw[0], axis=1), jnp.max(logw[1], axis=1))[:, None]
        safe = jnp.where(jnp.isfinite(mx), mx, 0.0)
        wp, wm = jnp.exp(logw[0] - safe), jnp.exp(logw[1] - safe)
        tot = (wp.sum(axis=1) + wm.sum(axis=1))[:, None]
        wp, wm = wp / tot, wm / tot
        W, Dw = wp + wm, wp - wm
        mu = jnp.stack([(W * z10).sum(1), (W * z11).sum(1), (Dw * z20).sum(1), (Dw * z21).sum(1)], axis=1)
        pairs = (
            (0, 0, W * z10, z10), (0, 1, W * z10, z11), (1, 1, W * z11, z11),  # z1 z1^T: even
            (0, 2, Dw * z20, z10), (0, 3, Dw * z21, z10), (1, 2, Dw * z20, z11), (1, 3, Dw * z21, z11),  # odd
            (2, 2, W * z20, z20), (2, 3, W * z20, z21), (3, 3, W * z21, z21),  # z2 z2^T: even
        )  # fmt: skip
        S = jnp.zeros((x.shape[0], 4, 4))
        for i, j, a, b in pairs:
            v = (a * b).sum(1)
            S = S.at[:, i, j].set(v).at[:, j, i].set(v)
        log_norm = jnp.where(jnp.isfinite(mx), mx + jnp.log(tot), -jnp.inf)[:, 0]
        ess = 1.0 / (jnp.sum(wp * wp, axis=1) + jnp.sum(wm * wm, axis=1))
        return mu, S - mu[:, :, None] * mu[:, None, :], log_norm, ess

    @jax.jit
    def on_grid(x, omega, P, c, sd1, u, lwp):
        """Parametrisation "A": nodes omega1 + sd1 u of the Gauss-Hermite grid u (K, 2), log-weights lwp (K,)."""
        z10 = omega[:, None, 0, 0] + sd1 * u[None, :, 0]
        z11 = omega[:, None, 0, 1] + sd1 * u[None, :, 1]
        return moments(x, omega, P, c, z10, z11, lwp)

    @jax.jit
    def on_ridge(x, omega, P, c, sd1, uh, v, lw):
        """channel_denoiser.ridge_grid's nodes: u = (omega11 + omega12)/sqrt(2) + sd1 uh, z1 = (u +- v)/sqrt(2), uh and
        v (K,) the node's two coordinates (u-major), log-weights lw (K,)."""
        r2 = np.sqrt(2.0)
        u = (omega[:, None, 0, 0] + omega[:, None, 0, 1]) / r2 + sd1 * uh[None, :]
        return moments(x, omega, P, c, (u + v[None, :]) / r2, (u - v[None, :]) / r2, lw)

    @jax.jit
    def on_mixture(x, omega, P, c, sd1, means, chol, valid, log_mass, u, lw, u_loc, lw_loc, prior_share):
        """Parametrisation "A*": channel_denoiser._nodes_local's mixture of the prior grid and four mode grids."""
        n = omega.shape[0]
        G, Gl = u.shape[0], u_loc.shape[0]
        comp_m = jnp.concatenate([omega[:, None, 0, :], means], axis=1)  # (n, 5, 2)
        comp_L = jnp.concatenate([jnp.broadcast_to(sd1 * jnp.eye(2), (n, 1, 2, 2)), chol], axis=1)
        comp_ok = jnp.concatenate([jnp.ones((n, 1), dtype=bool), valid], axis=1)
        mmax = jnp.max(log_mass, axis=1, keepdims=True)
        any_mode = jnp.isfinite(mmax)
        rel = jnp.exp(log_mass - jnp.where(any_mode, mmax, 0.0))
        log_share = jnp.log(rel / jnp.maximum(rel.sum(axis=1, keepdims=True), 1e-300))
        log_pi = jnp.concatenate(
            [jnp.where(any_mode, jnp.log(prior_share), 0.0), jnp.log1p(-prior_share) + log_share], axis=1
        )
        log_pi = jnp.where(comp_ok, log_pi, -jnp.inf)
        z_prior = comp_m[:, 0, None, :] + sd1 * u[None, :, :]  # (n, G, 2)
        z_loc = means[:, :, None, :] + chol[:, :, None, :, 0] * u_loc[:, 0, None]
        z_loc = z_loc + chol[:, :, None, :, 1] * u_loc[:, 1, None]
        z1 = jnp.concatenate([z_prior, z_loc.reshape(n, -1, 2)], axis=1)  # (n, G + 4 Gl, 2)
        inv00, inv11 = 1.0 / comp_L[..., 0, 0], 1.0 / comp_L[..., 1, 1]  # (n, 5)
        inv10 = -comp_L[..., 1, 0] * inv00 * inv11
        const = log_pi + jnp.log(inv00 * inv11) - jnp.log(2.0 * jnp.pi)
        z10, z11 = z1[..., 0], z1[..., 1]
        lq = []
        for j in range(5):
            d0, d1 = z10 - comp_m[:, j, None, 0], z11 - comp_m[:, j, None, 1]
            y0, y1 = inv00[:, j, None] * d0, inv10[:, j, None] * d0 + inv11[:, j, None] * d1
            lq.append(const[:, j, None] - 0.5 * (y0 * y0 + y1 * y1))
        lqmax = lq[0]
        for t in lq[1:]:
            lqmax = jnp.maximum(lqmax, t)
        acc = jnp.exp(lq[0] - lqmax)
        for t in lq[1:]:
            acc = acc + jnp.exp(t - lqmax)
        log_qmix = lqmax + jnp.log(acc)
        node_lw = jnp.concatenate([lw, jnp.tile(lw_loc, 4)])[None, :] + jnp.concatenate(
            [jnp.repeat(log_pi[:, :1], G, axis=1), jnp.repeat(log_pi[:, 1:], Gl, axis=1)], axis=1
        )
        off = node_lw - log_qmix
        off = jnp.where(jnp.isfinite(off), off, -jnp.inf)
        return moments(x, omega, P, c, z10, z11, off)

    return jax, on_grid, on_mixture, on_ridge


def _blocks(kernel, n: int, nodes: int, per_sample, shared):
    """Run kernel on blocks of a fixed number of rows: per_sample arrays are cut (and the last block padded by
    repeating its first row), shared arguments passed whole.  Returns mean (n, 2, 2), cov (n, 4, 4), log_norm (n,),
    ess (n,) as NumPy arrays."""
    jax, cpu = cpu_jax()
    # a fixed number of rows per grid; fewer samples than that: the next power of two (few compiled shapes)
    rows = max(1, BLOCK_PAIRS // nodes)
    if n < rows:
        rows = 1 << max(0, int(n - 1).bit_length())
    mean, cov, log_norm, ess = np.empty((n, 2, 2)), np.empty((n, 4, 4)), np.empty(n), np.empty(n)
    with jax.enable_x64(True), jax.default_device(cpu):
        shared = [np.asarray(a, np.float64) if not isinstance(a, np.ndarray) or a.dtype != bool else a for a in shared]
        for i0 in range(0, n, rows):
            m = min(n, i0 + rows) - i0
            idx = np.concatenate([np.arange(i0, i0 + m), np.full(rows - m, i0)])
            out = kernel(*(a[idx] for a in per_sample), *shared)
            mu, S, ln, e = (np.asarray(a)[:m] for a in out)
            sl = slice(i0, i0 + m)
            mean[sl], cov[sl], log_norm[sl], ess[sl] = mu.reshape(-1, 2, 2), S, ln, e
    return mean, cov, log_norm, ess


def l2_moments_a(x, omega, P, c: float, sd1: float, u, lwp):
    """Parametrisation "A" on the Gauss-Hermite grid: nodes omega1 + sd1 u (u (K, 2), log-weights lwp (K,)).

    x: (n, 2) pre-images; omega: (n, 2, 2); P = V^{-1} (2, 2).  Returns mean (n, 2, 2), cov (n, 4, 4), log_norm (n,)
    (-inf for a sample without an admissible node) and ess (n,)."""
    on_grid = _kernels()[1]
    per = (np.asarray(x, np.float64), np.asarray(omega, np.float64))
    return _blocks(on_grid, len(x), 2 * len(lwp), per, (P, float(c), float(sd1), u, lwp))


def l2_moments_ridge(x, omega, P, c: float, sd1: float, uh, v, lw):
    """The ridge grid (channel_denoiser.ridge_grid) of small c: node coordinates uh, v (K,) (u-major), log-weights
    lw (K,); returns as l2_moments_a."""
    on_ridge = _kernels()[3]
    per = (np.asarray(x, np.float64), np.asarray(omega, np.float64))
    return _blocks(on_ridge, len(x), 2 * len(lw), per, (P, float(c), float(sd1), uh, v, lw))


def l2_moments_local(x, omega, P, c: float, sd1: float, components, u, lw, u_loc, lw_loc, prior_share: float):
    """Parametrisation "A*": the prior grid (u, lw) and four mode grids (u_loc, lw_loc) per sample, components =
    channel_denoiser._local_components (means, chol, valid, log_mass); returns as l2_moments_a."""
    on_mixture = _kernels()[2]
    means, chol, valid, log_mass = components
    per = (
        np.asarray(x, np.float64),
        np.asarray(omega, np.float64),
        np.asarray(means, np.float64),
        np.asarray(chol, np.float64),
        np.asarray(valid, bool),
        np.asarray(log_mass, np.float64),
    )
    nodes = 2 * (len(lw) + 4 * len(lw_loc))

    def kernel(x_, o_, m_, ch_, v_, lm_, P_, c_, sd_, u_, lw_, ul_, lwl_, ps_):
        return on_mixture(x_, o_, P_, c_, sd_, m_, ch_, v_, lm_, u_, lw_, ul_, lwl_, ps_)

    return _blocks(kernel, len(x), nodes, per, (P, c, sd1, u, lw, u_loc, lw_loc, prior_share))
