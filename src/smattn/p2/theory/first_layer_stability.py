"""Linear stability of the first-layer-unlearned branch Q11 = 0 of the two-layer state evolution, in alpha.

At sample complexity alpha the phase-II fixed point Q = diag(0, q2*) is found by a root solve of
    q2 / (1 - q2) = alpha R22(diag(0, q2))                                   (no state-evolution iteration)
and the damped, diagonal SE map Q -> (1 - eta) Q + eta Qhat (I + Qhat)^{-1}, Qhat = alpha R(Q), is linearised there.
Q11 = 0 is invariant (each layer is sign-symmetric on its own, so g_out[1] = 0 wherever omega_1 = 0), hence
dR11/dQ22 = 0 on it and the Jacobian is triangular; its eigenvalues are
    lambda_1 = 1 - eta + eta alpha S(q2*),   S = dR11/dQ11 = E || d g_out[1] / d omega[1] ||_F^2,
    lambda_2 = 1 - eta + eta d/dq2 [alpha R22 / (1 + alpha R22)]           (the last layer's own stability),
because g_out[1] = (d g_out[1] / d omega[1]) sqrt(Q11) xi_1 + O(Q11) on the teacher draws (xi_1 ~ N(0, I)).
S is evaluated from the denoiser's analytic Jacobian (posterior covariance).  The first layer becomes unstable
where lambda_1 crosses 1; that alpha is found by a root solve in alpha (``alpha_first_stability``).

Near the crossing the growth is slow: a Q11 started at ``start`` needs ln(level / start) / ln(lambda_1)
iterations to exceed ``level`` (``iterations_to_level``), which is what a threshold read off a finite run sees.

Outer expectations: randomised quasi-Monte-Carlo sets (state_evolution.draw_teacher_qmc); estimates pool the sets,
standard errors come from the per-set values, linearised around the pooled root (the spread over sqrt(sets)).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import brentq

from .attention_link import check_skip, link_logits
from .channel_denoiser import g_out
from .overlaps import sqrtm_psd
from .quadrature import DEFAULT_QUADRATURE, QuadratureSettings
from .state_evolution import channel_covariance, draw_teacher_qmc

__all__ = [
    "BranchPoint",
    "StabilityProblem",
    "branch_point",
    "phase_two_fixed_point",
    "growth_factors",
    "origin_growth",
    "NoPhaseTwoFixedPoint",
    "Q2_ORIGIN",
    "alpha_first_stability",
    "iterations_to_level",
    "switch_on_bracket",
    "first_crossing",
]


@dataclass
class BranchPoint:
    """Channel averages on Q = diag(0, q2), pooled over the draw sets and per set (arrays (n_sets,)).

    R22: the last layer's channel average; S: dR11/dQ11 = E ||d g_out[1]/d omega[1]||_F^2; min_ess: smallest
    effective node count of the quadrature.
    """

    q2: float
    R22: float
    S: float
    R22_sets: np.ndarray
    S_sets: np.ndarray
    min_ess: float


def branch_point(q2: float, c: float, sets, quad: QuadratureSettings, v_reg: float) -> BranchPoint:
    """R22 and S at Q = diag(0, q2) (0 < q2 < 1) on each teacher draw set (list of TeacherDraws)."""
    if not 0.0 < q2 < 1.0:
        raise ValueError(f"q2 must lie in (0, 1), got {q2}")
    Q = np.diag([0.0, q2])
    V = channel_covariance(Q, v_reg)
    sQ, sV = sqrtm_psd(Q), sqrtm_psd(V)
    R, S, ess = [], [], np.inf
    for d in sets:
        omega = np.einsum("ab,nbt->nat", sQ, d.xi)
        Z = omega + np.einsum("ab,nbt->nat", sV, d.U)
        g, dg, mom = g_out(link_logits(Z, c), omega, V, c, quad)
        R.append(np.mean(np.sum(g[:, 1, :] ** 2, axis=1)))
        S.append(np.mean(np.sum(dg[:, 0, :, 0, :] ** 2, axis=(1, 2))))
        ess = min(ess, float(mom.ess.min()))
    R, S = np.array(R), np.array(S)
    return BranchPoint(q2=float(q2), R22=float(R.mean()), S=float(S.mean()), R22_sets=R, S_sets=S, min_ess=ess)


@dataclass
class StabilityProblem:
    """The inputs shared by every evaluation: skip c, draw sets, quadrature, regulariser, damping; caches the
    branch points by q2 (common random numbers: every q2 uses the same sets)."""

    c: float
    sets: list
    quad: QuadratureSettings = DEFAULT_QUADRATURE
    v_reg: float = 0.0
    damping: float = 0.8
    cache: dict = field(default_factory=dict)

    @classmethod
    def from_sizes(cls, c: float, n_samples: int, n_sets: int, seed: int, **kw) -> StabilityProblem:
        """n_sets scrambled Sobol' sets of about n_samples / n_sets points each (rounded down to a power of 2)."""
        check_skip(c)
        if n_sets < 2:
            raise ValueError(f"n_sets must be >= 2 (the error bar is their spread), got {n_sets}")
        log2_n = max(1, int(np.floor(np.log2(max(n_samples, 2) / n_sets))))
        sets = [draw_teacher_qmc(log2_n, 2, s) for s in np.random.SeedSequence(seed).spawn(n_sets)]
        return cls(c=c, sets=sets, **kw)

    @property
    def n_used(self) -> int:
        return int(sum(len(d.xi) for d in self.sets))

    def point(self, q2: float) -> BranchPoint:
        q2 = float(q2)
        if q2 not in self.cache:
            self.cache[q2] = branch_point(q2, self.c, self.sets, self.quad, self.v_reg)
        return self.cache[q2]


