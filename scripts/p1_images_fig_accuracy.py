"""P1 Fig. 3b (L = 2, H = 4: Omniglot ID and Fashion-MNIST OOD) and Fig. 6 (L = 3, H = 3: ID, MNIST, Fashion-MNIST):
test accuracy vs width N of the renormalised theory at the per-N selected temperature, the sampled network (NUTS)
and the GP limit at its own selected temperature, each with one binomial standard error of its test set (the sampled
points also with their Monte-Carlo error); the GD-trained network's accuracy as a grey reference."""

import json

import numpy as np

from smattn.scriptio import run

SET_TITLES = {
    "omniglot": "ID (Omniglot test classes)",
    "mnist": "OOD (MNIST 0 vs 1)",
    "fashion": "OOD (Fashion-MNIST 0 vs 1)",
}


def binomial_se(acc, n: int):
    """Binomial standard error of accuracies ``acc`` measured on ``n`` test tasks."""
    acc = np.asarray(acc, dtype=np.float64)
    return np.sqrt(acc * (1 - acc) / n)


def theory_correct(th, s: str, i: int) -> np.ndarray:
    """Task-wise correctness [n] of the theory at the i-th width and its selected temperature on set s."""
    j = list(th["temperatures"]).index(th["T_selected"][i])
    return np.sign(th[f"f_{s}"][i, j]) == th[f"y_{s}"]


def gp_correct(th, s: str) -> np.ndarray:
    """Task-wise correctness [n] of the GP line at its selected temperature on set s."""
    j = list(th["gp_temperatures"]).index(th["gp_T_selected"])
    return np.sign(th[f"gp_f_{s}"][j]) == th[f"y_{s}"]


