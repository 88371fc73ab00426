"""P2 Fig. 3 left: depth-3 SE overlaps Q11, Q22, Q33 and plug-in errors (full, last layer only), 4-D quadrature."""

import time

import numpy as np

from smattn.data.spoc import read_csv
from smattn.io import (
    fmt_id,
    json_safe,
    read_json,
    save_figure,
    write_csv,
    write_json,
    write_metrics,
)
from smattn.p2.plotting import BLUE, GREEN, RED, long_rows, mark_unconverged, setup
from smattn.p2.theory.overlap_curves import se_sweep
from smattn.p2.theory.prediction_errors import plugin_error
from smattn.p2.theory.quadrature import QuadratureSettings
from smattn.p2.theory.state_evolution import draw_teacher
from smattn.p2.theory.thresholds import initial_operator
from smattn.scriptio import run


def main(io):
    plt = setup()
    P = io.params
    t0 = time.time()
    # the rule's threads share the teacher draws of each SE step (same fixed points for any number)
    quad = QuadratureSettings(n1d=P.n1d, workers=max(1, int(io.threads)))
    K, K_se, _ = initial_operator(P.skip_c, draw_teacher(P.n_k, 3, P.seed), quad)
    k_max = int(np.argmax(np.diag(K)))
    a_last = 1.0 / K[k_max, k_max]
    print(f"L=3 K diag {np.diag(K)} (se {np.diag(K_se)}): alpha_last={a_last:.4f} ({time.time() - t0:.1f} s)")
    alphas = np.array(sorted(P.alphas))
    sw = se_sweep(
        alphas,
        P.skip_c,
        3,
        quad,
        n_samples=P.n_samples,
        seed=P.seed + 1,
        damping=P.damping,
        tol=P.tol,
        max_iter=P.max_iter,
        v_reg=P.v_reg,
    )
    t_se = time.time() - t0
    q = np.array([np.diag(Q) for Q in sw["Q"]])
    full, last = [], []
    for i in range(len(alphas)):
        full.append(plugin_error(np.diag(q[i]), P.skip_c, n_samples=P.error_samples, seed=P.seed + i))
        last.append(plugin_error(np.diag([0.0, 0.0, q[i, 2]]), P.skip_c, n_samples=P.error_samples, seed=P.seed + i))
    e0 = plugin_error(np.zeros((3, 3)), P.skip_c, n_samples=P.error_samples, seed=P.seed)
    full, last = np.array(full), np.array(last)
    print(f"SE sweep {t_se:.1f} s; iterations {sw['iterations']}, converged {sw['converged']}, min ESS {sw['min_ess']}")

    ref = read_csv(io.input.ref_q)
    ref_e = read_csv(io.input.ref_err)
    ref_el = read_csv(io.input.ref_err_last)
    ax_al = np.concatenate([[0.0], alphas])
    fig, ax = plt.subplots(figsize=(3.9, 3.1))
    for k, (col, lab) in enumerate(((BLUE, "Q_{11}"), (RED, "Q_{22}"), (GREEN, "Q_{33}"))):
        ax.plot(ax_al, np.concatenate([[0.0], q[:, k]]), color=col, marker="o", ms=2.5, label=f"${lab}$ (ours)")
        ax.plot(ref["alpha"], ref[f"Q{k + 1}{k + 1}"], color=col, lw=0.7, ls="--")
        mark_unconverged(ax, alphas, q[:, k], sw["converged"])
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
    ax.set_title(rf"$L=3$, $c={P.skip_c:g}$ (thin dashed: authors' files)", fontsize=8)
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
        + long_rows("se_iterations", alphas, sw["iterations"])
        + long_rows("se_converged", alphas, sw["converged"])
        + long_rows("se_min_ess", alphas, sw["min_ess"])
        + sum((long_rows(f"Q{k + 1}{k + 1}_authors_estimator", au_a, au_q[:, k], au_se[:, k]) for k in range(3)), [])
        + [("alpha_last", a_last, K[k_max, k_max], float("nan"))]
    )
    write_csv(io.output.csv, ["series", "x", "y", "err"], rows)

    def at(arr, a):
        i = int(np.argmin(np.abs(alphas - a)))
        if abs(alphas[i] - a) > 1e-9:
            raise ValueError(f"alpha {a} missing from l3_alphas")
        return float(arr[i])

    write_metrics(
        io.output.metrics,
        {
            f"p2.L3.alpha_last[c={fmt_id(P.skip_c)}]": a_last,
            "p2.L3.q33[alpha=0.5]": at(q[:, 2], 0.5),
            "p2.L3.q11[alpha=2]": at(q[:, 0], 2.0),
            "p2.L3.q11_authors_estimator[alpha=2]": float(au_q[int(np.argmin(np.abs(au_a - 2.0))), 0]),
            "p2.L3.q11_authors_estimator_se[alpha=2]": float(au_se[int(np.argmin(np.abs(au_a - 2.0))), 0]),
            "p2.L3.min_ess[alpha=2]": at(sw["min_ess"], 2.0),
            "p2.L3.error_plugin[alpha=2]": at(full[:, 0], 2.0),
        },
    )
    write_json(
        io.output.record,
        json_safe(
            {
                "alpha": alphas,
                "Q": sw["Q"],
                "iterations": sw["iterations"],
                "residual": sw["residual"],
                "converged": sw["converged"],
                "min_ess": sw["min_ess"],
                "K": K,
                "K_se": K_se,
                "time_s": time.time() - t0,
            }
        ),
    )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
