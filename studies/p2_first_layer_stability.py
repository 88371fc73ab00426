"""First-layer stability of the two-layer SE at c = 1 at high precision, and what a finite run sees.

Question: Where does the phase-II fixed point Q11 = 0 of the two-layer SE become unstable at c = 1, and what would a
read-off from runs of a fixed number of iterations (the authors' procedure) give?
Finding: The instability is at alpha = 0.7440 +- 0.0051, 9.7 standard errors below the published 0.7936, where Q11
already grows by 1.173 +- 0.023 per iteration; runs of about 55 iterations from the authors' start would read the
published value, but BO_2w.csv's own switch-on fits 40-50: the runs behind alpha_critical.csv are not those of the
published SE file. alpha_last at c = 1 (131072 draws): 0.18560 +- 0.00021; fixed points at 4096 draws
(--fixed-point-only): Q11 = 0.859 +- 0.013 at alpha = 1.2, 0.951 +- 0.004 at 1.5.
Recorded in: docs/p2_theory.md, First-layer stability ("Measured") and Deviations.

    python studies/p2_first_layer_stability.py [--n-samples 8192] [--traj-samples 512] [--iterations 80]
        [--last-samples 131072] [--data $SMATTN_DATA_MIRROR]
    python studies/p2_first_layer_stability.py --fixed-point-only

Prints (v_reg = 1e-3, damping 0.8, 8 scrambled Sobol' sets, seeds disjoint from the workflow's):
* alpha_last at c = 1 (1 / K22 of the operator at Q = 0) at --last-samples quasi-random draws;
* the alpha where lambda_1 (growth per iteration of Q11 on the phase-II fixed point) crosses 1, with its error bar;
* lambda_1 and the iterations from Q11 = 1e-4 to 0.1 at the published threshold (alpha_critical.csv, c = 1) and at
  the two alphas between which the authors' BO_2w.csv switches Q11 on;
* the deterministic SE (plain damped iteration, common draws) from the authors' start 0.05 I at those alphas: the
  minimum of Q11, the iteration where it first exceeds 0.1, and its value after the run;
* with --fixed-point-only: the fixed points at alpha = 1.2 and 1.5 with their standard errors and the plug-in errors
  there.
"""

import argparse
import os
import time
from pathlib import Path

import numpy as np

from smattn.data.spoc import read_csv
from smattn.p2.theory.first_layer_stability import (
    StabilityProblem,
    alpha_first_stability,
    first_crossing,
    growth_factors,
    iterations_to_level,
    switch_on_bracket,
)
from smattn.p2.theory.fixed_point_error import fixed_point_covariance
from smattn.p2.theory.prediction_errors import plugin_error, plugin_error_propagated_se
from smattn.p2.theory.quadrature import QuadratureSettings
from smattn.p2.theory.state_evolution import draw_teacher_qmc, state_evolution
from smattn.p2.theory.thresholds import alpha_last

LEVEL, START, V_REG, ETA = 0.1, 1e-4, 1e-3, 0.8


