"""P1 Fig. 2d: overlaps of the training kernel's principal components with the labels, GP vs renormalised (N min)."""

import numpy as np

from smattn.scriptio import run


def main(io):
    from smattn.io import pyplot, save_figure, write_csv
    from smattn.p1.plotting import alignment_bars

    plt = pyplot()  # the figures' one style, the same for both papers

    k = np.load(io.input.kernels)
    gp, rn = k["overlap_gp"], k["overlap_rn"]
    fig, ax = plt.subplots(figsize=(4.5, 2.8))
    idx = alignment_bars(ax, gp, rn, f"renormalised (N = {float(k['N']):g})")
    save_figure(fig, io.output.png, io.output.pdf)
    plt.close(fig)
    write_csv(
        io.output.csv,
        ["pc_rank", "overlap_gp", "overlap_renormalised"],
        [[int(i), float(a), float(b)] for i, a, b in zip(idx, gp, rn, strict=True)],
    )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