def main(io):
    from smattn.io import fmt_id, pyplot, save_figure, write_csv, write_metrics
    from smattn.p1.images.theory_grid import TEST_SETS
    from smattn.p1.images.uncertainty import mc_accuracy_se, paired_difference, temperature_trend
    from smattn.p1.sampler import nuts_ledger_entries

    plt = pyplot()  # the figures' one style, the same for both papers

    p = io.params
    sets = list(p.sets)
    th = np.load(io.input.theory)
    gd = json.load(open(io.input.gd_eval))
    samples = [json.load(open(f)) for f in (io.input.samples if hasattr(io.input, "samples") else [])]
    widths, T_sel = th["widths"], th["T_selected"]
    rows = []
    fig, axes = plt.subplots(1, len(sets), figsize=(4.2 * len(sets), 3.6), squeeze=False)
    for ax, s in zip(axes[0], sets, strict=True):
        acc = th[f"acc_selected_{s}"]
        n = len(th[f"y_{s}"])
        ax.errorbar(
            widths, 100 * acc, yerr=100 * binomial_se(acc, n), fmt="-x", color="tab:blue", capsize=2,
            label="theory (renormalised)",
        )  # fmt: skip
        gp_acc = float(th[f"gp_acc_selected_{s}"])
        ax.axhline(100 * gp_acc, color="tab:red", label=f"GP (T = {float(th['gp_T_selected']):g}) ± 1 s.e.")
        gp_se = 100 * binomial_se(gp_acc, n)
        ax.axhspan(100 * gp_acc - gp_se, 100 * gp_acc + gp_se, color="tab:red", alpha=0.12, lw=0)
        ax.axhline(100 * gd["accuracy"][s]["acc"], color="0.5", ls=":", label="GD-trained network")
        if samples:
            mc = [mc_accuracy_se(np.asarray(d["f_mean"][s]), np.asarray(d["f_mc_se"][s])) for d in samples]
            se = [np.hypot(binomial_se(d["acc"][s], n), e) for d, e in zip(samples, mc, strict=True)]
            ax.errorbar(
                [d["N"] for d in samples], [100 * d["acc"][s] for d in samples], yerr=100 * np.array(se), fmt="o",
                color="k", capsize=2, label="sampled (NUTS)",
            )  # fmt: skip
        ax.set_xscale("log")
        ax.set_xlabel("width N")
        ax.set_ylabel("test accuracy (%)")
        ax.set_title(SET_TITLES[s], fontsize=10)
        for i, N in enumerate(widths):
            j = list(th["temperatures"]).index(T_sel[i])
            rows.append(
                [
                    "theory",
                    s,
                    N,
                    T_sel[i],
                    acc[i],
                    int(th["steps"][i, j]),
                    th["g_max"][i, j],
                    bool(th["converged"][i, j]),
                ]
            )
        for T, a in zip(th["gp_temperatures"], th[f"gp_acc_{s}"], strict=True):
            rows.append(["gp_scan", s, "", T, a, "", "", ""])
        rows.append(["gp_selected", s, "", float(th["gp_T_selected"]), gp_acc, "", "", ""])
        for d in samples:
            rows.append(["sampled", s, d["N"], d["T"], d["acc"][s], "", "", ""])
        rows.append(["gd", s, gd["hparams"]["width"], "", gd["accuracy"][s]["acc"], gd["steps"], "", ""])
    axes[0][0].legend(fontsize=7, loc="best")
    fig.suptitle(p.title, fontsize=10)
    fig.tight_layout()
    save_figure(fig, io.output.png, io.output.pdf)
    write_csv(io.output.csv, ["kind", "set", "N", "T", "accuracy", "steps", "g_max", "converged"], rows)

    # ledger (every test set, not only the plotted ones): selected T and theory accuracy per N, GP accuracy,
    # sampled accuracies; beside them each line's best accuracy over its own temperature grid per set (what the
    # Omniglot-selected temperature gives up on an OOD set); the paired differences of the lines on their shared
    # test tasks with standard errors (docs/p1_images.md#verdicts)
    model = p.model
    m = {}
    for i, N in enumerate(th["widths"]):
        m[f"p1.img.T_selected[model={model}][N={fmt_id(N)}]"] = float(th["T_selected"][i])
        for s in TEST_SETS:
            m[f"p1.img.acc_theory[model={model}][set={s}][N={fmt_id(N)}]"] = float(th[f"acc_selected_{s}"][i])
            m[f"p1.img.acc_theory_best_T[model={model}][set={s}][N={fmt_id(N)}]"] = float(th[f"acc_{s}"][i].max())
            gain, se = paired_difference(theory_correct(th, s, i), gp_correct(th, s))
            m[f"p1.img.acc_gain_over_gp[model={model}][set={s}][N={fmt_id(N)}]"] = gain
            m[f"p1.img.acc_gain_over_gp_se[model={model}][set={s}][N={fmt_id(N)}]"] = se
    for s in TEST_SETS:
        m[f"p1.img.acc_gp[model={model}][set={s}]"] = float(th[f"gp_acc_selected_{s}"])
        m[f"p1.img.acc_gp_best_T[model={model}][set={s}]"] = float(th[f"gp_acc_{s}"].max())
        m[f"p1.img.n_test[model={model}][set={s}]"] = len(th[f"y_{s}"])
    # the selected temperature per N with its bootstrap sd, and its Spearman correlation with N (three widths or more)
    correct = np.sign(th["f_omniglot"]) == th["y_omniglot"]  # [widths, temperatures, tasks]
    boot = int(p.bootstrap_resamples), int(p.bootstrap_seed)
    sel = temperature_trend(correct, widths, th["temperatures"], *boot)
    if not np.array_equal(sel.T_selected, T_sel):
        raise RuntimeError(f"selection from the task-wise predictions {sel.T_selected} differs from {T_sel}")
    for i, N in enumerate(widths):
        m[f"p1.img.T_selected_se[model={model}][N={fmt_id(N)}]"] = float(sel.T_se[i])
    if np.isfinite(sel.rho):
        m[f"p1.img.T_trend_rho[model={model}]"] = sel.rho
        m[f"p1.img.T_trend_rho_se[model={model}]"] = sel.rho_se
    for d in samples:
        i = [int(w) for w in widths].index(int(d["N"]))
        for s in TEST_SETS:
            m[f"p1.img.acc_sampled[model={d['model']}][set={s}][N={d['N']}]"] = d["acc"][s]
            f, f_se = np.asarray(d["f_mean"][s]), np.asarray(d["f_mc_se"][s])
            diff, se_tasks = paired_difference(np.sign(f) == th[f"y_{s}"], theory_correct(th, s, i))
            se = float(np.hypot(se_tasks, mc_accuracy_se(f, f_se)))  # test tasks and Monte-Carlo error
            m[f"p1.img.acc_sampled_minus_theory[model={d['model']}][set={s}][N={d['N']}]"] = diff
            m[f"p1.img.acc_sampled_minus_theory_se[model={d['model']}][set={s}][N={d['N']}]"] = se
        m.update(nuts_ledger_entries(d, "p1.img.nuts", f"[model={d['model']}][N={d['N']}]"))
    write_metrics(io.output.metrics, m)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
