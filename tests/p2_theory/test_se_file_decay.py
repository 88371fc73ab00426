"""The last-layer threshold implied by an SE file's sub-threshold decay (smattn.p2.theory.se_file_decay): recovered
from runs of the damped, nonlinear SE map iterated step by step, F-test calibrated under the null, and the numbers
of the authors' BO_2w.csv."""

import numpy as np
import pytest

from smattn.data.spoc import read_csv
from smattn.p2.theory.se_file_decay import SE_DAMPING, SE_START, decay_profile, implied_alpha_last


def _scalar_se_run(alpha: float, alpha_last: float, T: int, *, q0=SE_START, eta=SE_DAMPING, rng=None, noise=0.0):
    """Q22 after T damped iterations Q <- (1 - eta) Q + eta Qhat / (1 + Qhat) of a map whose linearisation at 0 is
    Qhat = (alpha / alpha_last) Q, with a nonlinearity of relative order Q (Qhat = alpha/alpha_last * Q (1 - Q)) and,
    if noise > 0, a multiplicative Monte-Carlo error on every Qhat (as the authors' estimator has)."""
    q = q0
    for _ in range(T):
        qhat = alpha / alpha_last * q * (1.0 - q)
        if noise:
            qhat *= np.exp(noise * rng.standard_normal())
        q = (1.0 - eta) * q + eta * qhat / (1.0 + qhat)
    return q


ALPHAS = np.array([0.0, 1 / 30, 2 / 30, 3 / 30, 4 / 30, 5 / 30, 6 / 30])


def test_recovers_threshold_and_run_length_of_step_by_step_runs():
    """Noise-free runs of the nonlinear map: the rows below the level give alpha_last and T to 2 % (the first
    iterations from 0.05 are not linear: this map's relative nonlinearity 2Q moves alpha_last by +1 %); the alpha = 0
    row gives T exactly; rows above the level (near and above threshold) are left out."""
    a_true, T = 0.18, 36
    q = np.array([_scalar_se_run(a, a_true, T) if a > 0 else SE_START * (1 - SE_DAMPING) ** T for a in ALPHAS])
    fit = implied_alpha_last(ALPHAS, q, level=1e-3)
    assert fit["n_rows"] == int(np.sum((ALPHAS > 0) & (q < 1e-3)))
    assert fit["n_rows"] >= 3 and max(fit["rows"]) < a_true
    assert fit["alpha_last"] == pytest.approx(a_true, rel=2e-2)
    assert fit["T"] == pytest.approx(T, rel=2e-2)
    assert fit["t_at_zero"] == pytest.approx(T, abs=1e-9)


def test_linear_rows_give_exact_fit():
    """Rows of the linearised model itself: alpha_last and T exactly, zero residuals."""
    a = np.array([0.03, 0.06, 0.09, 0.12])
    q = SE_START * (1 - SE_DAMPING + SE_DAMPING * a / 0.2) ** 40
    fit = implied_alpha_last(a, q)
    assert fit["alpha_last"] == pytest.approx(0.2, rel=1e-7)
    assert fit["T"] == pytest.approx(40, rel=1e-7)
    assert fit["rss"] < 1e-12
    assert np.isnan(fit["t_at_zero"])


def test_f_test_is_calibrated_and_wald_error_covers():
    """Noisy runs with the file's rows (alpha = 1/30 ... 4/30) and a multiplicative error of 0.3 on every Qhat,
    which gives residuals of the file's size: at the true alpha_last the F test rejects at 5 % within binomial
    scatter, the Wald error covers the truth about as often as a t interval with 2 degrees of freedom says (74 %
    inside 2 errors), and a value 20 % low is rejected in most replicates."""
    rng = np.random.default_rng(7)
    a = np.array([1, 2, 3, 4]) / 30
    a_true, T, n_rep = 0.18, 36, 300
    p_true, p_wrong, covered, sd = [], [], 0, []
    for _ in range(n_rep):
        q = np.array([_scalar_se_run(x, a_true, T, rng=rng, noise=0.3) for x in a])
        fit = implied_alpha_last(a, q, level=1e-2, tested={"true": a_true, "wrong": 0.8 * a_true})
        p_true.append(fit["tested"]["true"]["p"])
        p_wrong.append(fit["tested"]["wrong"]["p"])
        covered += abs(fit["alpha_last"] - a_true) <= 2 * fit["alpha_last_se"]
        sd.append(fit["residual_sd"])
    band = 3 * np.sqrt(0.05 * 0.95 / n_rep)
    assert abs(np.mean(np.array(p_true) < 0.05) - 0.05) <= band
    assert np.mean(np.array(p_wrong) < 0.05) > 0.8
    assert abs(covered / n_rep - 0.74) <= 3 * np.sqrt(0.74 * 0.26 / n_rep) + 0.03
    assert 0.2 < np.median(sd) < 1.0  # the residual sd of BO_2w.csv is 0.72


def test_profile_is_minimal_at_the_fit():
    a = np.array([0.03, 0.06, 0.09, 0.12])
    q = SE_START * (1 - SE_DAMPING + SE_DAMPING * a / 0.19) ** 30 * np.exp([0.2, -0.1, 0.15, -0.2])
    fit = implied_alpha_last(a, q)
    for da in (-1e-3, 1e-3):
        assert decay_profile(a, q, fit["alpha_last"] + da)[0] > fit["rss"]


def test_too_few_rows_is_refused():
    with pytest.raises(ValueError, match="at least 3 rows"):
        implied_alpha_last([0.0, 0.1, 0.2], [1e-30, 1e-8, 0.3], level=1e-3)


@pytest.mark.published
def test_authors_file(raw_data):
    """BO_2w.csv: four decaying rows (alpha = 1/30 ... 4/30), alpha_last between the bound 1/6 and 0.2, a run length
    of a few tens of iterations; the alpha = 0 row is 0.8 * 0.2**50 exactly, which no whole number of iterations
    from the published start 0.05 gives."""
    bo = read_csv(raw_data / "reference" / "spoc" / "BO_2w.csv")
    fit = implied_alpha_last(bo["alpha"], bo["Q22"], level=1e-3, tested={"csv": 0.14358446549404996})
    assert fit["n_rows"] == 4
    assert 1 / 6 < fit["alpha_last"] < 0.2
    assert 20 < fit["T"] < 60
    assert bo["Q22"][0] == pytest.approx(0.8 * 0.2**50, rel=1e-12)
    assert abs(fit["t_at_zero"] - round(fit["t_at_zero"])) > 0.1
    assert fit["tested"]["csv"]["p"] < 0.05