def fixed_point_errors(seed, quad, alpha, q0, log2_n=12):
    """The L = 2 fixed point at alpha (2**log2_n quasi-random draws, plain damped SE to 1e-7 from near it), its
    Monte-Carlo standard error and the plug-in errors (full, last layer only) there with theirs."""
    d = draw_teacher_qmc(log2_n, 2, seed + 3)
    r = state_evolution(
        alpha, 1.0, 2, draws=d, q0=np.diag(q0), tol=1e-7, max_iter=400, diagonal=True, v_reg=V_REG,
        quad=quad, damping=ETA, accelerate=True,
    )  # fmt: skip
    q = np.diag(r.Q)
    fp = fixed_point_covariance(q, alpha, 1.0, d, quad, v_reg=V_REG)
    print(
        f"[fixed point] alpha {alpha}, {len(d.xi)} draws: Q11 = {q[0]:.4f} ± {fp['se'][0]:.4f}, "
        f"Q22 = {q[1]:.5f} ± {fp['se'][1]:.5f} (converged {r.converged}, {r.iterations} iterations)",
        flush=True,
    )
    for name, mask in (("full", np.ones(2)), ("last layer only", np.array([0.0, 1.0]))):
        e, e_se = plugin_error(np.diag(mask * q), 1.0, n_samples=2_000_000, seed=seed)
        q_se = plugin_error_propagated_se(mask * q, fp["cov"] * np.outer(mask, mask), 1.0, n_samples=400_000, seed=seed)
        print(f"[fixed point] plug-in error ({name}) = {e:.5f} ± {np.hypot(e_se, q_se):.5f} (Monte Carlo {e_se:.1e}, "
              f"from the overlaps {q_se:.1e})", flush=True)  # fmt: skip


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-samples", type=int, default=8192)
    ap.add_argument("--traj-samples", type=int, default=512)
    ap.add_argument("--iterations", type=int, default=80)
    ap.add_argument("--last-samples", type=int, default=131072)
    ap.add_argument(
        "--fixed-point-only",
        action="store_true",
        help="only the fixed points at alpha = 1.2 and 1.5 and their plug-in errors",
    )
    ap.add_argument("--seed", type=int, default=101)
    ap.add_argument("--data", default=os.environ.get("SMATTN_DATA_MIRROR", "../shared/data"), help="raw-data folder")
    a = ap.parse_args()
    spoc = Path(a.data) / "reference" / "spoc"
    quad = QuadratureSettings(n1d=24)
    t0 = time.time()
    if a.fixed_point_only:
        for al, q0 in ((1.2, (0.88, 0.998)), (1.5, (0.95, 0.999))):
            fixed_point_errors(a.seed, quad, al, q0)
        return
    last = alpha_last(1.0, quad, n_samples=a.last_samples, seed=a.seed + 2, n_rep=8)
    print(
        f"[alpha_last] {last['n_used']} draws: {last['alpha']:.5f} ± {last['alpha_se']:.5f} ({time.time() - t0:.0f} s)",
        flush=True,
    )
    prob = StabilityProblem.from_sizes(1.0, a.n_samples, 8, a.seed, quad=quad, v_reg=V_REG, damping=ETA)
    r = alpha_first_stability(prob, bracket=(0.6, 1.0))
    print(
        f"[stability] {prob.n_used} draws: alpha_first = {r['alpha']:.4f} ± {r['alpha_se']:.4f} "
        f"(q2* = {r['q2']:.5f}, lambda2 = {r['lambda2']:.3f}, {r['n_evaluations']} branch points, "
        f"{time.time() - t0:.0f} s)",
        flush=True,
    )
    csv = read_csv(spoc / "alpha_critical.csv")
    bo = read_csv(spoc / "BO_2w.csv")
    lo, hi = switch_on_bracket(bo["alpha"], bo["Q11"], LEVEL)
    named = (float(csv["alpha1"][np.argmin(np.abs(csv["skip"] - 1.0))]), lo, hi)
    for al in named:
        g = growth_factors(prob, al, guess=r["q2"])
        se = np.std(g["lambda1_sets"], ddof=1) / np.sqrt(len(g["lambda1_sets"]))
        n = iterations_to_level(g["lambda1"], START, LEVEL)
        print(f"[growth] alpha {al:.4f}: lambda1 = {g['lambda1']:.4f} ± {se:.4f}; {n:.1f} iterations from {START:g} "
              f"to {LEVEL:g}", flush=True)  # fmt: skip
    d = draw_teacher_qmc(int(np.log2(a.traj_samples)), 2, a.seed + 1)
    for al in named:
        h = state_evolution(
            al, 1.0, 2, draws=d, q0=0.05, tol=0.0, max_iter=a.iterations, diagonal=True, v_reg=V_REG, quad=quad,
            damping=ETA,
        ).history[:, 0, 0]  # fmt: skip
        k = first_crossing(h, LEVEL)
        print(f"[trajectory] alpha {al:.4f}, {len(d.xi)} draws from 0.05 I: min Q11 {h.min():.2e} at iteration "
              f"{int(np.argmin(h))}; Q11 >= {LEVEL:g} from iteration {k}; Q11 after {a.iterations}: {h[-1]:.4f}",
              flush=True)  # fmt: skip
    print(f"[total] {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
