"""Overlap-versus-alpha curves of the state evolution (P2 Figs 1 left, 3 left, 5).

L = 2 uses the explicit phase-II branch (P2 App. E): q1 = 0 and alpha(q2) = q2 / ((1 - q2) R_2(q2)) for
alpha_last <= alpha < alpha_first, Q = 0 below alpha_last, and damped SE iterations (warm-started along alpha)
above alpha_first.  L = 3 and the clamped runs of Fig. 5 iterate the state evolution directly.
Every point carries its convergence record (iterations, residual, converged, how it was obtained).  The SE
iterations use Anderson mixing by default (accelerate=True; state_evolution), which reaches the same fixed point in
fewer denoiser calls.
"""

from __future__ import annotations

import numpy as np

from smattn.progress import progress

from .quadrature import DEFAULT_QUADRATURE, QuadratureSettings
from .state_evolution import draw_teacher, state_evolution
from .thresholds import alpha_first, alpha_last, phase_two_curve

__all__ = ["l2_overlap_curve", "se_sweep", "clamped_first_layer"]


def l2_overlap_curve(
    alphas,
    c: float = 1.0,
    quad: QuadratureSettings = DEFAULT_QUADRATURE,
    *,
    q_grid,
    n_k: int = 4000,
    n_curve: int = 2000,
    n_se: int = 1000,
    seed: int = 0,
    v_reg: float = 0.0,
    damping: float = 0.8,
    tol: float = 1e-4,
    max_iter: int = 150,
    accelerate: bool = True,
) -> dict:
    """Q11, Q22 on an alpha grid (two-layer target, skip c).

    alphas: (m,) sample complexities (>= 0); q_grid: q2 values of the explicit phase-II branch.
    Returns dict with arrays alpha, q11, q22, iterations, residual, converged, how (0 trivial, 1 phase-II branch,
    2 SE iterations) and the thresholds alpha_last, alpha_first, q2_at_first, the phase-II curve and K.
    """
    alphas = np.asarray(alphas, dtype=np.float64)
    if np.any(alphas < 0):
        raise ValueError("alphas must be >= 0")
    last = alpha_last(c, quad, n_samples=n_k, seed=seed)
    curve = phase_two_curve(q_grid, c, quad, n_samples=n_curve, seed=seed + 1, v_reg=v_reg)
    first = alpha_first(curve, last["alpha"], last["K"][0, 0])
    a_curve = np.concatenate([[last["alpha"]], curve["alpha"]])
    q_curve = np.concatenate([[0.0], curve["q2"]])
    # MC noise can make the sampled branch slightly non-monotone near q2 -> 0 (K22 and R_2 use different draws):
    # use its running maximum (monotone envelope) and record the largest correction
    envelope = np.maximum.accumulate(a_curve)
    monotone_violation = float(np.max(envelope - a_curve))
    a_curve = envelope + 1e-12 * np.arange(len(envelope))
    monotone = monotone_violation < 0.05
    a_first = first["alpha"] if first["found"] else np.inf
    order = np.argsort(alphas)
    m = len(alphas)
    out = {k: np.zeros(m) for k in ("q11", "q22", "residual", "iterations", "how", "min_ess")}
    out["converged"] = np.ones(m, dtype=bool)
    draws = draw_teacher(n_se, 2, seed + 3)
    Q_prev = None
    for i in order:
        a = alphas[i]
        if a <= last["alpha"]:
            out["how"][i] = 0
            out["min_ess"][i] = np.nan
            continue
        if a < a_first and monotone:
            out["q22"][i] = np.interp(a, a_curve, q_curve)
            out["how"][i] = 1
            out["min_ess"][i] = np.nan
            continue
        # above alpha_first (or where the explicit branch is not single-valued): SE iterations
        q2_start = np.interp(a, a_curve, q_curve) if Q_prev is None else Q_prev[1, 1]
        q1_start = 0.05 if Q_prev is None else max(Q_prev[0, 0], 0.05)
        res = state_evolution(
            a,
            c,
            2,
            draws=draws,
            damping=damping,
            q0=np.diag([q1_start, q2_start]),
            tol=tol,
            max_iter=max_iter,
            diagonal=True,
            v_reg=v_reg,
            accelerate=accelerate,
            quad=quad,
        )
        Q_prev = res.Q
        out["q11"][i], out["q22"][i] = res.Q[0, 0], res.Q[1, 1]
        out["iterations"][i], out["residual"][i] = res.iterations, res.residual
        out["converged"][i] = res.converged
        out["how"][i] = 2
        out["min_ess"][i] = res.min_ess
    out.update(
        alpha=alphas,
        alpha_last=last["alpha"],
        alpha_last_se=last["alpha_se"],
        K=last["K"],
        alpha_first=first["alpha"],
        q2_at_first=first["q2"],
        curve=curve,
        curve_monotone=monotone,
        curve_monotone_violation=monotone_violation,
    )
    return out


