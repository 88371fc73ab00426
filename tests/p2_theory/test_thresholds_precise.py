"""Quasi-Monte-Carlo thresholds with error bars and the short-SE-run hypothesis (small sizes)."""

import numpy as np
import pytest

from smattn.p2.theory.phase_diagram_hypotheses import read_off_threshold
from smattn.p2.theory.quadrature import QuadratureSettings
from smattn.p2.theory.state_evolution import draw_teacher_qmc
from smattn.p2.theory.thresholds import alpha_first_refined, alpha_last, linearised_root, phase_two_curve, qmc_plan

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


def test_alpha_last_sized_by_its_standard_error_equals_one_pass_at_the_final_size():
    """The sets grow by doubling (Sobol' prefixes reused): stopping at any size gives that size's single-pass K;
    an unreachable target stops at the cap with se_reached False, a loose one at the first size."""
    cap = alpha_last(1.0, QUAD, n_samples=4096, seed=1, se_target=1e-9, n_start=1024)
    one = alpha_last(1.0, QUAD, n_samples=4096, seed=1)
    assert cap["n_used"] == 4096 and not cap["se_reached"]
    assert [n for n, _ in cap["se_history"]] == [1024, 2048, 4096]
    np.testing.assert_allclose(cap["K_reps"], one["K_reps"], rtol=1e-12)
    assert cap["alpha_se"] == pytest.approx(one["alpha_se"], rel=1e-9)
    loose = alpha_last(1.0, QUAD, n_samples=4096, seed=1, se_target=1.0, n_start=1024)
    assert loose["n_used"] == 1024 and loose["se_reached"]
    np.testing.assert_allclose(loose["K"], alpha_last(1.0, QUAD, n_samples=1024, seed=1)["K"], rtol=1e-12)
    # the first size whose standard error is at or below the target
    target = cap["se_history"][1][1] * (1 + 1e-9)
    mid = alpha_last(1.0, QUAD, n_samples=4096, seed=1, se_target=target, n_start=1024)
    first_ok = next(n for n, se in cap["se_history"] if se <= target)
    assert mid["n_used"] == first_ok and mid["se_reached"]
    with pytest.raises(ValueError, match="se_target"):
        alpha_last(1.0, QUAD, n_samples=512, sampling="mc", se_target=1e-3)


def test_error_bar_takes_the_slopes_over_the_wide_bracket():
    """Per-set exact linear branches h_r = S (q - q_r), alpha_r = A0 + D (q - q0): the per-set roots are
    A0 + D (q_r - q0), so the error bar is D std(q_r) / sqrt(n). A jump of the pooled rule inside the tightest
    bracket (as the quadrature makes) must not enter: with the tight secant the result is wrong."""
    S, D, A0, q0 = 30.0, 7.0, 0.75, 0.975
    q_r = q0 + np.array([-2e-3, 1e-3, 3e-3, -1.5e-3, 0.5e-3])

    def point(q, jump=0.0):
        h_r = S * (q - q_r) + jump
        al_r = A0 + D * (q - q0) + 0 * q_r
        return {"q2": q, "h": float(h_r.mean()), "alpha": float(al_r.mean()), "K1": 1.0, "h_r": h_r, "alpha_r": al_r}

    qs = q_r.mean()
    a, b = point(qs - 4e-6), point(qs + 4e-6, jump=3e-4)  # tight bracket with a jump of the rule between them
    wa, wb = point(q0 - 5e-3), point(q0 + 5e-3)
    r = linearised_root(a, b, wa, wb, len(q_r))
    expect = D * q_r.std(ddof=1) / np.sqrt(len(q_r))
    assert r["alpha_se"] == pytest.approx(expect, rel=1e-9)
    # up to a common shift of at most D/S times the jump (where the root is placed inside the tight bracket)
    np.testing.assert_allclose(r["alpha_reps"], A0 + D * (q_r - q0), rtol=0, atol=D / S * 3e-4)
    np.testing.assert_allclose(np.diff(r["alpha_reps"]), np.diff(D * q_r), rtol=1e-9, atol=1e-12)
    assert linearised_root(a, b, a, b, len(q_r))["alpha_se"] != pytest.approx(expect, rel=0.05)


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
    assert r["refine_converged"]
    # the coarse curve stops at its first sign change and is the prefix of the whole curve on the first set
    k = len(r["coarse"]["q2"])
    whole = phase_two_curve(
        grid, 1.0, QUAD, draws=draw_teacher_qmc(6, 2, np.random.SeedSequence(2).spawn(4)[0]), v_reg=1e-3
    )
    np.testing.assert_allclose(r["coarse"]["alpha"], whole["alpha"][:k], rtol=1e-12)
    h = whole["alpha"] * whole["K1"] - 1.0
    assert np.all(h[: k - 1] < 0) and h[k - 1] >= 0


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


