import numpy as np
import pytest

from smattn.p2.theory.gamp import GampInit, run_gamp
from smattn.p2.theory.gamp_growth import gamp_growth_runs, se_growth_ratio
from smattn.p2.theory.quadrature import QuadratureSettings

QUAD = QuadratureSettings(n1d=16)


def test_informed_start_has_the_prescribed_overlaps():
    rng = np.random.default_rng(0)
    d = 4000
    W = rng.standard_normal((2, d))
    W_hat, C_hat = GampInit((0.02, 0.997)).start(W, rng.standard_normal((2, d)))
    M = W_hat @ W.T / d
    Q = W_hat @ W_hat.T / d
    np.testing.assert_allclose(np.diag(M), [0.02, 0.997] * np.sum(W**2, 1) / d, rtol=1e-12)
    m, t2 = np.array([0.02, 0.997]), np.sum(W**2, 1) / d
    np.testing.assert_allclose(np.diag(Q), m**2 * t2 + m - m**2, rtol=1e-12)  # noise orthogonal, |xi|^2 = d
    np.testing.assert_allclose(C_hat, np.diag([0.98, 0.003]))
    # off the Bayes-optimal line: larger self-overlap and a chosen variance
    W_hat, C_hat = GampInit((0.02, 0.5), self_overlap=(0.08, 0.5), variance=(0.6, 0.5)).start(
        W, rng.standard_normal((2, d))
    )
    assert abs(np.sum(W_hat[0] ** 2) / d - 0.08) < 0.01 and C_hat[0, 0] == 0.6


@pytest.mark.parametrize(
    "kw",
    [
        dict(overlap=(1.0, 0.5)),
        dict(overlap=(0.2, 0.5), self_overlap=(0.01, 0.5)),
        dict(overlap=(0.2, 0.5), variance=(0.0, 0.5)),
    ],
)
def test_informed_start_validates(kw):
    with pytest.raises(ValueError):
        GampInit(**kw)


def test_run_gamp_records_the_start_and_calls_the_observer():
    seen = []
    r = run_gamp(80, 1.2, 2, seed=1, quad=QUAD, init=GampInit((0.05, 0.9)), observer=lambda t, s: seen.append(t))
    assert seen == [1, 2]
    assert abs(r.M0[0, 0] - 0.05 * np.mean(r.W[0] ** 2)) < 1e-12
    assert r.M.shape == (2, 2, 2)


def test_growth_runs_and_se_prediction_are_consistent_in_shape_and_sign():
    g = gamp_growth_runs(100, 1.2, 0.05, 0.99, [0, 1], 2, quad=QUAD)
    assert g.m1.shape == (2, 3) and g.ratio.shape == (2, 2) and g.a11.shape == (2, 2)
    np.testing.assert_allclose(g.ratio[:, 0], g.m1[:, 1] / g.m1[:, 0])
    mean, se = g.first_step()
    assert np.isfinite(mean) and se > 0
    p = se_growth_ratio(1.2, 0.05, 0.99, n_samples=300, quad=QUAD)
    # the last layer learned, the first layer grows (linear growth 1 - eta + eta alpha K1 > 1)
    assert p["ratio"] > 1 and p["ratio_linear"] > 1 and p["ratio_se"] > 0
