"""First-layer stability in alpha (first_layer_stability) and the standard error of SE fixed points
(fixed_point_error), against independent references: finite differences of the SE map, the SE iteration itself,
the q2-parametrised threshold of thresholds.py on the same draws, and the spread over independent draw sets."""

import numpy as np
import pytest

from smattn.p2.theory.first_layer_stability import (
    StabilityProblem,
    alpha_first_stability,
    branch_point,
    growth_factors,
    iterations_to_level,
    phase_two_fixed_point,
    switch_on_bracket,
)
from smattn.p2.theory.fixed_point_error import fixed_point_covariance
from smattn.p2.theory.quadrature import QuadratureSettings
from smattn.p2.theory.state_evolution import (
    TeacherDraws,
    channel_average,
    draw_teacher,
    draw_teacher_qmc,
    state_evolution,
)
from smattn.p2.theory.thresholds import alpha_first_refined

QUAD = QuadratureSettings(n1d=16)
# the SE map's own response to omega_1 moves its omega-centred grid: at 16 nodes it is 2.7 % off the Jacobian's
# value on the draws below, at 32 nodes 0.07 % (the Jacobian's S itself changes by 1e-5 between the two)
QUAD_FINE = QuadratureSettings(n1d=32)


def _balanced(n, seed):
    """Teacher draws whose first-layer xi is +-sqrt(2) e_t (four copies of each draw): the mean of |G xi|^2 over the
    copies is ||G||_F^2 exactly, so a finite difference of the SE map in Q11 has no xi noise."""
    d = draw_teacher(n, 2, seed)
    xs, us = [], []
    for sign in (1.0, -1.0):
        for t in (0, 1):
            xi = d.xi.copy()
            xi[:, 0, :] = 0.0
            xi[:, 0, t] = sign * np.sqrt(2.0)
            xs.append(xi)
            us.append(d.U)
    return TeacherDraws(np.concatenate(xs), np.concatenate(us))


def test_slope_of_the_q11_direction_equals_a_finite_difference_of_the_se_map():
    """S = E||d g_out[1]/d omega[1]||^2 from the denoiser's analytic Jacobian against (R11 at Q11 = eps) / eps from the
    SE map's own channel average (posterior means only), on Q = diag(0, 0.9)."""
    d = _balanced(48, 3)
    p = branch_point(0.9, 1.0, [d], QUAD_FINE, 1e-3)
    eps = 1e-8
    r = channel_average(np.diag([eps, 0.9]), 1.0, d, QUAD_FINE, v_reg=1e-3)["R"]
    assert p.S > 0.2
    assert r[0, 0] / eps == pytest.approx(p.S, rel=2e-3)
    assert r[1, 1] == pytest.approx(p.R22, rel=1e-6)  # Q11 = eps leaves the last layer's average unchanged


def test_growth_factor_predicts_the_se_iteration_from_a_small_q11():
    """Five plain damped SE steps from Q = diag(1e-7, q2*) shrink Q11 by lambda_1^5 (alpha = 0.6, below threshold)
    and leave Q22 at its fixed point."""
    d = _balanced(48, 5)
    prob = StabilityProblem(1.0, [d], QUAD_FINE, v_reg=1e-3)
    g = growth_factors(prob, 0.6)
    assert 0.2 < g["lambda1"] < 1.0 and g["lambda2"] < 1.0
    run = state_evolution(
        0.6, 1.0, 2, draws=d, q0=np.diag([1e-7, g["q2"]]), tol=0.0, max_iter=5, diagonal=True, v_reg=1e-3,
        quad=QUAD_FINE,
    )  # fmt: skip
    assert run.Q[0, 0] / 1e-7 == pytest.approx(g["lambda1"] ** 5, rel=0.02)
    assert run.Q[1, 1] == pytest.approx(g["q2"], abs=1e-5)


def test_root_in_alpha_equals_the_q2_parametrised_threshold_on_the_same_draws():
    """Root solve in alpha (Brent, phase-II fixed point by a root solve at each alpha, S from g_out's Jacobian)
    against thresholds.alpha_first_refined (regula falsi along q2, K1 from channel_average) on the same QMC sets."""
    seed, n_rep = 4, 4
    ref = alpha_first_refined(
        1.0, QUAD, q_grid=np.array([0.9, 0.95, 0.97, 0.98, 0.99]), v_reg=1e-3, n_samples=256, n_rep=n_rep, seed=seed
    )
    sets = [draw_teacher_qmc(6, 2, s) for s in np.random.SeedSequence(seed).spawn(n_rep)]
    r = alpha_first_stability(StabilityProblem(1.0, sets, QUAD, v_reg=1e-3), bracket=(0.5, 1.2))
    assert ref["found"] and ref["how"] == "refined"
    assert r["alpha"] == pytest.approx(ref["alpha"], abs=2e-3)
    assert r["q2"] == pytest.approx(ref["q2"], abs=1e-3)
    assert abs(r["lambda1"] - 1.0) < 1e-3 and r["lambda2"] < 1.0
    assert r["alpha_se"] == pytest.approx(ref["alpha_se"], rel=0.5)


