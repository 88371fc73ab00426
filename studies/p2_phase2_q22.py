"""The last-layer overlap Q22 on the phase-II branch (Q11 = 0) at one alpha: how much it moves with the teacher draws.

Question: How much does the phase-II Q22 at alpha = 0.6 (c = 1) move with the teacher draws, and where does the
workflow's own set of draws fall?
Finding: The workflow's set is the lowest (R2 z = -3.48 against 20 independent sets, Q22 0.8853); the other 80,000
draws pooled give 0.9171 +- 0.0019 (the fixed point's error: one update's +- 0.0003 times 1/(1 - J) = 6.6), and
BO_2w.csv's 0.9212 lies 2.2 sigma above; brute-force SE updates move neither value off a fixed point.
Recorded in: docs/benchmarks.md, Studies (its only record).

    python studies/p2_phase2_q22.py [--alpha 0.6] [--n-draws 4000] [--sets 20] [--workflow-seed 1] [--n1d 32]
        [--n-bf 2000] [--bf-points 200000] [--data $SMATTN_DATA_MIRROR]

The workflow computes the phase-II branch alpha(q2) = q2 / ((1 - q2) R2(0, q2)) on one set of teacher draws
(n_curve of them, seed p2_theory.seed + 1) and reads Q22 off it. Prints (c = 1, v_reg = 1e-3):
* R2 at the authors' Q22 (BO_2w.csv) on --sets independent sets of --n-draws draws and on the workflow's own set
  (--workflow-seed), with the spread of the sets against the per-set standard error, and where the workflow's set
  falls (z-score against the other sets' mean);
* Q22(alpha) on the workflow's set and on all other sets pooled (SciPy brentq of alpha(q2) = alpha, common draws),
  with the standard error of the fixed point: that of one update q = alpha R / (1 + alpha R) from R2's (delta method)
  amplified by the fixed-point equation, 1 / (1 - J) with J = dq'/dq the update's slope at the root
  (smattn.p2.theory.fixed_point_error; the update's own error understates the root's by that factor);
* at the pooled value and at the authors', one undamped SE update by brute-force importance sampling on fresh draws
  (a fixed point maps to itself), with the grid denoiser's R2 on the same draws (paired difference).
"""

import argparse
import os
import time
from pathlib import Path

import numpy as np
from scipy.optimize import brentq

from smattn.data.spoc import read_csv
from smattn.p2.theory.bruteforce_reference import bruteforce_update
from smattn.p2.theory.fixed_point_error import fixed_point_covariance
from smattn.p2.theory.quadrature import QuadratureSettings
from smattn.p2.theory.state_evolution import TeacherDraws, channel_average, draw_teacher

C, V_REG = 1.0, 1e-3


def r2(q, draws, quad):
    """R2(0, q) and its standard error on the draws."""
    a = channel_average(np.diag([0.0, q]), C, draws, quad, v_reg=V_REG)
    return a["R"][1, 1], a["R_se"][1, 1]


def branch_root(alpha, draws, quad):
    """q2 with alpha(q2) = alpha on the common draws; the fixed point's standard error, the single update's standard
    error from that of R2 and the update's slope J at the root (fixed point's = update's / (1 - J))."""
    q = brentq(lambda q: q / ((1.0 - q) * r2(q, draws, quad)[0]) - alpha, 0.05, 0.999, xtol=1e-7)
    R, R_se = r2(q, draws, quad)
    fp = fixed_point_covariance([0.0, q], alpha, C, draws, quad, v_reg=V_REG, fixed=(0,))  # Q11 = 0 held
    return q, float(fp["se"][1]), alpha * R_se / (1.0 + alpha * R) ** 2, float(fp["J"][1, 1])


def pooled(sets):
    return TeacherDraws(np.concatenate([d.xi for d in sets]), np.concatenate([d.U for d in sets]))


