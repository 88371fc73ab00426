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


# --- the R-hat null of converged, autocorrelated chains (AR(1)) and its p-value ---


def _arviz_max_rhat(x, K):
    """Largest R-hat per trial of x [chains, draws, trials * K] from ``arviz.rhat`` called on one parameter at a
    time (a single chain handed over as its two halves, the two-chain minimum of ArviZ)."""
    if x.shape[0] == 1:
        h = x.shape[1] // 2
        x = np.concatenate([x[:, :h], x[:, x.shape[1] - h :]], axis=0)
    r = np.array([float(az.rhat(x[:, :, j], method="rank")) for j in range(x.shape[2])])
    return r.reshape(-1, K).max(axis=1)


@pytest.mark.parametrize("chains", [1, 3])
def test_ar1_null_is_arviz_rhat_of_ar1_chains_built_here(chains):
    """The null's maxima equal, to rounding, ``arviz.rhat`` in a loop over AR(1) chains that this test builds from
    the same standard-normal innovations with its own recursion (per-parameter rho, one of them negative)."""
    draws, K, trials, seed = 24, 3, 7, 5
    rho = np.array([0.0, 0.5, -0.3])
    e = np.random.default_rng(seed).standard_normal((chains, draws, trials * K))
    x = np.empty_like(e)
    for j in range(trials * K):
        r = rho[j % K]
        x[:, 0, j] = e[:, 0, j]
        for t in range(1, draws):
            x[:, t, j] = r * x[:, t - 1, j] + np.sqrt(1 - r * r) * e[:, t, j]
    ref = _arviz_max_rhat(x, K)
    np.testing.assert_allclose(C.max_rhat_null_ar1(chains, draws, rho, trials, seed=seed), ref, rtol=1e-12)
    np.testing.assert_allclose(C.max_rhat_null(chains, draws, K, trials, seed=seed), _arviz_max_rhat(e, K), rtol=1e-12)


def test_null_shape_brute_force_and_autocorrelated_chains():
    """The null has the right shape.

    (a) Independent draws: on 400 runs simulated here with numpy and judged by ``arviz.rhat`` one parameter at a
    time, the fraction above the simulated null's 95 % quantile is 5 % within binomial error (both samples' spread).
    (b) Converged AR(1) chains with rho = 0.4 (built here): they exceed the independent-draw null's 95 % quantile far
    more often than 5 %, and the AR(1) null's 95 % quantile about 5 % of the time, within binomial error.
    Mutation check: with ``rho`` ignored in ``max_rhat_null_ar1`` (rho set to 0), (b) fails (the AR(1) null's
    exceedance is then that of the independent-draw null, 0.75 here), and so does the ArviZ comparison above."""
    rng = np.random.default_rng(21)
    chains, draws, K, M, T = 4, 100, 4, 400, 2000
    tol = 3.5 * np.sqrt(0.05 * 0.95 * (1 / M + 1 / T))
    iid = rng.standard_normal((chains, draws, M * K))
    q_iid = C.rhat_null(chains, draws, K, trials=T, seed=0).quantile
    frac = np.mean(_arviz_max_rhat(iid, K) > q_iid)
    assert abs(frac - 0.05) < tol, frac
    rho = 0.4
    x = _ar1(rng, chains, draws, rho, shape=(M * K,))
    m = C.rhat(x).reshape(M, K).max(axis=1)
    q_ar1 = np.quantile(C.max_rhat_null_ar1(chains, draws, np.full(K, rho), T, seed=0), 0.95)
    assert np.mean(m > q_iid) > 0.2, np.mean(m > q_iid)
    assert abs(np.mean(m > q_ar1) - 0.05) < tol, np.mean(m > q_ar1)


def test_pvalue_is_add_one_fraction_of_null_maxima():
    null = C.max_rhat_null_ar1(2, 30, [0.2, 0.2], 300, seed=3)
    obs = float(np.quantile(null, 0.9))
    p = C.rhat_pvalue(obs, 2, 30, [0.2, 0.2], trials=300, seed=3)
    assert p.exceed == int(np.sum(null >= obs)) and p.p == (1 + p.exceed) / 301
    assert C.rhat_pvalue(10.0, 2, 30, [0.2, 0.2], trials=300).p == 1 / 301
    assert C.rhat_pvalue(0.5, 2, 30, [0.2, 0.2], trials=300).p == 1.0


def test_rho_from_ess_inverts_the_ar1_ess():
    n = 800
    rho = np.array([-0.5, 0.0, 0.3, 0.9])
    np.testing.assert_allclose(C.rho_from_ess(n * (1 - rho) / (1 + rho), n), rho, rtol=1e-12, atol=1e-15)
    assert C.rho_from_ess(1.0, n) == C.RHO_RANGE[1]
    with pytest.raises(ValueError, match="ESS"):
        C.rho_from_ess([np.nan], n)


def test_ess_within_halves_sees_autocorrelation_not_disagreement():
    """AR(1) closed form n (1 - rho) / (1 + rho); unchanged (exactly) when whole halves are shifted, unlike the
    run's bulk ESS, which falls."""
    rng = np.random.default_rng(4)
    rho, chains, draws = 0.5, 4, 2000
    x = _ar1(rng, chains, draws, rho, shape=(6,))
    n = chains * draws
    np.testing.assert_allclose(C.ess_within_halves(x).mean(), n * (1 - rho) / (1 + rho), rtol=0.1)
    y = x.copy()
    y[0] += 1.0
    y[1, draws // 2 :] -= 1.0
    np.testing.assert_array_equal(C.ess_within_halves(y), C.ess_within_halves(x))
    assert C.ess_bulk(y).mean() < 0.5 * C.ess_bulk(x).mean()


def test_pvalue_of_draws_is_calibrated_and_has_power():
    """On converged AR(1) chains (rho = 0.4, the rho estimated from the draws) the p-value falls to 0.05 or below in
    about 5 % of runs; one chain stuck 0.5 sd away (four chains) or a drift of one sd within a single chain gives
    the smallest p-value the null can give. A null whose rho came from the run's own bulk ESS would widen with the
    disagreement (that ESS falls) and miss the stuck chain. Measured: 4 % of the 120 runs at p <= 0.05. Mutation
    check: without the short-half bias correction of rho (``rho_within_halves`` returning the raw reading) 16 % of
    the runs fall to p <= 0.05 and the test fails."""
    rng = np.random.default_rng(8)
    chains, draws, K, runs = 4, 100, 4, 120
    p = [C.rhat_pvalue_of_draws(_ar1(rng, chains, draws, 0.4, shape=(K,)), trials=200, seed=r).p for r in range(runs)]
    frac = np.mean(np.array(p) <= 0.05)
    assert frac < 0.05 + 3.5 * np.sqrt(0.05 * 0.95 / runs), frac
    stuck = _ar1(rng, chains, draws, 0.2, shape=(10,))
    stuck[0] += 0.5
    assert C.rhat_pvalue_of_draws(stuck, trials=200).p == 1 / 201
    one = _ar1(rng, 1, 100, 0.2, shape=(10,)) + np.linspace(0, 1, 100)[None, :, None]
    assert C.rhat_pvalue_of_draws(one, trials=200).p <= 2 / 201
