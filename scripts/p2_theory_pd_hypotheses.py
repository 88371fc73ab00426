"""P2 Fig. 1 right, deviation note: first-layer thresholds read off short, noisy reference-style SE runs."""

import time

import numpy as np

from smattn.io import json_safe, write_json
from smattn.p2.theory.phase_diagram_hypotheses import read_off_threshold
from smattn.p2.theory.quadrature import QuadratureSettings
from smattn.scriptio import run


def main(io):
    P = io.params
    t0 = time.time()
    quad = QuadratureSettings(n1d=P.n1d)
    alphas = np.round(np.arange(P.alpha_step, P.alpha_max + 1e-9, P.alpha_step), 10)
    runs = [
        read_off_threshold(
            c, alphas, quad, n_samples=P.n_samples, iterations=P.iterations, seed=P.seed, v_reg=P.v_reg, level=P.level
        )
        for c in P.skips
    ]
    for r in runs:
        print(f"c={r['c']:g}: read-off alpha1 = {r['alpha']:.4f} (Q11 > {r['level']:g})", flush=True)
    write_json(
        io.output.json,
        json_safe({"read_off": runs, "alpha_step": P.alpha_step, "v_reg": P.v_reg, "time_s": time.time() - t0}),
    )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
