"""P2 Fig. 1 right: phase diagram (our last-layer and first-layer thresholds vs c) with the authors' CSV,
and the deviation note results/p2/phase_diagram_deviation.md."""

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
from smattn.scriptio import run


def main(io):
    plt = setup()
    rs = sorted((read_json(f) for f in io.input.thresholds), key=lambda r: r["c"])
    c = np.array([r["c"] for r in rs])
    a_last = np.array([r["alpha_last"] for r in rs])
    a_last_se = np.array([r["alpha_last_se"] for r in rs])
    a_first = nan_array([r["alpha_first"] for r in rs])
    a_lit = np.array([r["alpha_first_literal"] for r in rs])
    ref = read_csv(io.input.ref)
    order = np.argsort(ref["skip"])
    rc, r_first, r_last = ref["skip"][order], ref["alpha1"][order], ref["alpha2"][order]

    fig, ax = plt.subplots(figsize=(3.6, 2.6))
    top = np.nan_to_num(a_first, nan=1.0)
    ax.fill_between(c, 0, a_last, color="grey", alpha=0.1)
    ax.fill_between(c, a_last, top, color=RED, alpha=0.1)
    ax.fill_between(c, top, 1.0, color=BLUE, alpha=0.1)
    ax.errorbar(c, a_last, yerr=a_last_se, color=RED, marker="o", ms=2.5, label=r"$\alpha_{last}$ (ours)")
    ax.plot(c, a_first, color=BLUE, marker="o", ms=2.5, label=r"$\alpha_{first}$ self-consistent (ours)")
    ax.plot(c, a_lit, color=BLUE, ls=":", label=r"$\alpha_{first}$ literal (ours)")
    ax.axhline(1 / 6, color="k", lw=0.5, ls="-", alpha=0.5)
    ax.text(3.95, 1 / 6 + 0.01, r"$1/6$ bound", ha="right", fontsize=6)
    ax.plot(rc, r_last, color=RED, lw=0.7, ls="--", label="authors' CSV (alpha2)")
    ax.plot(rc, r_first, color=BLUE, lw=0.7, ls="--", label="authors' CSV (alpha1)")
    ax.set_xlim(0, 4)
    ax.set_ylim(0, 1)
    ax.set_xlabel("skip strength $c$")
    ax.set_ylabel(r"$\alpha$")
    ax.legend(frameon=False, fontsize=6, loc="upper right")
    fig.tight_layout()
    save_figure(fig, io.output.png, io.output.pdf)

    rows = []
    for r in rs:
        rows.append(
            tuple(
                np.nan if v is None else v
                for v in (
                    r["c"],
                    r["alpha_last"],
                    r["alpha_last_se"],
                    r["alpha_last_fine_grid"],
                    r["alpha_first"],
                    r["q2_at_first"],
                    r["alpha_first_literal"],
                    r["K"][0][0],
                    r["K"][1][1],
                )
            )
        )
    write_csv(
        io.output.csv,
        [
            "c",
            "alpha_last",
            "alpha_last_se",
            "alpha_last_finer_grid",
            "alpha_first",
            "q2_at_alpha_first",
            "alpha_first_literal",
            "K11",
            "K22",
        ],
        rows,
    )
    m = {}
    for r in rs:
        cid = fmt_id(r["c"])
        m[f"p2.L2.alpha_last[c={cid}]"] = r["alpha_last"]
        if r["alpha_first"] is not None:
            m[f"p2.L2.alpha_first[c={cid}]"] = r["alpha_first"]
        m[f"p2.L2.alpha_first_literal[c={cid}]"] = r["alpha_first_literal"]
    write_metrics(io.output.metrics, m)

    write_text(
        io.output.md, phase_diagram_report(rs, ref, scale=io.params.scale, v_reg=io.params.v_reg, q_max=io.params.q_max)
    )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
