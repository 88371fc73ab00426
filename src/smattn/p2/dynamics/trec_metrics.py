"""Summaries of TREC similarity trajectories and the criterion against the authors' published runs
(P2 Fig. 3 right; see docs/p2_dynamics.md, "TREC").

A trajectory ``S`` has shape (..., steps): ``S[..., t]`` is the similarity after optimiser step ``t + 1`` of a
layer's Gram matrix to a reference Gram (the last step unless said otherwise). Steps are counted from 1.
"""

from __future__ import annotations

import numpy as np

from smattn.ledger import K_SIGMA
from smattn.p2.trajectories import first_crossing

__all__ = [
    "SEQUENTIAL",
    "rise_step",
    "plateaued",
    "sequential_per_run",
    "sequential_verdict",
    "start_similarity",
    "half_rise_steps",
    "max_change",
    "flat_steps",
    "gram_angle",
    "summarise",
    "band_verdict",
    "QUANTITIES",
    "LR_FIT",
    "LR_QUANTITIES",
    "rereferenced_bounds",
    "lr_fit_quantities",
    "lr_fit_bounds",
    "lr_fit_verdict",
]

QUANTITIES = (
    "start_similarity[layer=1]",
    "start_similarity[layer=2]",
    "steps_to_half[layer=1]",
    "steps_to_half[layer=2]",
)


def start_similarity(S) -> np.ndarray:
    """The first recorded value (after step 1): (...,)."""
    return np.asarray(S, np.float64)[..., 0]


def half_rise_steps(S) -> np.ndarray:
    """First step (1-based) at which S reaches half its rise from the first recorded value to the last: (...,)."""
    return rise_step(S, 0.5)


def rise_step(S, fraction: float) -> np.ndarray:
    """First step (1-based) at which S has covered ``fraction`` of its rise from the first value to the last: (...,)."""
    return first_crossing(S, fraction, from_start=True) + 1


def max_change(S, steps: int) -> np.ndarray:
    """``max_{t <= steps} |S(t) - S(1)|`` over the first ``steps`` steps: (...,)."""
    S = np.asarray(S, np.float64)
    if not 1 <= steps <= S.shape[-1]:
        raise ValueError(f"max_change: steps={steps} outside [1, {S.shape[-1]}]")
    return np.abs(S[..., :steps] - S[..., :1]).max(axis=-1)


def flat_steps(S, tol: float = 5e-5) -> np.ndarray:
    """Number of leading steps with ``|S(t) - S(1)| <= tol`` (the whole length if it never leaves): (...,)."""
    S = np.asarray(S, np.float64)
    out = np.abs(S - S[..., :1]) > tol
    return np.where(out.any(axis=-1), np.argmax(out, axis=-1), S.shape[-1])


def gram_angle(S_to_first) -> np.ndarray:
    """Angle (radians) between each step's Gram and the first step's, from the similarity to step 1: (..., steps).

    By the triangle inequality for angles, a layer whose Gram has turned by ``theta(t)`` can have changed its
    similarity to *any* reference (the final Gram included) by at most ``theta(t)``: a short run bounds what a
    long one can show.
    """
    return np.arccos(np.clip(np.asarray(S_to_first, np.float64), -1.0, 1.0))


def summarise(S1, S2) -> dict[str, np.ndarray]:
    """Per-repetition values of :data:`QUANTITIES` from layer trajectories S1, S2 of shape (reps, steps)."""
    return {
        "start_similarity[layer=1]": start_similarity(S1),
        "start_similarity[layer=2]": start_similarity(S2),
        "steps_to_half[layer=1]": half_rise_steps(S1).astype(np.float64),
        "steps_to_half[layer=2]": half_rise_steps(S2).astype(np.float64),
    }


def band_verdict(ours: np.ndarray, published: np.ndarray) -> tuple[bool, str]:
    """Whether the mean of ``ours`` (reps,) lies inside the published repetitions' min-max band; with a note.

    With at least 3 repetitions on each side the note adds the two-sided Mann-Whitney p-value.
    """
    ours = np.asarray(ours, np.float64)
    published = np.asarray(published, np.float64)
    lo, hi = published.min(), published.max()
    m = ours.mean()
    ok = bool(lo <= m <= hi)
    note = f"{m:.4g} in [{lo:.4g}, {hi:.4g}]" if ok else f"{m:.4g} outside [{lo:.4g}, {hi:.4g}]"
    if len(ours) >= 3 and len(published) >= 3:
        from scipy.stats import mannwhitneyu

        note += f" (rank test p={mannwhitneyu(ours, published).pvalue:.2g})"
    return ok, note


