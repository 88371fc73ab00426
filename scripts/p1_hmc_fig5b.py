"""P1 Fig. 5b: same-path pre-kernels (g, d, a1, a2), the GP kernel and the renormalised kernel (smallest N) on
50 training examples (indices 0-24, class +1, and 75-99, class -1)."""

import numpy as np

from smattn.scriptio import run

SEL = np.r_[0:25, 75:100]
ORDER = ["g", "d", "a1", "a2"]


def main(io):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from smattn.io import save_figure, write_csv

    k = np.load(io.input.kernels)
    paths = [str(p) for p in k["paths"]]
    panels = [(f"path {n}", k["same_path"][paths.index(n)]) for n in ORDER]
    panels += [("GP kernel", k["K_gp"]), (f"renormalised kernel (N = {float(k['N']):g})", k["K_rn"])]
    fig, axes = plt.subplots(2, 3, figsize=(10.5, 6.5), layout="constrained")
    rows = []
    for ax, (title, M) in zip(axes.ravel(), panels, strict=True):
        sub = M[np.ix_(SEL, SEL)]
        im = ax.imshow(sub, cmap="viridis")
        ax.set_title(title, fontsize=9)
        ax.set_xticks([0, 25], ["0", "75"])
        ax.set_yticks([0, 25], ["0", "75"])
        fig.colorbar(im, ax=ax, fraction=0.046)
        rows += [[title, int(SEL[i]), int(SEL[j]), float(sub[i, j])] for i in range(50) for j in range(50)]
    save_figure(fig, io.output.png, io.output.pdf)
    plt.close(fig)
    write_csv(io.output.csv, ["panel", "example_row", "example_col", "value"], rows)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
