"""Quasi-Monte-Carlo thresholds with error bars and the short-SE-run hypothesis (small sizes)."""

import numpy as np
import pytest

from smattn.p2.theory.phase_diagram_hypotheses import read_off_threshold
from smattn.p2.theory.quadrature import QuadratureSettings
from smattn.p2.theory.state_evolution import draw_teacher_qmc
from smattn.p2.theory.thresholds import alpha_first_refined, alpha_last, qmc_plan

QUAD = QuadratureSettings(n1d=16)


def test_qmc_draws_are_standard_normal_and_nested():
    d = draw_teacher_qmc(12, 2, 3)
    assert d.xi.shape == d.U.shape == (4096, 2, 2)
    flat = np.concatenate([d.xi.reshape(len(d.xi), -1), d.U.reshape(len(d.U), -1)], axis=1)
    np.testing.assert_allclose(flat.mean(0), 0.0, atol=0.01)
    np.testing.assert_allclose(flat.std(0), 1.0, atol=0.01)
    np.testing.assert_array_equal(draw_teacher_qmc(10, 2, 3).U, d.U[:1024])  # same scrambling: a prefix
    assert not np.allclose(draw_teacher_qmc(10, 2, 4).U, d.U[:1024])
    with pytest.raises(ValueError):
        draw_teacher_qmc(0, 2, 0)


def test_qmc_plan():
    assert qmc_plan(32768, 8) == (12, 32768)
    assert qmc_plan(5000, 8) == (9, 4096)
    with pytest.raises(ValueError):
        qmc_plan(100, 1)


def test_qmc_alpha_last_agrees_with_monte_carlo_and_is_more_precise():
    q = alpha_last(1.0, QUAD, n_samples=4096, seed=1)
    m = alpha_last(1.0, QUAD, n_samples=4096, seed=1, sampling="mc")
    assert q["n_used"] == 4096 and q["K_reps"].shape == (8, 2, 2)
    assert q["layer"] == m["layer"] == 2
    assert abs(q["alpha"] - m["alpha"]) < 4 * np.hypot(q["alpha_se"], m["alpha_se"])
    assert q["alpha_se"] < 0.5 * m["alpha_se"]
    assert q["alpha"] > 1 / 6 - 3 * q["alpha_se"]


def test_refined_alpha_first_is_a_root_with_an_error_bar():
    grid = np.array([0.5, 0.8, 0.9, 0.95, 0.97, 0.98, 0.99])
    last = alpha_last(1.0, QUAD, n_samples=512, seed=0)
    r = alpha_first_refined(1.0, QUAD, q_grid=grid, v_reg=1e-3, n_samples=256, n_rep=4, seed=2, last=last)
    assert r["found"] and r["how"] == "refined"
    assert 0.9 < r["q2"] < 0.995 and 0.55 < r["alpha"] < 0.95
    assert 0 < r["alpha_se"] < 0.1 and r["alpha_reps"].shape == (4,)
    p = r["points"]
    assert p["h"].min() < 0 < p["h"].max()
    # the pooled h changes sign between the evaluated points bracketing the root
    below, above = p["q2"][p["q2"] < r["q2"]].max(), p["q2"][p["q2"] > r["q2"]].min()
    assert p["h"][p["q2"] == below][0] < 0 <= p["h"][p["q2"] == above][0]
    assert above - below < 1e-3


def test_read_off_threshold_scans_until_q11_rises():
    """The read-off must find the first layer at alpha = 1.4 (20 steps from 0.05 I take Q11 from ~1e-15 after the
    last layer's transient to ~0.6-0.8) and not at 0.2 (below alpha_last).  A scan that never records a crossing
    (the threshold detection removed) or records the first alpha fails here."""
    r = read_off_threshold(1.0, [0.2, 1.4], QUAD, n_samples=40, iterations=20, seed=0, level=0.1)
    assert r["alphas"] == [0.2, 1.4] and len(r["q11"]) == 2
    assert r["q11"][0] < 1e-6  # below alpha_last both overlaps decay from 0.05
    assert r["q11"][1] > 0.3
    assert r["alpha"] == 1.4
    # a level no run reaches: no threshold
    assert np.isnan(read_off_threshold(1.0, [0.2], QUAD, n_samples=40, iterations=3, seed=0, level=0.5)["alpha"])
