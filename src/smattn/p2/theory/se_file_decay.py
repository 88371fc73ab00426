"""The last-layer threshold implied by the authors' own state-evolution file (``BO_2w.csv``, P2 Fig. 1 left).

The authors' two-layer SE iterates the damped map Q <- (1 - eta) Q + eta Qhat (I + Qhat)^{-1} from Q = q0 I for a
fixed number of iterations T and stores the last iterate (``BO_2w.py``: eta = 0.8, q0 = 0.05, no convergence test).
Below the last layer's threshold the iterate decays to zero, and once it is small the decay is the linearised map's
(P2 Thm 2.3: Qhat22 = alpha K22 Q22, the Hadamard form at Q = 0):

    Q22_T = q0 lambda(alpha)^T,    lambda(alpha) = 1 - eta + eta alpha / alpha_last,    alpha_last = 1 / K22.

So the rows of the file with small Q22 fix two unknowns, T and alpha_last: ``ln(Q22 / q0) = T ln lambda(alpha)`` is
fitted by least squares in ``ln Q22`` (the Monte-Carlo noise of the authors' estimator multiplies the iterate, so it
is additive in the logarithm). T is linear given alpha_last, so the fit is a one-dimensional profile over
alpha_last; the residual sum of squares ``rss(alpha_last)`` (T profiled out) tests any proposed alpha_last by the
F statistic ``(rss(a) - rss_min) / (rss_min / (n - 2))`` with (1, n - 2) degrees of freedom: the file's noise is
estimated from its own residuals (its sample counts are not recorded). ``se`` is the curvature (Wald) error.

Rows enter when 0 < alpha and Q22 < ``level`` (the linear regime: every iterate of a decaying run lies between q0
and the last one, and the map's relative nonlinearity is of order Q). The row at alpha = 0 is a pure contraction,
Q22 = q0 (1 - eta)^T, so it gives T on its own (``t_at_zero``): a check that the file's rows come from one run
length, reported beside the fit.
"""

from __future__ import annotations

import numpy as np
from scipy import stats
from scipy.optimize import minimize_scalar

__all__ = ["SE_START", "SE_DAMPING", "decay_profile", "implied_alpha_last"]

#: the authors' start Q = 0.05 I and damping 0.8 (BO_2w.py)
SE_START = 0.05
SE_DAMPING = 0.8


def _log_lambda(alpha, alpha_last: float, damping: float) -> np.ndarray:
    lam = 1.0 - damping + damping * np.asarray(alpha, dtype=np.float64) / alpha_last
    return np.log(lam)


def decay_profile(alpha, q22, alpha_last: float, *, start: float = SE_START, damping: float = SE_DAMPING):
    """(rss, T) of the decay model at a given alpha_last: T by least squares (closed form), rss in ln Q22.

    alpha, q22: 1-D arrays of the rows used (Q22 > 0). Returns floats."""
    x = _log_lambda(alpha, alpha_last, damping)
    y = np.log(np.asarray(q22, dtype=np.float64) / start)
    T = float(x @ y / (x @ x))
    return float(np.sum((T * x - y) ** 2)), T


def implied_alpha_last(
    alpha,
    q22,
    *,
    level: float = 1e-3,
    start: float = SE_START,
    damping: float = SE_DAMPING,
    bracket: tuple[float, float] = (0.05, 0.5),
    tested: dict[str, float] | None = None,
) -> dict:
    """Fit alpha_last and T to the decaying rows of an SE file.

    alpha, q22: the file's columns (1-D, same length). ``tested``: named alpha_last values to test by the F
    statistic (e.g. ours and the phase-diagram file's). Returns a dict: alpha_last, alpha_last_se (Wald, from the
    profile's curvature and the residual variance), T, n_rows, dof, rss, residual_sd, rows (alpha of the rows used),
    residuals, t_at_zero (T implied by the alpha = 0 row, NaN without one), and per tested name: its alpha_last,
    rss, F, p (the F test's upper tail) and T.
    """
    a = np.asarray(alpha, dtype=np.float64)
    q = np.asarray(q22, dtype=np.float64)
    if a.ndim != 1 or a.shape != q.shape:
        raise ValueError(f"alpha and q22 must be 1-D of one length, got {a.shape} and {q.shape}")
    if not 0 < damping <= 1:
        raise ValueError(f"damping must be in (0, 1], got {damping}")
    use = (a > 0) & (q > 0) & (q < level)
    n = int(use.sum())
    if n < 3:
        raise ValueError(f"need at least 3 rows with 0 < alpha and 0 < Q22 < {level}, got {n}")
    au, qu = a[use], q[use]
    lo, hi = bracket
    # lambda must stay positive over the rows: alpha_last > damping alpha / (damping - 1) holds for alpha_last > 0
    res = minimize_scalar(
        lambda s: decay_profile(au, qu, s, start=start, damping=damping)[0],
        bounds=(lo, hi),
        method="bounded",
        options={"xatol": 1e-10},
    )
    if not res.success:
        raise RuntimeError(f"the decay fit did not converge: {res.message}")
    a_hat = float(res.x)
    if not lo < a_hat < hi or min(a_hat - lo, hi - a_hat) < 1e-6 * (hi - lo):
        raise RuntimeError(f"alpha_last = {a_hat} lies on the bracket {bracket}: widen it")
    rss, T = decay_profile(au, qu, a_hat, start=start, damping=damping)
    dof = n - 2
    s2 = rss / dof
    # Wald error: Jacobian of the residuals in (T, alpha_last) at the optimum
    x = _log_lambda(au, a_hat, damping)
    dx = -damping * au / a_hat**2 / np.exp(x)
    J = np.column_stack([x, T * dx])
    cov = s2 * np.linalg.inv(J.T @ J)
    out = {
        "alpha_last": a_hat,
        "alpha_last_se": float(np.sqrt(cov[1, 1])),
        "T": T,
        "T_se": float(np.sqrt(cov[0, 0])),
        "n_rows": n,
        "dof": dof,
        "rss": rss,
        "residual_sd": float(np.sqrt(s2)),
        "rows": au.tolist(),
        "residuals": (T * x - np.log(qu / start)).tolist(),
        "level": level,
        "start": start,
        "damping": damping,
    }
    zero = (a == 0) & (q > 0)
    out["t_at_zero"] = float(np.log(q[zero][0] / start) / np.log(1.0 - damping)) if zero.any() else float("nan")
    out["tested"] = {}
    for name, value in (tested or {}).items():
        r, t = decay_profile(au, qu, float(value), start=start, damping=damping)
        F = max(r - rss, 0.0) / s2
        out["tested"][name] = {"alpha_last": float(value), "rss": r, "T": t, "F": F, "p": float(stats.f.sf(F, 1, dof))}
    return out
