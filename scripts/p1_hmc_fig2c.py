"""P1 Fig. 2c: top, test accuracy vs width (theory, sampled, three GP lines); bottom, U heatmaps in order g, d, a1,
a2. Ledger: the accuracies, U, and the numbers that decide the claims of Sec. 4.1 with their standard errors
(accuracy differences on the verdict test set, sampled minus theory, U's distance from the identity; see
docs/p1_theory.md#claims)."""

import json

import numpy as np

from smattn.scriptio import run

ORDER = [0, 2, 1, 3]  # flat path indices in the figure's order g, d, a1, a2
NAMES = ["g", "d", "a1", "a2"]
COLOURS = {"g": "green", "d": "blue", "a1": "red", "a2": "purple"}


def main(io):
    from smattn.io import fmt_id, pyplot, save_figure, write_csv, write_metrics
    from smattn.p1.agreement import accuracy_gaps, distance_from_identity, path_correlation, sampled_record_metrics
    from smattn.p1.predictor import paired_cohen_h
    from smattn.p1.sampler import nuts_ledger_entries

    plt = pyplot()  # the figures' one style, the same for both papers

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
    for ax, r in zip(axes, wanted, strict=True):
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
        m[f"p1.hmc.U_dist_identity[N={fmt_id(r['N'])}]"] = distance_from_identity(r["U"])
    dist = [distance_from_identity(r["U"]) for r in th["runs"]]
    m["p1.hmc.U_dist_identity_max_step_ratio"] = max(b / a for a, b in zip(dist, dist[1:], strict=False))
    n_lo, n_hi = fmt_id(th["runs"][0]["N"]), fmt_id(th["runs"][-1]["N"])
    m[f"p1.hmc.U_dist_identity_ratio[N={n_hi}/N={n_lo}]"] = dist[-1] / dist[0]
    with np.load(io.input.predictions) as z:
        pred = {k: z[k] for k in z.files}
    widths = [float(w) for w in pred["widths"]]
    for s in samples:
        tag = f"[N={fmt_id(s['N'])}]"
        m.update({f"p1.hmc.{k}{tag}": v for k, v in sampled_record_metrics(s, th, pred).items()})
        m.update(nuts_ledger_entries(s, "p1.hmc.nuts", tag))
    m["p1.hmc.acc_gp_all"] = th["acc_gp"]
    m["p1.hmc.acc_gp_good"] = th["acc_gp_good"]
    m["p1.hmc.acc_gp_good_denoising"] = th["acc_gp_good_denoising"]
    # accuracy differences on the verdict test set (paired standard errors): the orderings of Fig. 2c top
    lines = {"gp_all": pred["f_verdict_gp"]}
    lines.update({k: pred[f"f_verdict_{k}"] for k in ("gp_good", "gp_good_denoising")})
    lines.update({f"theory_N{fmt_id(w)}": pred["f_verdict_theory"][i] for i, w in enumerate(widths)})
    small, large = f"theory_N{fmt_id(widths[0])}", f"theory_N{fmt_id(widths[-1])}"
    pairs = {
        "gp_good-gp_all": ("gp_good", "gp_all"),
        "gp_good_denoising-gp_good": ("gp_good_denoising", "gp_good"),
        f"{small}-gp_all": (small, "gp_all"),
        f"{small}-gp_good_denoising": (small, "gp_good_denoising"),
        f"{small}-{large}": (small, large),
        f"gp_good-{large}": ("gp_good", large),
    }
    for name, (d, se) in accuracy_gaps(lines, pred["y_verdict"], pairs).items():
        m[f"p1.hmc.acc_gap[{name}]"], m[f"p1.hmc.acc_gap_se[{name}]"] = d, se
    # "considerable" improvement over the GP limit: Cohen's h of the two accuracies, with its paired error
    h, h_se = paired_cohen_h(lines[small], lines["gp_all"], pred["y_verdict"])
    m[f"p1.hmc.cohen_h[{small}-gp_all]"], m[f"p1.hmc.cohen_h_se[{small}-gp_all]"] = h, h_se
    m["p1.hmc.P_verdict"] = float(th["P_verdict"])
    r10 = [r for r in th["runs"] if r["N"] == 10.0]
    if r10:
        U = np.asarray(r10[0]["U"])
        for i in range(4):
            for j in range(i, 4):
                m[f"p1.hmc.U[N=10][{i},{j}]"] = U[i, j]
        m["p1.hmc.U_corr[N=10][g,d]"] = path_correlation(U, 0, 2)
        m["p1.hmc.U_adversarial_max_diag[N=10]"] = max(U[1, 1], U[3, 3])
        m["p1.hmc.minimise_seconds[N=10]"] = r10[0]["seconds"]
        al = th["alignment"]
        m["p1.hmc.alignment_max_overlap[kernel=gp]"] = max(al["gp"])
        m["p1.hmc.alignment_max_overlap[kernel=renormalised]"] = max(al["renormalised"])
    write_metrics(io.output.metrics, m)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
