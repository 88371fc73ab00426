"""Weak-recovery thresholds of the two-layer attention target at one skip strength c (P2 Fig. 1 right).

alpha_first under the paper's definition (regulariser v_reg, the reference code's 1e-3) and, as labelled variants,
the noiseless (v_reg = 0) and the literal readings; every threshold with its standard error and a quadrature check.
"""

import time

import numpy as np

from smattn.io import json_safe, write_json
from smattn.p2.theory.overlap_curves import q2_grid
from smattn.p2.theory.quadrature import QuadratureSettings
from smattn.p2.theory.thresholds import alpha_first_refined, alpha_last, first_layer_literal
from smattn.scriptio import run


def _first_record(r, prefix):
    return {
        f"{prefix}": r["alpha"] if r["found"] else None,
        f"{prefix}_se": r["alpha_se"],
        f"{prefix}_found": r["found"],
        f"{prefix}_how": r["how"],
        f"{prefix}_q2": r["q2"] if r["found"] else None,
        f"{prefix}_q2_se": r["q2_se"],
        f"{prefix}_grid_shift": r["alpha_grid_shift"],
        f"{prefix}_min_ess": r["min_ess"],
        f"{prefix}_evaluations": r["n_evaluations"],
        f"{prefix}_refine_converged": r["refine_converged"],
    }


def main(io):
    P = io.params
    c = float(io.wildcards.c)
    t0 = time.time()
    quad = QuadratureSettings(n1d=P.n1d)
    fine = QuadratureSettings(n1d=int(1.5 * P.n1d), n_local=24)
    # the sample grows until the standard error of alpha_last reaches its target (at most n_k draws)
    last = alpha_last(
        c, quad, n_samples=P.n_k, seed=P.seed, n_rep=P.qmc_sets, se_target=P.last_se_target, show_progress=True
    )
    # quadrature check of K on the first quarter of the same quasi-random sets (common random numbers), at 1.5x the
    # nodes (below c = 0.05 the first-layer grid is the ridge grid of channel_denoiser.ridge_grid)
    sub = alpha_last(c, quad, n_samples=last["n_used"] // 4, seed=P.seed, n_rep=P.qmc_sets)
    sub_fine = alpha_last(c, fine, n_samples=last["n_used"] // 4, seed=P.seed, n_rep=P.qmc_sets)
    grid = q2_grid(P.q_points, q_max=P.q_max)
    first = alpha_first_refined(
        c,
        quad,
        q_grid=grid,
        v_reg=P.v_reg,
        n_samples=P.n_first,
        n_rep=P.qmc_sets,
        seed=P.seed + 1,
        last=last,
        quad_check=fine,
        show_progress=True,
    )
    first0 = alpha_first_refined(
        c,
        quad,
        q_grid=grid,
        v_reg=0.0,
        n_samples=P.n_first,
        n_rep=P.qmc_sets,
        seed=P.seed + 1,
        last=last,
        show_progress=True,
    )
    lit = first_layer_literal(c, n_samples=P.literal_samples, seed=P.seed + 2)
    out = {
        "c": c,
        "alpha_last": last["alpha"],
        "alpha_last_se": last["alpha_se"],
        "K": last["K"].tolist(),
        "K_se": last["K_se"].tolist(),
        "alpha_last_n": last["n_used"],
        "alpha_last_se_target": last["se_target"],
        "alpha_last_se_reached": last["se_reached"],
        "alpha_last_se_history": last["se_history"],
        "alpha_last_min_ess": last["min_ess"],
        "alpha_last_fine_grid": last["alpha"] + sub_fine["alpha"] - sub["alpha"],
        "alpha_last_grid_shift": sub_fine["alpha"] - sub["alpha"],
        "last_layer": last["layer"],
        **_first_record(first, "alpha_first"),
        **_first_record(first0, "alpha_first_noiseless"),
        "q2_at_first": first["q2"] if first["found"] else None,
        "alpha_first_n": first["n_used"],
        "alpha_first_literal": lit["alpha"],
        "alpha_first_literal_se": lit["K_se"] / lit["K"] ** 2,
        "K_literal": lit["K"],
        "K_literal_se": lit["K_se"],
        "curve": {k: np.asarray(v).tolist() for k, v in first["coarse"].items()},
        "points": {k: np.asarray(v).tolist() for k, v in first["points"].items()},
        "v_reg": P.v_reg,
        "q_max": P.q_max,
        "qmc_sets": P.qmc_sets,
        "n1d": P.n1d,
        "time_s": time.time() - t0,
    }
    print({k: v for k, v in out.items() if k not in ("curve", "points")}, flush=True)
    write_json(io.output.json, json_safe(out))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
