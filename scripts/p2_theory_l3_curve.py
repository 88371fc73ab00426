"""P2 Fig. 3 left (numbers): depth-3 K operator at Q = 0, SE sweep on the 4-D quadrature, fixed-point standard
errors at the ledger's alphas, plug-in errors (full, last layer only, and at the authors' published overlaps)."""

import time

import numpy as np

from smattn.data.published import P2_AUTHORS_ERROR_SAMPLES
from smattn.data.spoc import read_csv
from smattn.io import json_safe, write_json
from smattn.p2.theory.fixed_point_error import fixed_point_covariance
from smattn.p2.theory.overlap_curves import METRIC_ALPHAS_L3, se_sweep
from smattn.p2.theory.prediction_errors import plugin_error, plugin_error_propagated_se
from smattn.p2.theory.quadrature import QuadratureSettings
from smattn.p2.theory.state_evolution import draw_teacher
from smattn.p2.theory.thresholds import initial_operator
from smattn.scriptio import run


def main(io):
    P = io.params
    t0 = time.time()
    # the rule's threads share the teacher draws of each SE step (same fixed points for any number)
    quad = QuadratureSettings(n1d=P.n1d, workers=max(1, int(io.threads)))
    K, K_se, _ = initial_operator(P.skip_c, draw_teacher(P.n_k, 3, P.seed), quad)
    k_max = int(np.argmax(np.diag(K)))
    a_last = 1.0 / K[k_max, k_max]
    print(f"L=3 K diag {np.diag(K)} (se {np.diag(K_se)}): alpha_last={a_last:.4f} ({time.time() - t0:.1f} s)")
    alphas = np.array(sorted(P.alphas))
    sw = se_sweep(
        alphas,
        P.skip_c,
        3,
        quad,
        n_samples=P.n_samples,
        seed=P.seed + 1,
        damping=P.damping,
        tol=P.tol,
        max_iter=P.max_iter,
        v_reg=P.v_reg,
    )
    t_se = time.time() - t0
    print(f"SE sweep {t_se:.1f} s; iterations {sw['iterations']}, converged {sw['converged']}, min ESS {sw['min_ess']}")
    q = np.array([np.diag(Q) for Q in sw["Q"]])
    # Monte-Carlo covariance of the fixed points at the ledger's alphas (the sweep's own draws: se_sweep's seed)
    draws = draw_teacher(P.n_samples, 3, P.seed + 1)
    cov = np.full((len(alphas), 3, 3), np.nan)
    for i, a in enumerate(alphas):
        if np.any(np.isclose(a, METRIC_ALPHAS_L3)):
            cov[i] = fixed_point_covariance(q[i], a, P.skip_c, draws, quad, v_reg=P.v_reg)["cov"]
    full, last = [], []
    for i in range(len(alphas)):
        full.append(plugin_error(np.diag(q[i]), P.skip_c, n_samples=P.error_samples, seed=P.seed + i))
        last.append(plugin_error(np.diag([0.0, 0.0, q[i, 2]]), P.skip_c, n_samples=P.error_samples, seed=P.seed + i))
    e0 = plugin_error(np.zeros((3, 3)), P.skip_c, n_samples=P.error_samples, seed=P.seed)
    # the error's uncertainty from that of the overlaps (the Monte-Carlo error of the error itself is far smaller)
    full_q_se = [
        plugin_error_propagated_se(q[i], cov[i], P.skip_c, n_samples=P.error_samples, seed=P.seed + i)
        if np.all(np.isfinite(cov[i]))
        else float("nan")
        for i in range(len(alphas))
    ]
    # the plug-in error at the authors' own overlaps (BO_3w.csv): what their error file should hold
    ref = read_csv(io.input.ref_q)
    at_authors = []
    for a in METRIC_ALPHAS_L3:
        j = int(np.argmin(np.abs(ref["alpha"] - a)))
        Qa = np.diag([ref["Q11"][j], ref["Q22"][j], ref["Q33"][j]])
        e, e_se = plugin_error(Qa, P.skip_c, n_samples=P.error_samples, seed=P.seed)
        at_authors.append((float(ref["alpha"][j]), e, e_se, e_se * np.sqrt(P.error_samples / P2_AUTHORS_ERROR_SAMPLES)))
    write_json(
        io.output.record,
        json_safe(
            {
                "alpha": alphas,
                "Q": sw["Q"],
                "Q_cov": cov,
                "iterations": sw["iterations"],
                "residual": sw["residual"],
                "converged": sw["converged"],
                "min_ess": sw["min_ess"],
                "K": K,
                "K_se": K_se,
                "alpha_last": a_last,
                "alpha_last_se": K_se[k_max, k_max] / K[k_max, k_max] ** 2,
                "last_layer": k_max + 1,
                "error_plugin": [e[0] for e in full],
                "error_plugin_se": [e[1] for e in full],
                "error_plugin_q_se": full_q_se,  # from the overlaps' covariance (nan off the ledger's alphas)
                "error_plugin_last_layer": [e[0] for e in last],
                "error_plugin_last_layer_se": [e[1] for e in last],
                "error_plugin_q0": e0,
                "error_plugin_at_authors_q": {k: [r[i] for r in at_authors] for i, k in
                                              enumerate(("alpha", "mean", "se", "paper_se"))},
                "time_se_s": t_se,
                "time_s": time.time() - t0,
            }
        ),
    )  # fmt: skip


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
