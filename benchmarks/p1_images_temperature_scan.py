"""Accuracy of the image-task theory against temperature at one width, beside the GP limit's: shows what the
Omniglot-selected temperature (the authors' rule, ``select_temperature``) gives up on the OOD sets, on a grid wider
than a scale's own. Reads an exported GD network (``results/p1_images/{model}/export.npz``).

    .venv/bin/python benchmarks/p1_images_temperature_scan.py [--export results/p1_images/L2H4/export.npz] [--N 10] \\
        [--temperatures 0.01,0.025,...] [--gp-temperatures 0.01,0.025,...]

Prints one line per temperature (converged flag, accuracy per test set) for the theory, then for the GP (U = 1).
"""

import argparse

import numpy as np

PAPER_GRID = "0.01,0.025,0.05,0.075,0.1,0.25,0.5,0.75,1.0,1.5,2.0,3.0"  # the paper's 10 values, then 2 and 3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--export", default="results/p1_images/L2H4/export.npz")
    ap.add_argument("--N", type=float, default=10.0)
    ap.add_argument("--temperatures", default=PAPER_GRID)
    ap.add_argument("--gp-temperatures", default="0.01,0.025,0.05,0.1,0.25")
    ap.add_argument("--tol", type=float, default=1e-5)
    a = ap.parse_args()

    from smattn.device import jax_setup

    jax_setup(x64=True)
    from smattn.p1.images.theory_grid import attentioned_sets, gp_line, run_grid

    with np.load(a.export) as z:
        ex = {k: z[k] for k in z.files}
    xi = attentioned_sets(ex)
    temps = [float(t) for t in a.temperatures.split(",")]
    recs = run_grid(ex, xi, [a.N], temps, tol=a.tol, warm_start=True)
    for r in sorted(recs, key=lambda r: r["T"]):
        acc = ", ".join(f"{k} {v:.3f}" for k, v in r["acc"].items())
        print(f"theory N={a.N:g} T={r['T']:g}: converged {r['summary']['converged']}; {acc}", flush=True)
    gp = gp_line(ex, xi, [float(t) for t in a.gp_temperatures.split(",")])
    for g in gp["scan"]:
        print(f"GP T={g['T']:g}: " + ", ".join(f"{k} {v:.3f}" for k, v in g["acc"].items()), flush=True)


if __name__ == "__main__":
    main()
