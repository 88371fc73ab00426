"""Standard error of a point of the authors' published state-evolution curves, from the curves' own scatter.

The authors' SE files (BO_2w.csv, BO_3w.csv) are single runs of a fixed number of Monte-Carlo iterations; they carry
no error bars, but their points scatter about the smooth curve that an exact state evolution traces. Over a window in
alpha where the curve is smooth, a low-order polynomial in alpha is fitted by least squares; its degree (1 to
``max_degree``) is the one with the smallest leave-one-out prediction error, and the scatter is the residual standard
deviation ``sqrt(RSS / (n - p))`` with ``p = degree + 1`` fitted coefficients (unbiased for the noise variance when the
polynomial describes the curve). Its own standard error is ``sd / sqrt(2 (n - p))`` (Gaussian residuals). The scatter
of neighbouring points is the noise of one published value only if the points' errors are independent; errors shared
between neighbours (a smooth systematic offset) are not seen by it (docs/p2_theory.md#the-authors-curves-scatter).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...io import fmt_id

__all__ = ["PAPER_SE_POINTS", "PaperSePoint", "curve_scatter", "paper_se_metrics"]


@dataclass(frozen=True)
class PaperSePoint:
    """A ledger point of an authors' SE curve and the window in alpha over which its scatter is measured."""

    metric: str  # metric id prefix, e.g. "p2.L2.q22" -> "p2.L2.q22_paper_se[alpha=0.6]"
    file: str  # the authors' file (reference/spoc/)
    column: str
    alpha: float
    window: tuple[float, float]  # closed interval in alpha where the curve is smooth


#: the ledger's points of the authors' SE curves. Windows: BO_2w.csv Q22 in phase II, above its onset and below the
#: first layer's switch-on at alpha = 0.833; Q11 in phase III above its jump, split where it levels off (alpha = 1.2:
#: the take-off and the plateau scatter differently); BO_3w.csv Q33 above its kink-like onset (the first point past
#: it, alpha = 0.25, is left out), Q11 above the shallow layers' take-off (alpha >= 1.5).
PAPER_SE_POINTS = (
    PaperSePoint("p2.L2.q22", "BO_2w.csv", "Q22", 0.4, (0.26, 0.81)),
    PaperSePoint("p2.L2.q22", "BO_2w.csv", "Q22", 0.6, (0.26, 0.81)),
    PaperSePoint("p2.L2.q11", "BO_2w.csv", "Q11", 1.0, (0.86, 1.3)),
    PaperSePoint("p2.L2.q11", "BO_2w.csv", "Q11", 1.5, (1.2, 1.6)),
    PaperSePoint("p2.L3.q33", "BO_3w.csv", "Q33", 0.5, (0.3, 1.0)),
    PaperSePoint("p2.L3.q11", "BO_3w.csv", "Q11", 2.0, (1.5, 3.0)),
)


_EPS = 1e-6


def _design(x, degree):
    t = (x - x.mean()) / (x.std() if x.std() > 0 else 1.0)  # centred and scaled: a well-conditioned basis
    return np.vander(t, degree + 1, increasing=True)


def curve_scatter(x, y, window, *, max_degree: int = 5, min_dof: int = 3) -> dict:
    """Residual standard deviation of y(x) about a polynomial fit over ``window = (lo, hi)`` (closed).

    The degree is chosen among 1..max_degree (keeping n - p >= min_dof) by the smallest leave-one-out squared
    prediction error (PRESS, from the hat matrix). Returns dict with sd, sd_se, degree, n, dof.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    lo, hi = window
    sel = (x >= lo - _EPS) & (x <= hi + _EPS)  # the files' alphas are rounded (1.1999999988 for 1.2)
    xs, ys = x[sel], y[sel]
    n = int(sel.sum())
    best = None
    for degree in range(1, max_degree + 1):
        p = degree + 1
        if n - p < min_dof:
            break
        A = _design(xs, degree)
        coef, *_ = np.linalg.lstsq(A, ys, rcond=None)
        r = ys - A @ coef
        h = np.einsum("ij,ji->i", A, np.linalg.pinv(A))  # leverages (diagonal of the hat matrix)
        press = float(np.sum((r / (1.0 - h)) ** 2))
        if best is None or press < best[0]:
            best = (press, degree, float(r @ r))
    if best is None:
        raise ValueError(f"window {window} holds {n} points: too few for a fit with {min_dof} residual dof")
    _, degree, rss = best
    dof = n - degree - 1
    sd = float(np.sqrt(rss / dof))
    return {"sd": sd, "sd_se": sd / np.sqrt(2.0 * dof), "degree": degree, "n": n, "dof": dof}


def paper_se_metrics(tables: dict[str, dict[str, np.ndarray]], points=PAPER_SE_POINTS) -> dict[str, float]:
    """``{<metric>_paper_se[alpha=a]: sd}`` for the points whose file is in ``tables`` (file name -> read_csv table).

    The point's alpha must be a row of the file and lie inside its window."""
    out = {}
    for pt in points:
        if pt.file not in tables:
            continue
        tab = tables[pt.file]
        if not pt.window[0] <= pt.alpha <= pt.window[1]:
            raise ValueError(f"{pt}: alpha outside its window")
        if np.min(np.abs(tab["alpha"] - pt.alpha)) > 1e-6:
            raise ValueError(f"{pt}: alpha {pt.alpha} is not a row of {pt.file}")
        out[f"{pt.metric}_paper_se[alpha={fmt_id(pt.alpha)}]"] = curve_scatter(tab["alpha"], tab[pt.column], pt.window)[
            "sd"
        ]
    return out
