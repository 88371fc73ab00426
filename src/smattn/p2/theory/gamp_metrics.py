"""Layer-wise learning of GAMP runs (P2 Fig. 2 left): the authors' metric and its half-crossing iteration.

Metric of layer k after iteration t: ``C_k(t) = |M^t_kk| / sqrt(Q^t_kk)`` (not divided by the teacher norm, as the
authors plot it). Iterations are counted from 1 (state after the first update).
"""

from __future__ import annotations

import numpy as np

from smattn.data.published import P2_GAMP_RUN_Q11, P2_GAMP_RUN_Q22

from ..trajectories import first_crossing

__all__ = [
    "LEARNED_MIN",
    "authors_metric",
    "published_run_metric",
    "half_crossing_iterations",
    "takeoff_iteration",
    "learned_final_overlaps",
]

# A layer whose final |M_kk|/sqrt(Q_kk) stays below this was not learned within the iterations run; its "first
# half-crossing" is then meaningless (half of ~0 is reached at once) and is counted as n_iter + 1.
LEARNED_MIN = 0.3


def authors_metric(M, Q):
    """|M_kk| / sqrt(Q_kk): M, Q (..., iters, 2, 2) -> (..., iters, 2)."""
    return np.abs(np.diagonal(M, axis1=-2, axis2=-1)) / np.sqrt(np.diagonal(Q, axis1=-2, axis2=-1))


def published_run_metric(M_ref):
    """The authors' metric of their published GAMP run: M_ref (iters, 2, 2) from their file, Q_kk from
    :mod:`smattn.data.published`.  Returns (iters, 2)."""
    M_ref = np.asarray(M_ref, dtype=np.float64)
    n = len(P2_GAMP_RUN_Q11)
    if M_ref.shape != (n, 2, 2):
        raise ValueError(f"published GAMP run: expected M of shape ({n}, 2, 2), got {M_ref.shape}")
    Q_ref = np.zeros_like(M_ref)
    Q_ref[:, 0, 0], Q_ref[:, 1, 1] = P2_GAMP_RUN_Q11, P2_GAMP_RUN_Q22
    return authors_metric(M_ref, Q_ref)


def half_crossing_iterations(C, learned_min: float = LEARNED_MIN):
    """1-based iteration at which each run's metric first reaches half its final value.

    C: (runs, iters) metric of one layer.  Returns (iterations (runs,) int, learned (runs,) bool); a run whose final
    value is below ``learned_min`` was not learned and gets iters + 1 ("after the last iteration").
    """
    C = np.asarray(C, dtype=np.float64)
    it = first_crossing(C, 0.5) + 1
    learned = C[:, -1] >= learned_min
    it[~learned] = C.shape[1] + 1
    return it, learned


def takeoff_iteration(C, level: float = LEARNED_MIN) -> int:
    """1-based iteration from which a run's metric C (iters,) stays at or above ``level`` (len(C) + 1 if it ends
    below): when the layer is learned for good."""
    above = np.asarray(C, dtype=np.float64) >= level
    if not above[-1]:
        return above.size + 1
    below = np.flatnonzero(~above)
    return int(below[-1]) + 2 if below.size else 1


def learned_final_overlaps(M, Q, learned_min: float = LEARNED_MIN) -> dict:
    """Final overlaps of the runs that learned the first layer, never a mean over learned and trapped runs together.

    M, Q: (runs, 2, 2) final M = W_hat W^T / d and Q = W_hat W_hat^T / d of each run.  A run has learned the first
    layer when |M_11| / sqrt(Q_11) >= learned_min (the criterion of half_crossing_iterations).  Returns runs,
    learned (counts, floats for the ledger), learned_mask (runs,) and, for k = 11, 22, ``m{k}`` the mean of |M_kk|
    over the learned runs, ``m{k}_sd`` their standard deviation (ddof 1) and ``m{k}_se`` = sd / sqrt(learned).  With
    one learned run the deviation is 0.5 (the largest an overlap in [0, 1] can have); with none the means are 0
    with no spread (what a claim about the learned state is then judged on, which fails it).
    """
    M = np.asarray(M, dtype=np.float64)
    Q = np.asarray(Q, dtype=np.float64)
    if M.ndim != 3 or M.shape[1:] != (2, 2) or Q.shape != M.shape:
        raise ValueError(f"learned_final_overlaps: M and Q must be (runs, 2, 2), got {M.shape} and {Q.shape}")
    mask = authors_metric(M, Q)[:, 0] >= learned_min
    out = {"runs": float(M.shape[0]), "learned": float(mask.sum()), "learned_mask": mask}
    for k, i in (("11", 0), ("22", 1)):
        v = np.abs(M[mask, i, i])
        if v.size == 0:
            mean, sd = 0.0, 0.0
        else:
            mean, sd = float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.5
        out[f"m{k}"], out[f"m{k}_sd"], out[f"m{k}_se"] = mean, sd, sd / np.sqrt(max(v.size, 1))
    return out
