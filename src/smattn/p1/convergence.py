"""Convergence diagnostics of posterior samples, and the R-hat that perfectly mixed chains reach
(docs/p1_theory.md#sampler).

Diagnostics are ArviZ's (Vehtari et al. 2021): the rank-normalised split R-hat (the larger of the bulk and the
folded-tail R-hat over split chains), bulk and tail effective sample sizes and the Monte-Carlo standard error of the
mean. Arrays are ``[chains, draws, *shape]``; results have ``shape``. ArviZ asks for at least two chains and four
draws for R-hat; a single chain is handed to it as its two halves (ArviZ then splits each again, so the statistic is
computed over four quarter-chains), and fewer than four draws give NaN.

A verdict "R-hat <= threshold" is only meaningful if chains that mix perfectly pass it. The largest R-hat over K
parameters of independent draws grows as the chains get shorter and K larger (one chain of 100 draws over the 10
entries of the HMC task's U exceeds 1.01 most of the time); :func:`rhat_null` gives its 95 % quantile for a run's
chains x draws x parameters. Converged chains with autocorrelation exceed that quantile far more often than 5 %
(benchmarks/p1_rhat_null.py), since their chain means scatter more. The verdict therefore uses
:func:`rhat_pvalue_of_draws`: the p-value of the run's largest R-hat under converged stationary AR(1) chains of the
same shape whose per-parameter autocorrelation reproduces the run's effective sample size measured within the
half-chains (:func:`ess_within_halves`; the ESS of the whole run would fall with the very disagreement R-hat tests,
and widen its own null), its low reading over short halves corrected by :func:`ess_bias_curve`. The nulls are
simulated with :func:`rhat_batched`, the same statistic vectorised over parameters (tests check it equals ArviZ's to
rounding), since ArviZ's per-parameter loop costs milliseconds per parameter and a null needs ~10^5 of them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import lru_cache

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
    if n_params < 1:
        raise ValueError(f"need n_params >= 1, got {n_params}")
    return max_rhat_null_ar1(chains, draws, np.zeros(int(n_params)), trials, seed)


def _ar1(e: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """Stationary Gaussian AR(1) chains from standard-normal innovations e [chains, draws, n] with lag-1
    autocorrelation rho [n] (unit marginal variance; rho = 0 returns e itself)."""
    s = np.sqrt(1.0 - rho**2)
    x = e.copy()
    if np.any(rho != 0):
        for t in range(1, e.shape[1]):
            x[:, t] = rho * x[:, t - 1] + s * e[:, t]
    return x


def max_rhat_null_ar1(chains: int, draws: int, rho, trials: int, seed: int = 0) -> np.ndarray:
    """Largest R-hat over K parameters of converged but autocorrelated chains, in each of ``trials`` repetitions ->
    [trials]. Parameter k's chains are independent stationary Gaussian AR(1) series with lag-1 autocorrelation
    ``rho[k]`` (all independent of one another); ``rho`` = 0 everywhere is :func:`max_rhat_null`. The statistic is
    rank-based, so a Gaussian marginal loses nothing: only the chains' dependence in time enters."""
    rho = np.atleast_1d(np.asarray(rho, dtype=np.float64))
    K = rho.size
    if chains < 1 or K < 1 or trials < 1:
        raise ValueError(f"need chains, parameters, trials >= 1, got {chains}, {K}, {trials}")
    if draws < (8 if chains == 1 else 4):
        raise ValueError(f"R-hat needs at least 4 draws per chain (8 for one chain), got {chains} x {draws}")
    if not np.all(np.abs(rho) < 1):
        raise ValueError(f"rho must lie in (-1, 1), got {rho}")
    rng = np.random.default_rng(seed)
    per_batch = max(1, int(2**22 // (chains * draws * K)))
    out = []
    for start in range(0, trials, per_batch):
        t = min(per_batch, trials - start)
        x = _ar1(rng.standard_normal((chains, draws, t * K)), np.tile(rho, t))
        out.append(rhat_batched(x).reshape(t, K).max(axis=1))
    return np.concatenate(out)


#: the range rho_from_ess clips to: an ESS of a few draws (rho -> 1) would make the null say nothing, and ArviZ's
#: ESS is capped at n log10(n), far from rho = -1
RHO_RANGE = (-0.9, 0.98)


def rho_from_ess(ess, n: int) -> np.ndarray:
    """The lag-1 autocorrelation of the AR(1) chain whose ESS over n draws is ``ess``: ESS = n (1 - rho) / (1 + rho),
    so rho = (n - ESS) / (n + ESS), clipped to :data:`RHO_RANGE`. Non-finite ESS is refused."""
    ess = np.asarray(ess, dtype=np.float64)
    if not np.all(np.isfinite(ess)) or np.any(ess <= 0):
        raise ValueError(f"ESS must be finite and positive, got {ess}")
    return np.clip((n - ess) / (n + ess), *RHO_RANGE)


def ess_within_halves(x) -> np.ndarray:
    """Bulk ESS of x [chains, draws, *shape] -> [*shape] counted within the halves of each chain: every half-chain is
    rank-normalised and its ESS computed on its own (ArviZ's ``identity`` method, the half's autocorrelation around
    its own mean), then summed over the 2 x chains halves (an odd middle draw is left out, as in split R-hat).

    ArviZ's bulk ESS of the whole run falls when chains or halves disagree, the very thing R-hat tests, so a null
    built on it would widen with the disagreement it should detect; this one measures only the autocorrelation
    within the pieces."""
    import arviz as az

    x = _chains(x)
    shape = x.shape[2:]
    if x.shape[1] < 8:
        return np.full(shape, np.nan)
    flat = x.reshape(x.shape[0], x.shape[1], -1)
    h = x.shape[1] // 2
    halves = np.concatenate([flat[:, :h], flat[:, flat.shape[1] - h :]], axis=0)
    total = np.zeros(flat.shape[2])
    for piece in halves:
        total += _arviz(az.ess, _z_scale(piece[None]), method="identity")
    return total.reshape(shape)


#: the AR(1) autocorrelations at which :func:`ess_bias_curve` simulates the within-half ESS
BIAS_GRID = np.linspace(-0.6, 0.95, 14)


@lru_cache(maxsize=64)
def ess_bias_curve(chains: int, draws: int, per_point: int = 100, seed: int = 12345) -> tuple[np.ndarray, np.ndarray]:
    """(rho grid, mean of ``rho_from_ess(ess_within_halves)``) over ``per_point`` simulated AR(1) parameters of
    chains x draws at every rho of :data:`BIAS_GRID`. Around the mean of a short half-chain the autocorrelation
    comes out too small (rho 0.4 reads as ~0.30 over halves of 50 draws, ~0.35 over 100), so the rho of the null is
    taken where this curve meets the run's reading (:func:`rho_within_halves`)."""
    rng = np.random.default_rng(seed)
    K = per_point * BIAS_GRID.size
    x = _ar1(rng.standard_normal((chains, draws, K)), np.repeat(BIAS_GRID, per_point))
    est = rho_from_ess(ess_within_halves(x), 2 * chains * (draws // 2)).reshape(BIAS_GRID.size, per_point)
    return BIAS_GRID.copy(), np.maximum.accumulate(est.mean(axis=1))


def rho_within_halves(x) -> np.ndarray:
    """Per-parameter AR(1) autocorrelation of x [chains, draws, K] -> [K]: :func:`rho_from_ess` of
    :func:`ess_within_halves`, corrected for its short-half bias through :func:`ess_bias_curve` (linear
    interpolation, clipped to the grid's ends)."""
    x = _chains(x)
    chains, draws = x.shape[:2]
    raw = rho_from_ess(ess_within_halves(x), 2 * chains * (draws // 2))
    grid, mean = ess_bias_curve(int(chains), int(draws))
    return np.interp(raw, mean, grid)


@dataclass(frozen=True)
class RhatPvalue:
    """p-value of a run's largest R-hat against the null of converged AR(1) chains of its shape (see
    :func:`rhat_pvalue`): ``p`` = (1 + #{null maxima >= observed}) / (trials + 1)."""

    p: float
    observed: float
    exceed: int
    trials: int
    chains: int
    draws: int
    n_params: int
    rho_min: float
    rho_mean: float
    rho_max: float
    null_median: float
    null95: float

    def record(self) -> dict:
        return asdict(self)


def rhat_pvalue(observed: float, chains: int, draws: int, rho, trials: int = 500, seed: int = 0) -> RhatPvalue:
    """p-value of the largest R-hat ``observed`` over K parameters when every parameter's chains are converged
    stationary AR(1) series with lag-1 autocorrelation ``rho[k]`` (:func:`max_rhat_null_ar1`): the add-one estimate
    (1 + #{null maxima >= observed}) / (trials + 1), which is never 0 and is a valid p-value for any ``trials``."""
    if not np.isfinite(observed):
        raise ValueError(f"observed R-hat must be finite, got {observed}")
    rho = np.atleast_1d(np.asarray(rho, dtype=np.float64))
    m = max_rhat_null_ar1(chains, draws, rho, trials, seed)
    exceed = int(np.sum(m >= observed))
    return RhatPvalue(
        p=(1 + exceed) / (trials + 1),
        observed=float(observed),
        exceed=exceed,
        trials=int(trials),
        chains=int(chains),
        draws=int(draws),
        n_params=int(rho.size),
        rho_min=float(rho.min()),
        rho_mean=float(rho.mean()),
        rho_max=float(rho.max()),
        null_median=float(np.median(m)),
        null95=float(np.quantile(m, NULL_LEVEL)),
    )


def rhat_pvalue_of_draws(x, trials: int = 500, seed: int = 0) -> RhatPvalue:
    """:func:`rhat_pvalue` of a run's draws x [chains, draws, K]: the largest R-hat over the K parameters against
    converged AR(1) chains of the same shape whose autocorrelation rho[k] = :func:`rho_from_ess` of parameter k's
    :func:`ess_within_halves` (over the draws that enter it). The K parameters are simulated independent; entries
    that move together (as those of one matrix) have a smaller largest R-hat than independent ones, so the p-value
    is then conservative."""
    x = _chains(x)
    if x.ndim != 3:
        raise ValueError(f"x must be [chains, draws, K], got shape {x.shape}")
    chains, draws = x.shape[:2]
    return rhat_pvalue(float(np.max(rhat_batched(x))), chains, draws, rho_within_halves(x), trials, seed)


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