def update_check(q, alpha, n, points, quad, seed):
    """One brute-force SE update from Q = diag(0, q), with the grid denoiser's R2 on the same draws."""
    u = bruteforce_update(
        np.diag([0.0, q]),
        alpha,
        C,
        draw_teacher(n, 2, seed),
        np.random.default_rng(seed),
        v_reg=V_REG,
        n_points=points,
        quad=quad,
    )
    R, R_se = u["R"][1, 1], u["R_se"][1, 1]
    return u["Q_update"][1, 1], alpha * R_se / (1.0 + alpha * R) ** 2, R, u["R_grid"][1, 1], u["R_diff_se"][1]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--alpha", type=float, default=0.6)
    ap.add_argument("--n-draws", type=int, default=4000, help="teacher draws per set (the workflow's n_curve)")
    ap.add_argument("--sets", type=int, default=20, help="independent sets besides the workflow's")
    ap.add_argument("--workflow-seed", type=int, default=1, help="seed of the workflow's set (p2_theory.seed + 1)")
    ap.add_argument("--n1d", type=int, default=32, help="grid denoiser's points per dimension")
    ap.add_argument("--n-bf", type=int, default=2000, help="teacher draws of each brute-force update")
    ap.add_argument("--bf-points", type=int, default=200_000, help="importance-sampling points per draw")
    ap.add_argument("--data", default=os.environ.get("SMATTN_DATA_MIRROR", "../shared/data"), help="raw-data folder")
    a = ap.parse_args()
    quad = QuadratureSettings(n1d=a.n1d)
    ref = read_csv(Path(a.data) / "reference" / "spoc" / "BO_2w.csv")
    j = int(np.argmin(np.abs(ref["alpha"] - a.alpha)))
    if abs(ref["alpha"][j] - a.alpha) > 1e-6:
        raise SystemExit(f"alpha {a.alpha} is not a row of BO_2w.csv")
    q_auth = float(ref["Q22"][j])

    t0 = time.time()
    own = draw_teacher(a.n_draws, 2, a.workflow_seed)
    others = [draw_teacher(a.n_draws, 2, 9000 + k) for k in range(a.sets)]
    R_own, se_own = r2(q_auth, own, quad)
    R_sets = np.array([r2(q_auth, d, quad) for d in others])
    m, sd = R_sets[:, 0].mean(), R_sets[:, 0].std(ddof=1)
    print(
        f"R2 at the authors' Q22 = {q_auth:.4f} ({a.n_draws} draws per set): {a.sets} other sets mean {m:.3f}, "
        f"spread {sd:.3f} (per-set standard error {R_sets[:, 1].mean():.3f}); the workflow's set (seed "
        f"{a.workflow_seed}) {R_own:.3f} +- {se_own:.3f}, z = {(R_own - m) / sd:+.2f}; "
        f"sets below it: {int(np.sum(R_sets[:, 0] < R_own))} of {a.sets} ({time.time() - t0:.0f} s)"
    )
    t0 = time.time()
    q_own, q_own_se, _, _ = branch_root(a.alpha, own, quad)
    q_pool, q_pool_se, pool_upd_se, J = branch_root(a.alpha, pooled(others), quad)
    print(
        f"Q22({a.alpha:g}) (fixed-point standard errors): the workflow's set {q_own:.4f} +- {q_own_se:.4f}; the other "
        f"sets pooled ({a.sets * a.n_draws} draws) {q_pool:.4f} +- {q_pool_se:.4f} (one update's +- {pool_upd_se:.4f} "
        f"times 1 / (1 - J) = {1.0 / (1.0 - J):.2f}, J = {J:.3f}); z of the authors' against the pooled "
        f"{(q_auth - q_pool) / q_pool_se:+.1f}; authors {q_auth:.4f} ({time.time() - t0:.0f} s)"
    )
    for who, q in (("pooled", q_pool), ("authors", q_auth)):
        t0 = time.time()
        upd, upd_se, R_bf, R_grid, d_se = update_check(q, a.alpha, a.n_bf, a.bf_points, quad, 7202)
        print(
            f"{who}: brute-force update {q:.4f} -> {upd:.4f} +- {upd_se:.4f} (step {upd - q:+.4f}); R2 brute force "
            f"{R_bf:.3f}, grid {R_grid:.3f} (difference {R_grid - R_bf:+.4f} +- {d_se:.4f}); {time.time() - t0:.0f} s"
        )


if __name__ == "__main__":
    main()
