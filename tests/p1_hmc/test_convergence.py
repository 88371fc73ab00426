"""Convergence diagnostics (smattn.p1.convergence) against ArviZ, closed forms and the null they define."""

import arviz as az
import numpy as np
import pytest

from smattn.p1 import convergence as C


def _ar1(rng, chains, draws, rho, shape=()):
    """Stationary AR(1) chains with unit marginal variance and lag-1 autocorrelation rho."""
    x = np.empty((chains, draws, *shape))
    x[:, 0] = rng.standard_normal((chains, *shape))
    for t in range(1, draws):
        x[:, t] = rho * x[:, t - 1] + np.sqrt(1 - rho**2) * rng.standard_normal((chains, *shape))
    return x


def test_rhat_is_arviz_rank_rhat_and_batched_equals_it():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 60, 3))
    x[1, :, 0] += 1.0  # one chain off
    x[:, :, 2] = np.round(x[:, :, 2])  # ties
    ref = [float(az.rhat(x[:, :, k], method="rank")) for k in range(3)]
    np.testing.assert_allclose(C.rhat(x), ref, rtol=1e-12)
    np.testing.assert_allclose(C.rhat_batched(x), ref, rtol=1e-12)
    assert C.rhat(x)[0] > 1.1 > C.rhat(x)[1]


def test_single_chain_is_split_into_halves_for_arviz():
    """ArviZ needs two chains; one chain of 2n draws is judged as two chains of n (ArviZ returns NaN otherwise)."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 101, 2))
    assert np.isnan(az.rhat(x[:, :, 0], method="rank"))
    halves = np.stack([x[0, :50], x[0, 51:]])
    ref = [float(az.rhat(halves[:, :, k], method="rank")) for k in range(2)]
    np.testing.assert_allclose(C.rhat(x), ref, rtol=1e-12)
    np.testing.assert_allclose(C.rhat_batched(x), ref, rtol=1e-12)
    drift = x + np.linspace(0, 3, 101)[None, :, None]  # a trend within the chain: detected
    assert C.rhat(drift).min() > 1.1
    assert np.isnan(C.rhat(x[:, :7])).all()


def _indicator_ess(n, rho, p=0.05):
    """ESS of the indicator I(x <= q_p) for a Gaussian AR(1): lag-k autocorrelation
    (Phi2(q, q; rho^k) - p^2) / (p (1 - p)) with Phi2 the bivariate normal CDF."""
    from scipy.stats import multivariate_normal, norm

    q = norm.ppf(p)
    acf = [
        (multivariate_normal(cov=[[1, rho**k], [rho**k, 1]]).cdf([q, q]) - p * p) / (p * (1 - p)) for k in range(1, 60)
    ]
    return n / (1 + 2 * sum(acf))


def test_ess_and_mcse_match_the_ar1_closed_form():
    """Bulk ESS of AR(1) chains ~ n (1 - rho) / (1 + rho); tail ESS ~ the ESS of the 5 % quantile indicator;
    MCSE of the mean ~ sqrt((1 + rho) / ((1 - rho) n))."""
    rng = np.random.default_rng(2)
    rho, chains, draws = 0.6, 4, 4000
    x = _ar1(rng, chains, draws, rho, shape=(8,))
    n = chains * draws
    np.testing.assert_allclose(C.ess_bulk(x).mean(), n * (1 - rho) / (1 + rho), rtol=0.1)
    np.testing.assert_allclose(C.ess_tail(x).mean(), _indicator_ess(n, rho), rtol=0.15)
    np.testing.assert_allclose(C.mcse_mean(x).mean(), np.sqrt((1 + rho) / ((1 - rho) * n)), rtol=0.1)
    iid = rng.standard_normal((chains, draws, 8))
    np.testing.assert_allclose(C.ess_bulk(iid).mean(), n, rtol=0.1)


def test_null_quantile_is_the_95_percent_point_of_fresh_perfect_chains():
    """On new independent trials (other seed) about 95 % of perfectly mixed runs stay at or below the quantile."""
    null = C.rhat_null(2, 40, 6, trials=1000, seed=0)
    fresh = C.max_rhat_null(2, 40, 6, trials=2000, seed=1)
    frac = np.mean(fresh <= null.quantile)
    # binomial spread of the fraction plus that of the estimated quantile (its own 1000 trials)
    assert abs(frac - 0.95) < 4 * np.sqrt(0.95 * 0.05 * (1 / 2000 + 1 / 1000)), frac
    # its standard error is the spread of the quantile over independent repetitions
    spread = np.std([C.rhat_null(2, 40, 6, trials=1000, seed=s).quantile for s in range(2, 12)], ddof=1)
    assert 0.5 < null.se / spread < 2.0, (null.se, spread)
    # short chains over many parameters exceed 1.01 by chance: the paper preset on the HMC task (1 x 100, 10 entries)
    short = C.rhat_null(1, 100, 10, trials=500)
    assert short.quantile > 1.03 and short.pass_fraction_1_01 < 0.2


def test_null_flags_chains_that_disagree():
    """Chains stuck in different places (a shift of 0.5 sd in one of four chains) exceed the null's quantile."""
    rng = np.random.default_rng(3)
    x = _ar1(rng, 4, 200, 0.3, shape=(10,))
    limit = C.rhat_null(4, 200, 10, trials=300).quantile
    assert C.rhat(x).max() <= limit * 1.02  # mixed (autocorrelated) chains stay near the null
    x[0] += 0.5
    assert C.rhat(x).max() > limit


def test_bad_shapes_are_rejected():
    with pytest.raises(ValueError, match="chains, draws"):
        C.rhat(np.zeros(5))
    with pytest.raises(ValueError, match="at least 4 draws"):
        C.max_rhat_null(1, 6, 3, trials=10)
    with pytest.raises(ValueError, match="level"):
        C.rhat_null(2, 10, 2, level=1.0)
