"""P1 Fig. 5b: same-path pre-kernels (g, d, a1, a2), the GP kernel and the renormalised kernel (smallest N) on
50 training examples (indices 0-24, class +1, and 75-99, class -1). Ledger: each kernel's centred alignment with
the labels over all training examples, its label-permutation null and the uniformity of its off-diagonal entries,
with jackknife standard errors (docs/p1_theory.md#kernel-statistics-fig-5b)."""

import numpy as np

from smattn.scriptio import run

SEL = np.r_[0:25, 75:100]
ORDER = ["g", "d", "a1", "a2"]
ALIGNMENT_GAPS = [("g", "a1"), ("g", "a2"), ("g", "gp"), ("rn", "gp")]
CV_GAPS = [("g", "d"), ("a1", "d"), ("a2", "d")]


def main(io):
    from smattn.io import pyplot, save_figure, write_csv, write_metrics
    from smattn.p1.kernel_alignment import kernel_statistics

    plt = pyplot()  # the figures' one style, the same for both papers

    k = np.load(io.input.kernels)
    paths = [str(p) for p in k["paths"]]
    kernels = {n: k["same_path"][paths.index(n)] for n in ORDER} | {"gp": k["K_gp"], "rn": k["K_rn"]}
    stats = kernel_statistics(
        kernels, k["y"], ALIGNMENT_GAPS, CV_GAPS, int(io.params.permutations), int(io.params.seed)
    )
    write_metrics(io.output.metrics, {f"p1.hmc.fig5b.{key}": v for key, v in stats.items()})

    titles = [f"path {n}" for n in ORDER] + ["GP kernel", f"renormalised kernel (N = {float(k['N']):g})"]
    fig, axes = plt.subplots(2, 3, figsize=(10.5, 6.5), layout="constrained")
    rows = []
    for ax, title, (name, M) in zip(axes.ravel(), titles, kernels.items(), strict=True):
        sub = M[np.ix_(SEL, SEL)]
        im = ax.imshow(sub, cmap="viridis")
        a, cv = stats[f"alignment[kernel={name}]"], stats[f"cv[kernel={name}]"]
        ax.set_title(f"{title}\nalignment {a:.3f}, CV {cv:.3f}", fontsize=9)
        ax.set_xticks([0, 25], ["0", "75"])
        ax.set_yticks([0, 25], ["0", "75"])
        fig.colorbar(im, ax=ax, fraction=0.046)
        rows += [[title, int(SEL[i]), int(SEL[j]), float(sub[i, j])] for i in range(50) for j in range(50)]
    save_figure(fig, io.output.png, io.output.pdf)
    plt.close(fig)
    write_csv(io.output.csv, ["panel", "example_row", "example_col", "value"], rows)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
