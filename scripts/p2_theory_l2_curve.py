"""P2 Fig. 1 left (theory): L = 2 overlaps Q11, Q22 vs alpha, thresholds at c, BO and plug-in errors."""

import time

import numpy as np

from smattn.data.spoc import read_csv
from smattn.io import json_safe, write_json
from smattn.p2.theory.fixed_point_error import fixed_point_covariance
from smattn.p2.theory.overlap_curves import ERROR_ALPHAS_L2, METRIC_ALPHAS_L2, l2_alpha_grid, l2_overlap_curve, q2_grid
from smattn.p2.theory.prediction_errors import bo_error, plugin_error, plugin_error_propagated_se
from smattn.p2.theory.quadrature import QuadratureSettings
from smattn.p2.theory.state_evolution import draw_teacher
from smattn.scriptio import run


def main(io):
    P = io.params
    t0 = time.time()
    alphas = l2_alpha_grid(P.l2_alpha_points)
    r = l2_overlap_curve(
        alphas,
        P.skip_c,
        QuadratureSettings(n1d=P.n1d),
        q_grid=q2_grid(P.l2_q_points),
        n_k=P.n_k,
        n_curve=P.n_curve,
        n_se=P.n_se,
        seed=P.seed,
        v_reg=P.v_reg,
        damping=P.se_damping,
        tol=P.se_tol,
        max_iter=P.se_max_iter,
    )
    t_se = time.time() - t0
    print(
        f"SE curve: {len(alphas)} alphas in {t_se:.1f} s; alpha_last={r['alpha_last']:.4f} "
        f"alpha_first={r['alpha_first']:.4f}; non-converged points: {int(np.sum(~r['converged']))}"
    )
    # Monte-Carlo standard errors of the ledger's points: the phase-II branch on its own draws (l2_overlap_curve:
    # seed + 1), the SE fixed points on theirs (seed + 3); Q = 0 below alpha_last is exact
    quad = QuadratureSettings(n1d=P.n1d)
    draws = {1: draw_teacher(P.n_curve, 2, P.seed + 1), 2: draw_teacher(P.n_se, 2, P.seed + 3)}
    q_cov = np.full((len(alphas), 2, 2), np.nan)
    for i, a in enumerate(alphas):
        if not np.any(np.isclose(a, METRIC_ALPHAS_L2 + ERROR_ALPHAS_L2)):
            continue
        how = int(r["how"][i])
        q_cov[i] = 0.0 if how == 0 else fixed_point_covariance(
            [r["q11"][i], r["q22"][i]], a, P.skip_c, draws[how], quad, v_reg=P.v_reg
        )["cov"]  # fmt: skip
    q_se = np.sqrt(np.clip(np.einsum("ikk->ik", q_cov), 0.0, None))
    errs = {k: [] for k in ("bo", "bo_se", "plugin", "plugin_se", "one_layer", "one_layer_se")}
    for i in range(len(alphas)):
        Q = np.diag([r["q11"][i], r["q22"][i]])
        for key, val in (
            ("bo", bo_error(Q, P.skip_c, n_samples=P.error_samples, seed=P.seed + i)),
            ("plugin", plugin_error(Q, P.skip_c, n_samples=P.error_samples, seed=P.seed + i)),
            (
                "one_layer",
                plugin_error(np.diag([0.0, r["q22"][i]]), P.skip_c, n_samples=P.error_samples, seed=P.seed + i),
            ),
        ):
            errs[key].append(val[0])
            errs[key + "_se"].append(val[1])
    # the plug-in errors' uncertainty from that of the overlaps where it is known (the ledger's points)
    for key, mask in (("plugin", np.ones(2)), ("one_layer", np.array([0.0, 1.0]))):
        errs[key + "_q_se"] = [
            plugin_error_propagated_se(
                mask * np.array([r["q11"][i], r["q22"][i]]), q_cov[i] * np.outer(mask, mask), P.skip_c,
                n_samples=P.error_samples, seed=P.seed + i,
            )
            if np.all(np.isfinite(q_cov[i]))
            else float("nan")
            for i in range(len(alphas))
        ]  # fmt: skip
    # the plug-in error at the authors' own SE overlaps (BO_2w.csv), which their error file should hold
    ref = read_csv(io.input.ref_bo)
    at_authors = {"alpha": [], "mean": [], "se": []}
    for a in ERROR_ALPHAS_L2:
        j = int(np.argmin(np.abs(ref["alpha"] - a)))
        if abs(ref["alpha"][j] - a) > 1e-6:
            continue
        e, e_se = plugin_error(
            np.diag([ref["Q11"][j], ref["Q22"][j]]), P.skip_c, n_samples=P.error_samples, seed=P.seed
        )
        at_authors["alpha"].append(a)
        at_authors["mean"].append(e)
        at_authors["se"].append(e_se)
    out = {k: np.asarray(v).tolist() for k, v in r.items() if k not in ("curve", "K")}
    out["error_plugin_at_authors_q"] = at_authors
    out["K"] = r["K"].tolist()
    out["curve"] = {k: np.asarray(v).tolist() for k, v in r["curve"].items()}
    out.update({f"error_{k}": v for k, v in errs.items()})
    out["q11_se"], out["q22_se"] = q_se[:, 0].tolist(), q_se[:, 1].tolist()
    out["params"] = vars(P)
    out["time_se_s"] = t_se
    out["time_total_s"] = time.time() - t0
    write_json(io.output.curve, json_safe(out))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