# ----------------------------------------------------------------------------------------------------------
# the sequential-learning criterion (docs/p2_dynamics.md, "TREC: sequential learning across inits")

SEQUENTIAL = {
    "learned_fraction": 0.9,  # a layer is learned once it has covered this fraction of its rise
    "flat_fraction": 0.1,  # layer 2 is flat while it has covered less than this fraction of its rise
    "plateau_window": 0.75,  # a layer's motion is over within the run if, at this fraction of the run ...
    "plateau_fraction": 0.9,  # ... it has covered this fraction of its angle to the last step
    "min_rise": 1e-3,  # a rise below this is no learning within the run
    "k_sigma": K_SIGMA,  # the ledger's constant K
}


def plateaued(
    S,
    window: float = SEQUENTIAL["plateau_window"],
    fraction: float = SEQUENTIAL["plateau_fraction"],
    min_rise: float = SEQUENTIAL["min_rise"],
) -> np.ndarray:
    """Whether a layer's motion is over inside the run: rise ``1 - S(1)`` at least ``min_rise`` and, at step
    ``ceil(window * steps)``, the angle ``arccos S`` to the last step's Gram at most ``1 - fraction`` of the
    angle at step 1. S (..., steps) -> bool (...,).

    Angles, not S itself: near the end S is quadratic in the angle (``1 - S ~ theta^2 / 2``), so a Gram that turns at
    a constant rate to the end of the run would look 94 % settled in S at three quarters of the run; in angle it is
    75 % of the way.
    """
    S = np.asarray(S, np.float64)
    rise = S[..., -1] - S[..., 0]
    k = int(np.ceil(window * S.shape[-1])) - 1
    theta = np.arccos(np.clip(S, -1.0, 1.0))
    return (rise >= min_rise) & (theta[..., k] <= (1.0 - fraction) * theta[..., 0])


def sequential_per_run(S1, S2, full_length: bool = False) -> dict[str, np.ndarray]:
    """Per-run quantities of the sequential-learning criterion from layer trajectories S1, S2 (runs, steps), each the
    similarity to the run's last step.

    ``decidable``: both layers rise by at least ``min_rise`` and, unless the runs have the full length of the
    experiment (``full_length``: the similarity is then the paper's own, to the final step of the whole training),
    both plateau inside the run (:func:`plateaued`), so that the run's last step can stand in for the final one;
    ``half1``, ``half2``: half-rise steps;
    ``learned1``: the step at which layer 1 has covered ``learned_fraction`` of its rise; ``phi``: the fraction of
    its own rise that layer 2 has covered at ``learned1``; ``gap``: ``half2 - half1``. Undecidable runs carry NaN.
    """
    S1 = np.atleast_2d(np.asarray(S1, np.float64))
    S2 = np.atleast_2d(np.asarray(S2, np.float64))
    if S1.shape != S2.shape:
        raise ValueError(f"sequential_per_run: layer trajectories of shapes {S1.shape} and {S2.shape}")
    if full_length:
        min_rise = SEQUENTIAL["min_rise"]
        ok = (S1[:, -1] - S1[:, 0] >= min_rise) & (S2[:, -1] - S2[:, 0] >= min_rise)
    else:
        ok = plateaued(S1) & plateaued(S2)
    n = S1.shape[0]
    out = {k: np.full(n, np.nan) for k in ("half1", "half2", "learned1", "phi", "gap")}
    out["decidable"] = ok
    for r in np.flatnonzero(ok):
        h1, h2 = int(rise_step(S1[r], 0.5)), int(rise_step(S2[r], 0.5))
        t1 = int(rise_step(S1[r], SEQUENTIAL["learned_fraction"]))
        out["half1"][r], out["half2"][r], out["learned1"][r], out["gap"][r] = h1, h2, t1, h2 - h1
        out["phi"][r] = (S2[r, t1 - 1] - S2[r, 0]) / (S2[r, -1] - S2[r, 0])
    return out


def _mean_se(x) -> tuple[float, float]:
    x = np.asarray(x, np.float64)
    se = float(x.std(ddof=1) / np.sqrt(len(x))) if len(x) >= 2 else float("nan")
    return float(x.mean()), se


