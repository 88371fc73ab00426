"""Growth of the first-layer overlap of GAMP once the last layer is learned, measured against the state evolution.

GAMP is started at a prescribed overlap (:class:`~.gamp.GampInit`): the last layer almost learned (Q22 close to 1)
and the first layer at a small overlap m1.  The state evolution predicts the overlap after one damped step,
Q11' = (1 - eta) m1 + eta [Qhat (I + Qhat)^{-1}]_11 with Qhat = alpha R(diag(m1, q2)), so the ratio m1(1) / m1(0) of
GAMP's first step (which needs no Onsager term: the start does not depend on the data) must match Q11' / m1 up to
finite-size fluctuations.  Later steps are reported as well.  docs/p2_dynamics.md#gamp-iterations.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...progress import progress
from .gamp import GampInit, run_gamp
from .quadrature import QuadratureSettings
from .state_evolution import channel_average, draw_teacher

__all__ = ["SE_QUAD", "GrowthRuns", "gamp_growth_runs", "se_growth_ratio", "se_steps"]

# Quadrature of the state-evolution prediction.  In the peaked regime Q22 ~ 0.997 the default grid (32 prior nodes,
# 16 per mode) overestimates R11 at Q11 = 0.02 by ~17 % (alpha R11 0.074 vs 0.063; its posterior mean of z1 is
# visibly correlated with its own residual, E[(z1 - <z1>) g1] = -0.012 +- 0.007); 64 / 32 nodes agree with
# 64 / 32 at a wider mode grid (inflate 3) within the Monte-Carlo error (docs/p2_dynamics.md#gamp-iterations).
SE_QUAD = QuadratureSettings(n1d=64, n_local=32)


@dataclass
class GrowthRuns:
    """GAMP runs from an informed start.

    m1: (runs, n_iter + 1) first-layer overlap M_11 from the start (index 0) on; ratio: (runs, n_iter) m1(t)/m1(t-1);
    q11: (runs, n_iter + 1) self-overlap Q_11; m2_cos: (runs, n_iter + 1) cosine M_22 / sqrt(Q_22 |w_2|^2/d);
    a11: (runs, n_iter) the first-layer entry of A (GAMP's estimate of Qhat_11).
    """

    m1: np.ndarray
    ratio: np.ndarray
    q11: np.ndarray
    m2_cos: np.ndarray
    a11: np.ndarray

    def first_step(self):
        """Mean and standard error over runs of the first step's ratio m1(1)/m1(0)."""
        r = self.ratio[:, 0]
        return float(r.mean()), float(r.std(ddof=1) / np.sqrt(r.size)) if r.size > 1 else float("nan")


def gamp_growth_runs(
    d: int,
    alpha: float,
    m1: float,
    q2: float,
    seeds,
    n_iter: int = 1,
    *,
    damping: float = 0.8,
    c: float = 1.0,
    v_reg: float = 1e-3,
    quad: QuadratureSettings | None = None,
    self_overlap1: float | None = None,
    variance1: float | None = None,
    onsager_v_reg: bool = False,
    onsager: str = "damped",
) -> GrowthRuns:
    """GAMP runs (one per seed) of n_iter iterations from GampInit((m1, q2)) at dimension d.

    self_overlap1, variance1: an off-Nishimori start of the first layer (Q^0_11 and C_hat^0_11; default m1 and
    1 - m1); onsager_v_reg, onsager as in run_gamp.  The sign of M_11 is fixed by the start (m1 > 0).
    """
    if not 0 < m1 < 1 or not 0 <= q2 < 1:
        raise ValueError(f"need 0 < m1 < 1 and 0 <= q2 < 1, got m1={m1}, q2={q2}")
    seeds = list(seeds)
    if not seeds:
        raise ValueError("need at least one seed")
    quad = quad or QuadratureSettings()
    q1 = m1 if self_overlap1 is None else self_overlap1
    v1 = 1.0 - q1 if variance1 is None else variance1
    init = GampInit((m1, q2), self_overlap=(q1, q2), variance=(v1, 1.0 - q2))
    out = {k: [] for k in ("m1", "q11", "cos", "a11")}
    for seed in progress(seeds, desc=f"GAMP growth d={d}"):
        r = run_gamp(
            d,
            alpha,
            n_iter,
            seed=seed,
            damping=damping,
            c=c,
            v_reg=v_reg,
            quad=quad,
            init=init,
            onsager_v_reg=onsager_v_reg,
            onsager=onsager,
        )
        M = np.concatenate([r.M0[None], r.M])
        Q = np.concatenate([r.Q0[None], r.Q])
        out["m1"].append(M[:, 0, 0])
        out["q11"].append(Q[:, 0, 0])
        out["cos"].append(M[:, 1, 1] / np.sqrt(Q[:, 1, 1] * np.mean(r.W[1] ** 2)))
        out["a11"].append(r.A[:, 0, 0])
    m = np.array(out["m1"])
    return GrowthRuns(
        m1=m,
        ratio=m[:, 1:] / m[:, :-1],
        q11=np.array(out["q11"]),
        m2_cos=np.array(out["cos"]),
        a11=np.array(out["a11"]),
    )


def se_growth_ratio(
    alpha: float,
    m1: float,
    q2: float,
    *,
    damping: float = 0.8,
    c: float = 1.0,
    v_reg: float = 1e-3,
    n_samples: int = 20000,
    seed: int = 0,
    quad: QuadratureSettings | None = None,
) -> dict:
    """State-evolution prediction of m1(1)/m1(0) for one damped step from Q = diag(m1, q2) (quad: default SE_QUAD).

    Returns dict with ratio, ratio_se (Monte-Carlo standard error of the teacher average, propagated through the
    overlap update), ratio_linear = 1 - eta + eta alpha K1 (the linearisation at m1 -> 0, q2 fixed; K1 from
    channel_average), K1, K1_se, and R11, R22.
    """
    if not 0 < m1 < 1 or not 0 <= q2 < 1:
        raise ValueError(f"need 0 < m1 < 1 and 0 <= q2 < 1, got m1={m1}, q2={q2}")
    quad = quad or SE_QUAD
    draws = draw_teacher(n_samples, 2, seed)
    avg = channel_average(np.diag([m1, q2]), c, draws, quad, v_reg=v_reg)
    # diagonal update: the off-diagonal overlaps vanish by the per-layer sign symmetry (their Monte-Carlo noise in
    # R_12 is not carried into Q_11)
    h = alpha * avg["R"][0, 0]
    q_new = h / (1.0 + h)
    ratio = (1.0 - damping) + damping * q_new / m1
    ratio_se = damping * alpha * avg["R_se"][0, 0] / (1.0 + h) ** 2 / m1
    lin = channel_average(np.diag([0.0, q2]), c, draws, quad, want_k1=True, v_reg=v_reg)
    return {
        "ratio": float(ratio),
        "ratio_se": float(ratio_se),
        "ratio_linear": float(1.0 - damping + damping * alpha * lin["K1"]),
        "K1": lin["K1"],
        "K1_se": lin["K1_se"],
        "R11": float(avg["R"][0, 0]),
        "R22": float(avg["R"][1, 1]),
    }


def se_steps(
    alpha: float,
    m1: float,
    q2: float,
    n_steps: int,
    *,
    c: float = 1.0,
    v_reg: float = 0.0,
    n_samples: int = 20000,
    seed: int = 0,
    quad: QuadratureSettings | None = None,
) -> dict:
    """Undamped state evolution on diagonal overlaps from Q = diag(m1, q2): n_steps steps Q <- Qhat (I + Qhat)^{-1}.

    The prediction for GAMP with damping 1 started on the Bayes-optimal line at the same overlap (GampInit((m1, q2))):
    with M^t_kk / (|w_k|^2/d) -> q_k(t) as d grows, the first step tests the denoiser and the Jacobian average A, the
    later ones the Onsager term as well.  (With damping < 1 only the first step is predicted exactly: a damped
    estimate leaves the Bayes-optimal line.)  One set of teacher draws serves every step (quad: default SE_QUAD).

    Returns dict with q (n_steps + 1, 2) the diagonal overlaps (row 0 = the start), ratio (n_steps,) q_1(t)/q_1(t-1)
    and ratio_se (n_steps,) the Monte-Carlo standard error of each step's own teacher average propagated through the
    overlap update (the error inherited from earlier steps is not included).
    """
    if not 0 < m1 < 1 or not 0 <= q2 < 1 or n_steps < 1:
        raise ValueError(f"need 0 < m1 < 1, 0 <= q2 < 1 and n_steps >= 1, got m1={m1}, q2={q2}, n_steps={n_steps}")
    quad = quad or SE_QUAD
    draws = draw_teacher(n_samples, 2, seed)
    q = [np.array([m1, q2], dtype=np.float64)]
    ratio_se = []
    for _ in range(n_steps):
        avg = channel_average(np.diag(q[-1]), c, draws, quad, v_reg=v_reg)
        h = alpha * np.diag(avg["R"])
        q.append(h / (1.0 + h))
        ratio_se.append(alpha * avg["R_se"][0, 0] / (1.0 + h[0]) ** 2 / q[-2][0])
    q = np.array(q)
    return {"q": q, "ratio": q[1:, 0] / q[:-1, 0], "ratio_se": np.array(ratio_se)}
