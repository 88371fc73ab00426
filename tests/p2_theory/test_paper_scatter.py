"""The authors' SE curves' standard error from their own scatter (smattn.p2.theory.paper_scatter)."""

import numpy as np
import pytest

from smattn.data.spoc import read_csv
from smattn.p2.theory.paper_scatter import PAPER_SE_POINTS, PaperSePoint, curve_scatter, paper_se_metrics

# a smooth curve on the authors' BO_2w.csv grid (step 1/30), 17 points in the window as for their Q22 in phase II
X = np.arange(25) / 30.0
WINDOW = (0.26, 0.81)
SIGMA = 0.009


def _curve(x):
    return 0.5 + 0.4 * np.sin(3.0 * x)


def test_recovers_a_known_noise_sd_within_its_error():
    """One noisy copy of a smooth curve: the estimate lies within 3 of its own standard errors of the noise sd."""
    rng = np.random.default_rng(3)
    r = curve_scatter(X, _curve(X) + SIGMA * rng.standard_normal(X.size), WINDOW)
    assert r["n"] == 17 and r["dof"] == r["n"] - r["degree"] - 1
    assert abs(r["sd"] - SIGMA) <= 3.0 * r["sd_se"], r


def test_is_nearly_unbiased_over_many_noise_draws():
    """Averaged over 300 noisy copies the estimate is within 10 % of the noise sd (the degree chosen by leave-one-out
    error fits a little of the noise: about -4 % here). Dividing the residual sum of squares by n instead of the
    residual degrees of freedom n - p (about -20 %) fails this."""
    rng = np.random.default_rng(4)
    sds = [curve_scatter(X, _curve(X) + SIGMA * rng.standard_normal(X.size), WINDOW)["sd"] for _ in range(300)]
    assert 0.9 <= np.mean(sds) / SIGMA <= 1.1, np.mean(sds) / SIGMA


def test_a_noise_free_smooth_curve_has_no_scatter_and_noise_scales_it():
    """A cubic without noise is fitted exactly; on a straight line (every degree fits it, so the chosen degree does
    not depend on the noise's size) the estimate scales with the noise added."""
    assert curve_scatter(X, 1.0 - 2.0 * X + X**3, WINDOW)["sd"] < 1e-10
    line = 0.3 + 0.5 * X
    noise = np.random.default_rng(5).standard_normal(X.size)
    s1 = curve_scatter(X, line + 0.01 * noise, WINDOW)["sd"]
    s2 = curve_scatter(X, line + 0.03 * noise, WINDOW)["sd"]
    assert s2 == pytest.approx(3.0 * s1, rel=1e-6)


def test_window_too_small_or_point_outside_raises():
    with pytest.raises(ValueError, match="too few"):
        curve_scatter(X, _curve(X), (0.0, 0.1))
    tab = {"alpha": X, "Q22": _curve(X)}
    with pytest.raises(ValueError, match="outside its window"):
        paper_se_metrics({"f.csv": tab}, (PaperSePoint("p", "f.csv", "Q22", 0.2, WINDOW),))


@pytest.mark.published
def test_metrics_of_the_authors_files(raw_data):
    """The ledger's ids from the authors' files; BO_2w.csv's Q22 scatters by about 0.009 in phase II."""
    spoc = raw_data / "reference" / "spoc"
    m = paper_se_metrics({f: read_csv(spoc / f) for f in ("BO_2w.csv", "BO_3w.csv")})
    assert set(m) == {f"{p.metric}_paper_se[alpha={p.alpha:g}]" for p in PAPER_SE_POINTS}
    assert all(0.0 < v < 0.05 for v in m.values()), m
    assert m["p2.L2.q22_paper_se[alpha=0.6]"] == pytest.approx(0.0087, abs=0.0005)
