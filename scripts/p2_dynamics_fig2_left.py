"""P2 Fig. 2 left: layer-wise similarity of the GAMP estimate with the teacher per iteration.

The runs use the Onsager form of gamp_iter_onsager (the authors' code: "latest"), named in the title.
Left panel: the authors' quantity |M_kk| / sqrt(Q_kk) (not divided by the teacher norm), our runs (thin, '.') and
the mean of the runs that learned the layer (a mean over learned and trapped runs would describe neither), with the
authors' published run (d = 1000, alpha = 1.2) overlaid ('x', dashed), and the distribution of our runs'
half-crossing iterations (ticks at the top: median and quartiles). Right panel: the true cosine
|M_kk| / sqrt(Q_kk |w_k|^2 / d) of our runs. Iterations are counted from 1 (state after the first update), for the
published run too (its stored index 0 is the state after the first update).
"""

import json

import numpy as np

from smattn.scriptio import run


def _mean_sd(v, sd_bound: float, empty: float):
    """Mean and standard deviation of v (runs,) for the ledger, always finite.  With one value the deviation is
    sd_bound (a bound on the deviation of any distribution on the quantity's range, so the standard error stays
    honest); with none the mean is ``empty`` with no spread, the value a claim is judged on when no run shows the
    effect (after the last iteration for a half-crossing, 0 for an ordering), which fails it."""
    v = np.asarray(v, dtype=np.float64)
    if v.size == 0:
        return float(empty), 0.0
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else float(sd_bound)


