"""Kernel statistics of Fig. 5b (docs/p1_theory.md#kernel-statistics-fig-5b): centred alignment, permutation null,
off-diagonal coefficient of variation, jackknife errors; against hand-computed cases, brute-force formulas, the
closed-form null mean and the spread over independent training sets."""

import numpy as np
import pytest
from scipy import stats

from smattn.p1.kernel_alignment import (
    alignment_with_se,
    centred_alignment,
    cv_with_se,
    jackknife,
    kernel_statistics,
    offdiag_cv,
    permutation_null,
)

Y4 = np.array([1.0, 1.0, -1.0, -1.0])


def _brute_alignment(K, y):
    """<H K H, H y y^T H>_F / (||H K H||_F ||H y y^T H||_F) with explicit matrices."""
    P = len(y)
    H = np.eye(P) - np.ones((P, P)) / P
    A, B = H @ K @ H, H @ np.outer(y, y) @ H
    return np.sum(A * B) / (np.linalg.norm(A) * np.linalg.norm(B))


def test_hand_computed_cases():
    # K = 1: H has Frobenius norm sqrt(3) (rank-3 projector), y^T H y = 4 -> 4 / (sqrt(3) * 4)
    assert centred_alignment(np.eye(4), Y4) == pytest.approx(1 / np.sqrt(3), rel=1e-14)
    assert centred_alignment(np.outer(Y4, Y4), Y4) == pytest.approx(1.0, rel=1e-14)
    assert centred_alignment(np.outer(Y4, Y4) + 5.0, Y4) == pytest.approx(1.0, rel=1e-14)  # a constant drops out
    assert centred_alignment(-np.outer(Y4, Y4), Y4) == pytest.approx(-1.0, rel=1e-14)
    z = np.array([1.0, -1.0, 1.0, -1.0])  # orthogonal to y and to the constant
    assert centred_alignment(np.outer(z, z) + 2.0, Y4) == pytest.approx(0.0, abs=1e-15)
    # off-diagonal entries 2, 4, 6 (twice): mean 4, population sd sqrt(8/3)
    K = np.array([[1.0, 2, 4], [2, 1, 6], [4, 6, 1]])
    assert offdiag_cv(K) == pytest.approx(np.sqrt(8 / 3) / 4, rel=1e-14)
    assert offdiag_cv(7.0 * K) == pytest.approx(offdiag_cv(K), rel=1e-14)  # scale-free
    assert offdiag_cv(np.full((5, 5), 3.0) + np.diag(np.arange(5.0))) == 0.0  # uniform off the diagonal


def test_alignment_matches_brute_force_with_unbalanced_labels():
    rng = np.random.default_rng(1)
    for P in (5, 17):
        X = rng.standard_normal((P, 3))
        K = X @ X.T + 0.3
        y = np.where(rng.random(P) < 0.3, 1.0, -1.0)
        y[:2] = [1.0, -1.0]
        assert centred_alignment(K, y) == pytest.approx(_brute_alignment(K, y), rel=1e-12)


def test_invalid_inputs_are_refused():
    with pytest.raises(ValueError, match="square"):
        centred_alignment(np.ones((3, 4)), np.ones(3))
    with pytest.raises(ValueError, match="labels"):
        centred_alignment(np.eye(4), np.ones(3))
    with pytest.raises(ValueError, match="all equal"):
        centred_alignment(np.eye(4), np.ones(4))
    with pytest.raises(ValueError, match="constant kernel"):
        centred_alignment(np.ones((4, 4)), Y4)
    with pytest.raises(ValueError, match="mean 0"):
        offdiag_cv(np.eye(4))
    with pytest.raises(ValueError, match="non-finite"):
        offdiag_cv(np.full((4, 4), np.nan))