#: q2 below which the phase-II branch has reached Q = 0: no phase-II fixed point exists (alpha at or below the last
#: layer's threshold, where alpha R22(q2) < q2 for every small q2), and ``origin_growth`` evaluates the branch's end
Q2_ORIGIN = 1e-8


class NoPhaseTwoFixedPoint(RuntimeError):
    """alpha has no phase-II fixed point diag(0, q2*) with q2* above ``Q2_ORIGIN``."""


def _fixed_point_residual(p: BranchPoint, alpha: float, R22=None) -> float:
    """log(q2 / (1 - q2)) - log(alpha R22): zero on the phase-II fixed point, increasing in q2 there."""
    R = p.R22 if R22 is None else R22
    return float(np.log(p.q2 / (1.0 - p.q2)) - np.log(alpha * R))


def phase_two_fixed_point(
    prob: StabilityProblem, alpha: float, *, guess: float = 0.9, width: float = 0.1, xtol: float = 1e-4
) -> float:
    """q2* of the phase-II fixed point diag(0, q2*) at alpha (> alpha_last), by Brent's method on the pooled
    residual log(q2 / (1 - q2)) - log(alpha R22) in t = logit(q2).

    The bracket is the tightest pair of already evaluated q2 (their residual at this alpha costs nothing) with a
    sign change, else guess +- width in t, widened until the residual changes sign.  xtol: tolerance in t
    (dq2 = q2 (1 - q2) dt: 2.5e-6 in q2 at q2 = 0.975).
    """
    if alpha <= 0:
        raise ValueError(f"alpha must be > 0, got {alpha}")

    def f(t):
        q2 = 1.0 / (1.0 + np.exp(-t))
        if q2 < Q2_ORIGIN:
            raise NoPhaseTwoFixedPoint(f"no phase-II fixed point at alpha = {alpha}: the branch reaches Q = 0")
        return _fixed_point_residual(prob.point(q2), alpha)

    known = sorted(prob.cache)
    res = np.array([_fixed_point_residual(prob.cache[q], alpha) for q in known])
    change = np.nonzero((res[:-1] < 0) & (res[1:] > 0))[0]
    if change.size:
        i = int(change[0])
        lo, hi = (float(np.log(q / (1.0 - q))) for q in (known[i], known[i + 1]))
    else:
        t0 = float(np.log(guess / (1.0 - guess)))
        lo, hi = t0 - width, t0 + width
        f_lo, f_hi = f(lo), f(hi)
        for _ in range(30):
            if f_lo < 0 < f_hi:
                break
            if f_lo >= 0:
                lo, hi, f_hi = lo - 2 * (hi - lo), lo, f_lo
                f_lo = f(lo)
            else:
                lo, hi, f_lo = hi, hi + 2 * (hi - lo), f_hi
                f_hi = f(hi)
        else:
            raise NoPhaseTwoFixedPoint(f"no phase-II fixed point bracketed at alpha = {alpha} (above alpha_last?)")
    t = brentq(f, lo, hi, xtol=xtol)
    return float(1.0 / (1.0 + np.exp(-t)))


