"""P1 Fig. 3d: overlap |v_k . y| / sqrt(P) of the training kernel's k-th principal component with the labels, for the
GP kernel (U = 1) and the renormalised kernel (U at the smallest width and its selected T), no temperature term."""

import numpy as np

from smattn.scriptio import run


def main(io):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    from smattn.io import save_figure, write_csv

    th = np.load(io.input.theory)
    gp, rn = th["overlap_gp"], th["overlap_renormalised"]
    k = np.arange(1, len(gp) + 1)
    fig, ax = plt.subplots(figsize=(8, 3.4))
    w = 0.4
    ax.bar(k - w / 2, rn, w, color="tab:blue",
           label=f"renormalised (N = {float(th['alignment_N']):g}, T = {float(th['alignment_T']):g})")
    ax.bar(k + w / 2, gp, w, color="tab:orange", label="GP")
    ax.set_xlabel("principal component rank k")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlim(0.3, len(gp) + 0.7)
    ax.set_ylabel("overlap with labels")
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, io.output.png)
    write_csv(io.output.csv, ["k", "overlap_renormalised", "overlap_gp"], zip(k, rn, gp))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
