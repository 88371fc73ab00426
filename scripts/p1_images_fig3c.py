"""P1 Fig. 3c: the order parameter U (16 x 16, paths (h1, h2) with h1 slow) of the theory at the smallest width and
its selected temperature, of the sampled network (NUTS, same N and T) and of the GD-trained network (U_GD = W W^T,
unnormalised). Diverging colour map with symmetric limits per panel (magnitudes are not comparable across panels)."""

import itertools
import json

import numpy as np

from smattn.scriptio import run


def main(io):
    from smattn.io import pyplot, save_figure, write_csv, write_metrics
    from smattn.p1.images.uncertainty import sign_agreement_null

    plt = pyplot()  # the figures' one style, the same for both papers

    th = np.load(io.input.theory)
    gd = json.load(open(io.input.gd_eval))
    smp = json.load(open(io.input.samples))
    i = int(np.argmin(th["widths"]))
    N, T = float(th["widths"][i]), float(th["T_selected"][i])
    if smp["N"] != int(N) or abs(smp["T"] - T) > 1e-12:
        raise ValueError(f"samples are at N={smp['N']}, T={smp['T']}, theory panel at N={N:g}, T={T:g}")
    panels = [
        (f"theory (N = {N:g}, T = {T:g})", th["U_selected"][i]),
        (f"sampled (N = {int(N)}, {smp['chains']}x{smp['samples']} samples)", np.array(smp["U_mean"])),
        (f"gradient descent (N = {gd['hparams']['width']})", np.array(gd["U_gd"])),
    ]
    H = gd["hparams"]["n_heads"]
    L = gd["hparams"]["n_layers"]
    labels = [",".join(str(h + 1) for h in path) for path in itertools.product(range(H), repeat=L)]
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.4))
    rows = []
    for ax, (title, U) in zip(axes, panels, strict=True):
        lim = float(np.abs(U).max())
        im = ax.imshow(U, cmap="RdBu_r", vmin=-lim, vmax=lim)
        ax.set_xticks(range(len(labels)), labels, rotation=90, fontsize=6)
        ax.set_yticks(range(len(labels)), labels, fontsize=6)
        ax.set_title(title, fontsize=9)
        fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
        for a, b in itertools.product(range(U.shape[0]), repeat=2):
            rows.append([title.split(" (")[0], labels[a], labels[b], U[a, b]])
    fig.suptitle("order parameter U, paths (h1, h2), h1 slow", fontsize=10)
    fig.tight_layout()
    save_figure(fig, io.output.png, io.output.pdf)
    write_csv(io.output.csv, ["panel", "path_row", "path_col", "U"], rows)

    # ledger: sign agreement of the distinct off-diagonal entries of U, theory (smallest width) vs the GD network and
    # vs the sampled network, each against random relabellings of the other's paths (docs/p1_images.md#verdicts)
    p = io.params
    m = {}
    for name, other in (("theory_vs_gd", np.array(gd["U_gd"])), ("theory_vs_sampled", np.array(smp["U_mean"]))):
        res = sign_agreement_null(th["U_selected"][i], other, int(p.sign_null_permutations), int(p.seed))
        m[f"p1.img.U_sign_agreement[{name}]"] = res.observed
        m[f"p1.img.U_sign_agreement_null_mean[{name}]"] = res.null_mean
        m[f"p1.img.U_sign_agreement_null_sd[{name}]"] = res.null_sd
        m[f"p1.img.U_sign_agreement_p[{name}]"] = res.p_value
        print(
            f"sign agreement {name}: {res.observed:.3f} (null {res.null_mean:.3f} +- {res.null_sd:.3f}, "
            f"p = {res.p_value:.2g} over {res.draws} relabellings)"
        )
    write_metrics(io.output.metrics, m)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
