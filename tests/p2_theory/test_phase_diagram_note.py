"""The phase-diagram deviation note: every verdict it prints is computed from the thresholds it is given."""

import numpy as np
import pytest

from smattn.p2.theory.phase_diagram_analysis import (
    DOES_NOT,
    IN_PART,
    NOT_COMPUTED,
    REPRODUCES,
    analyse_phase_diagram,
    verdict,
)
from smattn.p2.theory.phase_diagram_report import phase_diagram_report

REF = {
    "skip": np.array([4.0, 1.0, 0.5]),
    "alpha1": np.array([0.196, 0.7936, 0.755]),
    "alpha2": np.array([0.0827, 0.1436, 0.1864]),
}


def _records(first, last, noiseless, se_first=0.005, se_last=5e-4):
    return [
        {
            "c": c,
            "alpha_last": a2,
            "alpha_last_se": se_last,
            "alpha_last_grid_shift": 1e-4,
            "alpha_first": a1,
            "alpha_first_se": se_first,
            "alpha_first_q2": 0.97,
            "alpha_first_grid_shift": 0.001,
            "alpha_first_noiseless": a0,
            "alpha_first_noiseless_se": 0.004,
            "alpha_first_literal": 1 / 6,
        }
        for c, a1, a2, a0 in zip((0.5, 1.0, 4.0), first, last, noiseless, strict=True)
    ]


def _hyp(read_off, authors=None):
    h = {"read_off": read_off, "alpha_step": 0.05, "v_reg": 1e-3}
    if authors is not None:
        h.update(read_off_authors=authors, authors_alpha_step=0.1)
    return h


def _run(c, alpha, alphas):
    return {"c": c, "alpha": alpha, "n_samples": 200, "iterations": 30, "level": 0.1, "alphas": alphas}


def test_verdict_words():
    assert verdict([True, True]) == REPRODUCES
    assert verdict([False, False]) == DOES_NOT
    assert verdict([True, False]) == IN_PART
    assert verdict([]) == NOT_COMPUTED


def test_thresholds_equal_to_the_csv_reproduce_it():
    """Fed the CSV's own values (as ours), every threshold hypothesis must say so: none of the verdicts is text
    printed whatever the numbers (a note with a literal "does not reproduce" fails here)."""
    recs = _records(first=(0.755, 0.7936, 0.196), last=(0.1864, 0.1436, 0.0827), noiseless=(0.755, 0.7936, 0.196))
    hyp = _hyp([_run(1.0, 0.8, [0.8]), _run(4.0, 0.2, [0.2])], [_run(4.0, 0.2, [0.1, 0.2])])
    a = analyse_phase_diagram(recs, REF, hyp)
    assert [h.verdict for h in a.hypotheses] == [REPRODUCES] * 6
    md = phase_diagram_report(recs, REF, hyp, scale="smoke", v_reg=1e-3, q_max=0.9995)
    assert "does not reproduce" not in md.lower() and "only in part" not in md
    assert md.count("Reproduces the CSV at every tested c.") == 6
    assert "0 of 3 CSV rows lie outside" in md
    assert "(pooled factor 1.000)" in md


def test_deviation_note_is_built_from_the_numbers():
    recs = _records(first=(0.70, 0.72, 0.74), last=(0.19, 0.20, 0.21), noiseless=(0.65, 0.65, 0.65))
    hyp = _hyp([_run(1.0, 0.8, [0.8]), _run(4.0, None, [1.2])])
    md = phase_diagram_report(recs, REF, hyp, scale="smoke", v_reg=1e-3, q_max=0.9995)
    assert "| 1 | 0.2000 | 0.0005 |" in md
    assert "c = 1: 0.800 (CSV 0.794), c = 4: none up to 1.2 (CSV 0.196)" in md
    assert "Within one grid step of the CSV at c in {1}; not at c in {4}. Reproduces it only in part." in md
    assert "At or above our exact alpha_first at c in {1, 4}" in md
    # alpha2 of every CSV row lies below our smallest alpha_last - 3 se (0.1885)
    assert "3 of 3 CSV rows lie outside" in md
    assert "alpha2 below this bound: c in {1, 4}" in md
    assert "carried over to two layers: not computed in this run" in md
    a = analyse_phase_diagram(recs, REF, hyp)
    assert [h.verdict for h in a.hypotheses[:4]] == [DOES_NOT] * 4
    assert a.hypotheses[5].verdict == NOT_COMPUTED
    hyp = _hyp(hyp["read_off"], [_run(4.0, 0.2, [0.1, 0.2]), _run(1.0, 0.3, [0.1, 0.2, 0.3])])
    md = phase_diagram_report(recs, REF, hyp, scale="smoke", v_reg=1e-3, q_max=0.9995)
    assert "runs (alpha grid step 0.1): c = 4: 0.200 (CSV 0.196), c = 1: 0.300 (CSV 0.794)" in md
    assert "Within one grid step of the CSV at c in {4}; not at c in {1}. Reproduces it only in part." in md


def test_one_agreeing_c_is_reproduction_in_part():
    """Our first layer equal to the CSV at c = 1 only (within 3 se), the last layer equal everywhere."""
    recs = _records(first=(0.70, 0.7936 + 0.01, 0.74), last=(0.1864, 0.1436, 0.0827), noiseless=(0.65, 0.65, 0.65))
    a = analyse_phase_diagram(recs, REF, None)
    h1 = a.hypotheses[0]
    assert h1.verdict == IN_PART and h1.agree_c == [1.0] and h1.differ_c == [0.5, 4.0]
    # 4 se away (0.02 with se 0.005) no longer agrees
    recs[1]["alpha_first"] = 0.7936 + 0.021
    assert analyse_phase_diagram(recs, REF, None).hypotheses[0].verdict == DOES_NOT


@pytest.mark.parametrize("factor", [0.8, 1.25])
def test_a_common_alpha_factor_is_recognised(factor):
    """Ours = CSV / factor in both columns: hypothesis 4 (a normalisation of alpha) reproduces the CSV."""
    recs = _records(
        first=tuple(REF["alpha1"][::-1] / factor), last=tuple(REF["alpha2"][::-1] / factor), noiseless=(0.6,) * 3
    )
    h4 = analyse_phase_diagram(recs, REF, None).hypotheses[3]
    assert h4.verdict == REPRODUCES and h4.numbers["factor"] == pytest.approx(factor)
