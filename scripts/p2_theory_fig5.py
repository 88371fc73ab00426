"""P2 Fig. 5 (App. E.2): first-layer overlap Q11 at convergence of the SE with the last-layer overlap clamped."""

import time

from smattn.io import save_figure, write_csv
from smattn.p2.plotting import BLUE, long_rows, setup
from smattn.p2.theory.overlap_curves import clamped_first_layer
from smattn.p2.theory.quadrature import QuadratureSettings
from smattn.scriptio import run


def main(io):
    plt = setup()
    P = io.params
    t0 = time.time()
    r = clamped_first_layer(
        sorted(P.q22),
        P.alpha,
        P.skip_c,
        QuadratureSettings(n1d=P.n1d),
        n_samples=P.n_samples,
        seed=P.seed,
        damping=P.damping,
        tol=P.tol,
        max_iter=P.max_iter,
        v_reg=P.v_reg,
    )
    print(f"clamped SE: {time.time() - t0:.1f} s; iterations {r['iterations']}, converged {r['converged']}")
    fig, ax = plt.subplots(figsize=(3.2, 2.4))
    ax.plot(r["q22"], r["q11"], color=BLUE, marker="o", ms=3)
    ax.set_xlabel(r"clamped last-layer overlap $Q_{22}$")
    ax.set_ylabel(r"$Q_{11}$ at convergence")
    ax.set_title(rf"$\alpha={P.alpha:g}$, $c={P.skip_c:g}$", fontsize=8)
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.05, 1.05)
    fig.tight_layout()
    save_figure(fig, io.output.png, io.output.pdf)
    write_csv(
        io.output.csv,
        ["series", "x", "y", "err"],
        long_rows("Q11", r["q22"], r["q11"])
        + long_rows("iterations", r["q22"], r["iterations"])
        + long_rows("residual", r["q22"], r["residual"])
        + long_rows("converged", r["q22"], r["converged"])
        + long_rows("min_ess", r["q22"], r["min_ess"]),
    )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
