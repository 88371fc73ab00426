"""Convergence diagnostics of posterior samples, and the R-hat that perfectly mixed chains reach
(docs/p1_theory.md#sampler).

Diagnostics are ArviZ's (Vehtari et al. 2021): the rank-normalised split R-hat (the larger of the bulk and the
folded-tail R-hat over split chains), bulk and tail effective sample sizes and the Monte-Carlo standard error of the
mean. Arrays are ``[chains, draws, *shape]``; results have ``shape``. ArviZ asks for at least two chains and four
draws for R-hat; a single chain is handed to it as its two halves (ArviZ then splits each again, so the statistic is
computed over four quarter-chains), and fewer than four draws give NaN.

A verdict "R-hat <= threshold" is only meaningful if chains that mix perfectly pass it. The largest R-hat over K
parameters of independent draws (the null) grows as the chains get shorter and K larger (one chain of 100 draws over
the 10 entries of the HMC task's U exceeds 1.01 most of the time), so each preset's threshold is the 95 % quantile of
that null for its own chains x draws x parameters (:func:`rhat_null`). The null is simulated with
:func:`rhat_batched`, the same statistic vectorised over parameters (tests check it equals ArviZ's to rounding), since
ArviZ's per-parameter loop costs milliseconds per parameter and the null needs ~10^5 of them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from scipy.special import ndtri

#: the quantile of the null distribution of the largest R-hat that a preset's R-hat verdict uses
NULL_LEVEL = 0.95


def _chains(x, name: str = "x") -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim < 2:
        raise ValueError(f"{name} must be [chains, draws, ...], got shape {x.shape}")
    return x


def _for_rhat(x: np.ndarray) -> np.ndarray:
    """A single chain as its two halves (ArviZ's R-hat needs two chains); other arrays unchanged."""
    if x.shape[0] == 1:
        h = x.shape[1] // 2
        return np.concatenate([x[:, :h], x[:, x.shape[1] - h :]], axis=0)
    return x


def _arviz(fn, x: np.ndarray, **kw) -> np.ndarray:
    """Apply an ArviZ diagnostic to every parameter of x [chains, draws, *shape] -> [*shape] (NaN below 4 draws)."""
    import arviz as az

    shape = x.shape[2:]
    if x.shape[1] < 4:
        return np.full(shape, np.nan)
    flat = x.reshape(x.shape[0], x.shape[1], -1)
    ds = az.convert_to_dataset({"v": flat})
    return np.asarray(fn(ds, **kw)["v"].values, dtype=np.float64).reshape(shape)


def rhat(x) -> np.ndarray:
    """ArviZ's rank-normalised split R-hat per parameter. x: [chains, draws, *shape] -> [*shape]."""
    import arviz as az

    x = _for_rhat(_chains(x))
    if x.shape[1] < 4:
        return np.full(x.shape[2:], np.nan)
    return _arviz(az.rhat, x, method="rank")


def ess_bulk(x) -> np.ndarray:
    """ArviZ's bulk effective sample size per parameter. x: [chains, draws, *shape] -> [*shape]."""
    import arviz as az

    return _arviz(az.ess, _chains(x), method="bulk")


def ess_tail(x) -> np.ndarray:
    """ArviZ's tail effective sample size (5 % and 95 % quantiles) per parameter. x: [chains, draws, *shape]."""
    import arviz as az

    return _arviz(az.ess, _chains(x), method="tail")


def mcse_mean(x) -> np.ndarray:
    """ArviZ's Monte-Carlo standard error of the posterior mean per parameter. x: [chains, draws, *shape]."""
    import arviz as az

    return _arviz(az.mcse, _chains(x), method="mean")


def _average_ranks(a: np.ndarray) -> np.ndarray:
    """Ranks 1..S within each row of a [K, S], ties getting their average rank (``scipy.stats.rankdata``'s
    ``average``), from one argsort of all rows (rankdata's per-row path is several times slower)."""
    K, S = a.shape
    order = np.argsort(a, axis=1, kind="stable")
    s = np.take_along_axis(a, order, axis=1)
    start = np.ones((K, S), dtype=bool)
    start[:, 1:] = s[:, 1:] != s[:, :-1]  # first element of each run of equal values
    flat_start = np.flatnonzero(start.ravel())
    run = np.cumsum(start.ravel()) - 1  # run index of every sorted element
    run_end = np.append(flat_start[1:], K * S) - 1  # flat index of the last element of each run
    pos = flat_start - np.repeat(np.arange(K) * S, np.bincount(flat_start // S, minlength=K))
    avg = pos + (run_end - flat_start) / 2.0 + 1.0  # average 1-based rank of each run
    r = np.empty((K, S), dtype=np.float64)
    np.put_along_axis(r, order, avg[run].reshape(K, S), axis=1)
    return r


def _z_scale(a: np.ndarray) -> np.ndarray:
    """Rank-normalise a [m, n, K] array per parameter k over all m * n values (average ranks, Blom offset 3/8)."""
    m, n, K = a.shape
    r = _average_ranks(np.ascontiguousarray(a.reshape(m * n, K).T)).T
    return ndtri((r - 0.375) / (m * n + 0.25)).reshape(m, n, K)


def _rhat_plain(a: np.ndarray) -> np.ndarray:
    """Gelman-Rubin R-hat of [m chains, n draws, K] -> [K] (chain variances with ddof 1)."""
    n = a.shape[1]
    B = n * np.var(a.mean(axis=1), axis=0, ddof=1)
    W = np.var(a, axis=1, ddof=1).mean(axis=0)
    return np.sqrt((B / W + n - 1) / n)


def rhat_batched(x) -> np.ndarray:
    """:func:`rhat` vectorised over parameters. x: [chains, draws, K] -> [K] (no NaN handling: finite input)."""
    x = _for_rhat(_chains(x))
    if x.ndim != 3:
        raise ValueError(f"x must be [chains, draws, K], got shape {x.shape}")
    h = x.shape[1] // 2
    split = np.concatenate([x[:, :h], x[:, x.shape[1] - h :]], axis=0)
    bulk = _rhat_plain(_z_scale(split))
    folded = np.abs(split - np.median(split.reshape(-1, split.shape[2]), axis=0))
    tail = _rhat_plain(_z_scale(folded))
    return np.maximum(bulk, tail)


def max_rhat_null(chains: int, draws: int, n_params: int, trials: int, seed: int = 0) -> np.ndarray:
    """Largest R-hat over ``n_params`` parameters of independent standard-normal draws (perfectly mixed chains),
    ``chains`` x ``draws`` each, in each of ``trials`` repetitions -> [trials]."""
    if chains < 1 or n_params < 1 or trials < 1:
        raise ValueError(f"need chains, n_params, trials >= 1, got {chains}, {n_params}, {trials}")
    if draws < (8 if chains == 1 else 4):
        raise ValueError(f"R-hat needs at least 4 draws per chain (8 for one chain), got {chains} x {draws}")
    rng = np.random.default_rng(seed)
    per_batch = max(1, int(2**22 // (chains * draws * n_params)))
    out = []
    for start in range(0, trials, per_batch):
        t = min(per_batch, trials - start)
        r = rhat_batched(rng.standard_normal((chains, draws, t * n_params)))
        out.append(r.reshape(t, n_params).max(axis=1))
    return np.concatenate(out)


@dataclass(frozen=True)
class RhatNull:
    """The ``level`` quantile of the largest R-hat of perfectly mixed chains (``quantile``) with its Monte-Carlo
    standard error (``se``, from the order statistics' binomial spread), for chains x draws x n_params."""

    quantile: float
    se: float
    level: float
    chains: int
    draws: int
    n_params: int
    trials: int
    pass_fraction_1_01: float  # fraction of the null's trials whose largest R-hat is <= 1.01

    def record(self) -> dict:
        return asdict(self)


def rhat_null(chains: int, draws: int, n_params: int, level: float = NULL_LEVEL, trials: int = 2000, seed: int = 0):
    """:class:`RhatNull` of a preset: the ``level`` quantile of :func:`max_rhat_null` over ``trials`` repetitions."""
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    m = np.sort(max_rhat_null(chains, draws, n_params, trials, seed))
    q = float(np.quantile(m, level))
    d = np.sqrt(trials * level * (1 - level))  # binomial spread of the number of trials below the quantile
    lo, hi = (int(np.clip(np.round(trials * level + s * d), 0, trials - 1)) for s in (-1, 1))
    return RhatNull(
        quantile=q,
        se=float((m[hi] - m[lo]) / 2),
        level=float(level),
        chains=int(chains),
        draws=int(draws),
        n_params=int(n_params),
        trials=int(trials),
        pass_fraction_1_01=float(np.mean(m <= 1.01)),
    )
