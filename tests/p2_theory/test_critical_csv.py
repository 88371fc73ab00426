"""P2 Fig. 1 right: the authors' alpha_critical.csv as data (smattn.data.published.P2_ALPHA_CRITICAL, the claims
rows' paper values) and the metrics computed from it (smattn.p2.theory.critical_csv)."""

from pathlib import Path

import numpy as np
import pytest
import yaml

from smattn.data.published import P2_ALPHA_CRITICAL, P2_PHASE_DIAGRAM_SKIPS
from smattn.data.spoc import read_csv
from smattn.io import fmt_id
from smattn.p2.theory.critical_csv import (
    JENSEN_BOUND,
    column_scatter,
    csv_metrics,
    loo_quadratic_residuals,
)

CLAIMS = Path(__file__).resolve().parents[2] / "claims" / "p2_theory.yaml"


@pytest.fixture(scope="module")
def rows():
    with open(CLAIMS, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def _by_id(rows):
    return {r["id"]: r for r in rows if "id" in r}


@pytest.mark.published
def test_published_table_is_the_authors_file(raw_data):
    """P2_ALPHA_CRITICAL holds the file's rows exactly, in its order (a digit changed in the module fails here)."""
    ref = read_csv(raw_data / "reference" / "spoc" / "alpha_critical.csv")
    table = np.column_stack([ref["skip"], ref["alpha1"], ref["alpha2"]])
    assert np.array_equal(table, np.array(P2_ALPHA_CRITICAL))
    assert tuple(ref["skip"]) == P2_PHASE_DIAGRAM_SKIPS


def test_claims_paper_values_are_the_published_table(rows):
    """Every c of the table has a Fig. 1 right claim row for alpha_last (paper: the file's alpha2) and for alpha_first
    (paper: alpha1), a match with our standard error and the file's scatter, and no typed expected value."""
    ids = _by_id(rows)
    for c, a1, a2 in P2_ALPHA_CRITICAL:
        for name, value, col in (("alpha_last", a2, "alpha_last"), ("alpha_first", a1, "alpha_first")):
            r = ids[f"p2.L2.{name}[c={fmt_id(c)}]"]
            assert r["paper"] == value, (c, name)
            assert r["role"] == "claim" and r["figure"] == "P2 Fig. 1 right" and r["kind"] == "match"
            assert r["se"] == f"p2.L2.{name}_se[c={fmt_id(c)}]"
            assert r["paper_se"] == f"p2.L2.csv_{col}_scatter"
            assert "expected" not in r and "tolerance" not in r


def test_order_claim_and_bound_checks_at_every_c(rows):
    """Per c: the claim alpha_last < alpha_first, the check of the bound 1/6 on ours, and a check that the file lies
    below the bound exactly where its alpha2 does (computed from the table here, never typed)."""
    checks = [r for r in rows if "check" in r]
    for c, _, a2 in P2_ALPHA_CRITICAL:
        cid = fmt_id(c)
        pair = (f"p2.L2.alpha_last[c={cid}]", f"p2.L2.alpha_first[c={cid}]")
        order = [
            r for r in checks
            if (r["check"]["left"], r["check"]["right"]) == pair and r.get("figure") == "P2 Fig. 1 right"
        ]  # fmt: skip
        assert len(order) == 1 and order[0]["role"] == "claim" and order[0]["check"]["op"] == "<"
        bound = [r for r in checks if r["check"]["left"] == f"p2.L2.alpha_last[c={cid}]" and r["check"]["op"] == ">="]
        assert len(bound) == 1 and bound[0]["role"] == "check" and bound[0]["check"]["right"] == JENSEN_BOUND
        assert "where" not in bound[0] and "paper_says" not in bound[0] and bound[0]["basis"]
        csv_rows = [r for r in checks if r["check"]["left"] == f"p2.L2.csv_alpha_last_minus_bound[c={cid}]"]
        assert len(csv_rows) == (1 if a2 < JENSEN_BOUND else 0), c
        if csv_rows:
            assert csv_rows[0]["role"] == "check" and csv_rows[0]["check"]["op"] == "<"


def test_csv_metrics_ids_and_bound_gaps():
    skip, a1, a2 = (np.array(col) for col in zip(*P2_ALPHA_CRITICAL, strict=True))
    m = csv_metrics(skip, a1, a2)
    assert m["p2.L2.csv_alpha_last_minus_bound[c=1]"] == pytest.approx(0.14358446549404996 - 1 / 6, abs=1e-15)
    below = {k for k, v in m.items() if "minus_bound" in k and v < 0}
    assert below == {f"p2.L2.csv_alpha_last_minus_bound[c={fmt_id(c)}]" for c in skip[a2 < 1 / 6]}
    assert len(below) == 10  # c >= 0.75: 0.16096 at 0.75, 0.17309 at 0.625
    assert 0 < m["p2.L2.csv_alpha_last_scatter"] < m["p2.L2.csv_alpha_first_scatter"] < 0.01


def test_loo_residuals_vanish_on_a_quadratic_and_match_a_cubic_by_hand():
    """A quadratic is reproduced exactly by the leave-one-out quadratic; on y = x^3 with x = 0..4 the residual at 0
    (quadratic through 1, 2, 3: y(0) = 6 by Lagrange, so 0 - 6) is -6 / sqrt(1 + 3^2 + 3^2 + 1^2) = -6 / sqrt(20)."""
    x = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    assert np.allclose(loo_quadratic_residuals(x, 2 - x + 0.5 * x**2), 0.0, atol=1e-12)
    r = loo_quadratic_residuals(x, x**3)
    assert r[0] == pytest.approx(-6 / np.sqrt(20), rel=1e-12)


def test_scatter_recovers_the_noise_of_a_smooth_curve():
    """Independent noise of standard deviation s on a smooth curve over the file's own c grid: the scatter over many
    draws averages to s (its mean square is s^2 for noise alone); without noise it is the small interpolation error."""
    rng = np.random.default_rng(3)
    c = np.array(P2_PHASE_DIAGRAM_SKIPS)
    smooth = 0.2 - 0.03 * np.tanh(c)
    s = 0.004
    ms = np.mean([column_scatter(c, smooth + s * rng.standard_normal(c.size)) ** 2 for _ in range(2000)])
    assert np.sqrt(ms) == pytest.approx(s, rel=0.05)
    assert column_scatter(c, smooth) < 0.2 * s
    with pytest.raises(ValueError):
        loo_quadratic_residuals([0.0, 1.0, 1.0, 2.0], [0.0, 1.0, 1.0, 2.0])