def _q2_derivative(prob: StabilityProblem, q2: float, alpha: float, h: float):
    """Central differences at q2 of the fixed-point residual and of S, and the Q22-direction map derivative."""
    a, b = prob.point(q2 - h), prob.point(q2 + h)
    dres = (_fixed_point_residual(b, alpha) - _fixed_point_residual(a, alpha)) / (2 * h)
    dS = (b.S - a.S) / (2 * h)
    x_a, x_b = alpha * a.R22, alpha * b.R22
    dmap = (x_b / (1 + x_b) - x_a / (1 + x_a)) / (2 * h)
    return dres, dS, dmap


def growth_factors(
    prob: StabilityProblem, alpha: float, *, guess: float = 0.9, h: float | None = None, derivatives: bool = True
) -> dict:
    """Jacobian eigenvalues of the damped diagonal SE map at the phase-II fixed point of alpha.

    Returns dict with alpha, q2 (q2*), lambda1 (Q11 direction), S, R22, min_ess and, if derivatives (two more
    branch points at q2* +- h, h = 0.1 min(q2*, 1 - q2*) by default): lambda2 (Q22 direction), dS_dq2 and per draw set
    q2_sets / lambda1_sets (each set's own fixed point, one Newton step from the pooled one, and lambda_1 there).
    """
    q2 = phase_two_fixed_point(prob, alpha, guess=guess)
    p = prob.point(q2)
    eta = prob.damping
    out = {
        "alpha": float(alpha),
        "q2": q2,
        "S": p.S,
        "R22": p.R22,
        "lambda1": 1.0 - eta + eta * alpha * p.S,
        "min_ess": p.min_ess,
    }
    if not derivatives:
        return out
    h = 0.1 * min(1.0 - q2, q2) if h is None else h  # both points inside (0, 1), near the threshold too
    dres, dS, dmap = _q2_derivative(prob, q2, alpha, h)
    res_sets = np.array([_fixed_point_residual(p, alpha, r) for r in p.R22_sets])
    q2_sets = q2 - res_sets / dres
    S_sets = p.S_sets + dS * (q2_sets - q2)
    out.update(
        lambda2=1.0 - eta + eta * dmap,
        dS_dq2=dS,
        q2_sets=q2_sets,
        lambda1_sets=1.0 - eta + eta * alpha * S_sets,
    )
    return out


def origin_growth(prob: StabilityProblem, alpha: float) -> dict:
    """lambda_1 at Q = 0, the end of the phase-II branch where alpha has no phase-II fixed point (evaluated at
    q2 = ``Q2_ORIGIN``): the keys of ``growth_factors`` with q2 = 0, lambda1_sets per draw set and lambda2 None."""
    p = prob.point(Q2_ORIGIN)
    eta = prob.damping
    return {
        "alpha": float(alpha),
        "q2": 0.0,
        "S": p.S,
        "R22": p.R22,
        "lambda1": 1.0 - eta + eta * alpha * p.S,
        "min_ess": p.min_ess,
        "lambda2": None,
        "lambda1_sets": 1.0 - eta + eta * alpha * np.asarray(p.S_sets),
    }