@pytest.mark.parametrize("switch", [0, 1, 5, 11, 12, 23, None])
def test_bisection_read_off_equals_the_scan_when_the_exceedance_switches_on_once(monkeypatch, switch):
    """With a final Q11 that exceeds the level from grid point `switch` on (None: never), bisection returns the
    scan's alpha in at most 1 + ceil(log2 m) runs, and every run it makes is the scan's run at that grid point (the
    point's own seed). Fails if the bisection keeps the wrong half or the seeds follow the visiting order."""
    from smattn.p2.theory import phase_diagram_hypotheses as H

    alphas = np.round(np.arange(1, 25) * 0.05, 10)
    on = np.inf if switch is None else alphas[switch]

    def fake_run(alpha, c, quad, *, seed, **kw):
        return np.diag([(0.2 if alpha >= on else 0.01) + 1e-9 * seed, 0.9])

    monkeypatch.setattr(H, "short_se_run", fake_run)
    kw = dict(n_samples=10, iterations=2, seed=5, level=0.1)
    scan = H.read_off_threshold(1.0, alphas, QUAD, search="scan", **kw)
    bis = H.read_off_threshold(1.0, alphas[::-1], QUAD, **kw)  # any order: the grid is sorted
    assert bis["search"] == "bisect" and bis["evaluations"] <= 1 + int(np.ceil(np.log2(len(alphas))))
    np.testing.assert_equal(bis["alpha"], scan["alpha"])
    np.testing.assert_equal(bis["alpha"], np.nan if switch is None else alphas[switch])
    for g in range(len(alphas)):  # started from any guess: the same read-off; 2 runs from the right one
        r = H.read_off_threshold(1.0, alphas, QUAD, guess=alphas[g] + 0.01, **kw)
        np.testing.assert_equal(r["alpha"], scan["alpha"])
        assert r["evaluations"] <= 2 * int(np.ceil(np.log2(len(alphas)))) + 2
        if g == switch:
            assert r["evaluations"] == (1 if g == 0 else 2)
    full = dict(
        zip(
            *(
                H.read_off_threshold(1.0, alphas, QUAD, search="scan", **{**kw, "level": 1.0})[k]
                for k in ("alphas", "q11")
            ),
            strict=True,
        )
    )
    assert all(full[a] == q for a, q in zip(bis["alphas"], bis["q11"], strict=True))


def test_bisection_read_off_equals_the_scan_on_short_runs():
    """Real short runs (grid estimator, small sizes): the same read-off and the same final Q11 at every grid point
    the bisection ran."""
    kw = dict(n_samples=40, iterations=12, seed=3, level=0.1)
    alphas = [0.4, 0.6, 0.8, 1.0, 1.2, 1.4]
    scan = read_off_threshold(1.0, alphas, QUAD, search="scan", **kw)
    bis = read_off_threshold(1.0, alphas, QUAD, **kw)
    np.testing.assert_equal(bis["alpha"], scan["alpha"])
    q_scan = dict(zip(scan["alphas"], scan["q11"], strict=True))
    for a, q in zip(bis["alphas"], bis["q11"], strict=True):
        if a in q_scan:
            assert q == q_scan[a]
