"""Brute-force importance-sampling check of state-evolution fixed points and the unconverged-point count.

L = 3: at every plotted alpha, one SE update by brute force and by the 4-D grid on the same teacher draws.
L = 2: at alpha = 1.2, one brute-force SE update of our fixed point and of the authors' SE-file value.
"""

import time

import numpy as np

from smattn.data.spoc import read_csv
from smattn.io import json_safe, read_json, write_json, write_metrics
from smattn.p2.theory.bruteforce_reference import bruteforce_update
from smattn.p2.theory.quadrature import QuadratureSettings
from smattn.p2.theory.state_evolution import TeacherDraws, draw_teacher
from smattn.progress import progress
from smattn.scriptio import run

ALPHA_L2 = 1.2


def _q_se(upd, alpha):
    """Standard error (L,) of the diagonal of the undamped update from that of R (delta method)."""
    R, se = np.diag(upd["R"]), np.diag(upd["R_se"])
    return alpha * se / (1.0 + alpha * R) ** 2


def main(io):
    P = io.params
    t0 = time.time()
    rng = np.random.default_rng(P.seed + 101)
    out, m = {"L3": [], "L2": {}}, {}

    # L = 3: a subset of the SE's own teacher draws (the sweep draws them with seed + 1)
    l3 = read_json(io.input.l3)
    full = draw_teacher(P.l3_n_samples, 3, P.seed + 1)
    sub = TeacherDraws(full.xi[: P.l3_bf_draws], full.U[: P.l3_bf_draws])
    quad3 = QuadratureSettings(n1d=P.l3_n1d)
    for a, Q in progress(list(zip(l3["alpha"], l3["Q"], strict=True)), desc="L=3 brute-force check"):
        u = bruteforce_update(np.array(Q), a, P.skip_c, sub, rng, v_reg=P.v_reg, n_points=P.bf_points, quad=quad3)
        gap = np.abs(np.diag(u["Q_update"]) - np.diag(u["Q_update_grid"]))
        out["L3"].append(
            {
                "alpha": a,
                "Q": np.diag(Q),
                "update_bruteforce": np.diag(u["Q_update"]),
                "update_grid": np.diag(u["Q_update_grid"]),
                "gap": gap,
                # delta method through f(x) = x / (1 + x): standard error of the paired brute-force - grid gap
                "gap_se": a * u["R_diff_se"] / (1.0 + a * np.diag(u["R_grid"])) ** 2,
                "bruteforce_min_ess": u["min_ess"],
                "grid_min_ess": u["grid_min_ess"],
            }
        )
        print(
            f"L=3 alpha={a:g}: update brute force {np.round(np.diag(u['Q_update']), 4)}, grid "
            f"{np.round(np.diag(u['Q_update_grid']), 4)}; min ESS brute force {u['min_ess']:.0f}, grid "
            f"{u['grid_min_ess']:.2f}"
        )
    gaps = np.array([r["gap"] for r in out["L3"]])
    alphas3 = np.array(l3["alpha"])
    i2 = int(np.argmin(np.abs(alphas3 - 2.0)))
    if abs(alphas3[i2] - 2.0) > 1e-9:
        raise ValueError("alpha 2 missing from l3_alphas")
    m["p2.L3.q11_bruteforce_gap[alpha=2]"] = float(gaps[i2, 0])
    m["p2.L3.q11_bruteforce_gap_se[alpha=2]"] = float(out["L3"][i2]["gap_se"][0])
    m["p2.L3.bruteforce_gap_max"] = float(gaps.max())
    m["p2.L3.bruteforce_min_ess"] = float(min(r["bruteforce_min_ess"] for r in out["L3"]))

    # L = 2 at alpha = 1.2: our fixed point and the authors' SE file, fresh teacher draws
    l2 = read_json(io.input.l2)
    al = np.array(l2["alpha"])
    i = int(np.argmin(np.abs(al - ALPHA_L2)))
    if abs(al[i] - ALPHA_L2) > 1e-9:
        raise ValueError(f"alpha {ALPHA_L2} missing from the L = 2 curve")
    ref = read_csv(io.input.ref_bo)
    j = int(np.argmin(np.abs(np.asarray(ref["alpha"]) - ALPHA_L2)))
    draws2 = draw_teacher(P.l2_bf_draws, 2, P.seed + 202)
    quad2 = QuadratureSettings(n1d=P.n1d)
    for who, q in (("ours", (l2["q11"][i], l2["q22"][i])), ("authors", (ref["Q11"][j], ref["Q22"][j]))):
        u = bruteforce_update(
            np.diag(q), ALPHA_L2, P.skip_c, draws2, rng, v_reg=P.v_reg, n_points=P.bf_points, quad=quad2
        )
        upd, se = np.diag(u["Q_update"]), _q_se(u, ALPHA_L2)
        out["L2"][who] = {
            "Q": q,
            "update_bruteforce": upd,
            "update_se": se,
            "update_grid": np.diag(u["Q_update_grid"]),
            "bruteforce_min_ess": u["min_ess"],
        }
        print(
            f"L=2 alpha=1.2 {who}: Q {np.round(q, 4)} -> brute-force update {np.round(upd, 4)} (se "
            f"{np.round(se, 4)}), grid update {np.round(np.diag(u['Q_update_grid']), 4)}"
        )
    gap = lambda who: abs(out["L2"][who]["Q"][0] - out["L2"][who]["update_bruteforce"][0])  # noqa: E731
    m["p2.L2.q11_bruteforce_gap[alpha=1.2]"] = gap("ours")
    m["p2.L2.q11_bruteforce_gap_authors[alpha=1.2]"] = gap("authors")
    # the update's noise over the fresh draws and that of our fixed point over the SE's own draws
    m["p2.L2.q11_bruteforce_gap_se[alpha=1.2]"] = float(np.hypot(out["L2"]["ours"]["update_se"][0], l2["q11_se"][i]))

    # unconverged SE points over the three figures
    fig5 = read_json(io.input.fig5)
    counts = {
        "1left": int(np.sum(~np.asarray(l2["converged"], dtype=bool))),
        "3left": int(np.sum(~np.asarray(l3["converged"], dtype=bool))),
        "5": int(np.sum(~np.asarray(fig5["converged"], dtype=bool))),
    }
    for k, v in counts.items():
        m[f"p2.se.unconverged_points[fig={k}]"] = v
    m["p2.se.unconverged_points"] = sum(counts.values())
    print(f"unconverged SE points: {counts}; {time.time() - t0:.0f} s")
    out["unconverged"] = counts
    write_json(io.output.json, json_safe(out))
    write_metrics(io.output.metrics, m)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
