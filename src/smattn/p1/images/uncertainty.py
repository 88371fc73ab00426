"""Uncertainties and null distributions behind the image-task and pruning verdicts (docs/p1_images.md#verdicts).

* :func:`paired_difference`: accuracy difference of two predictors on the same test tasks and its standard error
  from the per-task differences (what a paired bootstrap over the tasks estimates; tested against one).
* :func:`mc_accuracy_se`: Monte-Carlo standard error of the accuracy of a sampled mean predictor, from each task's
  mean and its Monte-Carlo standard error (the chance that more draws would flip its sign).
* :func:`temperature_trend`: the selected temperature per width and its Spearman correlation with the width, with
  standard errors from a bootstrap over the test tasks that redoes the selection in every resample.
* :func:`sign_agreement` and :func:`sign_agreement_null`: fraction of the distinct off-diagonal entries of two order
  parameters with equal signs, and its distribution when the paths of one are relabelled at random (both rows and
  columns, a Mantel-type permutation null that keeps each matrix's own sign structure).
* :func:`rank_correlation`: Spearman correlation of two paired sequences with its exact (or sampled) permutation
  null, through :func:`scipy.stats.permutation_test`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats


def paired_difference(correct_a: np.ndarray, correct_b: np.ndarray) -> tuple[float, float]:
    """(mean(a) - mean(b), standard error) of two per-task correctness vectors (bool or 0/1 [n]) on the same tasks:
    se = sd(a_i - b_i) / sqrt(n) (ddof 1), the standard error of a mean of n paired differences."""
    a = np.asarray(correct_a, dtype=np.float64)
    b = np.asarray(correct_b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1 or a.size < 2:
        raise ValueError(f"paired_difference: need two vectors of the same n >= 2 tasks, got {a.shape}, {b.shape}")
    d = a - b
    return float(d.mean()), float(d.std(ddof=1) / np.sqrt(d.size))


def mc_accuracy_se(f_mean: np.ndarray, f_se: np.ndarray) -> float:
    """Monte-Carlo standard error of the accuracy of a sampled mean predictor.

    f_mean [n]: the sampled mean prediction of every task; f_se [n]: its Monte-Carlo standard error (posterior sd /
    sqrt(ESS)). With the Monte-Carlo error of each mean approximately normal, task i's sign flips under a rerun of
    the chains with probability p_i = Phi(-|f_mean_i| / f_se_i), and the accuracy's Monte-Carlo variance is
    sum_i p_i (1 - p_i) / n^2 (tasks independent given the data)."""
    f = np.asarray(f_mean, dtype=np.float64)
    s = np.asarray(f_se, dtype=np.float64)
    if f.shape != s.shape or f.ndim != 1 or f.size == 0:
        raise ValueError(f"mc_accuracy_se: f_mean {f.shape} and f_se {s.shape} must be the same [n]")
    if np.any(~np.isfinite(s)) or np.any(s < 0):
        raise ValueError("mc_accuracy_se: Monte-Carlo standard errors must be finite and >= 0")
    with np.errstate(divide="ignore"):
        z = np.where(s > 0, -np.abs(f) / np.where(s > 0, s, 1.0), -np.inf)
    p = stats.norm.cdf(z)
    return float(np.sqrt(np.sum(p * (1 - p))) / f.size)


def select_first_best(acc: np.ndarray) -> np.ndarray:
    """Index of the best entry along the last axis, the first one on a tie (the temperature-selection rule)."""
    return np.argmax(np.asarray(acc), axis=-1)


@dataclass(frozen=True)
class TemperatureSelection:
    """The selected temperatures and their trend with N, with bootstrap errors (:func:`temperature_trend`).

    rho: Spearman correlation of N and the selected T on the data; rho_se: its sd over the resamples;
    T_selected [n_widths]: selected T per width on the data; T_se [n_widths]: sd of the selected T per width over
    the resamples."""

    rho: float
    rho_se: float
    T_selected: np.ndarray
    T_se: np.ndarray


def temperature_trend(
    correct: np.ndarray, widths: Sequence[float], temperatures: Sequence[float], n_resamples: int, seed
) -> TemperatureSelection:
    """Spearman correlation between the width N and the temperature selected at N, with bootstrap errors.

    correct: bool [n_widths, n_temperatures, n_tasks], task-wise correctness on the selection set (Omniglot test)
    of the mean predictor at every (N, T). The selection takes, per N, the T of the best accuracy (first T of the grid
    on a tie); each of ``n_resamples`` resamples draws the tasks with replacement (``numpy.random.default_rng(seed)``)
    and redoes the selection. When the selected temperatures are all equal rho is undefined and counts as 0 (no
    trend). Negative rho: the selected temperature grows as N shrinks. rho needs at least 3 widths (NaN with fewer)."""
    c = np.asarray(correct, dtype=np.float64)
    widths, temps = np.asarray(widths, np.float64), np.asarray(temperatures, np.float64)
    if c.ndim != 3 or c.shape[:2] != (widths.size, temps.size):
        raise ValueError(f"temperature_trend: correct must be [{widths.size}, {temps.size}, n], got {c.shape}")

    def select(acc):
        return temps[select_first_best(acc)]

    def rho(sel):
        if widths.size < 3:
            return float("nan")
        if np.all(sel == sel[0]):
            return 0.0
        return float(stats.spearmanr(widths, sel).statistic)

    rng = np.random.default_rng(seed)
    n = c.shape[2]
    boot_T = np.empty((int(n_resamples), widths.size))
    for r in range(boot_T.shape[0]):
        counts = np.bincount(rng.integers(0, n, size=n), minlength=n)
        boot_T[r] = select(c @ counts / n)
    boot_rho = np.array([rho(t) for t in boot_T])
    sel = select(c.mean(axis=2))
    return TemperatureSelection(rho(sel), float(boot_rho.std(ddof=1)), sel, boot_T.std(axis=0, ddof=1))


def _upper(U: np.ndarray) -> np.ndarray:
    U = np.asarray(U, dtype=np.float64)
    if U.ndim != 2 or U.shape[0] != U.shape[1] or U.shape[0] < 3:
        raise ValueError(f"an order parameter must be a square matrix of >= 3 paths, got {U.shape}")
    return U[np.triu_indices(U.shape[0], k=1)]


def sign_agreement(U_a: np.ndarray, U_b: np.ndarray) -> float:
    """Fraction of the distinct off-diagonal entries (upper triangle) with the same sign in U_a and U_b [H, H]."""
    a, b = _upper(U_a), _upper(U_b)
    if a.shape != b.shape:
        raise ValueError(f"sign_agreement: shapes {np.shape(U_a)} and {np.shape(U_b)} differ")
    return float(np.mean(np.sign(a) == np.sign(b)))


@dataclass(frozen=True)
class NullSummary:
    """Observed statistic and its null distribution: mean, sd, one-sided p-value P(null >= observed) with the
    permutation-test correction (count + 1) / (draws + 1) where the null is sampled, and the number of draws."""

    observed: float
    null_mean: float
    null_sd: float
    p_value: float
    draws: int


def sign_agreement_null(U_a: np.ndarray, U_b: np.ndarray, n_permutations: int, seed) -> NullSummary:
    """:func:`sign_agreement` against its value when the paths of U_b are relabelled by a random permutation
    (rows and columns together), ``n_permutations`` draws from ``numpy.random.default_rng(seed)``."""
    obs = sign_agreement(U_a, U_b)
    U_b = np.asarray(U_b, dtype=np.float64)
    H = U_b.shape[0]
    rng = np.random.default_rng(seed)
    null = np.empty(int(n_permutations))
    for i in range(null.size):
        p = rng.permutation(H)
        null[i] = sign_agreement(U_a, U_b[np.ix_(p, p)])
    p_value = (np.count_nonzero(null >= obs - 1e-12) + 1) / (null.size + 1)
    # mean and sd from the agreeing entries' counts, exact integers: a null whose relabellings all agree alike (a
    # matrix whose entries share one sign) has sd exactly 0, not the rounding of fractions like 62/120
    n = _upper(U_a).size
    k = np.rint(null * n)
    return NullSummary(obs, float(k.mean() / n), float(k.std(ddof=1) / n), float(p_value), int(null.size))


def rank_correlation(x: Sequence[float], y: Sequence[float], n_resamples: int = 100_000, seed=0) -> NullSummary:
    """Spearman correlation of x and y [n] with its permutation null (y paired with x at random): exact over all n!
    pairings when n! <= ``n_resamples``, else ``n_resamples`` random pairings. One-sided p-value for a positive
    correlation (``scipy.stats.permutation_test``, alternative 'greater')."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    if x.shape != y.shape or x.ndim != 1 or x.size < 3:
        raise ValueError(f"rank_correlation: need two sequences of the same n >= 3, got {x.shape}, {y.shape}")

    rx, ry = stats.rankdata(x), stats.rankdata(y)  # Spearman's rho = Pearson's r of the ranks (ties averaged)
    zx = (rx - rx.mean()) / rx.std()

    def statistic(r, axis=-1):
        z = (r - r.mean(axis=axis, keepdims=True)) / r.std(axis=axis, keepdims=True)
        return np.mean(zx * z, axis=axis)

    res = stats.permutation_test(
        (ry,),
        statistic,
        permutation_type="pairings",
        n_resamples=int(n_resamples),
        alternative="greater",
        vectorized=True,
        rng=np.random.default_rng(seed),
    )
    null = np.asarray(res.null_distribution, dtype=np.float64)
    return NullSummary(
        float(res.statistic), float(null.mean()), float(null.std(ddof=1)), float(res.pvalue), int(null.size)
    )
