"""P1 Fig. 3d: overlap |v_k . y| / sqrt(P) of the training kernel's k-th principal component with the labels, for the
GP kernel (U = 1) and the renormalised kernel (U at the smallest width and its selected T), no temperature term."""

import numpy as np

from smattn.scriptio import run


def main(io):
    from smattn.io import pyplot, save_figure, write_csv, write_metrics
    from smattn.p1.plotting import alignment_bars

    plt = pyplot()  # the figures' one style, the same for both papers

    th = np.load(io.input.theory)
    gp, rn = th["overlap_gp"], th["overlap_renormalised"]
    fig, ax = plt.subplots(figsize=(8, 3.4))
    k = alignment_bars(ax, gp, rn, f"renormalised (N = {float(th['alignment_N']):g}, T = {float(th['alignment_T']):g})")
    fig.tight_layout()
    save_figure(fig, io.output.png, io.output.pdf)
    write_csv(io.output.csv, ["k", "overlap_renormalised", "overlap_gp"], zip(k, rn, gp, strict=True))
    write_metrics(
        io.output.metrics,
        {
            "p1.img.alignment_max_overlap[kernel=gp]": float(gp.max()),
            "p1.img.alignment_max_overlap[kernel=renormalised]": float(rn.max()),
        },
    )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
