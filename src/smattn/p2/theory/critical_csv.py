"""The authors' phase diagram (``alpha_critical.csv``, P2 Fig. 1 right) read as data: the scatter of each column
over the skip strength c (the error bar the claims table gives the file's values, which carry none) and the
last-layer column against the bound 1/6 derived here (docs/p2_theory.md#thresholds).

Columns: ``alpha1`` is the first layer's threshold (alpha_first), ``alpha2`` the last layer's (alpha_last).
"""

from __future__ import annotations

import numpy as np

from smattn.io import fmt_id

from .phase_diagram_analysis import JENSEN_BOUND

__all__ = ["JENSEN_BOUND", "loo_quadratic_residuals", "column_scatter", "csv_metrics"]


def loo_quadratic_residuals(x, y) -> np.ndarray:
    """Leave-one-out residuals of a curve sampled at distinct points x: y_i minus the quadratic through the three
    other points nearest to x_i (ties: the lower index), evaluated at x_i, divided by sqrt(1 + sum w_j^2) with w_j
    the Lagrange weights. For y = smooth(x) + independent noise of standard deviation s each residual has standard
    deviation s plus the quadratic's interpolation error (the curve's third derivative), which only adds to it."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.ndim != 1 or x.shape != y.shape or x.size < 4:
        raise ValueError("x and y must be 1-D of one length, at least 4 points")
    if np.unique(x).size != x.size:
        raise ValueError("x must be distinct")
    out = np.empty_like(y)
    for i in range(x.size):
        others = np.delete(np.arange(x.size), i)
        nn = others[np.argsort(np.abs(x[others] - x[i]), kind="stable")[:3]]
        w = np.array([np.prod([(x[i] - x[k]) / (x[j] - x[k]) for k in nn if k != j]) for j in nn])
        out[i] = (y[i] - w @ y[nn]) / np.sqrt(1.0 + w @ w)
    return out


def column_scatter(x, y) -> float:
    """Root mean square of ``loo_quadratic_residuals``: an estimate of a column's noise that is, if anything, too
    large (the interpolation error adds to it)."""
    r = loo_quadratic_residuals(x, y)
    return float(np.sqrt(np.mean(r**2)))


def csv_metrics(skip, alpha1, alpha2) -> dict[str, float]:
    """Metrics of the CSV: each column's scatter over c (``p2.L2.csv_alpha_first_scatter``,
    ``p2.L2.csv_alpha_last_scatter``) and, per c, the last layer's value minus the bound 1/6
    (``p2.L2.csv_alpha_last_minus_bound[c=...]``, negative where the file violates it)."""
    skip, alpha1, alpha2 = (np.asarray(v, dtype=np.float64) for v in (skip, alpha1, alpha2))
    m = {
        "p2.L2.csv_alpha_first_scatter": column_scatter(skip, alpha1),
        "p2.L2.csv_alpha_last_scatter": column_scatter(skip, alpha2),
    }
    for c, a2 in zip(skip, alpha2, strict=True):
        m[f"p2.L2.csv_alpha_last_minus_bound[c={fmt_id(float(c))}]"] = float(a2 - JENSEN_BOUND)
    return m
