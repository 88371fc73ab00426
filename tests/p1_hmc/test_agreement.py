"""Standard errors of the numbers that decide P1's claims (smattn.p1.agreement, smattn.p1.predictor)."""

import numpy as np
import pytest

from smattn.p1 import agreement as A
from smattn.p1.predictor import accuracy_mcse, paired_accuracy_gap


def test_paired_gap_error_is_the_mcnemar_form_and_smaller_than_unpaired():
    """With n10 items right only for a and n01 right only for b: d = (n10 - n01)/n and
    se^2 = (n10 + n01 - n d^2) / (n (n - 1)); far below the unpaired binomial error when the predictors agree."""
    n, n10, n01, both = 1000, 30, 10, 900
    y = np.ones(n)
    a = -np.ones(n)
    b = -np.ones(n)
    a[: both + n10] = 1.0
    b[:both] = 1.0
    b[both + n10 : both + n10 + n01] = 1.0
    d, se = paired_accuracy_gap(a, b, y)
    assert d == pytest.approx((n10 - n01) / n)
    assert se == pytest.approx(np.sqrt((n10 + n01 - n * d**2) / (n * (n - 1))))
    pa, pb = (both + n10) / n, (both + n01) / n
    assert se < 0.6 * np.sqrt(pa * (1 - pa) / n + pb * (1 - pb) / n)


def test_paired_gap_error_covers_resampled_test_sets():
    """Across independent test sets the gap's spread matches the paired standard error of one set."""
    rng = np.random.default_rng(0)
    gaps, ses = [], []
    for _ in range(400):
        z = rng.standard_normal(500)
        y = np.sign(z)
        fa = z + 0.8 * rng.standard_normal(500)  # a: less noise
        fb = fa + 0.5 * rng.standard_normal(500)  # b: a plus extra noise (correlated with a)
        d, se = paired_accuracy_gap(fa, fb, y)
        gaps.append(d), ses.append(se)
    assert np.std(gaps) == pytest.approx(np.mean(ses), rel=0.1)


def test_accuracy_mcse_matches_monte_carlo_sign_flips():
    """Simulate Monte-Carlo estimates mean = mu + mcse * eps of a posterior mean mu: the spread of their accuracy
    equals accuracy_mcse (evaluated at the estimates, as a run does)."""
    rng = np.random.default_rng(1)
    n = 2000
    mu = rng.standard_normal(n) * 0.3
    y = np.where(rng.random(n) < 0.8, np.sign(mu), -np.sign(mu))
    mcse = np.full(n, 0.05)
    accs, errs = [], []
    for _ in range(300):
        est = mu + mcse * rng.standard_normal(n)
        accs.append(np.mean(np.sign(est) == y))
        errs.append(accuracy_mcse(est, mcse, y))
    assert np.std(accs) == pytest.approx(np.mean(errs), rel=0.15)
    assert accuracy_mcse(mu, np.zeros(n), y) == 0.0


def test_sampled_minus_theory_combines_both_errors():
    rng = np.random.default_rng(2)
    n = 1000
    y = np.sign(rng.standard_normal(n))
    ft = y * (0.5 + rng.random(n)) * np.where(rng.random(n) < 0.1, -1, 1)
    fs = ft + 0.1 * rng.standard_normal(n)
    mc = np.full(n, 0.02)
    d, se = A.sampled_minus_theory(fs, mc, ft, y)
    d0, se0 = paired_accuracy_gap(fs, ft, y)
    assert d == d0 and se == pytest.approx(np.hypot(se0, accuracy_mcse(fs, mc, y)))


def test_order_parameter_deviation_distance_and_correlation():
    Ut = np.array([[4.0, -1.0], [-1.0, 1.0]])
    Us = np.array([[4.2, -1.1], [-1.1, 1.0]])
    se = np.array([[0.05, 0.02], [0.02, 0.01]])
    dev, dse = A.order_parameter_deviation(Us, se, Ut)
    assert dev == pytest.approx(0.2 / 4) and dse == pytest.approx(0.05 / 4)
    assert A.distance_from_identity(np.eye(3)) == 0.0
    assert A.distance_from_identity(2 * np.eye(4)) == pytest.approx(1.0)
    assert A.path_correlation(Ut, 0, 1) == pytest.approx(-0.5)
    with pytest.raises(ValueError, match="square"):
        A.order_parameter_deviation(Us, se[:1], Ut)


def test_sampled_record_metrics_pair_the_record_with_the_theory_of_its_width():
    rng = np.random.default_rng(3)
    y = np.sign(rng.standard_normal(50))
    f10, f30 = y * 0.5, -y * 0.5  # the theory at N = 30 is always wrong: pairing with it would give a gap of +1
    theory = {"runs": [{"N": 10.0, "U": [[2.0, -1.0], [-1.0, 1.0]]}, {"N": 30.0, "U": np.eye(2).tolist()}]}
    preds = {"widths": np.array([10.0, 30.0]), "f_test_theory": np.stack([f10, f30]), "y_test": y}
    rec = {"N": 10, "acc": 1.0, "acc_mcse": 0.0, "f_mean": f10, "f_mcse": np.full(50, 1e-3)}
    rec |= {"U_mean": [[2.1, -1.0], [-1.0, 1.0]], "U_sem": [[0.05, 0.01], [0.01, 0.01]]}
    m = A.sampled_record_metrics(rec, theory, preds)
    assert m["acc_sampled_minus_theory"] == 0.0 and m["U_sampled_deviation"] == pytest.approx(0.05)
    with pytest.raises(ValueError, match="not a theory width"):
        A.sampled_record_metrics({**rec, "N": 20}, theory, preds)


def test_paired_cohen_h_against_its_sampling_distribution():
    # h of two correlated predictors on the same items: its spread over many test sets drawn from the same joint law
    # (brute force) must equal the delta-method standard error of one test set, and h itself Cohen's formula
    from smattn.p1.predictor import paired_cohen_h

    rng = np.random.default_rng(4)
    n, reps = 400, 4000
    # joint law of (a correct, b correct): both 0.70, a only 0.15, b only 0.05, neither 0.10 -> p_a 0.85, p_b 0.75
    probs = np.array([0.70, 0.15, 0.05, 0.10])
    hs, ses = [], []
    for _ in range(reps):
        cell = rng.choice(4, size=n, p=probs)
        y = rng.choice([-1.0, 1.0], size=n)
        ca, cb = np.isin(cell, (0, 1)), np.isin(cell, (0, 2))
        h, se = paired_cohen_h(np.where(ca, y, -y), np.where(cb, y, -y), y)
        hs.append(h)
        ses.append(se)
    exact = 2 * (np.arcsin(np.sqrt(0.85)) - np.arcsin(np.sqrt(0.75)))
    assert abs(np.mean(hs) - exact) < 4 * np.std(hs) / np.sqrt(reps)
    assert np.mean(ses) == pytest.approx(np.std(hs), rel=0.05)
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        y = np.ones(5)
        paired_cohen_h(y, -y, y)
