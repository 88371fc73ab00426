"""Summaries of TREC similarity trajectories and the criterion against the authors' published runs
(P2 Fig. 3 right; see docs/p2_dynamics.md, "TREC").

A trajectory ``S`` has shape (..., steps): ``S[..., t]`` is the similarity after optimiser step ``t + 1`` of a
layer's Gram matrix to a reference Gram (the last step unless said otherwise). Steps are counted from 1.
"""

from __future__ import annotations

import numpy as np

from smattn.p2.trajectories import first_crossing

__all__ = [
    "start_similarity",
    "half_rise_steps",
    "max_change",
    "flat_steps",
    "gram_angle",
    "summarise",
    "band_verdict",
    "QUANTITIES",
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
    return first_crossing(S, 0.5, from_start=True) + 1


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
