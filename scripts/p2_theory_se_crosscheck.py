"""Brute-force importance-sampling check of state-evolution fixed points and the unconverged-point count.

L = 3: at every plotted alpha, one SE update by brute force and by the 4-D grid on the same teacher draws; at alpha = 2
the brute-force update of our fixed point and the plug-in error at its overlaps (the ledger's expected values of the
depth-3 deviations: the same quantities by importance sampling in place of the grid).
L = 2: at alpha = 1.2 and 1.5, one brute-force SE update of our fixed point (on fresh teacher draws) and of the
authors' SE-file value.
"""

import time

import numpy as np

from smattn.data.spoc import read_csv
from smattn.io import json_safe, read_json, write_json, write_metrics
from smattn.p2.theory.bruteforce_reference import bruteforce_update
from smattn.p2.theory.prediction_errors import plugin_error, plugin_error_propagated_se
from smattn.p2.theory.quadrature import QuadratureSettings
from smattn.p2.theory.state_evolution import TeacherDraws, draw_teacher
from smattn.progress import progress
from smattn.scriptio import run

ALPHAS_L2 = (1.2, 1.5)  # the ledger's first-layer points above alpha_first


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
    updates3 = []
    for a, Q in progress(list(zip(l3["alpha"], l3["Q"], strict=True)), desc="L=3 brute-force check"):
        u = bruteforce_update(np.array(Q), a, P.skip_c, sub, rng, v_reg=P.v_reg, n_points=P.bf_points, quad=quad3)
        updates3.append(u)
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
    # our alpha = 2 fixed point by another method: its brute-force update (importance sampling, no grid) with the
    # update's standard error over the draws, and the plug-in error at the updated overlaps (fresh samples) with the
    # error carried over from the update's covariance (delta method through f(x) = x / (1 + x), diagonal)
    u2, a2 = updates3[i2], float(alphas3[i2])
    q_upd = np.clip(np.diag(u2["Q_update"]), 0.0, 1.0)
    jac = np.diag(a2 / (1.0 + a2 * np.diag(u2["R"])) ** 2)
    cov_upd = jac @ u2["R_diag_cov"] @ jac
    m["p2.L3.q11_bruteforce_update[alpha=2]"] = float(q_upd[0])
    m["p2.L3.q11_bruteforce_update_se[alpha=2]"] = float(_q_se(u2, a2)[0])
    e, e_mc = plugin_error(np.diag(q_upd), P.skip_c, n_samples=P.error_samples, seed=P.seed + 303)
    e_q = plugin_error_propagated_se(q_upd, cov_upd, P.skip_c, n_samples=P.error_samples, seed=P.seed + 303)
    m["p2.L3.error_plugin_bruteforce_q[alpha=2]"] = e
    m["p2.L3.error_plugin_bruteforce_q_se[alpha=2]"] = float(np.hypot(e_mc, e_q))
    print(f"L=3 alpha=2: brute-force update Q11 {q_upd[0]:.4f}; plug-in error there {e:.4f} (+- {e_mc:.1e}, {e_q:.1e})")

    # L = 2 above alpha_first: our fixed point and the authors' SE file, fresh teacher draws
    l2 = read_json(io.input.l2)
    al = np.array(l2["alpha"])
    ref = read_csv(io.input.ref_bo)
    draws2 = draw_teacher(P.l2_bf_draws, 2, P.seed + 202)
    quad2 = QuadratureSettings(n1d=P.n1d)
    for alpha in ALPHAS_L2:
        i = int(np.argmin(np.abs(al - alpha)))
        if abs(al[i] - alpha) > 1e-9:
            raise ValueError(f"alpha {alpha} missing from the L = 2 curve")
        j = int(np.argmin(np.abs(np.asarray(ref["alpha"]) - alpha)))
        res = out["L2"][format(alpha, "g")] = {}
        for who, q in (("ours", (l2["q11"][i], l2["q22"][i])), ("authors", (ref["Q11"][j], ref["Q22"][j]))):
            u = bruteforce_update(
                np.diag(q), alpha, P.skip_c, draws2, rng, v_reg=P.v_reg, n_points=P.bf_points, quad=quad2
            )
            upd, se = np.diag(u["Q_update"]), _q_se(u, alpha)
            res[who] = {
                "Q": q,
                "update_bruteforce": upd,
                "update_se": se,
                "update_grid": np.diag(u["Q_update_grid"]),
                "bruteforce_min_ess": u["min_ess"],
            }
            print(
                f"L=2 alpha={alpha:g} {who}: Q {np.round(q, 4)} -> brute-force update {np.round(upd, 4)} (se "
                f"{np.round(se, 4)}), grid update {np.round(np.diag(u['Q_update_grid']), 4)}"
            )
        aid = format(alpha, "g")
        m[f"p2.L2.q11_bruteforce_gap[alpha={aid}]"] = abs(res["ours"]["Q"][0] - res["ours"]["update_bruteforce"][0])
        # the update's noise over the fresh draws and that of our fixed point over the SE's own draws
        m[f"p2.L2.q11_bruteforce_gap_se[alpha={aid}]"] = float(np.hypot(res["ours"]["update_se"][0], l2["q11_se"][i]))
        # our fixed point by another method: its brute-force update, with the update's noise over the fresh draws
        m[f"p2.L2.q11_bruteforce_update[alpha={aid}]"] = float(res["ours"]["update_bruteforce"][0])
        m[f"p2.L2.q11_bruteforce_update_se[alpha={aid}]"] = float(res["ours"]["update_se"][0])
        # the authors' value moved by the exact map (signed: positive when it rises), with the update's noise
        step = res["authors"]["update_bruteforce"][0] - res["authors"]["Q"][0]
        m[f"p2.L2.q11_bruteforce_step_authors[alpha={aid}]"] = step
        m[f"p2.L2.q11_bruteforce_step_authors_se[alpha={aid}]"] = float(res["authors"]["update_se"][0])
        m[f"p2.L2.q11_bruteforce_gap_authors[alpha={aid}]"] = abs(step)

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
