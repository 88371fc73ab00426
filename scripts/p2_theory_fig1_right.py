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
    save_figure(fig, io.output.png)

    rows = []
    for r in rs:
        rows.append(tuple(np.nan if v is None else v for v in (
            r["c"], r["alpha_last"], r["alpha_last_se"], r["alpha_last_fine_grid"], r["alpha_first"],
            r["q2_at_first"], r["alpha_first_literal"], r["K"][0][0], r["K"][1][1])))
    write_csv(io.output.csv, ["c", "alpha_last", "alpha_last_se", "alpha_last_finer_grid", "alpha_first",
                              "q2_at_alpha_first", "alpha_first_literal", "K11", "K22"], rows)
    m = {}
    for r in rs:
        cid = fmt_id(r["c"])
        m[f"p2.L2.alpha_last[c={cid}]"] = r["alpha_last"]
        if r["alpha_first"] is not None:
            m[f"p2.L2.alpha_first[c={cid}]"] = r["alpha_first"]
        m[f"p2.L2.alpha_first_literal[c={cid}]"] = r["alpha_first_literal"]
    write_metrics(io.output.metrics, m)

    ref_map = {float(s): (a1, a2) for s, a1, a2 in zip(ref["skip"], ref["alpha1"], ref["alpha2"])}
    lines = ["# P2 phase diagram: our thresholds vs the authors' `alpha_critical.csv`", "",
             f"Scale: `{io.params.scale}`; regulariser v_reg = {io.params.v_reg:g} (0 = noiseless); phase-II branch "
             f"scanned up to q2 = {io.params.q_max:g}. Thresholds of the two-layer target (T=2, r=1) computed from the "
             "theory (spec §4): alpha_last = 1/K22 at Q = 0; alpha_first (self-consistent) where the first layer "
             "becomes unstable on the phase-II branch Q = diag(0, q2); alpha_first_literal = 1/K with the last layer "
             "known exactly (App. E.2 read literally). Standard errors are Monte-Carlo errors of K.", "",
             "| c | alpha_last (ours) | ± se | CSV alpha2 | alpha_first (ours) | q2 at alpha_first | CSV alpha1 | "
             "alpha_first literal |", "|---|---|---|---|---|---|---|---|"]
    below = []
    for r in rs:
        a1, a2 = ref_map.get(float(r["c"]), (float("nan"), float("nan")))
        af = float("nan") if r["alpha_first"] is None else r["alpha_first"]
        qf = float("nan") if r["q2_at_first"] is None else r["q2_at_first"]
        lines.append(f"| {r['c']:g} | {r['alpha_last']:.4f} | {r['alpha_last_se']:.4f} | {a2:.4f} | "
                     f"{af:.4f} | {qf:.4f} | {a1:.4f} | {r['alpha_first_literal']:.4f} |")
        if a2 < 1 / 6:
            below.append(f"{r['c']:g}")
    big = max(rs, key=lambda r: r["c"])
    a1b, a2b = ref_map.get(float(big["c"]), (float("nan"), float("nan")))
    lines += ["", f"At the largest c = {big['c']:g} the CSV's alpha2 = {a2b:.4f} = 1/{1 / a2b:.2f} is "
              f"{a2b / big['alpha_last']:.2f} x ours ({big['alpha_last']:.4f}); as c grows A_c -> (1 + c) I, y pins "
              "the last layer up to sign and our K22 -> 6, alpha_last -> 1/6.", ""]
    lines += ["", "## Finding", "",
              "1. **Last layer.** For a two-token rank-one channel Jensen's inequality gives K_aa <= E||z z^T - I||_F^2 "
              "= T^2 + T = 6, hence alpha_init >= 1/6 = 0.1667 for every c (tested in tests/p2_theory). The CSV's "
              f"alpha2 lies below this bound for c in {{{', '.join(below)}}}, so those rows cannot be the "
              "initial-recovery threshold of the model as specified (noiseless, Frobenius output, N(0, I) "
              "indices). Our values satisfy the bound at every c and are computed with the K operator of "
              "Thm 2.3 on grids whose convergence is checked (column `alpha_last_finer_grid` of the CSV beside "
              "the figure). The authors' generating code is not published, so the exact cause cannot be "
              "established; a normalisation or channel different from the stated one (e.g. another output "
              "normalisation, the 1e-3 regulariser of the SE code, or thresholds read off noisy, unconverged SE "
              "runs, which for the published c = 1 row decay geometrically below threshold, spec §2.6) would "
              "shift alpha2.",
              "2. **First layer.** Read literally (last layer perfectly recovered), App. E.2 gives K = 6 exactly "
              "and alpha_first = 1/6 at every c, below alpha_last: that reading cannot produce the CSV's alpha1 "
              "either. In the self-consistent reading (instability of Q11 = 0 on the phase-II fixed point of the SE "
              f"with regulariser v_reg = {io.params.v_reg:g}) the threshold is reached when the last layer is almost "
              "learned (q2 at alpha_first in the table); it is nearly independent of c for c >= 0.1 and does not "
              "reproduce the CSV's hump (max 0.824 at c = 0.75) or its decrease to 0.196 at c = 4: as c grows the "
              "first layer's influence on the output shrinks, so a larger q2 is needed before it becomes unstable "
              "(q2 column), which offsets the faster rise of the phase-II branch. At c = 1 the Fig. 1 left "
              "computation, which uses the reference code's regulariser v_reg = 1e-3 on V and on the teacher, gives "
              "a larger alpha_first (see p2.L2 metrics / Fig. 1 left title) closer to the CSV's 0.7936: the "
              "regulariser acts as output noise and delays the first layer. Remaining differences come from the "
              "Monte-Carlo error of K1(q2) and R2(q2) and the resolution of the sharply peaked posterior at q2 -> 1 "
              "(min ESS recorded in the per-c JSON).", ""]
    write_text(io.output.md, "\n".join(lines) + "\n")


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
