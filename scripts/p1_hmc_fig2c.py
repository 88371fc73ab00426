"""P1 Fig. 2c: top, test accuracy vs width (theory, sampled, three GP lines); bottom, U heatmaps in order g, d, a1, a2."""

import json

import numpy as np

from smattn.scriptio import run

ORDER = [0, 2, 1, 3]  # flat path indices in the figure's order g, d, a1, a2
NAMES = ["g", "d", "a1", "a2"]
COLOURS = {"g": "green", "d": "blue", "a1": "red", "a2": "purple"}


def main(io):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from smattn.io import fmt_id, save_figure, write_csv, write_metrics

    th = json.load(open(io.input.theory))
    samples = [
        json.load(open(f))
        for f in (io.input.samples if isinstance(io.input.samples, list) else [io.input.samples])
        if f
    ]
    Ns = [r["N"] for r in th["runs"]]
    acc = [100 * r["acc"] for r in th["runs"]]
    fig, ax = plt.subplots(figsize=(4.2, 3.2))
    ax.plot(Ns, acc, "-x", color="tab:blue", label="theory (renormalised)")
    if samples:
        ax.plot([s["N"] for s in samples], [100 * s["acc"] for s in samples], "o", color="black", label="sampled")
    ax.axhline(100 * th["acc_gp"], color="red", ls="-", label="GP, all paths")
    ax.axhline(100 * th["acc_gp_good"], color="red", ls="--", label="GP, good path")
    ax.axhline(100 * th["acc_gp_good_denoising"], color="red", ls=":", label="GP, good + denoising")
    ax.set_xscale("log")
    ax.set_xlabel("width N")
    ax.set_ylabel("test accuracy (%)")
    ax.legend(fontsize=7)
    ax.set_title("HMC task, all four paths")
    save_figure(fig, io.output.top_png, io.output.top_pdf)
    plt.close(fig)
    rows = [["theory", r["N"], r["acc"], r["steps"], r["g_max"], r["converged"]] for r in th["runs"]]
    rows += [["sampled", s["N"], s["acc"], s["n_samples"], s["divergences"], s["ess_U_min"]] for s in samples]
    rows += [
        ["gp_all", "", th["acc_gp"], "", "", ""],
        ["gp_good", "", th["acc_gp_good"], "", "", ""],
        ["gp_good_denoising", "", th["acc_gp_good_denoising"], "", "", ""],
    ]
    write_csv(
        io.output.top_csv,
        ["kind", "N", "accuracy", "steps_or_samples", "g_max_or_divergences", "converged_or_min_ess"],
        rows,
    )

    wanted = [r for r in th["runs"] if r["N"] in (10.0, 100.0, 1000.0)] or [th["runs"][0], th["runs"][-1]]
    fig, axes = plt.subplots(1, len(wanted), figsize=(3.4 * len(wanted), 2.9), layout="constrained")
    axes = np.atleast_1d(axes)
    csv_rows = []
    for ax, r in zip(axes, wanted):
        U = np.asarray(r["U"])[np.ix_(ORDER, ORDER)]
        m = np.abs(U).max()
        im = ax.imshow(U, cmap="RdBu", vmin=-m, vmax=m)
        ax.set_xticks(range(4), NAMES)
        ax.set_yticks(range(4), NAMES)
        for t in list(ax.get_xticklabels()) + list(ax.get_yticklabels()):
            t.set_color(COLOURS[t.get_text()])
        ax.set_title(f"N = {r['N']:g}")
        fig.colorbar(im, ax=ax, fraction=0.046)
        for i in range(4):
            for j in range(4):
                csv_rows.append([r["N"], NAMES[i], NAMES[j], U[i, j]])
    save_figure(fig, io.output.bottom_png, io.output.bottom_pdf)
    plt.close(fig)
    write_csv(io.output.bottom_csv, ["N", "path_row", "path_col", "U"], csv_rows)

    # ledger: theory and sampled accuracies, GP lines, U at N = 10, its minimisation time, kernel-label alignment
    m = {}
    for r in th["runs"]:
        m[f"p1.hmc.acc_theory[N={fmt_id(r['N'])}]"] = r["acc"]
    for s in samples:
        m[f"p1.hmc.acc_sampled[N={fmt_id(s['N'])}]"] = s["acc"]
    m["p1.hmc.acc_gp_all"] = th["acc_gp"]
    m["p1.hmc.acc_gp_good"] = th["acc_gp_good"]
    m["p1.hmc.acc_gp_good_denoising"] = th["acc_gp_good_denoising"]
    r10 = [r for r in th["runs"] if r["N"] == 10.0]
    if r10:
        U = np.asarray(r10[0]["U"])
        for i in range(4):
            for j in range(i, 4):
                m[f"p1.hmc.U[N=10][{i},{j}]"] = U[i, j]
        m["p1.hmc.minimise_seconds[N=10]"] = r10[0]["seconds"]
        al = th["alignment"]
        m["p1.hmc.alignment_max_overlap[kernel=gp]"] = max(al["gp"])
        m["p1.hmc.alignment_max_overlap[kernel=renormalised]"] = max(al["renormalised"])
    write_metrics(io.output.metrics, m)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
