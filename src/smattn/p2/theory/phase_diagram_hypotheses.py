"""Recomputations testing how the authors' first-layer thresholds (``alpha_critical.csv``, column alpha1) could
have been obtained (docs/p2_theory.md, "Deviations").

* read_off_threshold: the reference state-evolution procedure run short, as a reader of its plots would use it:
  Monte-Carlo averages over a few fresh teacher draws at every iteration, start Q0 = 0.05 I, damping 0.8, the
  reference regulariser, a fixed number of iterations and no convergence test; the threshold is read as the first
  alpha of a grid where the final Q11 exceeds a level.
  With ``estimator="authors"`` every step uses the authors' floored box Monte-Carlo channel estimator
  (authors_estimator, carried over to two layers) instead of our quadrature.
* normalisation tests (in phase_diagram_report, from the per-c thresholds): a c-dependent rescaling of the output
  leaves the noiseless thresholds unchanged, a reparametrisation of c only permutes our values over c, and a
  different normalisation of alpha scales both columns by one factor.
"""

from __future__ import annotations

import numpy as np

from smattn.progress import progress

from .attention_link import check_skip
from .authors_estimator import authors_state_evolution
from .quadrature import QuadratureSettings
from .state_evolution import draw_teacher, state_evolution

__all__ = ["ESTIMATORS", "short_se_run", "read_off_threshold"]

ESTIMATORS = ("grid", "authors")


def short_se_run(
    alpha: float,
    c: float,
    quad: QuadratureSettings,
    *,
    n_samples: int,
    iterations: int,
    seed: int,
    v_reg: float = 1e-3,
    damping: float = 0.8,
    q0: float = 0.05,
    estimator: str = "grid",
):
    """Reference-style state evolution: `iterations` damped steps from q0 I, fresh Monte-Carlo draws (n_samples)
    at every step, no convergence test, full symmetric Q (no diagonal projection).  estimator: "grid" (our channel
    quadrature) or "authors" (the floored box Monte-Carlo estimator).  Returns the final Q (2, 2)."""
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {ESTIMATORS}, got {estimator!r}")
    if estimator == "authors":
        r = authors_state_evolution(
            alpha, c, q0=q0, iterations=iterations, n_samples=n_samples, seed=seed, damping=damping, v_reg=v_reg,
            tail=1, L=2,
        )  # fmt: skip
        return r.history[-1]
    Q = q0 * np.eye(2)
    rng = np.random.default_rng(seed)
    for _ in range(iterations):
        draws = draw_teacher(n_samples, 2, int(rng.integers(2**31)))
        Q = state_evolution(
            alpha, c, 2, draws=draws, damping=damping, q0=Q, tol=0.0, max_iter=1, v_reg=v_reg, quad=quad
        ).Q
    return Q


def read_off_threshold(
    c: float,
    alphas,
    quad: QuadratureSettings,
    *,
    n_samples: int,
    iterations: int,
    seed: int = 0,
    v_reg: float = 1e-3,
    level: float = 0.1,
    estimator: str = "grid",
) -> dict:
    """First alpha of the grid (increasing) where Q11 of a short run exceeds `level`; the scan stops there.

    Returns dict with alpha (nan if never), the scanned alphas and their final Q11, Q22 (lists)."""
    check_skip(c)
    alphas = np.sort(np.asarray(alphas, dtype=np.float64))
    out = {
        "alphas": [],
        "q11": [],
        "q22": [],
        "alpha": float("nan"),
        "level": level,
        "n_samples": n_samples,
        "iterations": iterations,
        "c": float(c),
        "estimator": estimator,
    }
    for i in progress(range(len(alphas)), desc=f"short SE runs ({estimator}) c={c:g}", unit="alpha"):
        Q = short_se_run(
            alphas[i], c, quad, n_samples=n_samples, iterations=iterations, seed=seed + 7919 * i, v_reg=v_reg,
            estimator=estimator,
        )  # fmt: skip
        out["alphas"].append(float(alphas[i]))
        out["q11"].append(float(Q[0, 0]))
        out["q22"].append(float(Q[1, 1]))
        if Q[0, 0] > level:
            out["alpha"] = float(alphas[i])
            break
    return out
