"""P1 Figs 3e, 3f (L = 2, H = 4) and 7 (L = 2, H = 8): head scores vs single-head pruning drops, and accuracy after
cumulative pruning in ascending-score order, against random orders and a U-diagonal-only score; every drop drawn with
its paired bootstrap interval over test tasks."""

import numpy as np

from smattn.data.published import (
    P1_PRUNING_BASE_ACCURACY_PERCENT,
    P1_PRUNING_DROPS_POINTS,
)
from smattn.p1.images.pruning import drops_points
from smattn.scriptio import run

SCORE_COLUMNS = ["head", "score", "score_diagonal", "drop_points", "drop_ci_low_points", "drop_ci_high_points"]


def score_rows(r, drops):
    """CSV rows of the single-head panel: head, scores, ID drop and its interval (points)."""
    return [
        [h, r["score"][h], r["score_diagonal"][h], d] + [100 * e for e in r["single_drop_ci"][h]["omniglot"]]
        for h, d in zip(r["order"], drops, strict=True)
    ]


def scores_panel(ax, r, show_authors):
    order = r["order"]
    xs = np.arange(len(order))
    base = r["base"]["omniglot"]
    drops = np.array(drops_points(r))
    ci = 100 * np.array([r["single_drop_ci"][h]["omniglot"] for h in order])  # [heads, (low, high)] points
    ax.bar(xs - 0.2, [r["score"][h] for h in order], 0.4, color="tab:blue", label="normalised score")
    ax.set_ylabel("normalised score", color="tab:blue")
    ax.set_xticks(xs, [f"({h.split('.')[0]}){h.split('.')[1]}" for h in order], rotation=90 if len(order) > 8 else 0)
    ax.set_xlabel("head (layer)head, ascending score")
    ax2 = ax.twinx()
    level = round(100 * r["bootstrap"]["level"])
    ax2.bar(xs + 0.2, drops, 0.4, color="tab:red", label=f"accuracy drop (ours, {level} % interval)")
    ax2.errorbar(
        xs + 0.2,
        drops,
        yerr=np.maximum(0, [drops - ci[:, 0], ci[:, 1] - drops]),
        fmt="none",
        ecolor="k",
        elinewidth=1,
        capsize=2,
    )
    if show_authors:
        ax2.plot(
            xs + 0.2,
            P1_PRUNING_DROPS_POINTS,
            "k_",
            ms=14,
            mew=2,
            label=f"authors' drop (base {P1_PRUNING_BASE_ACCURACY_PERCENT} %)",
        )
    ax2.set_ylabel("ID accuracy drop (points)", color="tab:red")
    lo = min(0.0, ci[:, 0].min() - 0.5)
    ax2.set_ylim(lo, max(ci[:, 1].max(), max(P1_PRUNING_DROPS_POINTS) if show_authors else 0) * 1.15 + 0.5)
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=7, loc="upper left")
    ax.set_title(f"single-head pruning, base ID accuracy {100 * base:.1f} %", fontsize=9)
    return drops


def cumulative_panel(ax, r):
    c = r["cumulative"]
    k = np.array(c["k"])
    for s, colour, lab in (("omniglot", "tab:blue", "ID (Omniglot)"), ("fashion", "tab:orange", "OOD (Fashion-MNIST)")):
        acc = np.array([100 * a[s] for a in c["theory"]])
        drop = 100 * r["base"][s] - acc
        ci = 100 * np.array([d[s] for d in c["theory_drop_ci"]])  # [k, (low, high)] of the drop, points
        ax.errorbar(
            k,
            acc,
            yerr=np.maximum(0, [ci[:, 1] - drop, drop - ci[:, 0]]),
            fmt="o-",
            color=colour,
            capsize=2,
            label=f"{lab}, theory order",
        )
        ax.plot(
            k, [100 * a[s] for a in c["diagonal"]], "s:", color=colour, ms=4, alpha=0.8, label=f"{lab}, diag(U) order"
        )
        mu, sd = 100 * np.array(c["random_mean"][s]), 100 * np.array(c["random_std"][s])
        ax.plot(k, mu, "--", color=colour, lw=1)
        ax.fill_between(
            k,
            mu - sd,
            mu + sd,
            color=colour,
            alpha=0.15,
            label=f"{lab}, random orders (mean ± std of {c['random_orders']})",
        )
    ax.set_xlabel("number of pruned heads k (lowest score first)")
    ax.set_ylabel("accuracy (%)")
    ax.set_xticks(k)
    ax2 = ax.secondary_xaxis("top", functions=(lambda x: x, lambda x: x))
    ax2.set_xticks(k, [f"{100 * f:.0f}%" for f in c["params_removed_fraction"]], fontsize=7)
    ax2.set_xlabel("parameters removed", fontsize=8)
    ax.legend(fontsize=6.5, loc="lower left")


def main(io):
    from smattn.io import pyplot, read_json, save_figure, write_csv

    plt = pyplot()  # the figures' one style, the same for both papers

    scale = io.params.scale
    for key in ("small", "large"):
        r = read_json(getattr(io.input, key))
        if key == "small":
            fig, ax = plt.subplots(figsize=(5.2, 3.4))
            drops = scores_panel(ax, r, show_authors=(scale == "paper"))
            save_figure(fig, io.output.fig3e_png, io.output.fig3e_pdf)
            plt.close(fig)
            write_csv(io.output.fig3e_csv, SCORE_COLUMNS, score_rows(r, drops))
            fig, ax = plt.subplots(figsize=(5.2, 3.8))
            cumulative_panel(ax, r)
            save_figure(fig, io.output.fig3f_png, io.output.fig3f_pdf)
            plt.close(fig)
            cumulative_csv = io.output.fig3f_csv
        else:
            fig, axes = plt.subplots(1, 2, figsize=(12, 4.2), gridspec_kw={"wspace": 0.55})
            drops = scores_panel(axes[0], r, show_authors=False)
            cumulative_panel(axes[1], r)
            fig.suptitle(f"L = 2, H = {r['heads'][0]}: head scores and pruning", fontsize=10)
            save_figure(fig, io.output.fig7_png, io.output.fig7_pdf)
            plt.close(fig)
            cumulative_csv = io.output.fig7_csv
            write_csv(io.output.fig7_scores_csv, SCORE_COLUMNS, score_rows(r, drops))
        c = r["cumulative"]
        write_csv(
            cumulative_csv,
            ["k", "pruned", "params_removed_fraction"]
            + [f"{o}_{s}" for o in ("theory", "diagonal") for s in ("omniglot", "mnist", "fashion")]
            + [f"random_{m}_{s}" for m in ("mean", "std") for s in ("omniglot", "mnist", "fashion")]
            + [f"theory_drop_ci_{e}_{s}" for e in ("low", "high") for s in ("omniglot", "mnist", "fashion")],
            [
                [k, " ".join(c["pruned"][k]), c["params_removed_fraction"][k]]
                + [c[o][k][s] for o in ("theory", "diagonal") for s in ("omniglot", "mnist", "fashion")]
                + [c[f"random_{m}"][s][k] for m in ("mean", "std") for s in ("omniglot", "mnist", "fashion")]
                + [c["theory_drop_ci"][k][s][e] for e in (0, 1) for s in ("omniglot", "mnist", "fashion")]
                for k in c["k"]
            ],
        )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
