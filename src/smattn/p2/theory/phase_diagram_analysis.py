"""Our thresholds against the authors' ``alpha_critical.csv``: the numbers and verdicts of the phase-diagram
deviation note (rendered as Markdown by :mod:`.phase_diagram_report`).

Each hypothesis on how the CSV's columns could have been obtained gets a verdict computed from the inputs:
``REPRODUCES`` (every tested c agrees), ``IN_PART`` (some do), ``DOES_NOT`` (none does) or ``NOT_COMPUTED``. Agreement
of two thresholds means a difference within ``K_SIGMA`` combined standard errors (the ledger's constant) plus the
move under a finer quadrature; a short-run read-off agrees within one step of its alpha grid.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from smattn.ledger import K_SIGMA

__all__ = [
    "JENSEN_BOUND",
    "REPRODUCES",
    "IN_PART",
    "DOES_NOT",
    "NOT_COMPUTED",
    "Hypothesis",
    "PhaseDiagramAnalysis",
    "verdict",
    "analyse_phase_diagram",
]

# alpha_last >= 1/6 for every c: K_aa <= E||z z^T - I||_F^2 = T^2 + T = 6 for T = 2 tokens (Jensen)
JENSEN_BOUND = 1.0 / 6.0
REPRODUCES, IN_PART, DOES_NOT, NOT_COMPUTED = "reproduces", "reproduces in part", "does not reproduce", "not computed"


def verdict(agree: Sequence[bool]) -> str:
    """REPRODUCES if every entry is True, DOES_NOT if none is, IN_PART otherwise (NOT_COMPUTED when empty)."""
    agree = list(agree)
    if not agree:
        return NOT_COMPUTED
    return REPRODUCES if all(agree) else (DOES_NOT if not any(agree) else IN_PART)


@dataclass
class Hypothesis:
    """One tested explanation of the CSV: its verdict, the c where it agrees / disagrees, and its numbers."""

    name: str
    verdict: str
    agree_c: list = field(default_factory=list)
    differ_c: list = field(default_factory=list)
    numbers: dict = field(default_factory=dict)


@dataclass
class PhaseDiagramAnalysis:
    """Per-c table (arrays over the sorted c), the last-layer facts, the CSV ({c: (alpha1, alpha2)}) and its shape,
    and the hypotheses 1-6, in note order."""

    table: dict
    last_layer: dict
    csv: dict
    csv_shape: dict
    hypotheses: list


def _nan(v) -> float:
    return float("nan") if v is None else float(v)


def _agree(ours, se, shift, theirs) -> np.ndarray:
    """|ours - theirs| <= K_SIGMA se + |quadrature shift| elementwise (nan never agrees)."""
    tol = K_SIGMA * np.nan_to_num(se, nan=0.0) + np.abs(np.nan_to_num(shift, nan=0.0))
    return np.abs(np.asarray(ours) - np.asarray(theirs)) <= tol


def _short_runs(name: str, runs, step: float, ref_map: dict, a_first: dict) -> Hypothesis:
    agree, differ, later = [], [], []
    for r in runs:
        a, a_csv = _nan(r["alpha"]), ref_map.get(float(r["c"]), (np.nan, np.nan))[0]
        (agree if np.isfinite(a) and abs(a - a_csv) <= step else differ).append(float(r["c"]))
        ours = a_first.get(float(r["c"]))
        if ours is not None and (not np.isfinite(a) or a >= ours):
            later.append(float(r["c"]))
    return Hypothesis(
        name,
        verdict([float(r["c"]) in agree for r in runs]),
        agree,
        differ,
        {"runs": list(runs), "step": step, "later_than_ours": later},
    )


def analyse_phase_diagram(records: Sequence[Mapping], ref: Mapping, hyp: Mapping | None = None) -> PhaseDiagramAnalysis:
    """Compare the per-c threshold records with the CSV and decide the hypotheses.

    records: one mapping per skip strength c as written by scripts/p2_theory_thresholds.py (keys c, alpha_last,
    alpha_last_se, alpha_last_grid_shift, alpha_first, alpha_first_se, alpha_first_q2, alpha_first_grid_shift,
    alpha_first_noiseless, alpha_first_noiseless_se, alpha_first_literal; None where not found).
    ref: columns ``skip``, ``alpha1`` (first layer), ``alpha2`` (last layer) of the CSV (equal-length arrays).
    hyp: the short-SE-run recomputation (scripts/p2_theory_pd_hypotheses.py), or None.
    """
    rs = sorted(records, key=lambda r: r["c"])
    ref_map = {
        float(s): (float(a1), float(a2)) for s, a1, a2 in zip(ref["skip"], ref["alpha1"], ref["alpha2"], strict=True)
    }

    def col(key):
        return np.array([_nan(r.get(key)) for r in rs])

    keys = (
        "c alpha_last alpha_last_se alpha_last_grid_shift alpha_first alpha_first_se alpha_first_q2 "
        "alpha_first_grid_shift alpha_first_noiseless alpha_first_noiseless_se alpha_first_literal"
    ).split()
    t = {k: col(k) for k in keys}
    c = t["c"]
    t["csv_alpha1"] = np.array([ref_map.get(float(x), (np.nan, np.nan))[0] for x in c])
    t["csv_alpha2"] = np.array([ref_map.get(float(x), (np.nan, np.nan))[1] for x in c])

    big = int(np.argmax(c))
    a2b = ref_map.get(float(c[big]), (np.nan, np.nan))[1]
    last = {
        "csv_below": sorted(s for s, (_, a2) in ref_map.items() if a2 < JENSEN_BOUND),
        "ours_below": [float(x) for x in c[t["alpha_last"] + K_SIGMA * t["alpha_last_se"] < JENSEN_BOUND]],
        "grid_bad": [
            float(x) for x in c[np.abs(t["alpha_last_grid_shift"]) > np.maximum(2.0 * t["alpha_last_se"], 1e-3)]
        ],
        "c_max": float(c[big]),
        "csv_at_c_max": a2b,
        "ours_at_c_max": float(t["alpha_last"][big]),
    }
    csv_skip = np.array(sorted(ref_map))
    csv_a1 = np.array([ref_map[s][0] for s in csv_skip])
    csv_a2 = np.array([ref_map[s][1] for s in csv_skip])
    k_max = int(np.argmax(csv_a1))
    shape = {"peak": float(csv_a1[k_max]), "c_peak": float(csv_skip[k_max]), "end": float(csv_a1[-1])}
    shape["c_end"] = float(csv_skip[-1])

    hyps = []
    fin = np.isfinite(t["alpha_first"]) & np.isfinite(t["csv_alpha1"])
    a_first, a_free = t["alpha_first"], t["alpha_first_noiseless"]
    # 1: the paper's definition, exact SE: both columns must agree at every c
    ok1 = _agree(a_first, t["alpha_first_se"], t["alpha_first_grid_shift"], t["csv_alpha1"])
    ok1 &= _agree(t["alpha_last"], t["alpha_last_se"], t["alpha_last_grid_shift"], t["csv_alpha2"])
    i1 = int(np.argmin(np.abs(c - 1.0)))
    hyps.append(
        Hypothesis(
            "paper definition",
            verdict(ok1[fin]),
            [float(x) for x in c[fin & ok1]],
            [float(x) for x in c[fin & ~ok1]],
            {
                "lo": float(np.nanmin(a_first)) if fin.any() else np.nan,
                "hi": float(np.nanmax(a_first)) if fin.any() else np.nan,
                "lo0": float(np.nanmin(a_free)) if np.isfinite(a_free).any() else np.nan,
                "hi0": float(np.nanmax(a_free)) if np.isfinite(a_free).any() else np.nan,
                "c1": float(c[i1]),
                "at_c1": float(a_first[i1]),
                "at_c_max": float(a_first[big]),
                "se_at_c_max": float(t["alpha_first_se"][big]),
                "csv_at_c_max": float(t["csv_alpha1"][big]),
                "trend": "rises" if a_first[big] > a_first[i1] else "falls",
            },
        )
    )
    # 2: a reparametrisation of c only moves our values along c: every CSV value (both columns) must lie within the
    # range of ours (regularised and noiseless first layer; last layer), up to K_SIGMA standard errors
    span = np.concatenate([a_first, a_free])
    span_se = np.concatenate([t["alpha_first_se"], t["alpha_first_noiseless_se"]])
    ok_s = np.isfinite(span)
    lo1 = np.min(span[ok_s] - K_SIGMA * np.nan_to_num(span_se[ok_s])) if ok_s.any() else np.nan
    hi1 = np.max(span[ok_s] + K_SIGMA * np.nan_to_num(span_se[ok_s])) if ok_s.any() else np.nan
    lo2 = np.nanmin(t["alpha_last"] - K_SIGMA * t["alpha_last_se"])
    hi2 = np.nanmax(t["alpha_last"] + K_SIGMA * t["alpha_last_se"])
    inside = ((csv_a1 >= lo1) & (csv_a1 <= hi1)) & ((csv_a2 >= lo2) & (csv_a2 <= hi2))
    hyps.append(
        Hypothesis(
            "normalisation of c",
            REPRODUCES if inside.all() else DOES_NOT,
            [float(x) for x in csv_skip[inside]],
            [float(x) for x in csv_skip[~inside]],
            {"outside": int(np.sum(~inside)), "n": len(csv_skip), "lo": lo1, "hi": hi1, "lo2": lo2, "hi2": hi2},
        )
    )
    # 3: a c-dependent output scale leaves the noiseless thresholds unchanged: they must equal the CSV
    fin0 = np.isfinite(a_free) & np.isfinite(t["csv_alpha1"])
    ok3 = _agree(a_free, t["alpha_first_noiseless_se"], 0.0, t["csv_alpha1"])
    ok3 &= _agree(t["alpha_last"], t["alpha_last_se"], t["alpha_last_grid_shift"], t["csv_alpha2"])
    hyps.append(
        Hypothesis(
            "normalisation of the output",
            verdict(ok3[fin0]),
            [float(x) for x in c[fin0 & ok3]],
            [float(x) for x in c[fin0 & ~ok3]],
        )  # fmt: skip
    )
    # 4: a normalisation of alpha scales both columns by one factor: every ratio CSV/ours must agree with the
    # pooled (inverse-variance weighted) factor within K_SIGMA of its standard error
    ratios = np.concatenate([t["csv_alpha1"] / a_first, t["csv_alpha2"] / t["alpha_last"]])
    a_last = t["alpha_last"]
    r_se = np.concatenate(
        [t["csv_alpha1"] * t["alpha_first_se"] / a_first**2, t["csv_alpha2"] * t["alpha_last_se"] / a_last**2]
    )
    ok_r = np.isfinite(ratios)
    w = 1.0 / np.maximum(r_se[ok_r], 1e-12) ** 2
    factor = float(np.sum(w * ratios[ok_r]) / np.sum(w)) if ok_r.any() else np.nan
    # a c agrees when both of its columns agree with the common factor
    agree_r = (np.abs(ratios - factor) <= K_SIGMA * r_se).reshape(2, -1).all(axis=0)
    ok_c = ok_r.reshape(2, -1).all(axis=0)
    hyps.append(
        Hypothesis(
            "normalisation of alpha",
            verdict(agree_r[ok_c]),
            [float(x) for x in c[ok_c & agree_r]],
            [float(x) for x in c[ok_c & ~agree_r]],
            {
                "factor": factor,
                "first": _spread(t["csv_alpha1"] / a_first),
                "last": _spread(t["csv_alpha2"] / t["alpha_last"]),
            },
        )
    )
    first_by_c = {float(x): float(a) for x, a in zip(c, a_first, strict=True) if np.isfinite(a)}
    if hyp is not None and hyp.get("read_off"):
        h5 = _short_runs("short runs", hyp["read_off"], float(hyp["alpha_step"]), ref_map, first_by_c)
        h5.numbers.update(v_reg=hyp["v_reg"])
    else:
        h5 = Hypothesis("short runs", NOT_COMPUTED)
    hyps.append(h5)
    if hyp is not None and hyp.get("read_off_authors"):
        h6 = _short_runs(
            "authors' estimator", hyp["read_off_authors"], float(hyp["authors_alpha_step"]), ref_map, first_by_c
        )
    else:
        h6 = Hypothesis("authors' estimator", NOT_COMPUTED)
    hyps.append(h6)
    return PhaseDiagramAnalysis(table=t, last_layer=last, csv=ref_map, csv_shape=shape, hypotheses=hyps)


def _spread(r) -> tuple:
    r = np.asarray(r)
    r = r[np.isfinite(r)]
    return (float(r.min()), float(r.max())) if r.size else (np.nan, np.nan)
