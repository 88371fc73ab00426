"""The phase-diagram deviation note (markdown): our thresholds against the authors' ``alpha_critical.csv`` and the
recomputed hypotheses on how its first-layer column could have been obtained.

Every number and every comparison in the note is computed from its inputs (the per-c threshold records and the
authors' CSV), so the text cannot go stale when the computation changes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

__all__ = ["JENSEN_BOUND", "phase_diagram_report"]

# alpha_last >= 1/6 for every c: K_aa <= E||z z^T - I||_F^2 = T^2 + T = 6 for T = 2 tokens (Jensen)
JENSEN_BOUND = 1.0 / 6.0


def _nan(v) -> float:
    return float("nan") if v is None else float(v)


def _fmt_cs(cs) -> str:
    return "c in {" + ", ".join(f"{c:g}" for c in cs) + "}" if len(cs) else "none"


def _ratio_spread(num, den) -> str:
    r = np.asarray(num) / np.asarray(den)
    r = r[np.isfinite(r)]
    return f"{r.min():.3f} to {r.max():.3f}" if r.size else "n/a"


def phase_diagram_report(
    records: Sequence[Mapping], ref: Mapping, hyp: Mapping | None = None, *, scale: str, v_reg: float, q_max: float
) -> str:
    """Markdown note comparing our thresholds with the authors' CSV and testing how its alpha1 could arise.

    records: one mapping per skip strength c as written by scripts/p2_theory_thresholds.py (keys c, alpha_last,
    alpha_last_se, alpha_last_grid_shift, alpha_first, alpha_first_se, alpha_first_q2, alpha_first_grid_shift,
    alpha_first_noiseless, alpha_first_noiseless_se, alpha_first_literal; None where not found).
    ref: columns ``skip``, ``alpha1``, ``alpha2`` of the authors' CSV (arrays of equal length).
    hyp: the short-SE-run recomputation (scripts/p2_theory_pd_hypotheses.py), or None.
    """
    rs = sorted(records, key=lambda r: r["c"])
    ref_map = {
        float(s): (float(a1), float(a2)) for s, a1, a2 in zip(ref["skip"], ref["alpha1"], ref["alpha2"], strict=True)
    }

    def col(key):
        return np.array([_nan(r.get(key)) for r in rs])

    c = col("c")
    a_last, a_last_se, a_last_grid = col("alpha_last"), col("alpha_last_se"), col("alpha_last_grid_shift")
    a_first, a_first_se, q_first = col("alpha_first"), col("alpha_first_se"), col("alpha_first_q2")
    a_first_grid = col("alpha_first_grid_shift")
    a_free, a_free_se = col("alpha_first_noiseless"), col("alpha_first_noiseless_se")
    a_lit = col("alpha_first_literal")
    csv1 = np.array([ref_map.get(float(x), (np.nan, np.nan))[0] for x in c])
    csv2 = np.array([ref_map.get(float(x), (np.nan, np.nan))[1] for x in c])

    lines = [
        "# P2 phase diagram: our thresholds vs the authors' `alpha_critical.csv`",
        "",
        (
            f"Scale: `{scale}`; alpha_first under the paper's definition: the self-consistent threshold with the "
            f"reference code's regulariser v_reg = {v_reg:g} (phase-II branch scanned up to q2 = {q_max:g}); "
            "variants: noiseless (v_reg = 0) and literal (last layer known exactly). alpha_last = 1/K22 at Q = 0. "
            "Errors: randomised quasi-Monte-Carlo standard errors (spread of independent scramblings); `grid` is "
            "the move of the threshold under a 1.5x finer quadrature on the same draws."
        ),
        "",
        (
            "| c | alpha_last | ± se | grid | CSV alpha2 | alpha_first | ± se | grid | q2 at alpha_first | "
            "noiseless | ± se | literal | CSV alpha1 |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for i in range(len(rs)):
        lines.append(
            f"| {c[i]:g} | {a_last[i]:.4f} | {a_last_se[i]:.4f} | {a_last_grid[i]:+.4f} | {csv2[i]:.4f} | "
            f"{a_first[i]:.4f} | {a_first_se[i]:.4f} | {a_first_grid[i]:+.4f} | {q_first[i]:.5f} | "
            f"{a_free[i]:.4f} | {a_free_se[i]:.4f} | {a_lit[i]:.4f} | {csv1[i]:.4f} |"
        )

    big = int(np.argmax(c))
    a2b = ref_map.get(float(c[big]), (np.nan, np.nan))[1]
    csv_below = sorted(s for s, (_, a2) in ref_map.items() if a2 < JENSEN_BOUND)
    ours_below = c[a_last + 2.0 * a_last_se < JENSEN_BOUND]
    grid_bad = c[np.abs(a_last_grid) > np.maximum(2.0 * a_last_se, 1e-3)]
    csv_skip = np.array(sorted(ref_map))
    csv_a1 = np.array([ref_map[s][0] for s in csv_skip])
    k_max = int(np.argmax(csv_a1))
    fin = np.isfinite(a_first)
    lines += [
        "",
        "## Last layer",
        "",
        (
            f"Jensen's inequality bounds K_aa by E||z z^T - I||_F^2 = 6, so alpha_last >= 1/6 = {JENSEN_BOUND:.4f} "
            f"at every c. Rows of the CSV with alpha2 below this bound: {_fmt_cs(csv_below)}. Our rows more than "
            f"two standard errors below it: {_fmt_cs(ours_below)}. At c = {c[big]:g} the CSV's alpha2 = "
            f"{a2b:.4f} = 1/{1 / a2b:.2f}, {a2b / a_last[big]:.2f} x ours ({a_last[big]:.4f}). Rows whose "
            f"quadrature check moves alpha_last by more than max(2 se, 0.001): {_fmt_cs(grid_bad)} (below c = 0.05 "
            "the first-layer grid is the rotated sinh grid that resolves the 1/det A_c ridge on z11 = z12)."
        ),
        "",
    ]
    lines += [
        "## First layer: which hypotheses reproduce the CSV's shape",
        "",
        (
            f"The CSV's alpha1 rises to {csv_a1[k_max]:.4f} at c = {csv_skip[k_max]:g} and falls to "
            f"{csv_a1[-1]:.4f} at c = {csv_skip[-1]:g}. Recomputed here:"
        ),
        "",
    ]
    if fin.any():
        lo, hi = np.nanmin(a_first[fin]), np.nanmax(a_first[fin])
        lo0, hi0 = np.nanmin(a_free), np.nanmax(a_free)
        k4 = int(np.argmax(c))
        trend = "rises" if a_first[k4] > a_first[int(np.argmin(np.abs(c - 1.0)))] else "falls"
        lines.append(
            f"1. **Paper definition (regularised), exact SE.** alpha_first between {lo:.4f} and {hi:.4f} over the "
            f"computed c; from c = 1 to c = {c[k4]:g} it {trend} ({a_first[int(np.argmin(np.abs(c - 1.0)))]:.4f} "
            f"-> {a_first[k4]:.4f} ± {a_first_se[k4]:.4f}) where the CSV falls to {csv1[k4]:.4f}. Noiseless "
            f"variant: between {lo0:.4f} and {hi0:.4f}. Does not reproduce the shape."
        )
        outside = csv_a1[(csv_a1 < min(lo, lo0)) | (csv_a1 > max(hi, hi0))]
        lines.append(
            f"2. **Another normalisation of c** (e.g. I + c S instead of c I + S, which is c (I + S/c): an overall "
            "output scale, which a noiseless channel ignores, times c -> 1/c). Any reparametrisation of c only "
            f"moves our values along c; {len(outside)} of {len(csv_a1)} CSV values lie outside the range of ours "
            f"(regularised and noiseless, {min(lo, lo0):.4f} to {max(hi, hi0):.4f}), so no such normalisation "
            "reproduces the CSV."
        )
        lines.append(
            "3. **Another normalisation of the output or of the skip matrix by a c-dependent constant** (e.g. "
            "(c I + S)/(1 + c)): leaves the observation's information, hence both noiseless thresholds, unchanged "
            "(the regulariser acts on pre-activations, not on the output). Does not reproduce it."
        )
        lines.append(
            f"4. **Another normalisation of alpha** would scale both columns by one factor at every c: CSV/ours is "
            f"{_ratio_spread(csv1, a_first)} for alpha1 and {_ratio_spread(csv2, a_last)} for alpha2. Not a "
            "common factor; does not reproduce it."
        )

    def _read(r):
        a = _nan(r["alpha"])
        got = f"{a:.3f}" if np.isfinite(a) else f"none up to {max(r['alphas']):g}"
        return f"c = {r['c']:g}: {got} (CSV {ref_map.get(float(r['c']), (np.nan, np.nan))[0]:.3f})"

    if hyp is not None and hyp.get("read_off"):
        rows = ", ".join(_read(r) for r in hyp["read_off"])
        ro = hyp["read_off"][0]
        step = float(hyp["alpha_step"])
        agree, differ, later = [], [], []
        for r in hyp["read_off"]:
            a, a_csv = _nan(r["alpha"]), ref_map.get(float(r["c"]), (np.nan, np.nan))[0]
            (agree if np.isfinite(a) and abs(a - a_csv) <= step else differ).append(float(r["c"]))
            k = np.nonzero(np.isclose(c, float(r["c"])))[0]
            if k.size and (not np.isfinite(a) or a >= a_first[k[0]]):
                later.append(float(r["c"]))
        lines.append(
            f"5. **Thresholds read off short, unconverged Monte-Carlo SE runs** (the reference procedure: "
            f"{ro['n_samples']} fresh draws per iteration, {ro['iterations']} iterations from 0.05 I, damping 0.8, "
            f"v_reg = {hyp['v_reg']:g}; alpha grid step {step:g}; read where Q11 first exceeds "
            f"{ro['level']:g}): {rows}. Within one grid step of the CSV at {_fmt_cs(agree)}; not at "
            f"{_fmt_cs(differ)}. At or above our exact alpha_first at {_fmt_cs(later)}: an unconverged run reads "
            "the first layer late (Q11 must grow back from ~0 after the last layer is learned), so it cannot "
            "produce the CSV's low values at large c."
        )
    else:
        lines.append("5. **Thresholds read off short Monte-Carlo SE runs**: not computed in this run.")
    if hyp is not None and hyp.get("read_off_authors"):
        runs_au = hyp["read_off_authors"]
        step_au = float(hyp["authors_alpha_step"])
        agree_au, differ_au = [], []
        for r in runs_au:
            a, a_csv = _nan(r["alpha"]), ref_map.get(float(r["c"]), (np.nan, np.nan))[0]
            (agree_au if np.isfinite(a) and abs(a - a_csv) <= step_au else differ_au).append(float(r["c"]))
        verdict = (
            "Reproduces the CSV at every tested c."
            if not differ_au
            else ("Does not reproduce the CSV's shape." if not agree_au else "Reproduces it only in part.")
        )
        lines.append(
            "6. **The authors' box Monte-Carlo estimator with its floor on the unnormalised partition function**, "
            "carried over to two layers (uniform points in the box of half-width 3 (V^-1/2)_11 centred at 0, "
            "10^4 points for Z_out and an independent 10^4 for the numerator, floor 1e-5), in the same short "
            f"runs (alpha grid step {step_au:g}): {', '.join(_read(r) for r in runs_au)}. Within one grid step of the "
            f"CSV at {_fmt_cs(agree_au)}; not at {_fmt_cs(differ_au)}. {verdict}"
        )
    else:
        lines.append(
            "6. **The authors' box Monte-Carlo estimator with its floor on the unnormalised partition function**, "
            "carried over to two layers: not computed in this run."
        )
    lines.append("")
    return "\n".join(lines) + "\n"