def sequential_verdict(per_run: dict[str, np.ndarray]) -> dict:
    """The criterion over the runs of one configuration (output of :func:`sequential_per_run`).

    Undecided unless every run is decidable and there are at least 2 runs. With means and standard errors
    (sd / sqrt(runs)) over runs and K = ``k_sigma``: the order holds if ``mean gap - K se > 0`` and is violated if
    ``mean gap + K se < 0``; layer 2 is flat if ``mean phi + K se < flat_fraction`` and not flat if
    ``mean phi - K se > flat_fraction``. ``outcome``: "holds" (order and flat hold), "does not hold" (either is
    violated), "inconclusive" (neither), "undecided" (runs not decidable). Returns the outcome with the means and
    standard errors of half1, half2, learned1, gap and phi.
    """
    K, flat = SEQUENTIAL["k_sigma"], SEQUENTIAL["flat_fraction"]
    ok = np.asarray(per_run["decidable"], bool)
    res = {"runs": int(ok.size), "decidable_runs": int(ok.sum())}
    for k in ("half1", "half2", "learned1", "gap", "phi"):
        res[k], res[f"{k}_se"] = _mean_se(per_run[k][ok]) if ok.any() else (float("nan"), float("nan"))
    if not ok.all() or ok.size < 2:
        res["outcome"] = "undecided"
        return res
    g, gse, p, pse = res["gap"], res["gap_se"], res["phi"], res["phi_se"]
    order_holds, order_violated = g - K * gse > 0, g + K * gse < 0
    flat_holds, flat_violated = p + K * pse < flat, p - K * pse > flat
    if order_violated or flat_violated:
        res["outcome"] = "does not hold"
    elif order_holds and flat_holds:
        res["outcome"] = "holds"
    else:
        res["outcome"] = "inconclusive"
    return res


# ----------------------------------------------------------------------------------------------------------
# the learning-rate comparison at the notebook's init (docs/p2_dynamics.md, "TREC: learning rate at the notebook's
# init"): three quantities of the published curves, all similarities taken to one reference step

LR_FIT = {
    "step": 20,  # layer 1's similarity after this step
    "change_steps": 40,  # layer 2's largest change over the first this many steps
    "k_sigma": K_SIGMA,  # the ledger's constant K
}
LR_QUANTITIES = ("s1_step20", "s1_epoch1", "s2_epoch1", "s2_change40")


def rereferenced_bounds(S_to_final, ref_step: int) -> tuple[np.ndarray, np.ndarray]:
    """Bounds on the similarity to step ``ref_step``'s Gram (1-based) from the similarity to the last step's.

    With ``a(t) = arccos S(t)`` and ``b = arccos S(ref_step)`` (angles to the last step's Gram), the triangle
    inequality for angles puts the angle between the Grams of steps t and ``ref_step`` in ``[|a - b|, a + b]``, so
    the similarity to step ``ref_step`` lies in ``[cos(min(a + b, pi)), cos|a - b|]``, clipped below at 0 (the
    trace of a product of two positive semi-definite matrices is not negative). ``ref_step`` equal to the length:
    both bounds are S itself. S (..., steps) -> (lo, hi), each (..., steps).
    """
    S = np.asarray(S_to_final, np.float64)
    n = S.shape[-1]
    if not 1 <= ref_step <= n:
        raise ValueError(f"rereferenced_bounds: ref_step={ref_step} outside [1, {n}]")
    a = np.arccos(np.clip(S, -1.0, 1.0))
    b = a[..., ref_step - 1 : ref_step]
    lo = np.maximum(np.cos(np.minimum(a + b, np.pi)), 0.0)
    hi = np.cos(np.abs(a - b))
    if ref_step == n:  # exact: the reference is the last step itself
        lo, hi = S.copy(), S.copy()
    return lo, hi


