"""P2 Fig. 5 (figure, App. E.2): Q11 at convergence against the clamped Q22, from rule p2_fig5_clamped; metrics."""

import numpy as np

from smattn.io import fmt_id, read_json, save_figure, write_csv, write_metrics
from smattn.p2.plotting import BLUE, long_rows, mark_unconverged, setup
from smattn.scriptio import run


def main(io):
    plt = setup()
    r = read_json(io.input.record)
    q22, q11, se = np.array(r["q22"]), np.array(r["q11"]), np.array(r["q11_se"])
    converged = np.array(r["converged"], dtype=bool)
    c = float(io.params.skip_c)
    fig, ax = plt.subplots(figsize=(3.2, 2.4))
    ax.errorbar(q22, q11, yerr=se, color=BLUE, marker="o", ms=3)
    if mark_unconverged(ax, q22, q11, converged):
        ax.legend(loc="lower right", fontsize=6, frameon=False)
    ax.set_xlabel(r"clamped last-layer overlap $Q_{22}$")
    ax.set_ylabel(r"$Q_{11}$ at convergence")
    ax.set_title(rf"$\alpha={r['alpha']:g}$, $c={c:g}$", fontsize=8)
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.05, 1.05)
    fig.tight_layout()
    save_figure(fig, io.output.png, io.output.pdf)
    write_csv(
        io.output.csv,
        ["series", "x", "y", "err"],
        long_rows("Q11", q22, q11, se)
        + long_rows("iterations", q22, r["iterations"])
        + long_rows("residual", q22, r["residual"])
        + long_rows("converged", q22, converged)
        + long_rows("min_ess", q22, r["min_ess"]),
    )
    i0, i1 = int(np.argmin(q22)), int(np.argmax(q22))
    if q22[i0] != 0.0:
        raise ValueError(f"Fig. 5 needs the clamped value Q22 = 0 (the unlearned last layer); got {q22.tolist()}")
    a = fmt_id(r["alpha"])
    write_metrics(
        io.output.metrics,
        {
            f"p2.L2.clamped_q11[alpha={a},q22=0]": float(q11[i0]),
            f"p2.L2.clamped_q11_se[alpha={a},q22=0]": float(se[i0]),
            f"p2.L2.clamped_q11[alpha={a},q22=max]": float(q11[i1]),
            f"p2.L2.clamped_q11_se[alpha={a},q22=max]": float(se[i1]),
            f"p2.L2.clamped_q22_max[alpha={a}]": float(q22[i1]),
            "p2.L2.clamped_se_tol": float(r["tol"]),
        },
    )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