def test_phase_two_fixed_point_solves_the_fixed_point_equation():
    d = draw_teacher(64, 2, 1)
    prob = StabilityProblem(1.0, [d], QUAD, v_reg=0.0)
    q2 = phase_two_fixed_point(prob, 0.4, guess=0.3)
    R = channel_average(np.diag([0.0, q2]), 1.0, d, QUAD)["R"][1, 1]
    assert q2 / (1 - q2) == pytest.approx(0.4 * R, rel=1e-3)


def test_iterations_to_level():
    assert iterations_to_level(np.e, 1e-4, 1e-4 * np.e**3) == pytest.approx(3.0)
    assert iterations_to_level(0.99, 1e-4, 0.1) == np.inf
    np.testing.assert_allclose(iterations_to_level([2.0, 1.0], 1.0e-3, 8e-3), [3.0, np.inf])
    with pytest.raises(ValueError):
        iterations_to_level(1.5, 0.2, 0.1)


def test_switch_on_bracket():
    a = np.array([0.9, 0.7, 0.8, 0.85])
    assert switch_on_bracket(a, [0.5, 0.0, 1e-4, 0.2], 0.1) == (0.8, 0.85)
    with pytest.raises(ValueError):
        switch_on_bracket(a, [0.0, 0.0, 0.0, 0.0], 0.1)


def test_fixed_point_error_matches_the_spread_over_independent_draw_sets():
    """Phase II (alpha = 0.4): the delta-method standard error of Q22 against the spread of the fixed points of
    12 independent sets of 256 draws; Q11 = 0 is invariant (no error)."""
    q22, se = [], []
    for s in range(12):
        d = draw_teacher(256, 2, 200 + s)
        run = state_evolution(
            0.4, 1.0, 2, draws=d, q0=np.diag([0.0, 0.5]), tol=1e-8, max_iter=200, diagonal=True, v_reg=1e-3,
            quad=QuadratureSettings(n1d=12),
        )  # fmt: skip
        assert run.converged
        fp = fixed_point_covariance(np.diag(run.Q), 0.4, 1.0, d, QuadratureSettings(n1d=12), v_reg=1e-3)
        q22.append(run.Q[1, 1])
        se.append(fp["se"])
    se = np.array(se)
    assert np.all(se[:, 0] < 1e-12)
    ratio = np.std(q22, ddof=1) / se[:, 1].mean()
    assert 0.6 < ratio < 1.7, ratio


def test_fixed_point_error_of_a_clamped_entry_is_zero():
    d = draw_teacher(64, 2, 9)
    fp = fixed_point_covariance([0.5, 0.9], 1.2, 1.0, d, QUAD, v_reg=1e-3, fixed=(1,))
    assert fp["se"][1] == 0.0 and fp["se"][0] > 0.0
    with pytest.raises(ValueError):
        fixed_point_covariance([0.5, 1.0], 1.2, 1.0, d, QUAD)


def test_error_bar_carried_over_to_the_plugin_error_matches_resampled_overlaps():
    """The plug-in error's standard error from the overlaps' covariance (linear propagation) against the spread of
    the error over overlaps drawn from that covariance (common random numbers for the error itself)."""
    from smattn.p2.theory.prediction_errors import plugin_error, plugin_error_propagated_se

    q, cov = np.array([0.8, 0.99]), np.diag([0.02**2, 0.002**2])
    se = plugin_error_propagated_se(q, cov, 1.0, n_samples=50_000, seed=4)
    rng = np.random.default_rng(0)
    draws = rng.multivariate_normal(q, cov, size=24)
    errs = [plugin_error(np.diag(np.clip(d, 0, 1)), 1.0, n_samples=50_000, seed=4)[0] for d in draws]
    assert 0.6 < np.std(errs, ddof=1) / se < 1.5


def test_origin_growth_is_the_initial_operator_where_no_phase_two_point_exists():
    """Below alpha_last the branch has no phase-II fixed point (NoPhaseTwoFixedPoint); origin_growth then gives
    lambda_1 at Q = 0, whose S is K11 of the operator at Q = 0 (thresholds.initial_operator) on the same draws."""
    from smattn.p2.theory.first_layer_stability import NoPhaseTwoFixedPoint, origin_growth
    from smattn.p2.theory.thresholds import initial_operator

    prob = StabilityProblem.from_sizes(1.0, 512, 2, 3, quad=QUAD, v_reg=0.0)
    with pytest.raises(NoPhaseTwoFixedPoint):
        phase_two_fixed_point(prob, 0.05)
    g = origin_growth(prob, 0.05)
    K11 = np.mean([initial_operator(1.0, d, QUAD)[0][0, 0] for d in prob.sets])
    assert g["S"] == pytest.approx(K11, rel=1e-3)
    assert g["lambda1"] == pytest.approx(0.2 + 0.8 * 0.05 * K11, rel=1e-3) and g["q2"] == 0.0