def test_null_mean_matches_closed_form():
    # over uniform permutations E[y_c y_c^T] = |y_c|^2 H / (P - 1), so E A = tr(H K H) / ((P - 1) ||H K H||_F)
    rng = np.random.default_rng(2)
    P = 8  # small: the 1 / (P - 1) of a permutation differs from the 1 / P of independent label draws
    X = rng.standard_normal((P, 4))
    K = X @ X.T
    y = np.repeat([1.0, -1.0], P // 2)
    n_perm = 20000
    r = permutation_null(K, y, n_perm, seed=3)
    H = np.eye(P) - 1 / P
    Kc = H @ K @ H
    exact = np.trace(Kc) / ((P - 1) * np.linalg.norm(Kc))
    assert abs(r["null_mean"] - exact) < 4 * r["null_sd"] / np.sqrt(n_perm)
    assert r["alignment"] == pytest.approx(centred_alignment(K, y), rel=1e-14)
    assert r["excess"] == pytest.approx(r["alignment"] - r["null_mean"], rel=1e-14)


def test_label_kernel_is_extreme_under_the_null():
    y = np.repeat([1.0, -1.0], 15)  # a shuffle reproduces y or -y with probability 2 / C(30, 15) ~ 1e-8
    r = permutation_null(np.outer(y, y) + 1.0, y, 999, seed=0)
    assert r["alignment"] == pytest.approx(1.0)
    assert r["p"] == pytest.approx(1 / 1000)
    assert r["z"] > 10


def test_kernel_independent_of_labels_gives_uniform_p_values():
    rng = np.random.default_rng(4)
    P, reps = 20, 300
    X = rng.standard_normal((P, 3))
    K = X @ X.T
    ps, zs = [], []
    for i in range(reps):  # labels drawn independently of K
        y = rng.permutation(np.repeat([1.0, -1.0], P // 2))
        r = permutation_null(K, y, 199, seed=100 + i)
        ps.append(r["p"])
        zs.append(r["z"])
    assert stats.kstest(ps, "uniform").pvalue > 1e-3
    assert abs(np.mean(zs)) < 4 / np.sqrt(reps)  # the excess averages to 0 in units of the null's spread


def test_jackknife_of_the_mean_is_the_standard_error():
    x = np.random.default_rng(5).standard_normal(40)
    full, se = jackknife(lambda idx: x[idx].mean(), 40)
    assert full == pytest.approx(x.mean(), rel=1e-14)
    assert se == pytest.approx(x.std(ddof=1) / np.sqrt(40), rel=1e-12)


def test_jackknife_leaves_out_rows_and_columns():
    rng = np.random.default_rng(6)
    P = 9
    X = rng.standard_normal((P, 2))
    K, R = X @ X.T + 1.0, np.exp(-rng.random((P, P)))
    R = (R + R.T) / 2
    y = np.array([1.0, -1, 1, -1, 1, -1, 1, -1, 1])
    loo = []
    for i in range(P):
        keep = [j for j in range(P) if j != i]
        loo.append(_brute_alignment(K[np.ix_(keep, keep)], y[keep]) - _brute_alignment(R[np.ix_(keep, keep)], y[keep]))
    loo = np.array(loo)
    gap, se = alignment_with_se(K, y, R)
    assert gap == pytest.approx(_brute_alignment(K, y) - _brute_alignment(R, y), rel=1e-12)
    assert se == pytest.approx(np.sqrt((P - 1) / P * np.sum((loo - loo.mean()) ** 2)), rel=1e-10)
    assert alignment_with_se(K, y, K) == (0.0, 0.0)  # paired: a kernel against itself
    assert cv_with_se(K, K) == (0.0, 0.0)


def _draw(rng, P, signal):
    """Training set of a two-class Gaussian task: K = X X^T / d, X = y mu^T + noise; independent per call."""
    y = np.repeat([1.0, -1.0], P // 2)
    mu = np.zeros(6)
    mu[0] = signal
    X = np.outer(y, mu) + rng.standard_normal((P, 6)) + 1.5
    return X @ X.T / 6, y


@pytest.mark.parametrize("which", ["alignment", "cv"])
def test_jackknife_error_matches_spread_over_independent_training_sets(which):
    rng = np.random.default_rng(7)
    vals, ses = [], []
    for _ in range(150):
        K, y = _draw(rng, 40, 1.0)
        v, se = alignment_with_se(K, y) if which == "alignment" else cv_with_se(K)
        vals.append(v)
        ses.append(se)
    ratio = np.mean(ses) / np.std(vals, ddof=1)
    assert 0.75 < ratio < 1.35, ratio  # 150 draws: the spread is known to ~6 %; the jackknife is slightly biased


def test_kernel_statistics_ids_and_consistency():
    rng = np.random.default_rng(8)
    K1, y = _draw(rng, 20, 2.0)
    K2, _ = _draw(rng, 20, 0.0)
    out = kernel_statistics({"a": K1, "b": K2}, y, [("a", "b")], [("b", "a")], 200, 0)
    assert out["permutations"] == 200
    assert out["alignment[kernel=a]"] == pytest.approx(centred_alignment(K1, y))
    assert out["alignment_gap[a-b]"] == pytest.approx(out["alignment[kernel=a]"] - out["alignment[kernel=b]"])
    assert out["cv_gap[b-a]"] == pytest.approx(out["cv[kernel=b]"] - out["cv[kernel=a]"])
    for key in ("alignment_se", "alignment_null_mean", "alignment_null_sd", "alignment_excess", "alignment_z"):
        assert np.isfinite(out[f"{key}[kernel=b]"])
    assert 0 < out["alignment_p[kernel=b]"] <= 1
    assert {"alignment_gap_se[a-b]", "cv_gap_se[b-a]", "cv_se[kernel=a]"} <= set(out)
