"""P2 Fig. 5 (numbers, App. E.2): first-layer overlap Q11 at convergence of the SE with the last-layer overlap Q22
clamped, with the Monte-Carlo standard error of each fixed point."""

import time

import numpy as np

from smattn.io import json_safe, write_json
from smattn.p2.theory.fixed_point_error import fixed_point_covariance
from smattn.p2.theory.overlap_curves import clamped_first_layer
from smattn.p2.theory.quadrature import QuadratureSettings
from smattn.p2.theory.state_evolution import draw_teacher
from smattn.scriptio import run


def main(io):
    P = io.params
    t0 = time.time()
    quad = QuadratureSettings(n1d=P.n1d)
    r = clamped_first_layer(
        sorted(P.q22),
        P.alpha,
        P.skip_c,
        quad,
        n_samples=P.n_samples,
        seed=P.seed,
        damping=P.damping,
        tol=P.tol,
        max_iter=P.max_iter,
        v_reg=P.v_reg,
    )
    print(f"clamped SE: {time.time() - t0:.1f} s; iterations {r['iterations']}, converged {r['converged']}")
    draws = draw_teacher(P.n_samples, 2, P.seed)  # clamped_first_layer's draws
    se = [
        fixed_point_covariance([q11, q22], P.alpha, P.skip_c, draws, quad, v_reg=P.v_reg, fixed=(1,))["se"][0]
        for q11, q22 in zip(r["q11"], r["q22"], strict=True)
    ]
    write_json(
        io.output.record,
        json_safe(
            {
                "alpha": P.alpha,
                "q22": r["q22"],
                "q11": r["q11"],
                "q11_se": np.array(se),
                "converged": r["converged"],
                "iterations": r["iterations"],
                "residual": r["residual"],
                "min_ess": r["min_ess"],
                "tol": P.tol,
                "time_s": time.time() - t0,
            }
        ),
    )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
