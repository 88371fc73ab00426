"""The authors' integrator of the L = 2 output channel (their ``AMP_BO_2w.py``), vectorised: a fixed box in z1 and
a finite-difference Jacobian (docs/p2_dynamics.md#the-authors-integrator).

Their code integrates parametrisation A (z2 = s A_c(z1)^{-1} x(y), weight 1/det A_c) over the fixed square
z1 in [-3, 3]^2 (not centred on omega, not scaled by V) with adaptive quadrature (dblquad for Z_out, cubature for
the numerator, tolerances ~1e-8), regularises the pre-image as x = (-l1, l2) / sqrt(l1 + l2 + 1e-6), and
differentiates g_out by central differences of step 1e-5 on each of the four entries of omega.  Here the adaptive
rules are replaced by one fixed composite Gauss-Legendre tensor rule on the same box (:class:`BoxRule`, checked
against scipy's dblquad in tests/p2_theory/test_box_channel.py), and the finite differences are those of this rule.

API: ``box_moments(ell, omega, V, c, rule)`` -> ChannelMoments (method "box"); ``box_g_out(ell, omega, V, c, rule,
jacobian="fd")`` -> (g_out (n, 2, 2), Jacobian (n, 2, 2, 2, 2) or None, moments), the layout of
:func:`~.channel_denoiser.g_out`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .attention_link import check_skip
from .channel_denoiser import ChannelMoments
from .quadrature import relative_weights

__all__ = ["AUTHORS_BOX", "BoxRule", "box_moments", "box_g_out", "box_preimage"]


@dataclass(frozen=True)
class BoxRule:
    """Fixed tensor rule on the authors' box z1 in [-half_width, half_width]^2 and their finite differences.

    panels x order: composite Gauss-Legendre nodes per axis (equal panels); fd_step: the central-difference step
    on omega (theirs 1e-5); sqrt_eps: added under the square root of the pre-image (theirs 1e-6);
    chunk_elems: NumPy backend: samples are processed in chunks of about this many (sample, node) pairs (memory only);
    backend: "jax" (compiled, float64; default, the faster) or "numpy" (the same numbers to rounding).
    """

    half_width: float = 3.0
    panels: int = 60
    order: int = 4
    fd_step: float = 1e-5
    sqrt_eps: float = 1e-6
    chunk_elems: int = 1_000_000
    backend: str = "jax"

    def __post_init__(self):
        if self.backend not in ("jax", "numpy"):
            raise ValueError(f"BoxRule.backend must be 'jax' or 'numpy', got {self.backend!r}")
        for name in ("half_width", "fd_step"):
            v = getattr(self, name)
            if not (np.isfinite(v) and v > 0):
                raise ValueError(f"BoxRule.{name} must be a finite number > 0, got {v!r}")
        if not (np.isfinite(self.sqrt_eps) and self.sqrt_eps >= 0):
            raise ValueError(f"BoxRule.sqrt_eps must be >= 0, got {self.sqrt_eps!r}")
        for name in ("panels", "order", "chunk_elems"):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
                raise ValueError(f"BoxRule.{name} must be an integer >= 1, got {v!r}")

    @property
    def nodes_per_axis(self) -> int:
        return int(self.panels) * int(self.order)


#: the authors' box and steps with the default resolution (60 panels x 4 nodes per axis)
AUTHORS_BOX = BoxRule()


@lru_cache(maxsize=8)
def _axis(half_width: float, panels: int, order: int):
    """Composite Gauss-Legendre nodes and weights on [-h, h] (panels equal panels, order nodes each)."""
    x, w = np.polynomial.legendre.leggauss(order)
    edges = np.linspace(-half_width, half_width, panels + 1)
    mid, half = 0.5 * (edges[1:] + edges[:-1]), 0.5 * (edges[1:] - edges[:-1])
    nodes = (mid[:, None] + half[:, None] * x[None, :]).ravel()
    weights = (half[:, None] * w[None, :]).ravel()
    return nodes, weights


@lru_cache(maxsize=8)
def _node_terms(half_width: float, panels: int, order: int, c: float):
    """Node-only quantities of the tensor rule: z1 components (G,), entries of A_c(z1)^{-1} (G,) each, and the log
    of (rule weight / det A_c(z1)) (G,)."""
    t, w = _axis(half_width, panels, order)
    z10, z11 = np.repeat(t, t.size), np.tile(t, t.size)
    lw = np.log(np.repeat(w, t.size) * np.tile(w, t.size))
    d = z10 - z11
    p, q = 0.5 * (1.0 - np.tanh(0.5 * z10 * d)), 0.5 * (1.0 - np.tanh(-0.5 * z11 * d))  # softmax off-diagonals
    det = (1.0 + c) * (1.0 + c - p - q)
    out = (z10, z11, (1.0 - q + c) / det, -p / det, -q / det, (1.0 - p + c) / det, lw - np.log(det))
    for a in out:
        a.setflags(write=False)
    return out


def box_preimage(ell, sqrt_eps: float = 1e-6):
    """The authors' pre-image x(y) = (-l1, l2) / sqrt(l1 + l2 + sqrt_eps) from the logits (n, 2)."""
    ell = np.asarray(ell, dtype=np.float64)
    s = ell[..., 0] + ell[..., 1]
    if np.any(s < -1e-9 * (1.0 + np.abs(ell).sum(-1))):
        raise ValueError("logits must satisfy ell1 + ell2 >= 0 (y01 + y10 <= 1)")
    r = np.sqrt(np.maximum(s, 0.0) + sqrt_eps)
    return np.stack([-ell[..., 0] / r, ell[..., 1] / r], axis=-1)