def lr_fit_quantities(S1, S2, epoch_step: int) -> dict[str, np.ndarray]:
    """Per-run values of :data:`LR_QUANTITIES` from layer trajectories S1, S2 (runs, steps) to one reference:
    ``s1_step20`` (S_1 after step 20), ``s1_epoch1`` / ``s2_epoch1`` (after step ``epoch_step``, one epoch) and
    ``s2_change40`` (:func:`max_change` of S_2 over the first 40 steps)."""
    S1 = np.atleast_2d(np.asarray(S1, np.float64))
    S2 = np.atleast_2d(np.asarray(S2, np.float64))
    n = S1.shape[-1]
    need = max(LR_FIT["step"], LR_FIT["change_steps"], int(epoch_step))
    if S1.shape != S2.shape or n < need:
        raise ValueError(f"lr_fit_quantities: trajectories {S1.shape}, {S2.shape}; need equal shapes, >= {need} steps")
    return {
        "s1_step20": S1[:, LR_FIT["step"] - 1],
        "s1_epoch1": S1[:, epoch_step - 1],
        "s2_epoch1": S2[:, epoch_step - 1],
        "s2_change40": max_change(S2, LR_FIT["change_steps"]),
    }


def lr_fit_bounds(S1, S2, epoch_step: int, ref_step: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per-run bounds (lo, hi) on :data:`LR_QUANTITIES` had the similarities of S1, S2 (runs, steps; to the last step)
    been taken to step ``ref_step`` instead (:func:`rereferenced_bounds`). The change of layer 2 is bounded from the
    bounds of its values: ``max_t max(0, lo(t) - hi(1), lo(1) - hi(t))`` to ``max_t max(hi(t) - lo(1), hi(1) - lo(t))``.
    """
    (lo1, hi1), (lo2, hi2) = rereferenced_bounds(S1, ref_step), rereferenced_bounds(S2, ref_step)
    lo1, hi1, lo2, hi2 = (np.atleast_2d(x) for x in (lo1, hi1, lo2, hi2))
    t, e, m = LR_FIT["step"] - 1, int(epoch_step) - 1, LR_FIT["change_steps"]
    a_lo, a_hi, b_lo, b_hi = lo2[:, :m], hi2[:, :m], lo2[:, :1], hi2[:, :1]
    ch_lo = np.maximum(np.maximum(a_lo - b_hi, b_lo - a_hi), 0.0).max(axis=-1)
    ch_hi = np.maximum(a_hi - b_lo, b_hi - a_lo).max(axis=-1)
    return {
        "s1_step20": (lo1[:, t], hi1[:, t]),
        "s1_epoch1": (lo1[:, e], hi1[:, e]),
        "s2_epoch1": (lo2[:, e], hi2[:, e]),
        "s2_change40": (ch_lo, ch_hi),
    }


def lr_fit_verdict(ours: dict[str, np.ndarray], published: dict[str, tuple[np.ndarray, np.ndarray]]) -> dict:
    """Whether one configuration's runs fit the published runs on every quantity.

    ``ours``: per-run values (runs,) of each quantity (:func:`lr_fit_quantities`); ``published``: per-run bounds
    (lo, hi) of the published runs' values at the same reference (:func:`lr_fit_bounds`; lo = hi where the
    reference is the published one). A quantity fits if our mean lies in ``[mean lo - K c, mean hi + K c]`` with
    ``c = sqrt(se_ours^2 + se_pub^2)``, standard errors sd / sqrt(runs), ``se_pub`` the larger of those of lo and
    hi, K = ``k_sigma``. Needs at least 2 runs on each side. Returns per quantity ``q`` the keys ``q``, ``q_se``,
    ``q_pub_lo``, ``q_pub_hi``, ``q_pub_se``, ``q_fits`` (bool), and ``fits`` (all quantities fit).
    """
    K = LR_FIT["k_sigma"]
    res: dict = {}
    for q, x in ours.items():
        lo, hi = (np.asarray(v, np.float64) for v in published[q])
        x = np.asarray(x, np.float64)
        if len(x) < 2 or len(lo) < 2:
            raise ValueError(f"lr_fit_verdict: {q}: need >= 2 runs on each side, got {len(x)} and {len(lo)}")
        m, se = _mean_se(x)
        (mlo, slo), (mhi, shi) = _mean_se(lo), _mean_se(hi)
        c = float(np.hypot(se, max(slo, shi)))
        res.update({q: m, f"{q}_se": se, f"{q}_pub_lo": mlo, f"{q}_pub_hi": mhi, f"{q}_pub_se": max(slo, shi)})
        res[f"{q}_fits"] = bool(mlo - K * c <= m <= mhi + K * c)
    res["fits"] = all(res[f"{q}_fits"] for q in ours)
    return res