def main(io):
    from smattn.data.spoc import read_npy
    from smattn.io import save_figure, write_csv, write_metrics
    from smattn.p2.plotting import BLUE, DBLUE, DRED, RED, plt
    from smattn.p2.theory.gamp_metrics import (
        authors_metric,
        half_crossing_iterations,
        published_run_metric,
        takeoff_iteration,
    )
    from smattn.p2.trajectories import first_crossing

    runs = [np.load(f) for f in io.input.runs]
    cfg = json.loads(str(runs[0]["config"]))
    C = np.stack([authors_metric(r["M"], r["Q"]) for r in runs])  # (run, iter, layer)
    cos = np.stack([authors_metric(r["M"], r["Q"]) / np.sqrt(r["teacher_sq_norm"]) for r in runs])
    Cref = published_run_metric(read_npy(io.input.ref_m))  # (iter, layer)
    t = np.arange(1, C.shape[1] + 1)
    tr = np.arange(1, Cref.shape[0] + 1)
    cross = [half_crossing_iterations(C[:, :, k]) for k in range(2)]  # 1-based; unlearned runs count as n_iter + 1

    def learned_mean(A, k):
        """Mean over the runs that learned layer k (the runs split into learned and trapped: a mean over all of
        them describes neither); NaN where none did. A: (run, iter, layer)."""
        sel = cross[k][1]
        return A[sel, :, k].mean(0) if sel.any() else np.full(A.shape[1], np.nan)

    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(7.0, 3.3), sharex=True)
    for k, (col, dcol) in enumerate(((BLUE, DBLUE), (RED, DRED))):
        for r in range(C.shape[0]):
            ax.plot(t, C[r, :, k], color=col, lw=0.6, alpha=0.4, marker=".", ms=2)
            ax2.plot(t, cos[r, :, k], color=col, lw=0.6, alpha=0.4, marker=".", ms=2)
        n_learned, n_runs = int(cross[k][1].sum()), cross[k][1].size
        ax.plot(
            t,
            learned_mean(C, k),
            color=col,
            lw=1.8,
            label=f"layer {k + 1} (our runs: mean of the {n_learned}/{n_runs} that learned it)",
        )
        ax2.plot(t, learned_mean(cos, k), color=col, lw=1.8, label=f"layer {k + 1} (our runs, learned: mean)")
        ax.plot(tr, Cref[:, k], color=dcol, lw=1.0, ls="--", marker="x", ms=3, label=f"layer {k + 1} (authors, d=1000)")
    for a in (ax, ax2):
        a.set_xscale("log")
        a.set_xlabel("GAMP iteration")
    top = max(1.1, float(np.nanmax(C)) + 0.05, float(np.nanmax(Cref)) + 0.05)
    for k, col in enumerate((BLUE, RED)):
        it, learned = cross[k]
        y = top + 0.06 + 0.1 * k
        if learned.any():
            lo, med, hi = np.percentile(it[learned], [25, 50, 75])
            ax.plot([lo, hi], [y, y], color=col, lw=2.5, solid_capstyle="butt")
            ax.plot([med], [y], color=col, marker="|", ms=8, mew=1.5)
        ax.plot(it[learned], np.full(learned.sum(), y), color=col, ls="none", marker=".", ms=3)
    ax.plot(
        [], [], color="grey", lw=2.5, marker="|", ms=8, mew=1.5, label="half-way iteration: quartiles, median, runs"
    )
    ax.set_ylim(-0.03, top + 0.5)
    ax2.set_ylim(-0.03, 1.1)
    ax.set_ylabel(r"$|M_{kk}|/\sqrt{Q_{kk}}$")
    ax2.set_ylabel(r"cosine $|M_{kk}|/\sqrt{Q_{kk}\,|w_k|^2/d}$")
    form = "authors' Onsager form" if cfg["onsager"] == "latest" else f"{cfg['onsager']} Onsager (project's variant)"
    ax.set_title(
        f"GAMP, {form}, d={cfg['d']}, $\\alpha$={cfg['alpha']:g}, {C.shape[0]} runs (authors' metric)", fontsize=8
    )
    ax2.set_title("true cosine with the teacher", fontsize=8.5)
    # legend below the panels: inside, it covered the crossing markers or the curves
    fig.legend(*ax.get_legend_handles_labels(), fontsize=6.5, loc="lower center", frameon=False, ncol=2)
    fig.tight_layout(rect=(0, 0.14, 1, 1))
    save_figure(fig, io.output.png, io.output.pdf)
    plt.close(fig)

    header = (
        ["iteration"]
        + [f"C{k + 1}_mean_learned" for k in range(2)]
        + [f"cos{k + 1}_mean_learned" for k in range(2)]
        + [f"C{k + 1}_run{r}" for k in range(2) for r in range(C.shape[0])]
        + ["test_error_mean", "ref_C1", "ref_C2"]
    )
    err = np.stack([r["test_error"] for r in runs])
    means = [learned_mean(C, 0), learned_mean(C, 1), learned_mean(cos, 0), learned_mean(cos, 1)]
    rows = []
    for i in range(max(C.shape[1], Cref.shape[0])):
        row = [i + 1]
        if i < C.shape[1]:
            row += [m[i] for m in means]
            row += [C[r, i, k] for k in range(2) for r in range(C.shape[0])]
            row += [err[:, i].mean()]
        else:
            row += [""] * (5 + 2 * C.shape[0])
        row += [Cref[i, 0], Cref[i, 1]] if i < Cref.shape[0] else ["", ""]
        rows.append(row)
    write_csv(io.output.csv, header, rows)

    metrics = {"p2.gamp_iter.runs": float(C.shape[0])}
    n_iter = C.shape[1]
    for k in range(2):
        it, learned = cross[k]
        itr = int(first_crossing(Cref[:, k], 0.5)) + 1
        # the figure's distribution counts unlearned runs as n_iter + 1; the ledger's take-off statistics use the
        # runs that learned the layer only (how many did is its own metric)
        q1, med, q3 = np.percentile(it, [25, 50, 75])
        n_learned = int(learned.sum())
        metrics[f"p2.gamp_iter.runs_learned[layer={k + 1}]"] = float(n_learned)
        metrics[f"p2.gamp_iter.learned_fraction[layer={k + 1}]"] = float(learned.mean())
        metrics[f"p2.gamp_iter.first_half_median[layer={k + 1}]"] = float(med)
        metrics[f"p2.gamp_iter.first_half_q1[layer={k + 1}]"] = float(q1)
        metrics[f"p2.gamp_iter.first_half_q3[layer={k + 1}]"] = float(q3)
        mean, sd = _mean_sd(it[learned], (n_iter - 1) / 2, empty=n_iter + 1)
        metrics[f"p2.gamp_iter.first_half_learned[layer={k + 1}]"] = mean
        metrics[f"p2.gamp_iter.first_half_learned_sd[layer={k + 1}]"] = sd
        metrics[f"p2.gamp_iter.first_half_learned_se[layer={k + 1}]"] = sd / np.sqrt(max(n_learned, 1))
        metrics[f"p2.gamp_iter.final_similarity[layer={k + 1}]"] = float(C[:, -1, k].mean())
        metrics[f"p2.gamp_iter.final_cosine[layer={k + 1}]"] = float(cos[:, -1, k].mean())
        print(
            f"layer {k + 1}: half-crossing iterations {it} (median {med:g}, quartiles {q1:g}-{q3:g}, "
            f"{n_learned}/{learned.size} learned within {n_iter}); authors {itr}; "
            f"final |M|/sqrt(Q) {C[:, -1, k]} (authors {Cref[-1, k]:.4f}); final cosine {cos[:, -1, k]}",
            flush=True,
        )
    # order within each run that learned both layers: iterations from the last layer's half-crossing to the first
    # layer's, and the last layer's progress (C_2 over its final value) when the first layer takes off for good
    both = np.flatnonzero(cross[0][1] & cross[1][1])
    gap = (cross[0][0] - cross[1][0])[both].astype(np.float64)
    start = np.array([takeoff_iteration(C[r, :, 0]) for r in both], dtype=int)
    progress = np.array([C[r, t - 1, 1] / C[r, -1, 1] for r, t in zip(both, start, strict=True)])
    for name, v, bound in (("order_gap", gap, float(n_iter)), ("layer2_at_layer1_takeoff", progress, 0.6)):
        mean, sd = _mean_sd(v, bound, empty=0.0)
        metrics[f"p2.gamp_iter.{name}"] = mean
        metrics[f"p2.gamp_iter.{name}_se"] = sd / np.sqrt(max(v.size, 1))
    print(
        f"runs that learned both layers: {both.size}; first-layer minus last-layer half-crossing {gap}; last layer "
        f"at {np.round(progress, 3)} of its final value when the first layer takes off (iterations {start})",
        flush=True,
    )
    metrics["p2.gamp_iter.final_test_error"] = float(err[:, -1].mean())
    metrics["p2.gamp_iter.wall_s_per_run"] = float(np.mean([float(r["wall_s"]) for r in runs]))
    write_metrics(io.output.metrics, metrics)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
