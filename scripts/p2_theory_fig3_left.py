"""P2 Fig. 3 left (figure): depth-3 overlaps Q11, Q22, Q33 and plug-in errors (full, last layer only) from the
numbers of rule p2_l3_state_evolution, the authors' files and their estimator recomputed; the ledger's metrics."""

import numpy as np

from smattn.data.spoc import read_csv
from smattn.io import fmt_id, read_json, save_figure, write_csv, write_metrics
from smattn.p2.plotting import BLUE, GREEN, RED, long_rows, mark_unconverged, setup
from smattn.p2.theory.paper_scatter import paper_se_metrics
from smattn.scriptio import run


def main(io):
    plt = setup()
    rec = read_json(io.input.record)
    c = float(io.params.skip_c)
    alphas = np.array(rec["alpha"])
    q = np.array([np.diag(np.array(Q)) for Q in rec["Q"]])
    cov = np.array(rec["Q_cov"], dtype=float)
    converged = np.array(rec["converged"], dtype=bool)
    full = np.column_stack([rec["error_plugin"], rec["error_plugin_se"]])
    last = np.column_stack([rec["error_plugin_last_layer"], rec["error_plugin_last_layer_se"]])
    e0 = rec["error_plugin_q0"]
    K, K_se = np.array(rec["K"]), np.array(rec["K_se"])  # (3, 3) operator at Q = 0
    a_last = rec["alpha_last"]
    ref = read_csv(io.input.ref_q)
    ref_e = read_csv(io.input.ref_err)
    ref_el = read_csv(io.input.ref_err_last)
    ax_al = np.concatenate([[0.0], alphas])
    fig, ax = plt.subplots(figsize=(3.9, 3.1))
    for k, (col, lab) in enumerate(((BLUE, "Q_{11}"), (RED, "Q_{22}"), (GREEN, "Q_{33}"))):
        ax.plot(ax_al, np.concatenate([[0.0], q[:, k]]), color=col, marker="o", ms=2.5, label=f"${lab}$ (ours)")
        ax.plot(ref["alpha"], ref[f"Q{k + 1}{k + 1}"], color=col, lw=0.7, ls="--")
        mark_unconverged(ax, alphas, q[:, k], converged)
    # the authors' Monte-Carlo estimator recomputed (floored Z_out): it settles on their published values
    au = read_json(io.input.authors)
    au_a, au_q = np.array(au["alpha"]), np.array([np.diag(np.array(Qm)) for Qm in au["Q_mean"]])
    au_se = np.array([np.diag(np.array(Qs)) for Qs in au["Q_se"]])
    for k, col in enumerate((BLUE, RED, GREEN)):
        ax.errorbar(
            au_a,
            au_q[:, k],
            yerr=au_se[:, k],
            color=col,
            ls="--",
            lw=0.9,
            marker="s",
            mfc="none",
            ms=5,
            zorder=5,
            label="authors' estimator, recomputed" if k == 0 else None,
        )
    ax.axhline(0, color="k", lw=0.6)
    ax.axvline(a_last, color="k", lw=0.6, ls=":")
    ax.set_xlim(0, 1.04 * max(2.0, alphas.max(), au_a.max()))  # the authors' markers stay inside
    ax.set_ylim(-0.05, 1.1)
    ax.set_xlabel(r"Sample complexity $\alpha=N/D$")
    ax.set_ylabel("Overlap")
    ax2 = ax.twinx()
    ax2.plot(ax_al, np.concatenate([[e0[0]], full[:, 0]]), color="k", label="plug-in, full")
    ax2.plot(ax_al, np.concatenate([[e0[0]], last[:, 0]]), color="k", ls="--", label="plug-in, last layer")
    ax2.plot(ref_e["alpha"], ref_e["gen_error"], color="grey", lw=0.7, ls="--")
    ax2.plot(ref_el["alpha"], ref_el["gen_error"], color="grey", lw=0.7, ls=":")
    ax2.set_yscale("log")
    ax2.set_ylabel("Prediction error")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    # legend below the axes: inside, it hid the curves wherever it was put
    fig.legend(h1 + h2, l1 + l2, frameon=False, fontsize=6, loc="lower center", ncol=3)
    ax.set_title(rf"$L=3$, $c={c:g}$ (thin dashed: authors' files)", fontsize=8)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    save_figure(fig, io.output.png, io.output.pdf)

    rows = (
        long_rows("Q11", alphas, q[:, 0])
        + long_rows("Q22", alphas, q[:, 1])
        + long_rows("Q33", alphas, q[:, 2])
        + long_rows("error_plugin", ax_al, np.concatenate([[e0[0]], full[:, 0]]), np.concatenate([[e0[1]], full[:, 1]]))
        + long_rows(
            "error_plugin_last_layer",
            ax_al,
            np.concatenate([[e0[0]], last[:, 0]]),
            np.concatenate([[e0[1]], last[:, 1]]),
        )
        + long_rows("se_iterations", alphas, rec["iterations"])
        + long_rows("se_converged", alphas, converged)
        + long_rows("se_min_ess", alphas, rec["min_ess"])
        + sum((long_rows(f"Q{k + 1}{k + 1}_authors_estimator", au_a, au_q[:, k], au_se[:, k]) for k in range(3)), [])
        + [("alpha_last", a_last, 1.0 / a_last, rec["alpha_last_se"])]
    )
    write_csv(io.output.csv, ["series", "x", "y", "err"], rows)

    def at(arr, a):
        i = int(np.argmin(np.abs(alphas - a)))
        if abs(alphas[i] - a) > 1e-9:
            raise ValueError(f"alpha {a} missing from l3_alphas")
        return float(arr[i])

    i_au = int(np.argmin(np.abs(au_a - 2.0)))
    at_q = rec["error_plugin_at_authors_q"]
    j2 = int(np.argmin(np.abs(np.array(at_q["alpha"]) - 2.0)))
    cid = fmt_id(c)
    m = {
        f"p2.L3.alpha_last[c={cid}]": a_last,
        f"p2.L3.alpha_last_se[c={cid}]": rec["alpha_last_se"],
        "p2.L3.q33[alpha=0.5]": at(q[:, 2], 0.5),
        "p2.L3.q33_se[alpha=0.5]": np.sqrt(at(cov[:, 2, 2], 0.5)),
        "p2.L3.q11[alpha=2]": at(q[:, 0], 2.0),
        "p2.L3.q11_se[alpha=2]": np.sqrt(at(cov[:, 0, 0], 2.0)),
        "p2.L3.q22[alpha=2]": at(q[:, 1], 2.0),
        "p2.L3.q22_se[alpha=2]": np.sqrt(at(cov[:, 1, 1], 2.0)),
        "p2.L3.q11_minus_q22[alpha=2]": at(q[:, 0] - q[:, 1], 2.0),
        "p2.L3.q11_minus_q22_se[alpha=2]": np.sqrt(at(cov[:, 0, 0] + cov[:, 1, 1] - 2 * cov[:, 0, 1], 2.0)),
        "p2.L3.q11_authors_estimator[alpha=2]": float(au_q[i_au, 0]),
        "p2.L3.q11_authors_estimator_se[alpha=2]": float(au_se[i_au, 0]),
        "p2.L3.min_ess[alpha=2]": at(rec["min_ess"], 2.0),
        "p2.L3.error_plugin[alpha=2]": at(full[:, 0], 2.0),
        # ours: Monte-Carlo error of the estimate and that carried over from the overlaps' own error
        "p2.L3.error_plugin_se[alpha=2]": np.hypot(
            at(full[:, 1], 2.0), at(np.array(rec["error_plugin_q_se"], float), 2.0)
        ),
        "p2.L3.error_plugin_at_authors_q[alpha=2]": at_q["mean"][j2],
        "p2.L3.error_plugin_at_authors_q_se[alpha=2]": at_q["se"][j2],
        "p2.L3.error_plugin_paper_se[alpha=2]": at_q["paper_se"][j2],
        # one iterate of one run of the authors' procedure (what their file holds) scatters by this much
        "p2.L3.q11_authors_estimator_sd[alpha=2]": float(
            np.std(np.array(au["history"][i_au])[-int(au["params"]["tail"]) :, 0, 0], ddof=1)
        ),
    }
    # the authors' SE curve's points: standard error from the curve's own scatter about a smooth fit
    m.update(paper_se_metrics({"BO_3w.csv": ref}))
    for k in range(3):
        m[f"p2.L3.K{k + 1}{k + 1}[c={cid}]"] = K[k, k]
        m[f"p2.L3.K{k + 1}{k + 1}_se[c={cid}]"] = K_se[k, k]
    write_metrics(io.output.metrics, {k: float(v) for k, v in m.items()})


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
