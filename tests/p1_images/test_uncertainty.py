"""Uncertainties and nulls of the image-task and pruning verdicts, each against an independent reference (a
bootstrap, a simulation, brute-force enumeration, hand-made cases, SciPy)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from smattn.p1.images.uncertainty import (
    mc_accuracy_se,
    paired_difference,
    rank_correlation,
    sign_agreement,
    sign_agreement_null,
    temperature_trend,
)


def test_paired_difference_se_is_the_paired_bootstrap_se():
    rng = np.random.default_rng(0)
    u = rng.random(1000)
    a = u < 0.75
    b = np.where(rng.random(1000) < 0.2, ~a, a)  # b disagrees with a on about 20 % of the tasks
    diff, se = paired_difference(a, b)
    assert diff == pytest.approx(a.mean() - b.mean())
    idx = rng.integers(0, 1000, size=(4000, 1000))  # paired bootstrap: the same resampled tasks for a and b
    boot = a[idx].mean(axis=1) - b[idx].mean(axis=1)
    assert se == pytest.approx(boot.std(), rel=0.05)
    unpaired = np.sqrt(a.var() / 1000 + b.var() / 1000)
    assert se < unpaired  # pairing removes the shared task difficulty
    with pytest.raises(ValueError, match="same n"):
        paired_difference(a, b[:10])


def test_mc_accuracy_se_against_a_simulation():
    """The accuracy's spread over simulated reruns of the chains (each mean redrawn from N(mean, se)) equals the
    formula's standard error."""
    rng = np.random.default_rng(1)
    n = 500
    f = rng.normal(0.0, 0.3, n)
    se = rng.uniform(0.02, 0.2, n)
    y = np.sign(f + rng.normal(0, 0.3, n))
    sims = rng.normal(f, se, size=(20000, n))
    acc = (np.sign(sims) == y).mean(axis=1)
    assert mc_accuracy_se(f, se) == pytest.approx(acc.std(), rel=0.05)
    assert mc_accuracy_se(f, np.zeros(n)) == 0.0  # exact means: no Monte-Carlo error


def test_temperature_trend_on_hand_made_grids():
    widths, temps = [10, 100, 1000, 10000], [0.25, 0.5, 1.0, 1.5]
    n = 400
    # accuracy 0.9 at the diagonal temperature T[3 - i] for width i, 0.6 elsewhere: the selected T falls with N
    correct = np.zeros((4, 4, n), bool)
    for i in range(4):
        for j in range(4):
            correct[i, j, : int(n * (0.9 if j == 3 - i else 0.6))] = True
    res = temperature_trend(correct, widths, temps, 200, 0)
    assert res.rho == pytest.approx(-1.0) and res.rho_se == pytest.approx(0.0)  # gaps of 0.3 never flip
    assert list(res.T_selected) == [1.5, 1.0, 0.5, 0.25] and np.all(res.T_se == 0)
    assert temperature_trend(correct[::-1], widths, temps, 10, 0).rho == pytest.approx(1.0)
    # every width ties at every temperature: the first T is selected everywhere, no trend
    res = temperature_trend(np.ones((4, 4, n), bool), widths, temps, 10, 0)
    assert res.rho == 0.0 and res.rho_se == 0.0 and list(res.T_selected) == [0.25] * 4
    # two temperatures nearly tied at every width: the selection flips between resamples, so the errors are large;
    # a resample picks T = 0.5 with probability about 1/2: sd of the selected T about 0.25 / 2
    rng = np.random.default_rng(2)
    noisy = np.zeros((4, 2, n), bool)
    for i in range(4):  # the same accuracy at both T, 40 tasks swapped between them
        noisy[i, 0] = rng.random(n) < 0.7
        noisy[i, 1] = noisy[i, 0]
        right, wrong = np.flatnonzero(noisy[i, 0])[:20], np.flatnonzero(~noisy[i, 0])[:20]
        noisy[i, 1, right], noisy[i, 1, wrong] = False, True
    res = temperature_trend(noisy, widths, [0.25, 0.5], 300, 1)
    assert list(res.T_selected) == [0.25] * 4  # ties keep the first T
    assert res.rho_se > 0.3 and np.all(np.abs(res.T_se - 0.125) < 0.02)
    assert np.isnan(temperature_trend(correct[:2], widths[:2], temps, 10, 0).rho)  # two widths: no trend


def test_sign_agreement_on_hand_made_matrices():
    A = np.array([[1.0, 0.5, -0.2], [0.5, 1.0, 0.3], [-0.2, 0.3, 1.0]])
    B = np.array([[9.0, 0.1, 0.4], [0.1, 2.0, 0.3], [0.4, 0.3, 5.0]])  # one of the 3 distinct pairs differs
    assert sign_agreement(A, B) == pytest.approx(2 / 3)
    assert sign_agreement(A, A) == 1.0 and sign_agreement(A, -A) == 0.0


def test_sign_agreement_null_against_all_relabellings():
    """With 4 paths there are 24 relabellings: the sampled null's mean and the p-value match the exhaustive ones."""
    rng = np.random.default_rng(3)
    M = rng.standard_normal((4, 4))
    A = M + M.T
    B = A + 0.5 * rng.standard_normal((4, 4))
    B = B + B.T
    exact = np.array([sign_agreement(A, B[np.ix_(p, p)]) for p in itertools.permutations(range(4))])
    res = sign_agreement_null(A, B, 20000, 0)
    assert res.observed == sign_agreement(A, B)
    assert res.null_mean == pytest.approx(exact.mean(), abs=3 * exact.std() / np.sqrt(20000) + 1e-12)
    assert res.null_sd == pytest.approx(exact.std(), rel=0.03)
    assert res.p_value == pytest.approx(np.mean(exact >= res.observed), abs=0.01)


def test_sign_agreement_null_of_one_signed_matrix_has_no_spread():
    """A matrix whose off-diagonal entries are all positive (a smoke-scale theory's U) agrees with every relabelling
    of another alike, in the fraction of the other's positive entries (here 54 of 120, whose float mean over 1000
    copies is not exact): the null's sd is exactly 0 and its mean that fraction."""
    rng = np.random.default_rng(0)
    M = rng.standard_normal((16, 16))
    B = M + M.T
    res = sign_agreement_null(np.abs(B) + 1.0, B, 1000, 0)
    upper = B[np.triu_indices(16, k=1)]
    assert res.null_sd == 0.0
    assert res.null_mean == res.observed == np.mean(upper > 0) == 54 / 120


def test_rank_correlation_exact_null_by_enumeration():
    x = np.array([0.1, 0.4, 0.35, 0.8, 0.9, 0.2])
    y = np.array([1.0, 3.0, 2.0, 5.0, 4.0, 2.5])
    res = rank_correlation(x, y)
    assert res.observed == pytest.approx(stats.spearmanr(x, y).statistic)
    null = np.array([stats.spearmanr(x, y[list(p)]).statistic for p in itertools.permutations(range(6))])
    assert res.draws == 720
    assert res.p_value == pytest.approx(np.mean(null >= res.observed - 1e-12))
    assert res.null_sd == pytest.approx(null.std(ddof=1))
    # ties in y are ranked by their average, as SciPy does
    y_tied = np.array([1.0, 2.0, 2.0, 5.0, 4.0, 2.0])
    assert rank_correlation(x, y_tied).observed == pytest.approx(stats.spearmanr(x, y_tied).statistic)
