"""Weak-recovery thresholds of the two-layer attention target at one skip strength c (P2 Fig. 1 right)."""

import time

import numpy as np

from smattn.io import json_safe, write_json
from smattn.p2.theory.overlap_curves import q2_grid
from smattn.p2.theory.quadrature import QuadratureSettings
from smattn.p2.theory.thresholds import (
    alpha_first,
    alpha_last,
    first_layer_literal,
    phase_two_curve,
)
from smattn.scriptio import run


def main(io):
    P = io.params
    c = float(io.wildcards.c)
    t0 = time.time()
    quad = QuadratureSettings(n1d=P.n1d)
    last = alpha_last(c, quad, n_samples=P.n_k, seed=P.seed)
    # grid convergence check of K at this c (the 1/det A_c factor is singular on z11 = z12 as c -> 0)
    last_fine = alpha_last(c, QuadratureSettings(n1d=int(1.5 * P.n1d)), n_samples=P.n_k, seed=P.seed)
    curve = phase_two_curve(
        q2_grid(P.q_points, q_max=P.q_max), c, quad, n_samples=P.n_curve, seed=P.seed + 1, v_reg=P.v_reg
    )
    first = alpha_first(curve, last["alpha"], last["K"][0, 0])
    lit = first_layer_literal(c, n_samples=P.literal_samples, seed=P.seed + 2)
    out = {
        "c": c,
        "alpha_last": last["alpha"],
        "alpha_last_se": last["alpha_se"],
        "K": last["K"].tolist(),
        "alpha_last_fine_grid": last_fine["alpha"],
        "last_layer": last["layer"],
        "alpha_first": first["alpha"],
        "alpha_first_found": first["found"],
        "q2_at_first": first["q2"],
        "alpha_first_literal": lit["alpha"],
        "K_literal": lit["K"],
        "K_literal_se": lit["K_se"],
        "curve": {k: np.asarray(v).tolist() for k, v in curve.items()},
        "v_reg": P.v_reg,
        "q_max": P.q_max,
        "time_s": time.time() - t0,
    }
    print({k: v for k, v in out.items() if k != "curve"})
    write_json(io.output.json, json_safe(out))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
