"""P2 Fig. 1 left: SE overlaps, regimes at our thresholds, GAMP crosses, BO and plug-in errors; the authors'
published curves are drawn as thin dashed lines.

GAMP appears twice: the project's variant over alpha (damped Onsager term, data with the state evolution's noise;
compared with our state evolution) and the authors' algorithm (their Onsager form, noiseless data, the Fig. 2 left
runs) at alpha = 1.2, where the runs that learned the first layer and those that did not are kept apart.
"""

import json

import numpy as np

from smattn.data.published import P2_AUTHORS_ERROR_SAMPLES
from smattn.data.spoc import read_csv
from smattn.io import fmt_id, read_json, save_figure, write_csv, write_metrics
from smattn.p2.plotting import BLUE, DBLUE, DRED, RED, long_rows, mark_unconverged, setup
from smattn.p2.theory.gamp_metrics import learned_final_overlaps
from smattn.p2.theory.overlap_curves import ERROR_ALPHAS_L2, METRIC_ALPHAS_L2
from smattn.p2.theory.paper_scatter import paper_se_metrics
from smattn.scriptio import run


def _at(alphas, values, a):
    i = int(np.argmin(np.abs(np.asarray(alphas) - a)))
    if abs(alphas[i] - a) > 1e-8:
        raise ValueError(f"alpha {a} is not on the computed grid")
    return float(values[i])