def _check(ell, omega, V, c):
    ell = np.asarray(ell, dtype=np.float64)
    omega = np.asarray(omega, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    if omega.ndim != 3 or omega.shape[1:] != (2, 2):
        raise ValueError(f"the box integrator is for L = 2: omega must be (n, 2, 2), got {omega.shape}")
    if ell.shape != (omega.shape[0], 2):
        raise ValueError(f"observation logits must have shape ({omega.shape[0]}, 2); got {ell.shape}")
    if V.shape != (2, 2) or not np.allclose(V, V.T, atol=1e-10) or np.linalg.eigvalsh(V).min() <= 0:
        raise ValueError(f"V must be a symmetric positive definite 2 x 2 matrix, got {V!r}")
    if not (np.all(np.isfinite(ell)) and np.all(np.isfinite(omega))):
        raise ValueError("observation and omega must be finite")
    return ell, omega, 0.5 * (V + V.T), check_skip(c)


def _chunk_moments(z2, nodes, omega, P, covariance):
    """Moments of one chunk: z2 = (z20, z21) (m, G) the + branch, nodes the node terms, omega (m, 2, 2)."""
    z10, z11, lwn = nodes[0][None, :], nodes[1][None, :], nodes[6][None, :]
    z20, z21 = z2
    d0, d1 = z10 - omega[:, None, 0, 0], z11 - omega[:, None, 0, 1]
    w20, w21 = omega[:, None, 1, 0], omega[:, None, 1, 1]
    # quadratic form of the branch s: even + s odd
    even = P[0, 0] * (d0 * d0 + d1 * d1) + P[1, 1] * (z20 * z20 + z21 * z21 + (w20 * w20 + w21 * w21))
    odd = -2.0 * P[1, 1] * (z20 * w20 + z21 * w21)
    if P[0, 1] != 0.0:
        even -= 2.0 * P[0, 1] * (d0 * w20 + d1 * w21)
        odd += 2.0 * P[0, 1] * (d0 * z20 + d1 * z21)
    lp, lm = lwn - 0.5 * (even + odd), lwn - 0.5 * (even - odd)
    mx = np.maximum(lp.max(axis=1), lm.max(axis=1))[:, None]
    wp, wm = relative_weights(lp - mx), relative_weights(lm - mx)
    tot = (wp.sum(axis=1) + wm.sum(axis=1))[:, None]
    wp /= tot
    wm /= tot
    W, D = wp + wm, wp - wm
    cols = (W * z10, W * z11, D * z20, D * z21)
    mu = np.stack([a.sum(axis=1) for a in cols], axis=1)
    log_norm = (mx + np.log(tot))[:, 0]
    ess = 1.0 / (np.sum(wp * wp, axis=1) + np.sum(wm * wm, axis=1))
    if not covariance:
        return mu, None, log_norm, ess
    z = (z10, z11, z20, z21)
    S = np.empty((omega.shape[0], 4, 4))
    for i in range(4):
        for j in range(i, 4):
            # z1 z1 and z2 z2 even in s (weight W); z1 (s z2) odd (cols[i] = W z1_i times s z2_j -> D z1_i z2_j)
            if i < 2 <= j:
                S[:, i, j] = np.einsum("ng,ng->n", D * z[i], np.broadcast_to(z[j], D.shape))
            else:
                S[:, i, j] = np.einsum("ng,ng->n", W * z[i], np.broadcast_to(z[j], W.shape))
            S[:, j, i] = S[:, i, j]
    return mu, S - mu[:, :, None] * mu[:, None, :], log_norm, ess


@lru_cache(maxsize=1)
def _jax_kernel():
    """The box moments compiled with JAX (float64; the same operations as _chunk_moments, fused by XLA)."""
    from .l2_grid import cpu_jax

    jax, _ = cpu_jax()
    import jax.numpy as jnp

    @jax.jit
    def kernel(x, omega, P, c, z10, z11, i00, i01, i10, i11, lwn):
        del c  # the node terms already hold it (one compiled program for every c)
        z10, z11, lwn = z10[None, :], z11[None, :], lwn[None, :]
        x0, x1 = x[:, None, 0], x[:, None, 1]
        z20, z21 = i00[None, :] * x0 + i01[None, :] * x1, i10[None, :] * x0 + i11[None, :] * x1
        d0, d1 = z10 - omega[:, None, 0, 0], z11 - omega[:, None, 0, 1]
        w20, w21 = omega[:, None, 1, 0], omega[:, None, 1, 1]
        even = (
            P[0, 0] * (d0 * d0 + d1 * d1)
            + P[1, 1] * (z20 * z20 + z21 * z21 + (w20 * w20 + w21 * w21))
            - 2.0 * P[0, 1] * (d0 * w20 + d1 * w21)
        )
        odd = 2.0 * P[0, 1] * (d0 * z20 + d1 * z21) - 2.0 * P[1, 1] * (z20 * w20 + z21 * w21)
        lp, lm = lwn - 0.5 * (even + odd), lwn - 0.5 * (even - odd)
        mx = jnp.maximum(lp.max(axis=1), lm.max(axis=1))[:, None]
        wp, wm = jnp.exp(lp - mx), jnp.exp(lm - mx)
        tot = (wp.sum(axis=1) + wm.sum(axis=1))[:, None]
        wp, wm = wp / tot, wm / tot
        W, D = wp + wm, wp - wm
        mu = jnp.stack([(W * z10).sum(1), (W * z11).sum(1), (D * z20).sum(1), (D * z21).sum(1)], axis=1)
        z = (z10, z11, z20, z21)
        S = jnp.zeros((x.shape[0], 4, 4))
        for i in range(4):
            for j in range(i, 4):
                v = ((D if i < 2 <= j else W) * z[i] * z[j]).sum(1)
                S = S.at[:, i, j].set(v).at[:, j, i].set(v)
        ess = 1.0 / (jnp.sum(wp * wp, axis=1) + jnp.sum(wm * wm, axis=1))
        return mu, S - mu[:, :, None] * mu[:, None, :], (mx + jnp.log(tot))[:, 0], ess

    return kernel


def _moments_jax(x, omega, P, nodes, c):
    from .l2_grid import _blocks

    per = (np.asarray(x, np.float64), np.asarray(omega, np.float64))
    return _blocks(_jax_kernel(), len(x), 2 * nodes[0].size, per, (P, float(c), *nodes))


def _moments(ell, omega, V, c, rule, covariance, omegas=()):
    """Moments at omega and (means only) at each extra omega of ``omegas`` (sharing z2 of the nodes)."""
    ell, omega, V, c = _check(ell, omega, V, c)
    n = omega.shape[0]
    nodes = _node_terms(float(rule.half_width), int(rule.panels), int(rule.order), float(c))
    G = nodes[0].size
    P = np.linalg.inv(V)
    x = box_preimage(ell, rule.sqrt_eps)
    if rule.backend == "jax":
        mean, cov, log_norm, ess = _moments_jax(x, omega, P, nodes, c)
        extra = [_moments_jax(x, om, P, nodes, c)[0] for om in omegas]
        mom = ChannelMoments(
            mean=mean,
            cov=0.5 * (cov + np.swapaxes(cov, 1, 2)) if covariance else None,
            log_norm=log_norm,
            ess=ess,
            method="box",
        )
        return mom, extra
    mean, log_norm, ess = np.empty((n, 4)), np.empty(n), np.empty(n)
    cov = np.empty((n, 4, 4)) if covariance else None
    extra = [np.empty((n, 4)) for _ in omegas]
    per = max(1, int(rule.chunk_elems) // G)
    i00, i01, i10, i11 = (a[None, :] for a in nodes[2:6])
    for i0 in range(0, n, per):
        sl = slice(i0, min(n, i0 + per))
        x0, x1 = x[sl, 0, None], x[sl, 1, None]
        z2 = (i00 * x0 + i01 * x1, i10 * x0 + i11 * x1)
        mean[sl], c_sl, log_norm[sl], ess[sl] = _chunk_moments(z2, nodes, omega[sl], P, covariance)
        if covariance:
            cov[sl] = c_sl
        for out, om in zip(extra, omegas, strict=True):
            out[sl] = _chunk_moments(z2, nodes, om[sl], P, False)[0]
    if covariance:
        cov = 0.5 * (cov + np.swapaxes(cov, 1, 2))
    mom = ChannelMoments(mean=mean.reshape(n, 2, 2), cov=cov, log_norm=log_norm, ess=ess, method="box")
    return mom, [e.reshape(n, 2, 2) for e in extra]


def box_moments(ell, omega, V, c: float, rule: BoxRule = AUTHORS_BOX, *, covariance: bool = True) -> ChannelMoments:
    """Posterior moments of Z restricted to the authors' box z1 in [-h, h]^2, by the fixed rule (L = 2 only).

    ell: (n, 2) logits; omega: (n, 2, 2) (layer, token); V: (2, 2) SPD; c: skip strength.  cov: (n, 4, 4) with flat
    index a*2 + t (None unless covariance); log_norm: log Z_out up to a sample-independent constant; ess: effective
    number of nodes.
    """
    return _moments(ell, omega, V, c, rule, covariance)[0]


def box_g_out(ell, omega, V, c: float, rule: BoxRule = AUTHORS_BOX, *, jacobian: str | None = "fd"):
    """g_out = V^{-1}(<Z>_box - omega) (n, 2, 2) and its Jacobian d g[a,t]/d omega[b,s] (n, 2, 2, 2, 2).

    jacobian: "fd" (the authors': central differences of step rule.fd_step on each entry of omega, every
    difference a full re-evaluation of the box integrals), "analytic" (V^{-1} Cov_box V^{-1} - delta V^{-1}, the
    exact derivative of the box-restricted g_out, since the box does not move with omega) or None.
    Returns (g_out, jacobian or None, moments at omega).
    """
    if jacobian not in ("fd", "analytic", None):
        raise ValueError(f"jacobian must be 'fd', 'analytic' or None, got {jacobian!r}")
    omega = np.asarray(omega, dtype=np.float64)
    P = np.linalg.inv(0.5 * (np.asarray(V, dtype=np.float64) + np.asarray(V, dtype=np.float64).T))
    shifts = []
    if jacobian == "fd":
        for b in range(2):
            for s in range(2):
                for sign in (1.0, -1.0):
                    om = omega.copy()
                    om[:, b, s] += sign * rule.fd_step
                    shifts.append(om)
    mom, extra = _moments(ell, omega, V, c, rule, jacobian == "analytic", shifts)
    gout = np.einsum("ab,nbt->nat", P, mom.mean - omega)
    if jacobian is None:
        return gout, None, mom
    n = omega.shape[0]
    if jacobian == "analytic":
        C = mom.cov.reshape(n, 2, 2, 2, 2)
        dg = np.einsum("ab,nbtcs,cd->natds", P, C, P) - np.einsum("ts,ab->atbs", np.eye(2), P)[None]
        return gout, dg, mom
    dg = np.empty((n, 2, 2, 2, 2))
    for k, (b, s) in enumerate((b, s) for b in range(2) for s in range(2)):
        gp = np.einsum("ab,nbt->nat", P, extra[2 * k] - shifts[2 * k])
        gm = np.einsum("ab,nbt->nat", P, extra[2 * k + 1] - shifts[2 * k + 1])
        dg[:, :, :, b, s] = (gp - gm) / (2.0 * rule.fd_step)
    return gout, dg, mom
