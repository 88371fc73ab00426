"""P2 Fig. 1 right: phase diagram (our last-layer and first-layer thresholds vs c, with error bars) with the
authors' CSV, and the deviation note results/p2/phase_diagram_deviation.md (with the recomputed hypotheses); the
last-layer threshold implied by the decay of the authors' own SE file BO_2w.csv (c = skip_c), tested by its own
residuals against ours and against the CSV's; Q11's growth at the CSV's first-layer threshold at several c."""

import numpy as np

from smattn.data.spoc import read_csv
from smattn.io import (
    fmt_id,
    read_json,
    save_figure,
    write_csv,
    write_metrics,
    write_text,
)
from smattn.p2.plotting import BLUE, RED, nan_array, setup
from smattn.p2.theory.phase_diagram_report import phase_diagram_report
from smattn.p2.theory.se_file_decay import implied_alpha_last
from smattn.scriptio import run


def _col(rs, key):
    return nan_array([r.get(key) for r in rs])


def main(io):
    plt = setup()
    rs = sorted((read_json(f) for f in io.input.thresholds), key=lambda r: r["c"])
    c = _col(rs, "c")
    a_last, a_last_se = _col(rs, "alpha_last"), _col(rs, "alpha_last_se")
    a_first, a_first_se = _col(rs, "alpha_first"), _col(rs, "alpha_first_se")
    a_free, a_free_se = _col(rs, "alpha_first_noiseless"), _col(rs, "alpha_first_noiseless_se")
    a_lit = _col(rs, "alpha_first_literal")
    ref = read_csv(io.input.ref)
    order = np.argsort(ref["skip"])
    rc, r_first, r_last = ref["skip"][order], ref["alpha1"][order], ref["alpha2"][order]
    v_reg = io.params.v_reg

    fig, ax = plt.subplots(figsize=(3.6, 3.6))
    top = np.nan_to_num(a_first, nan=1.0)
    ax.fill_between(c, 0, a_last, color="grey", alpha=0.1)
    ax.fill_between(c, a_last, top, color=RED, alpha=0.1)
    ax.fill_between(c, top, 1.0, color=BLUE, alpha=0.1)
    ax.errorbar(c, a_last, yerr=a_last_se, color=RED, marker="o", ms=2.5, label=r"$\alpha_{last}$ (ours)")
    ax.errorbar(
        c,
        a_first,
        yerr=a_first_se,
        color=BLUE,
        marker="o",
        ms=2.5,
        label=rf"$\alpha_{{first}}$ (ours, regulariser {v_reg:g})",
    )
    ax.errorbar(
        c,
        a_free,
        yerr=a_free_se,
        color=BLUE,
        lw=0.8,
        ls="-.",
        marker="s",
        ms=1.5,
        label=r"$\alpha_{first}$ noiseless (ours, variant)",
    )
    ax.plot(c, a_lit, color=BLUE, ls=":", label=r"$\alpha_{first}$ literal, 1/6 (ours, variant)")
    # the same threshold by a root solve in alpha of the linearised SE (first_layer_stability), at one c
    st = read_json(io.input.stability)
    ax.errorbar(
        [st["c"]],
        [st["root"]["alpha"]],
        yerr=[st["root"]["alpha_se"]],
        color="k",
        marker="*",
        ms=6,
        ls="none",
        zorder=6,
        label=r"$\alpha_{first}$ by linear stability in $\alpha$ (ours)",
    )
    # the authors' own SE file (c = 1 only): the alpha_last its sub-threshold decay implies
    skip_c = float(io.params.skip_c)
    at_skip = next(r for r in rs if r["c"] == skip_c)
    k_csv = int(np.argmin(np.abs(ref["skip"] - skip_c)))
    bo = read_csv(io.input.ref_bo)
    fit = implied_alpha_last(
        bo["alpha"],
        bo["Q22"],
        level=float(io.params.se_file_level),
        tested={"ours": at_skip["alpha_last"], "csv": float(ref["alpha2"][k_csv]), "bound": 1.0 / 6.0},
    )
    print(
        f"BO_2w.csv decay: alpha_last = {fit['alpha_last']:.4f} ± {fit['alpha_last_se']:.4f}, T = {fit['T']:.1f} "
        f"({fit['n_rows']} rows, residual sd {fit['residual_sd']:.3f} in ln Q22; T at alpha = 0: "
        f"{fit['t_at_zero']:.2f}); "
        + ", ".join(f"{k} {v['alpha_last']:.4f}: F = {v['F']:.3g}, p = {v['p']:.3g}" for k, v in fit["tested"].items()),
        flush=True,
    )
    ax.errorbar(
        [skip_c],
        [fit["alpha_last"]],
        yerr=[fit["alpha_last_se"]],
        color=RED,
        marker="D",
        mfc="none",
        ms=4,
        ls="none",
        zorder=6,
        label=r"$\alpha_{last}$ implied by BO_2w.csv's decay",
    )
    ax.axhline(1 / 6, color="k", lw=0.5, ls="-", alpha=0.5)
    ax.text(3.95, 1 / 6 + 0.01, r"$1/6$ bound", ha="right", fontsize=6)
    ax.plot(rc, r_last, color=RED, lw=0.7, ls="--", label="authors' CSV (alpha2)")
    ax.plot(rc, r_first, color=BLUE, lw=0.7, ls="--", label="authors' CSV (alpha1)")
    ax.set_xlim(0, 4)
    ax.set_ylim(0, 1)
    ax.set_xlabel("skip strength $c$")
    ax.set_ylabel(r"$\alpha$")
    # below the panel: inside, it covered the first-layer curves
    ax.legend(frameon=False, fontsize=5.5, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
    fig.tight_layout()
    save_figure(fig, io.output.png, io.output.pdf)

    keys = (
        "c",
        "alpha_last",
        "alpha_last_se",
        "alpha_last_fine_grid",
        "alpha_first",
        "alpha_first_se",
        "alpha_first_grid_shift",
        "alpha_first_q2",
        "alpha_first_noiseless",
        "alpha_first_noiseless_se",
        "alpha_first_noiseless_q2",
        "alpha_first_literal",
        "alpha_first_literal_se",
    )
    rows = [tuple(np.nan if r.get(k) is None else r[k] for k in keys) + (r["K"][0][0], r["K"][1][1]) for r in rs]
    write_csv(io.output.csv, list(keys) + ["K11", "K22"], rows)
    m = {}
    for r in rs:
        cid = fmt_id(r["c"])
        m[f"p2.L2.alpha_last[c={cid}]"] = r["alpha_last"]
        m[f"p2.L2.alpha_last_se[c={cid}]"] = r["alpha_last_se"]
        for key in ("alpha_first", "alpha_first_noiseless"):
            if r[key] is not None:
                m[f"p2.L2.{key}[c={cid}]"] = r[key]
                m[f"p2.L2.{key}_se[c={cid}]"] = r[f"{key}_se"]
        m[f"p2.L2.alpha_first_literal[c={cid}]"] = r["alpha_first_literal"]
        m[f"p2.L2.alpha_first_literal_se[c={cid}]"] = r["alpha_first_literal_se"]
    cid = fmt_id(st["c"])
    m[f"p2.L2.alpha_first_stability[c={cid}]"] = st["root"]["alpha"]
    m[f"p2.L2.alpha_first_stability_se[c={cid}]"] = st["root"]["alpha_se"]
    at_c = next(r for r in rs if r["c"] == st["c"])  # the threshold record at the same c (independent draws)
    if at_c["alpha_first"] is not None:
        m[f"p2.L2.alpha_first_stability_gap[c={cid}]"] = st["root"]["alpha"] - at_c["alpha_first"]
        m[f"p2.L2.alpha_first_stability_gap_se[c={cid}]"] = float(
            np.hypot(st["root"]["alpha_se"], at_c["alpha_first_se"])
        )
    m[f"p2.L2.phase2_lambda2[c={cid}]"] = st["root"]["lambda2"]
    for g in st["growth"].values():
        aid = fmt_id(round(g["alpha"], 4))
        m[f"p2.L2.first_layer_growth[alpha={aid}]"] = g["lambda1"] - 1.0
        m[f"p2.L2.first_layer_growth_se[alpha={aid}]"] = g["lambda1_se"]
        if g["iterations"] is not None:  # None (infinite) where the branch is still stable
            m[f"p2.L2.readoff_iterations[alpha={aid}]"] = g["iterations"]
    for g in st["csv_growth"]:  # at alpha_critical.csv's own alpha1
        gid = fmt_id(g["c"])
        m[f"p2.L2.csv_alpha_first_growth[c={gid}]"] = g["lambda1"] - 1.0
        m[f"p2.L2.csv_alpha_first_growth_se[c={gid}]"] = g["lambda1_se"]
    sid = fmt_id(skip_c)
    m[f"p2.L2.se_file_alpha_last[c={sid}]"] = fit["alpha_last"]
    m[f"p2.L2.se_file_alpha_last_se[c={sid}]"] = fit["alpha_last_se"]
    m[f"p2.L2.se_file_iterations[c={sid}]"] = fit["T"]
    m[f"p2.L2.se_file_iterations_at_zero[c={sid}]"] = fit["t_at_zero"]
    m[f"p2.L2.se_file_rows[c={sid}]"] = fit["n_rows"]
    m[f"p2.L2.se_file_residual_sd[c={sid}]"] = fit["residual_sd"]
    for name, t in fit["tested"].items():
        m[f"p2.L2.se_file_p[{name}]"] = t["p"]
        m[f"p2.L2.se_file_F[{name}]"] = t["F"]
    m["p2.L2.readoff_start"] = st["start"]
    m["p2.L2.readoff_level"] = st["level"]
    write_metrics(io.output.metrics, m)

    hyp = read_json(io.input.hypotheses)
    write_text(
        io.output.md, phase_diagram_report(rs, ref, hyp, scale=io.params.scale, v_reg=v_reg, q_max=io.params.q_max)
    )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
