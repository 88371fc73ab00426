"""Prediction errors of P2 (docs/p2_theory.md#prediction-errors): Bayes-optimal error (Eq. 11) and the plug-in errors
the authors plot.

All errors are squared Frobenius norms of the 2x2 attention output, 2[(dy01)^2 + (dy10)^2].
"""

from __future__ import annotations

import numpy as np

from .overlaps import clip_overlap, sqrtm_psd

__all__ = ["plugin_error", "bo_error", "uniform_student_error", "plugin_error_propagated_se"]


def _sigmoid_neg(u):
    """1/(1+exp(u)), as attention_link's helper."""
    return 0.5 * (1.0 - np.tanh(0.5 * u))


def _pq(a0, a1):
    """Row-softmax free entries (y01, y10) of a a^T from the components a0, a1 (each (m,))."""
    d = a0 - a1
    return _sigmoid_neg(a0 * d), _sigmoid_neg(-a1 * d)


def _apply(p, q, c, v0, v1):
    """A_c v from the softmax entries (p, q) of A_c's argument: the two components."""
    return (1.0 - p + c) * v0 + p * v1, q * v0 + (1.0 - q + c) * v1


def _y(Z, c):
    """Last-layer softmax entries (y01, y10) of Z given layer by layer, Z (L, 2, m) (attention_link's
    last_preactivation and softmax_entries on contiguous component vectors)."""
    p1, q1 = _pq(Z[0, 0], Z[0, 1])
    a0, a1 = _apply(p1, q1, c, Z[1, 0], Z[1, 1])
    if Z.shape[0] == 3:
        b0, b1 = _apply(p1, q1, c, Z[2, 0], Z[2, 1])  # A_c(z1) z3
        p2, q2 = _pq(a0, a1)
        a0, a1 = _apply(p2, q2, c, b0, b1)  # A_c(a2) A_c(z1) z3
    return _pq(a0, a1)


def _sq_dist(y1, y2):
    """2 [(dy01)^2 + (dy10)^2]: the squared Frobenius norm of the difference of two attention outputs."""
    d0, d1 = y1[0] - y2[0], y1[1] - y2[1]
    return 2.0 * (d0 * d0 + d1 * d1)


def _monte_carlo(Q, sample, n_samples: int, seed: int, chunk: int):
    """Mean and standard error of ``sample(rng, m, sQ, sV)`` -> [m] values over ``n_samples`` draws in chunks,
    with sQ = Q^{1/2}, sV = (I - Q)^{1/2} for the overlap Q (clipped to [0, 1])."""
    Q = clip_overlap(np.asarray(Q, dtype=np.float64), qmax=1.0)
    L = Q.shape[0]
    sQ, sV = sqrtm_psd(Q), sqrtm_psd(np.eye(L) - Q)
    rng = np.random.default_rng(seed)
    vals = [sample(rng, min(chunk, n_samples - i0), sQ, sV) for i0 in range(0, n_samples, chunk)]
    v = np.concatenate(vals)
    return float(v.mean()), float(v.std(ddof=1) / np.sqrt(v.size))


def _gauss(rng, m, S):
    """S applied to m standard Gaussian (L, T=2) matrices, laid out layer by layer: (L, 2, m).

    The draws are those of rng.standard_normal((m, L, 2)) (the same stream for any layout)."""
    L = S.shape[0]
    g = rng.standard_normal((m, L, 2)).transpose(1, 2, 0).reshape(L, 2 * m)
    return (S @ g).reshape(L, 2, m)


def plugin_error(Q, c: float, *, n_samples: int = 1_000_000, seed: int = 0, chunk: int = 250_000):
    """e_plug(Q) = E || g(Q^{1/2} xi + (I - Q)^{1/2} U) - g(Q^{1/2} xi) ||_F^2 (the error the authors plot).

    Q: (L, L) overlap (clipped to [0, 1]); returns (mean, standard error) over n_samples Monte-Carlo draws.
    """

    def sample(rng, m, sQ, sV):
        om = _gauss(rng, m, sQ)
        Z = om + _gauss(rng, m, sV)
        return _sq_dist(_y(Z, c), _y(om, c))

    return _monte_carlo(Q, sample, n_samples, seed, chunk)


def uniform_student_error(c: float, L: int = 2, **kw):
    """Error of the student that outputs the uniform attention matrix, E || y - 1/2 11^T ||_F^2 (= e_plug(0))."""
    return plugin_error(np.zeros((L, L)), c, **kw)


def bo_error(Q, c: float, *, n_samples: int = 1_000_000, seed: int = 0, chunk: int = 250_000):
    """Bayes-optimal prediction error (Eq. 11) E_xi[ Var_U g(Q^{1/2} xi + (I-Q)^{1/2} U) ].

    Unbiased Monte-Carlo estimator: for each xi two independent U, U' and 1/2 ||g(Z) - g(Z')||_F^2 (whose
    conditional mean is the conditional variance).  Returns (mean, standard error).
    """

    def sample(rng, m, sQ, sV):
        om = _gauss(rng, m, sQ)
        Z1, Z2 = om + _gauss(rng, m, sV), om + _gauss(rng, m, sV)
        return 0.5 * _sq_dist(_y(Z1, c), _y(Z2, c))  # 1/2 ||g(Z) - g(Z')||_F^2

    return _monte_carlo(Q, sample, n_samples, seed, chunk)


def plugin_error_propagated_se(q, cov, c: float, *, n_samples: int = 400_000, seed: int = 0, step: float = 5e-3):
    """Standard error of e_plug(diag(q)) carried over from the overlaps' covariance cov (L, L): sqrt(g^T cov g) with
    g the gradient of e_plug in the diagonal entries by central differences on common random numbers (one-sided
    within step of 0 or 1).  q: (L,) diagonal overlaps in [0, 1]."""
    q = np.asarray(q, dtype=np.float64)
    cov = np.asarray(cov, dtype=np.float64)
    if cov.shape != (len(q), len(q)) or not np.all(np.isfinite(cov)):
        raise ValueError(f"cov must be a finite ({len(q)}, {len(q)}) matrix")
    grad = np.zeros(len(q))
    for k in range(len(q)):
        lo, hi = q.copy(), q.copy()
        lo[k], hi[k] = max(q[k] - step, 0.0), min(q[k] + step, 1.0)
        e_hi = plugin_error(np.diag(hi), c, n_samples=n_samples, seed=seed)[0]
        e_lo = plugin_error(np.diag(lo), c, n_samples=n_samples, seed=seed)[0]
        grad[k] = (e_hi - e_lo) / (hi[k] - lo[k])
    return float(np.sqrt(max(grad @ cov @ grad, 0.0)))
