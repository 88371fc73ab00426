"""Recomputations testing how the authors' first-layer thresholds (``alpha_critical.csv``, column alpha1) could
have been obtained (docs/p2_theory.md, "Deviations").

* read_off_threshold: the reference state-evolution procedure run short, as a reader of its plots would use it:
  Monte-Carlo averages over a few fresh teacher draws at every iteration, start Q0 = 0.05 I, damping 0.8, the
  reference regulariser, a fixed number of iterations and no convergence test; the threshold is read as the first
  alpha of a grid where the final Q11 exceeds a level, found by bisection over the grid (every grid point has
  its own fixed seed, so the read-off does not depend on which points are run).
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

__all__ = ["ESTIMATORS", "SEARCHES", "short_se_run", "read_off_threshold", "first_exceedance"]

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


SEARCHES = ("bisect", "scan")


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
    search: str = "bisect",
    guess: float | None = None,
) -> dict:
    """First alpha of the grid where Q11 at the end of a short run exceeds `level` (nan if none does).

    The run at the i-th grid point (alphas in increasing order) uses its own fixed seed, seed + 7919 i, so its final
    Q11 is a deterministic function of the grid point and the read-off a deterministic function of the grid, however
    the points are visited.  search "scan" runs the grid in increasing order up to the first exceedance; "bisect"
    runs the last grid point (none exceeds: nan) and then bisects between it and the start of the grid, keeping a
    point at or below the level under one above it: 1 + ceil(log2 m) runs for m grid points.  With a guess (an alpha
    near the expected read-off, e.g. the read-off at a neighbouring c), "bisect" first brackets the read-off by steps
    of 1, 2, 4, ... grid points from the guess's grid point, then bisects: 2 runs when the guess is the read-off,
    about 2 log2(distance) + 2 otherwise.  Both searches agree whenever the runs below the read-off stay at or below
    the level, i.e. when the exceedance switches on once along the grid (Q11 at the end of a short run grows with
    alpha; a run's noise could in principle break this near the level: studies/p2_paper_cost.py hypotheses
    runs every grid point to check it).

    Returns dict with alpha, the evaluated alphas (increasing) and their final Q11, Q22 (lists), evaluations,
    search, guess and the run settings."""
    check_skip(c)
    if search not in SEARCHES:
        raise ValueError(f"search must be one of {SEARCHES}, got {search!r}")
    alphas = np.sort(np.asarray(alphas, dtype=np.float64))
    runs = {}
    bar = progress(total=len(alphas), desc=f"short SE runs ({estimator}, {search}) c={c:g}", unit="run")

    def above(i: int) -> bool:
        if i not in runs:
            runs[i] = short_se_run(
                alphas[i], c, quad, n_samples=n_samples, iterations=iterations, seed=seed + 7919 * i, v_reg=v_reg,
                estimator=estimator,
            )  # fmt: skip
            bar.update(1)
        return bool(runs[i][0, 0] > level)

    if search == "scan":
        found = next((i for i in range(len(alphas)) if above(i)), None)
    else:
        g = None if guess is None or not np.isfinite(guess) else int(np.argmin(np.abs(alphas - guess)))
        found = first_exceedance(above, len(alphas), g)
    bar.close()
    done = sorted(runs)
    return {
        "alphas": [float(alphas[i]) for i in done],
        "q11": [float(runs[i][0, 0]) for i in done],
        "q22": [float(runs[i][1, 1]) for i in done],
        "alpha": float("nan") if found is None else float(alphas[found]),
        "evaluations": len(done),
        "search": search,
        "guess": None if guess is None or not np.isfinite(guess) else float(guess),
        "level": level,
        "n_samples": n_samples,
        "iterations": iterations,
        "c": float(c),
        "estimator": estimator,
    }


def first_exceedance(above, m: int, g: int | None = None):
    """Smallest index i < m with above(i) (None if none), if above switches on once along 0..m-1 (the search
    of read_off_threshold; above(i) may be costly and is called once per index it needs).

    g: a starting index (bracket by steps 1, 2, 4, ... from it, then bisect), or None (bracket [start, m - 1])."""
    if g is None:
        if not above(m - 1):
            return None
        lo, hi = -1, m - 1
    elif above(g):
        hi, step = g, 1
        lo = g - 1
        while lo >= 0 and above(lo):
            hi, step = lo, 2 * step
            lo = hi - step
        lo = max(lo, -1)
    else:
        lo, step = g, 1
        hi = g + 1
        while hi < m and not above(hi):
            lo, step = hi, 2 * step
            hi = lo + step
        if hi >= m:
            if lo == m - 1 or not above(m - 1):
                return None
            hi = m - 1
    # invariant: above(hi), and not above(lo) (lo = -1: before the grid)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if above(mid) else (mid, hi)
    return hi
