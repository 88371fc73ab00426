"""The seed study's statistics (smattn.p1.images.network_seeds) against brute force and closed forms, and the
network names (smattn.p1.images.networks)."""

import numpy as np
import pytest
from scipy import stats

from smattn.p1.images.network_seeds import (
    gain_authors_rule,
    gain_held_out,
    min_detectable_effect,
    power,
    signs_over_networks,
    spread_over_networks,
    theory_U,
)
from smattn.p1.images.networks import architecture, layers_heads, network_name, network_seed
from smattn.p1.images.theory_grid import TEST_SETS


def fake_theory(rng, n=(40, 30, 36), widths=(10, 100), temps=(0.25, 0.5, 1.0), gp_temps=(0.05, 0.1)):
    """A theory.npz-like dict with random mean predictions; T_selected and gp_T_selected by the authors' rule
    (first best on the Omniglot test set), computed here with plain loops."""
    th = {"widths": np.array(widths, float), "temperatures": np.array(temps), "gp_temperatures": np.array(gp_temps)}
    for s, k in zip(TEST_SETS, n, strict=True):
        y = np.where(np.arange(k) < k // 2, 1.0, -1.0)
        th[f"y_{s}"] = y
        # predictions correlated with the label, differently per temperature, so the choice matters
        th[f"f_{s}"] = y * 0.3 + rng.normal(size=(len(widths), len(temps), k))
        th[f"gp_f_{s}"] = y * 0.2 + rng.normal(size=(len(gp_temps), k))
    acc = lambda f, y: sum(1 for a, b in zip(f, y, strict=True) if np.sign(a) == b) / len(y)  # noqa: E731
    sel = []
    for i in range(len(widths)):
        accs = [acc(th["f_omniglot"][i, j], th["y_omniglot"]) for j in range(len(temps))]
        sel.append(temps[accs.index(max(accs))])
    th["T_selected"] = np.array(sel)
    accs = [acc(th["gp_f_omniglot"][j], th["y_omniglot"]) for j in range(len(gp_temps))]
    th["gp_T_selected"] = np.array(gp_temps[accs.index(max(accs))])
    return th


def brute_gain(correct_a, correct_b):
    d = [float(a) - float(b) for a, b in zip(correct_a, correct_b, strict=True)]
    mean = sum(d) / len(d)
    var = sum((x - mean) ** 2 for x in d) / (len(d) - 1)
    return mean, (var / len(d)) ** 0.5


@pytest.mark.parametrize("s", TEST_SETS)
def test_gain_authors_rule_is_the_selected_lines_paired_difference(s):
    th = fake_theory(np.random.default_rng(1))
    i = 0
    j = list(th["temperatures"]).index(th["T_selected"][i])
    jg = list(th["gp_temperatures"]).index(float(th["gp_T_selected"]))
    y = th[f"y_{s}"]
    ref = brute_gain(
        [np.sign(f) == t for f, t in zip(th[f"f_{s}"][i, j], y, strict=True)],
        [np.sign(f) == t for f, t in zip(th[f"gp_f_{s}"][jg], y, strict=True)],
    )
    assert gain_authors_rule(th, s, 10) == pytest.approx(ref, rel=1e-12)


@pytest.mark.parametrize("s", TEST_SETS)
def test_gain_held_out_predicts_each_task_at_the_other_halfs_temperature(s):
    """Brute force: for every task, choose both lines' temperatures on the Omniglot tasks of the other parity
    (first best on a tie), then predict it there."""
    th = fake_theory(np.random.default_rng(2))
    i = 1  # N = 100
    yo = th["y_omniglot"]

    def best(preds, half):
        accs = []
        for f in preds:
            idx = [t for t in range(len(yo)) if t % 2 == half]
            accs.append(sum(np.sign(f[t]) == yo[t] for t in idx) / len(idx))
        return accs.index(max(accs))

    y = th[f"y_{s}"]
    a, b = [], []
    for t in range(len(y)):
        other = (t + 1) % 2
        jt, jg = best(th["f_omniglot"][i], other), best(th["gp_f_omniglot"], other)
        a.append(np.sign(th[f"f_{s}"][i, jt, t]) == y[t])
        b.append(np.sign(th[f"gp_f_{s}"][jg, t]) == y[t])
    assert gain_held_out(th, s, 100) == pytest.approx(brute_gain(a, b), rel=1e-12)


def test_held_out_differs_from_the_authors_rule_when_the_halves_disagree():
    """The held-out gain is not the authors' gain in disguise: over random theories it differs in most."""
    rng = np.random.default_rng(3)
    differ = sum(gain_held_out(th, "omniglot", 10) != gain_authors_rule(th, "omniglot", 10) for th in (
        fake_theory(rng) for _ in range(20)
    ))  # fmt: skip
    assert differ >= 10


def test_unknown_width_is_refused():
    with pytest.raises(ValueError, match="not among the theory's widths"):
        gain_authors_rule(fake_theory(np.random.default_rng(4)), "omniglot", 20)


def test_spread_with_equal_errors_has_the_closed_forms():
    """Equal standard errors s: Q = (k - 1) sd^2 / s^2, the between-network variance sd^2 - s^2 (or 0), and the
    random-effects mean is the plain mean with standard error sqrt(max(s^2, sd^2) / k)."""
    g = np.array([0.03, -0.01, 0.05, 0.02])
    s = 0.01
    r = spread_over_networks(g, np.full(4, s))
    sd = np.std(g, ddof=1)
    assert r.mean == pytest.approx(g.mean())
    assert r.se == pytest.approx(sd / 2)  # sd > s here
    assert r.sd == pytest.approx(sd)
    small = spread_over_networks([0.02, 0.021, 0.019], np.full(3, 0.01))  # spread below the errors: tau = 0
    assert small.se == pytest.approx(0.01 / np.sqrt(3))
    assert r.q == pytest.approx(3 * sd**2 / s**2)
    assert r.q_p == pytest.approx(stats.chi2.sf(3 * sd**2 / s**2, 3))
    assert r.network_sd == pytest.approx(np.sqrt(max(0.0, sd**2 - s**2)))
    assert spread_over_networks([0.01, 0.011], [0.05, 0.05]).network_sd == 0.0  # no excess: no network variance


def test_random_effects_mean_weights_by_total_variance():
    """Unequal errors: the mean weights each network by 1 / (se_i^2 + tau^2), brute force from tau."""
    g, se = np.array([0.05, 0.0, 0.02]), np.array([0.005, 0.02, 0.01])
    r = spread_over_networks(g, se)
    w = [1 / (e * e + r.network_sd**2) for e in se]
    assert r.network_sd > 0
    assert r.mean == pytest.approx(sum(a * b for a, b in zip(w, g, strict=True)) / sum(w), rel=1e-12)
    assert r.se == pytest.approx(sum(w) ** -0.5, rel=1e-12)


def test_heterogeneity_p_is_uniform_for_networks_of_one_gain():
    """Networks whose gains differ by their test errors alone: Q's p-value falls below 0.05 about 5 % of the time
    (2000 studies; binomial sd 0.5 %), unequal errors included."""
    rng = np.random.default_rng(5)
    se = np.array([0.008, 0.012, 0.01])
    p = np.array([spread_over_networks(0.02 + se * rng.normal(size=3), se).q_p for _ in range(2000)])
    assert abs(np.mean(p < 0.05) - 0.05) < 4 * np.sqrt(0.05 * 0.95 / 2000)
    # and networks with a real spread (sd 0.03 against errors ~0.01) are detected most of the time
    p_het = [
        spread_over_networks(0.02 + 0.03 * rng.normal(size=3) + se * rng.normal(size=3), se).q_p for _ in range(500)
    ]
    assert np.mean(np.array(p_het) < 0.05) > 0.5


def test_spread_refuses_bad_input():
    with pytest.raises(ValueError, match="k >= 2"):
        spread_over_networks([0.1], [0.01])
    with pytest.raises(ValueError, match="finite"):
        spread_over_networks([0.1, np.nan], [0.01, 0.01])
    with pytest.raises(ValueError, match="finite"):
        spread_over_networks([0.1, 0.2], [0.01, 0.0])


def test_power_matches_simulated_tests():
    """The fraction of simulated normal estimates that pass 'estimate > 3 se' (200 000 draws)."""
    rng = np.random.default_rng(6)
    se = 0.01
    for effect in (0.0, 0.02, 0.035, 0.05):
        est = effect + se * rng.normal(size=200_000)
        assert power(effect, se, 3.0) == pytest.approx(np.mean(est > 3 * se), abs=0.004)
    mde = min_detectable_effect(se, 3.0)
    assert np.mean(mde + se * rng.normal(size=200_000) > 3 * se) == pytest.approx(0.8, abs=0.004)
    assert mde == pytest.approx((3 + 0.8416212) * se, rel=1e-6)


def test_network_names():
    assert network_name("L2H4") == "L2H4"
    assert network_name("L3H3", 43) == "L3H3-seed43"
    assert architecture("L3H3-seed43") == "L3H3"
    assert network_seed("L3H3-seed43", 42) == 43
    assert network_seed("L2H8", 42) == 42
    assert layers_heads("L2H8-seed7") == (2, 8)
    for bad in ("L4H4", "L2H4-seed", "L2H4seed43", "l2h4"):
        with pytest.raises(ValueError, match="not an image-task network"):
            architecture(bad)


def _random_symmetric(rng, H: int) -> np.ndarray:
    a = rng.standard_normal((H, H))
    return a + a.T


def test_signs_over_networks_combine_to_a_standard_normal_under_the_null():
    """GD matrices drawn independently of the theory's (exchangeable paths): each network's standardised agreement is
    about N(0, 1), so Stouffer's combination over 3 networks has mean 0 and sd 1 over 150 studies."""
    rng = np.random.default_rng(7)
    combined = []
    for i in range(150):
        U_th = _random_symmetric(rng, 8)
        pairs = [(U_th, _random_symmetric(rng, 8)) for _ in range(3)]
        combined.append(signs_over_networks(pairs, 100, seed=i).combined_z)
    combined = np.array(combined)
    assert abs(combined.mean()) < 4 / np.sqrt(combined.size)
    assert 0.8 < combined.std(ddof=1) < 1.2


def test_signs_over_networks_of_identical_networks_add_as_stouffer():
    """k networks whose GD estimate is the theory's U itself: every agreement is 1 with the same null, so the
    combined z is sqrt(k) times each network's, and its p the normal tail there."""
    rng = np.random.default_rng(3)
    U = _random_symmetric(rng, 6)
    res = signs_over_networks([(U, U.copy()) for _ in range(4)], 500, seed=1)
    assert all(n.observed == 1.0 for n in res.nulls)
    z = (1.0 - res.nulls[0].null_mean) / res.nulls[0].null_sd
    assert res.z == pytest.approx((z,) * 4)
    assert res.combined_z == pytest.approx(2.0 * z)
    assert res.combined_p == pytest.approx(stats.norm.sf(2.0 * z))
    with pytest.raises(ValueError, match=">= 2 networks"):
        signs_over_networks([(U, U)], 10, seed=0)
    # every off-diagonal entry of the theory's positive (a smoke-scale theory, 16 paths): each relabelling agrees
    # alike (54 of 120), no evidence either way
    B = _random_symmetric(np.random.default_rng(0), 16)
    flat = signs_over_networks([(np.abs(B) + 1.0, B), (U, U)], 200, seed=1)
    assert (
        flat.nulls[0].null_sd == 0.0 and flat.z[0] == 0.0 and flat.combined_z == pytest.approx(flat.z[1] / np.sqrt(2))
    )


def test_theory_U_is_the_selected_matrix_at_the_width():
    U = np.arange(2 * 9, dtype=float).reshape(2, 3, 3)
    th = {"widths": np.array([10.0, 100.0]), "U_selected": U}
    assert np.array_equal(theory_U(th, 100), U[1]) and np.array_equal(theory_U(th, 10.0), U[0])
    with pytest.raises(ValueError, match="width N = 50"):
        theory_U(th, 50)