def alpha_first_stability(
    prob: StabilityProblem, *, bracket=(0.6, 1.0), xtol: float = 1e-4, guess: float = 0.95
) -> dict:
    """alpha where lambda_1 of the phase-II fixed point crosses 1 (Brent's method in alpha), with its error bar.

    bracket: alpha interval with lambda_1 - 1 of opposite signs at its ends (both above alpha_last).  The error
    bar: each draw set's lambda_1 at the root (its own fixed point), mapped to a root shift by the slope
    d lambda_1 / d alpha of the pooled curve; their spread / sqrt(n_sets).
    Returns dict with alpha, alpha_se, q2, lambda2 (< 1: the last layer's branch is stable there), the evaluated
    points (alpha, q2, lambda1) and n_evaluations (denoiser calls on all sets).
    """
    seen = {}
    q_guess = [guess]

    def h(a):
        if a not in seen:
            seen[a] = growth_factors(prob, a, guess=q_guess[0], derivatives=False)
            q_guess[0] = seen[a]["q2"]
        return seen[a]["lambda1"] - 1.0

    lo, hi = bracket
    if not h(lo) < 0 < h(hi):
        raise RuntimeError(f"lambda_1 - 1 does not change sign on {bracket}: {h(lo):.3g}, {h(hi):.3g}")
    root = brentq(h, lo, hi, xtol=xtol)
    at = growth_factors(prob, root, guess=q_guess[0])
    # slope of lambda_1 in alpha from the closest evaluated points on either side
    a_pts = np.array(sorted(seen))
    below, above = a_pts[a_pts < root], a_pts[a_pts > root]
    a0, a1 = below.max(), above.min()
    slope = (seen[a1]["lambda1"] - seen[a0]["lambda1"]) / (a1 - a0)
    roots = root - (at["lambda1_sets"] - 1.0) / slope
    n = len(prob.sets)
    return {
        "alpha": float(root),
        "alpha_se": float(np.std(roots, ddof=1) / np.sqrt(n)),
        "alpha_sets": roots,
        "q2": at["q2"],
        "lambda1": at["lambda1"],
        "lambda2": at["lambda2"],
        "dlambda1_dalpha": float(slope),
        "points": {k: np.array([seen[a][k] for a in a_pts]) for k in ("alpha", "q2", "lambda1")},
        "n_evaluations": len(prob.cache),
        "n_used": prob.n_used,
        "min_ess": float(min(p.min_ess for p in prob.cache.values())),
    }


def iterations_to_level(lambda1, start: float, level: float):
    """Iterations of the linearised map for Q11 = start to exceed level: ln(level/start) / ln(lambda_1) (inf when
    lambda_1 <= 1).  lambda1: scalar or array; 0 < start < level."""
    if not 0.0 < start < level:
        raise ValueError(f"need 0 < start < level, got start {start}, level {level}")
    lam = np.asarray(lambda1, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        n = np.where(lam > 1.0, np.log(level / start) / np.log(np.where(lam > 1.0, lam, 2.0)), np.inf)
    return n if n.ndim else float(n)


def switch_on_bracket(alphas, q11, level: float) -> tuple[float, float]:
    """(last alpha below, first alpha at or above) where an overlap curve's Q11 first reaches level (arrays (m,),
    any order); raises if it never does or already does at the smallest alpha."""
    a, q = np.asarray(alphas, dtype=np.float64), np.asarray(q11, dtype=np.float64)
    order = np.argsort(a)
    a, q = a[order], q[order]
    hit = np.nonzero(q >= level)[0]
    if not hit.size or hit[0] == 0:
        raise ValueError(f"Q11 does not cross {level} inside the alpha range")
    return float(a[hit[0] - 1]), float(a[hit[0]])


def first_crossing(q11, level: float) -> int | None:
    """Index of the first iterate at or after the minimum of a Q11 history (m,) that reaches level (None if none):
    the iteration at which a read-off from the usual start (Q11 = 0.05 first decays) sees the first layer."""
    q = np.asarray(q11, dtype=np.float64)
    i0 = int(np.argmin(q))
    hit = np.nonzero(q[i0:] >= level)[0]
    return int(i0 + hit[0]) if hit.size else None
