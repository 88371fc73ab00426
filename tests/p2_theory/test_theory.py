"""State evolution, thresholds, errors and GAMP of the two-layer attention target (small, fast sizes)."""

import numpy as np
import pytest

from smattn.p2.theory.attention_link import attention_output, link_logits
from smattn.p2.theory.channel_denoiser import g_out
from smattn.p2.theory.gamp import run_gamp
from smattn.p2.theory.overlaps import sqrtm_psd
from smattn.p2.theory.prediction_errors import (
    bo_error,
    plugin_error,
    uniform_student_error,
)
from smattn.p2.theory.quadrature import QuadratureSettings
from smattn.p2.theory.state_evolution import (
    draw_teacher,
    state_evolution,
)
from smattn.p2.theory.thresholds import alpha_last, first_layer_literal

C = 1.0


def test_nishimori_identity_on_the_phase_two_branch():
    """E[g g^T] = -E[sum_t dg_tt] (and E g = 0) under the Bayes-optimal channel (Nishimori)."""
    Q = np.diag([0.3, 0.6])
    dr = draw_teacher(3000, 2, seed=5)
    sQ, sV = sqrtm_psd(Q), sqrtm_psd(np.eye(2) - Q)
    om = np.einsum("ab,nbt->nat", sQ, dr.xi)
    Z = om + np.einsum("ab,nbt->nat", sV, dr.U)
    g, dg, _ = g_out(link_logits(Z, C), om, np.eye(2) - Q, C, QuadratureSettings(n1d=40))
    gg = np.einsum("nat,nbt->nab", g, g)
    mdg = -np.einsum("natbt->nab", dg)
    diff = gg - mdg
    se = diff.std(0, ddof=1) / np.sqrt(len(diff))
    assert np.all(np.abs(diff.mean(0)) < 4 * se + 1e-3), (diff.mean(0), se)
    gm = g.mean(0)
    assert np.all(np.abs(gm) < 4 * g.std(0) / np.sqrt(len(g)) + 1e-3)


def test_se_converges_and_off_diagonal_overlap_vanishes():
    res = state_evolution(
        0.45,
        C,
        2,
        n_samples=300,
        seed=1,
        q0=np.array([[0.05, 0.04], [0.04, 0.05]]),
        tol=2e-4,
        max_iter=80,
        quad=QuadratureSettings(n1d=24),
    )
    assert res.converged, (res.iterations, res.residual)
    assert abs(res.Q[0, 1]) < 0.02
    assert res.Q[1, 1] > 0.5 and res.Q[0, 0] < 0.02  # phase II: last layer only


def test_anderson_acceleration_reaches_the_plain_fixed_point():
    """Same fixed point as the plain damped SE (tight tolerance) in far fewer steps, and never the unstable
    Q11 = 0 branch above alpha_first (the start has Q11 = 0.05, growing)."""
    dr = draw_teacher(150, 2, seed=4)
    kw = dict(
        draws=dr,
        damping=0.8,
        q0=np.diag([0.05, 0.9]),
        tol=1e-7,
        max_iter=400,
        diagonal=True,
        v_reg=1e-3,
        quad=QuadratureSettings(n1d=16, n_local=8),
    )
    plain = state_evolution(1.2, C, 2, accelerate=False, **kw)
    fast = state_evolution(1.2, C, 2, accelerate=True, **kw)
    assert plain.converged and fast.converged
    assert plain.Q[0, 0] > 0.3
    np.testing.assert_allclose(np.diag(fast.Q), np.diag(plain.Q), atol=2e-5)
    assert fast.iterations < plain.iterations


def test_last_layer_is_learned_first_and_jensen_bound():
    for c in (0.5, 2.0):
        r = alpha_last(c, QuadratureSettings(n1d=32), n_samples=1500, seed=0)
        assert r["layer"] == 2
        assert r["K"][1, 1] > r["K"][0, 0]
        assert r["alpha"] >= 1.0 / 6.0 - 4 * r["alpha_se"]  # alpha_init >= 1/6 for T = 2


