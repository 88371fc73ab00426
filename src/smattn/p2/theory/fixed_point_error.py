"""Monte-Carlo standard error of a state-evolution fixed point (delta method through the fixed-point equation).

The SE average R(Q) is a mean over N independent teacher draws, R = mean_i r_i(Q), so the fixed point
Q* = f(alpha R(Q*)) of the diagonal map (f(x) = x / (1 + x) entrywise) moves with the draws. To first order
    dq = (I - J)^{-1} D dR,   D = diag(alpha f'(alpha R)),   J = D dR/dq   (L x L, at q*),
with Cov(dR) = Cov_i(diag r_i) / N. J is taken by central differences of R along each diagonal direction on the same
draws (one-sided from an entry at 0, where Q_kk = 0 is invariant: r_i vanishes there for every draw). The error bar
is that of the finite teacher sample; the fixed point itself is what the iteration converged to.
"""

from __future__ import annotations

import numpy as np

from .quadrature import DEFAULT_QUADRATURE, QuadratureSettings
from .state_evolution import TeacherDraws, channel_average

__all__ = ["fixed_point_covariance"]


def fixed_point_covariance(
    q,
    alpha: float,
    c: float,
    draws: TeacherDraws,
    quad: QuadratureSettings = DEFAULT_QUADRATURE,
    *,
    v_reg: float = 0.0,
    rel_step: float = 0.05,
    fixed=(),
) -> dict:
    """Covariance (L, L) of the diagonal fixed point q (L,) over the teacher draws it was computed on.

    fixed: indices of entries held fixed (clamped, e.g. Fig. 5's Q22): they get no error and do not respond.
    rel_step: difference step h_k = rel_step * min(q_k, 1 - q_k) (q_k > 0), rel_step * (1 - q_k) from q_k = 0.
    Returns dict with cov, se (L,), J (L, L), and R (L,) at q.
    """
    q = np.asarray(q, dtype=np.float64)
    L = len(q)
    if draws.xi.shape[1] != L:
        raise ValueError(f"draws are for L = {draws.xi.shape[1]}, q has {L} entries")
    if np.any((q < 0) | (q >= 1)):
        raise ValueError(f"fixed-point overlaps must lie in [0, 1), got {q}")
    free = np.array([k not in set(fixed) for k in range(L)])

    def R_at(qq, per=False):
        out = channel_average(np.diag(qq), c, draws, quad, v_reg=v_reg, per_draw=per)
        return (np.diag(out["R"]), np.einsum("nkk->nk", out["per_draw"])) if per else np.diag(out["R"])

    R, r = R_at(q, per=True)
    x = alpha * R
    D = np.diag(alpha / (1.0 + x) ** 2)
    dR = np.zeros((L, L))
    for k in np.nonzero(free)[0]:
        if q[k] > 0:
            h = rel_step * min(q[k], 1.0 - q[k])
            lo, hi = q.copy(), q.copy()
            lo[k] -= h
            hi[k] += h
            dR[:, k] = (R_at(hi) - R_at(lo)) / (2 * h)
        else:
            h = rel_step * (1.0 - q[k])
            hi = q.copy()
            hi[k] += h
            dR[:, k] = (R_at(hi) - R) / h
    J = D @ dR
    A = np.eye(L) - J
    S = np.cov(r, rowvar=False, ddof=1).reshape(L, L) / len(r)
    F = np.zeros((L, L))
    idx = np.nonzero(free)[0]
    # clamped entries neither move nor feed back: solve on the free block only
    F[np.ix_(idx, idx)] = np.linalg.solve(A[np.ix_(idx, idx)], D[np.ix_(idx, idx)])
    cov = F @ S @ F.T
    return {"cov": cov, "se": np.sqrt(np.clip(np.diag(cov), 0.0, None)), "J": J, "R": R}