def se_sweep(
    alphas,
    c: float,
    L: int,
    quad: QuadratureSettings = DEFAULT_QUADRATURE,
    *,
    n_samples: int,
    seed: int = 0,
    damping: float = 0.6,
    tol: float = 1e-4,
    max_iter: int = 100,
    warm_start: bool = True,
    v_reg: float = 0.0,
    accelerate: bool | None = None,
) -> dict:
    """Damped SE at each alpha (increasing order), from Q0 = 0.05 I or warm-started from the previous alpha.

    accelerate: Anderson mixing; None means on for L = 2 and off for L = 3 (state_evolution refuses it there).
    One progress line per alpha.  Returns dict with alpha (m,), Q (m, L, L), iterations, residual, converged,
    min_ess.
    """
    accelerate = (L == 2) if accelerate is None else accelerate
    alphas = np.asarray(alphas, dtype=np.float64)
    order = np.argsort(alphas)
    draws = draw_teacher(n_samples, L, seed)
    Qs = np.zeros((len(alphas), L, L))
    it = np.zeros(len(alphas))
    resid = np.zeros(len(alphas))
    conv = np.zeros(len(alphas), dtype=bool)
    ess = np.zeros(len(alphas))
    Q_prev = None
    bar = progress(total=len(order), desc=f"L={L} SE sweep", unit="alpha", mininterval=0.0)
    for i in order:
        q0 = 0.05 if (Q_prev is None or not warm_start) else np.maximum(Q_prev, 0.05 * np.eye(L)) * np.eye(L)
        r = state_evolution(
            alphas[i],
            c,
            L,
            draws=draws,
            damping=damping,
            q0=q0,
            tol=tol,
            max_iter=max_iter,
            diagonal=True,
            v_reg=v_reg,
            accelerate=accelerate,
            quad=quad,
        )
        Qs[i], it[i], resid[i], conv[i], ess[i] = r.Q, r.iterations, r.residual, r.converged, r.min_ess
        Q_prev = r.Q
        # the progress line of each alpha carries its result (mininterval 0: one line per alpha)
        bar.set_postfix(
            alpha=f"{alphas[i]:g}", iterations=r.iterations, converged=r.converged,
            Q_diag=np.round(np.diag(r.Q), 4).tolist(), refresh=False,
        )  # fmt: skip
        bar.update(1)
    bar.close()
    return {"alpha": alphas, "Q": Qs, "iterations": it, "residual": resid, "converged": conv, "min_ess": ess}


def clamped_first_layer(
    q22_values,
    alpha: float,
    c: float = 1.0,
    quad: QuadratureSettings = DEFAULT_QUADRATURE,
    *,
    n_samples: int,
    seed: int = 0,
    damping: float = 0.8,
    tol: float = 1e-4,
    max_iter: int = 150,
    v_reg: float = 0.0,
    accelerate: bool = True,
) -> dict:
    """Fig. 5 (App. E.2): Q11 at convergence of the SE when Q22 is held fixed at each given value."""
    q22_values = np.asarray(q22_values, dtype=np.float64)
    if np.any((q22_values < 0) | (q22_values >= 1)):
        raise ValueError("clamped Q22 values must lie in [0, 1)")
    draws = draw_teacher(n_samples, 2, seed)
    out = {k: np.zeros(len(q22_values)) for k in ("q11", "iterations", "residual", "min_ess")}
    out["converged"] = np.zeros(len(q22_values), dtype=bool)
    for i, q in enumerate(q22_values):
        r = state_evolution(
            alpha,
            c,
            2,
            draws=draws,
            damping=damping,
            q0=np.diag([0.05, q]),
            clamp={1: q},
            tol=tol,
            max_iter=max_iter,
            diagonal=True,
            v_reg=v_reg,
            accelerate=accelerate,
            quad=quad,
        )
        out["q11"][i], out["iterations"][i], out["residual"][i] = r.Q[0, 0], r.iterations, r.residual
        out["converged"][i], out["min_ess"][i] = r.converged, r.min_ess
    out["q22"] = q22_values
    out["alpha"] = alpha
    return out


METRIC_ALPHAS_L2 = (0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0, 1.2, 1.5)
METRIC_ALPHAS_L3 = (0.5, 2.0)  # depth-3 alphas of the ledger (fixed-point errors, plug-in error at the authors' Q)
ERROR_ALPHAS_L2 = (0.0, 0.4, 1.2)


def l2_alpha_grid(points: int, alpha_max: float = 1.6):
    """Uniform grid on [0, alpha_max] with the ledger's alphas added (sorted, unique)."""
    base = np.linspace(0.0, alpha_max, int(points))
    return np.unique(np.round(np.concatenate([base, METRIC_ALPHAS_L2, ERROR_ALPHAS_L2]), 10))


def q2_grid(points: int, q_min: float = 0.03, q_max: float = 0.996):
    """q2 values of the explicit phase-II branch: uniform up to 0.85, then geometric towards q_max."""
    k1 = max(2, points // 2)
    k2 = max(2, points - k1)
    lin = np.linspace(q_min, 0.85, k1, endpoint=False)
    geo = 1.0 - np.geomspace(0.15, 1.0 - q_max, k2)
    return np.concatenate([lin, geo])