def test_literal_first_layer_threshold_is_one_sixth():
    r = first_layer_literal(C, n_samples=100000, seed=0)
    assert abs(r["K"] - 6.0) < 4 * r["K_se"] + 1e-3
    assert abs(r["alpha"] - 1 / 6) < 2e-3


def test_plugin_error_at_zero_overlap_is_uniform_student_error():
    rng = np.random.default_rng(3)
    Z = rng.standard_normal((400000, 2, 2))
    direct = np.sum((attention_output(Z, C) - 0.5) ** 2, axis=(1, 2))
    e0, se = plugin_error(np.zeros((2, 2)), C, n_samples=400000, seed=4)
    assert abs(e0 - direct.mean()) < 4 * np.hypot(se, direct.std() / np.sqrt(direct.size))
    assert uniform_student_error(C, n_samples=1000, seed=4)[0] > 0


def test_bo_error_at_zero_overlap_is_output_variance_and_below_plugin():
    rng = np.random.default_rng(7)
    Y = attention_output(rng.standard_normal((400000, 2, 2)), C)
    var = np.sum(Y.var(0))
    e_bo, se = bo_error(np.zeros((2, 2)), C, n_samples=400000, seed=1)
    assert abs(e_bo - var) < 4 * se + 1e-3
    assert e_bo <= plugin_error(np.zeros((2, 2)), C, n_samples=200000)[0] + 1e-3


def test_se_fixed_point_matches_gamp_at_moderate_d():
    alpha = 0.6  # phase II, well above alpha_last: GAMP from a random start escapes within ~20 iterations
    se = state_evolution(alpha, C, 2, n_samples=400, seed=2, tol=2e-4, max_iter=100, quad=QuadratureSettings(n1d=24))
    r = run_gamp(300, alpha, 45, seed=3, quad=QuadratureSettings(n1d=24))
    m22 = abs(r.M[-1, 1, 1]) / np.sqrt(np.sum(r.W[1] ** 2) / r.W.shape[1])
    assert abs(m22 - se.Q[1, 1]) < 0.12, (m22, se.Q)
    assert abs(r.M[-1, 0, 0]) < 0.15
    assert r.test_error[-1] < r.test_error[0]


def test_gamp_records_shapes_and_validates():
    r = run_gamp(60, 0.5, 3, seed=0, quad=QuadratureSettings(n1d=16))
    assert r.M.shape == (3, 2, 2) and r.Q.shape == (3, 2, 2) and r.test_error.shape == (3,)
    with pytest.raises(ValueError, match="damping"):
        run_gamp(60, 0.5, 3, damping=1.5)


@pytest.mark.parametrize("L", [2, 3])
def test_plugin_and_bo_errors_equal_the_attention_output_on_the_same_draws(L):
    """The errors' vectorised link against attention_link.attention_output on the draws of the same generator (the
    estimator draws xi, then U (then U') per chunk, each of shape (m, L, 2)), at a non-diagonal overlap."""
    Q = np.array([[0.5, 0.1, 0.0], [0.1, 0.4, 0.05], [0.0, 0.05, 0.95]])[:L, :L]
    n, c = 30000, 0.7
    sQ, sV = sqrtm_psd(Q), sqrtm_psd(np.eye(L) - Q)
    rng = np.random.default_rng(9)
    om = np.einsum("ab,nbt->nat", sQ, rng.standard_normal((n, L, 2)))
    Z = om + np.einsum("ab,nbt->nat", sV, rng.standard_normal((n, L, 2)))
    Z2 = om + np.einsum("ab,nbt->nat", sV, rng.standard_normal((n, L, 2)))
    y, y0, y2 = attention_output(Z, c), attention_output(om, c), attention_output(Z2, c)
    plug = np.sum((y - y0) ** 2, axis=(1, 2))
    bo = 0.5 * np.sum((y - y2) ** 2, axis=(1, 2))
    for got, ref in (
        (plugin_error(Q, c, n_samples=n, seed=9, chunk=n), plug),
        (bo_error(Q, c, n_samples=n, seed=9, chunk=n), bo),
    ):
        np.testing.assert_allclose(got, (ref.mean(), ref.std(ddof=1) / np.sqrt(n)), rtol=1e-10)