def main(io):
    plt = setup()
    r = read_json(io.input.curve)
    al = np.array(r["alpha"])
    q11, q22 = np.array(r["q11"]), np.array(r["q22"])
    gamp = [np.load(f) for f in io.input.gamp]
    g_alpha = np.array([float(g["alpha"]) for g in gamp])
    g_m11 = np.array([np.abs(g["M"][:, -1, 0, 0]) for g in gamp], dtype=object)
    g_m22 = np.array([np.abs(g["M"][:, -1, 1, 1]) for g in gamp], dtype=object)
    g_err = [g["test_error"][:, -1] for g in gamp]
    g_form = str(gamp[0]["onsager"])
    # the authors' algorithm at alpha = 1.2 (the Fig. 2 left runs): final overlaps of the runs that learned the
    # first layer, and the first-layer overlap of those that did not
    au_runs = [np.load(f) for f in io.input.gamp_authors]
    au_cfg = json.loads(str(au_runs[0]["config"]))
    if abs(au_cfg["alpha"] - 1.2) > 1e-9:
        raise ValueError(f"the authors' GAMP runs are at alpha = {au_cfg['alpha']}, the claims need 1.2")
    aut = learned_final_overlaps(np.stack([r["M"][-1] for r in au_runs]), np.stack([r["Q"][-1] for r in au_runs]))
    au_trapped = np.array([abs(r["M"][-1, 0, 0]) for r in au_runs])[~aut["learned_mask"]]
    au_name = "authors' algorithm" if au_cfg["onsager"] == "latest" else "Fig. 2 left runs"
    ref_q = read_csv(io.input.ref_bo)
    ref_amp = read_csv(io.input.ref_amp)
    ref_e = read_csv(io.input.ref_err)
    ref_e1 = read_csv(io.input.ref_err_one)
    ref_eamp = read_csv(io.input.ref_err_amp)
    # thresholds as in Fig. 1 right (the paper's definition: regularised self-consistent alpha_first)
    th = read_json(io.input.thresholds)
    a_last, a_last_se = th["alpha_last"], th["alpha_last_se"]
    a_first = th["alpha_first"] if th["alpha_first"] is not None else 1.6  # no first-layer onset on the grid
    a_first_se = th["alpha_first_se"] if th["alpha_first"] is not None else float("nan")

    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(7.478, 3.1))
    ax.axvspan(0, a_last, color="grey", alpha=0.1)
    ax.axvspan(a_last, a_first, color=RED, alpha=0.1)
    ax.axvspan(a_first, 1.6, color=BLUE, alpha=0.1)
    for a in (a_last, a_first):
        ax.axvline(a, color="k", lw=0.6, ls=":")
    if th["alpha_first_noiseless"] is not None:
        ax.axvline(
            th["alpha_first_noiseless"],
            color=BLUE,
            lw=0.6,
            ls="-.",
            label=rf"$\alpha_{{first}}$ noiseless = {th['alpha_first_noiseless']:.3f} (variant)",
        )
    ax.axvline(
        th["alpha_first_literal"],
        color=BLUE,
        lw=0.6,
        ls=(0, (1, 2)),
        label=rf"$\alpha_{{first}}$ literal = {th['alpha_first_literal']:.3f} (variant)",
    )
    ax.plot(al, q11, color=BLUE, label=r"$Q_{11}$ (SE, ours)")
    ax.plot(al, q22, color=RED, label=r"$Q_{22}$ (SE, ours)")
    for q in (q11, q22):
        mark_unconverged(ax, al, q, r["converged"])
    ax.plot(ref_q["alpha"], ref_q["Q11"], color=BLUE, lw=0.7, ls="--", label="authors' SE")
    ax.plot(ref_q["alpha"], ref_q["Q22"], color=RED, lw=0.7, ls="--")
    ax.errorbar(
        g_alpha,
        [m.mean() for m in g_m11],
        yerr=[m.std() for m in g_m11],
        fmt="x",
        color=DBLUE,
        ms=4,
        label=f"GAMP $|M_{{11}}|$, project's variant (d={int(gamp[0]['d'])})",
    )
    ax.errorbar(
        g_alpha,
        [m.mean() for m in g_m22],
        yerr=[m.std() for m in g_m22],
        fmt="x",
        color=DRED,
        ms=4,
        label=f"GAMP $|M_{{22}}|$, project's variant ({g_form} Onsager)",
    )
    k_au, n_au = int(aut["learned"]), int(aut["runs"])
    au_label = f"GAMP, {au_name} (d={au_cfg['d']}): the {k_au}/{n_au} runs that learned layer 1"
    for k, col in (("11", DBLUE), ("22", DRED)) if k_au else ():
        ax.errorbar(
            [1.2],
            [aut[f"m{k}"]],
            yerr=[aut[f"m{k}_sd"]],
            fmt="s",
            mfc="none",
            color=col,
            ms=4,
            label=au_label if k == "11" else None,
        )
    if au_trapped.size:
        ax.plot(
            np.full(au_trapped.size, 1.2),
            au_trapped,
            "v",
            color=DBLUE,
            mfc="none",
            ms=3,
            label=f"{au_name} (d={au_cfg['d']}): $|M_{{11}}|$ of the {n_au - k_au}/{n_au} that did not",
        )
    ax.plot(ref_amp["alpha"], ref_amp["Q11_mean"], "+", color="grey", ms=3, label="authors' GAMP (AMP_2w.csv)")
    ax.plot(ref_amp["alpha"], ref_amp["Q22_mean"], "+", color="grey", ms=3)
    ax.set_xlim(0, 1.6)
    ax.set_ylim(-0.05, 1.15)
    ax.set_xlabel(r"Sample complexity $\alpha=N/D$")
    ax.set_ylabel("Overlap")
    # below the panel: inside, it covered the rising Q11 branch and the GAMP crosses
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=2, frameon=False, fontsize=5.5)
    ax.set_title(
        rf"$c={r['params']['skip_c']:g}$: $\alpha_{{last}}={a_last:.4f}\pm{a_last_se:.4f}$, "
        rf"$\alpha_{{first}}={a_first:.3f}\pm{a_first_se:.3f}$",
        fontsize=8,
    )

    ax2.errorbar(al, r["error_bo"], yerr=r["error_bo_se"], color="k", label="Bayes-optimal (Eq. 11)")
    ax2.errorbar(al, r["error_plugin"], yerr=r["error_plugin_se"], color="k", ls="-.", lw=0.9, label="plug-in, full")
    ax2.errorbar(
        al, r["error_one_layer"], yerr=r["error_one_layer_se"], color="grey", ls="--", label="plug-in, last layer only"
    )
    ax2.errorbar(
        g_alpha,
        [e.mean() for e in g_err],
        yerr=[e.std() for e in g_err],
        fmt="x",
        color="k",
        ms=4,
        label="GAMP plug-in, project's variant",
    )
    ax2.plot(ref_e["alpha"], ref_e["gen_error"], color="C1", lw=0.7, ls="--", label="authors' plug-in")
    ax2.plot(ref_e1["alpha"], ref_e1["gen_error"], color="C1", lw=0.7, ls=":", label="authors' one-layer")
    ax2.plot(ref_eamp["alpha"], ref_eamp["gen_error_mean"], "+", color="C1", ms=3, label="authors' GAMP")
    ax2.set_yscale("log")
    ax2.set_xlim(0, 1.6)
    ax2.set_xlabel(r"Sample complexity $\alpha=N/D$")
    ax2.set_ylabel("Prediction error")
    ax2.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=2, frameon=False, fontsize=6)
    fig.tight_layout()
    fig.subplots_adjust(bottom=0.4)
    save_figure(fig, io.output.png, io.output.pdf)

    rows = (
        long_rows("Q11_se", al, q11)
        + long_rows("Q22_se", al, q22)
        + long_rows("error_bo", al, r["error_bo"], r["error_bo_se"])
        + long_rows("error_plugin", al, r["error_plugin"], r["error_plugin_se"])
        + long_rows("error_plugin_one_layer", al, r["error_one_layer"], r["error_one_layer_se"])
        + long_rows("gamp_abs_M11", g_alpha, [m.mean() for m in g_m11], [m.std() for m in g_m11])
        + long_rows("gamp_abs_M22", g_alpha, [m.mean() for m in g_m22], [m.std() for m in g_m22])
        + long_rows("gamp_plugin_error", g_alpha, [e.mean() for e in g_err], [e.std() for e in g_err])
        + long_rows("gamp_authors_abs_M11_learned", [1.2], [aut["m11"]], [aut["m11_sd"]])
        + long_rows("gamp_authors_abs_M22_learned", [1.2], [aut["m22"]], [aut["m22_sd"]])
        + long_rows("gamp_authors_abs_M11_not_learned", np.full(au_trapped.size, 1.2), au_trapped)
        + [
            ("alpha_last", a_last, 0.0, a_last_se),
            (
                "alpha_first",
                a_first,
                th["alpha_first_q2"] if th["alpha_first_q2"] is not None else float("nan"),
                a_first_se,
            ),
        ]
    )
    write_csv(io.output.csv, ["series", "x", "y", "err"], rows)

    m = {}
    for a in METRIC_ALPHAS_L2:
        m[f"p2.L2.q11[alpha={fmt_id(a)}]"] = _at(al, q11, a)
        m[f"p2.L2.q22[alpha={fmt_id(a)}]"] = _at(al, q22, a)
        m[f"p2.L2.q11_se[alpha={fmt_id(a)}]"] = _at(al, r["q11_se"], a)
        m[f"p2.L2.q22_se[alpha={fmt_id(a)}]"] = _at(al, r["q22_se"], a)
    for a in ERROR_ALPHAS_L2:
        for key, name in (("bo", "error_bo"), ("plugin", "error_plugin"), ("one_layer", "error_plugin_one_layer")):
            mc_se = _at(al, r[f"error_{key}_se"], a)
            m[f"p2.L2.{name}[alpha={fmt_id(a)}]"] = _at(al, r[f"error_{key}"], a)
            if key == "bo":
                m[f"p2.L2.{name}_se[alpha={fmt_id(a)}]"] = mc_se
                continue
            # ours: Monte-Carlo error of the estimate and that carried over from the overlaps' own error
            m[f"p2.L2.{name}_se[alpha={fmt_id(a)}]"] = float(np.hypot(mc_se, _at(al, r[f"error_{key}_q_se"], a)))
            # the authors' error files: the same Monte-Carlo estimate over their sample size
            scale = np.sqrt(r["params"]["error_samples"] / P2_AUTHORS_ERROR_SAMPLES)
            m[f"p2.L2.{name}_paper_se[alpha={fmt_id(a)}]"] = scale * mc_se
    # the authors' SE curves' points: standard error from the curves' own scatter about a smooth fit
    m.update(paper_se_metrics({"BO_2w.csv": ref_q}))
    at_q = r["error_plugin_at_authors_q"]
    for a, e, e_se in zip(at_q["alpha"], at_q["mean"], at_q["se"], strict=True):
        m[f"p2.L2.error_plugin_at_authors_q[alpha={fmt_id(a)}]"] = e
        m[f"p2.L2.error_plugin_at_authors_q_se[alpha={fmt_id(a)}]"] = e_se
    i12 = int(np.argmin(np.abs(g_alpha - 1.2)))
    if abs(g_alpha[i12] - 1.2) < 1e-9:
        # the project's variant at alpha = 1.2: its runs that learned the first layer (how many did is a metric of
        # its own), their mean final |M_kk| (unnormalised, as AMP_2w.csv) with the standard error from their spread,
        # and its difference from our state evolution at the same alpha, on data with the same noise (v_reg)
        g12 = gamp[i12]
        if abs(float(g12["data_noise"]) - r["params"]["v_reg"]) > 1e-15:
            raise ValueError("GAMP - SE needs GAMP data with the state evolution's noise (data_noise = v_reg)")
        var = learned_final_overlaps(g12["M"][:, -1], g12["Q"][:, -1])
        m["p2.L2.gamp_runs[alpha=1.2]"] = var["runs"]
        m["p2.L2.gamp_runs_learned[alpha=1.2]"] = var["learned"]
        for k in ("11", "22"):
            m[f"p2.L2.gamp_q{k}[alpha=1.2]"] = var[f"m{k}"]
            m[f"p2.L2.gamp_q{k}_se[alpha=1.2]"] = var[f"m{k}_se"]
            m[f"p2.L2.gamp_q{k}_minus_se[alpha=1.2]"] = var[f"m{k}"] - m[f"p2.L2.q{k}[alpha=1.2]"]
            se_se = m[f"p2.L2.q{k}_se[alpha=1.2]"]
            m[f"p2.L2.gamp_q{k}_minus_se_se[alpha=1.2]"] = float(np.hypot(var[f"m{k}_se"], se_se))
    # the authors' algorithm at alpha = 1.2: how many runs learned the first layer, and the overlaps of those runs
    m["p2.L2.gamp_authors_runs[alpha=1.2]"] = aut["runs"]
    m["p2.L2.gamp_authors_runs_learned[alpha=1.2]"] = aut["learned"]
    for k in ("11", "22"):
        m[f"p2.L2.gamp_authors_q{k}[alpha=1.2]"] = aut[f"m{k}"]
        m[f"p2.L2.gamp_authors_q{k}_sd[alpha=1.2]"] = aut[f"m{k}_sd"]
        m[f"p2.L2.gamp_authors_q{k}_se[alpha=1.2]"] = aut[f"m{k}_se"]
    m["p2.L2.gamp_authors_d"] = float(au_cfg["d"])
    print(
        f"{au_name}, GAMP at alpha = 1.2 (d = {au_cfg['d']}, {au_cfg['onsager']} Onsager): first layer learned in "
        f"{k_au}/{n_au} runs; over those |M11| = {aut['m11']:.4f} +- {aut['m11_se']:.4f}, |M22| = {aut['m22']:.4f} +- "
        f"{aut['m22_se']:.4f}; |M11| of the others {np.round(au_trapped, 4)}",
        flush=True,
    )
    write_metrics(io.output.metrics, m)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
