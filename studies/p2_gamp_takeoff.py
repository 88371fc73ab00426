"""GAMP's first layer at finite d (P2 Fig. 1 left crosses, Fig. 2 left): fixed point and take-off from a random start.

Question: Is GAMP's finite-d fixed point the state evolution's, and does GAMP learn the first layer from the
authors' random start, with the authors' Onsager term and with the one that matches the damping?
Finding: The fixed point is kept (|M11| / (|w1|^2/d) 0.87-0.89); with the authors' Onsager term only 10/16, 3/12,
5/8 runs (d = 200, 500, 1000) learn the first layer within 50 iterations and the trapped ones stay trapped; with the
damping-consistent term (the workflow's default) 15/16, 12/12, 8/8, half-way at iteration 16.
Recorded in: docs/p2_dynamics.md, "GAMP first layer at finite d".

Two experiments at one alpha (default 1.2), each over several input dimensions d and seeds (each seed has its own
teacher, data and start):

1. Fixed point. GAMP started on the Bayes-optimal line at the state evolution's fixed point Q* (computed here, or
   given with --se-q) runs --fp-iters iterations; printed per d: the final |M_11| (unnormalised, as the authors'
   AMP_2w.csv), |M_11| / (|w_1|^2/d) and Q_11, mean +- standard error over seeds, beside Q*_11.  If GAMP's finite-d
   fixed point is the state evolution's, these stay at Q*_11 up to O(d^{-1/2}) fluctuations.
2. Take-off from the authors' random start (W_hat^0 i.i.d. N(0, 1), C_hat^0 = I). A run has learned layer k after
   N iterations when C_k(N) = |M_kk| / sqrt(Q_kk) >= 0.3 (smattn.p2.theory.gamp_metrics.LEARNED_MIN, the ledger's
   criterion).  Printed per d: the fraction of runs that learned layer 1 after N iterations for every N in --at,
   with its binomial standard error sqrt(f (1 - f) / runs); the take-off iteration of each run (first N from which
   C_1 stays >= 0.3); and for each run that did not learn layer 1 its final C_1, Q_11 and A_11 (GAMP's estimate
   of Qhat_11), and both teacher norms |w_k|^2/d.

The numbers in docs/p2_dynamics.md#gamp-first-layer-at-finite-d come from these commands (PYTHONPATH=src
OMP_NUM_THREADS=1 nice -n 10 python studies/p2_gamp_takeoff.py ...):

    --skip takeoff --d 200 500 1000 --fp-seeds 3                      # part 1 (and --onsager latest --se-q ...)
    --skip fixed-point --onsager damped --d 200 500 1000 --seeds 16 12 8 --iters 50
    --skip fixed-point --onsager latest --d 200 --seeds 16 --iters 100   # likewise d 500 / 12 / 80, 1000 / 8 / 60

Each prints its wall time.  On the shared 2-core machine (load 15-20) one GAMP iteration took 0.4-0.9 s at
d = 200, 1.6-2.7 s at d = 500 and 3.3-3.9 s at d = 1000; the d = 1000 runs of one variant took 22-31 minutes.
"""

import argparse
import json
import time

import numpy as np

from smattn.p2.theory.gamp import GampInit, run_gamp
from smattn.p2.theory.gamp_metrics import LEARNED_MIN, authors_metric, half_crossing_iterations, takeoff_iteration
from smattn.p2.theory.state_evolution import state_evolution


def mean_se(x):
    x = np.asarray(x, dtype=np.float64)
    return float(x.mean()), float(x.std(ddof=1) / np.sqrt(x.size)) if x.size > 1 else float("nan")


def se_fixed_point(alpha, samples, v_reg):
    t0 = time.perf_counter()
    r = state_evolution(alpha, 1.0, n_samples=samples, v_reg=v_reg, q0=np.diag([0.85, 0.99]), accelerate=True, tol=1e-5)
    q = np.diag(r.Q)
    print(
        f"state evolution at alpha = {alpha}: Q* = diag({q[0]:.4f}, {q[1]:.4f}) ({samples} teacher draws, "
        f"converged {r.converged}, residual {r.residual:.1e}, {time.perf_counter() - t0:.0f} s)",
        flush=True,
    )
    return q


def fixed_point_study(a, q_star, out):
    print(f"\n1. GAMP from the state evolution's fixed point, {a.fp_iters} iterations", flush=True)
    init = GampInit((float(q_star[0]), float(q_star[1])))
    for d in a.d:
        t0 = time.perf_counter()
        m11, m11n, q11, c1 = [], [], [], []
        for s in range(a.fp_seeds):
            r = run_gamp(
                d, a.alpha, a.fp_iters, seed=10_000 + s, damping=a.damping, v_reg=a.v_reg, init=init, onsager=a.onsager
            )
            t1 = float(np.mean(r.W[0] ** 2))
            m11.append(abs(r.M[-1, 0, 0]))
            m11n.append(abs(r.M[-1, 0, 0]) / t1)
            q11.append(r.Q[-1, 0, 0])
            c1.append(authors_metric(r.M, r.Q)[-1, 0])
        rows = {k: mean_se(v) for k, v in (("M11", m11), ("M11_norm", m11n), ("Q11", q11), ("C1", c1))}
        print(
            f"  d = {d}: |M11| = {rows['M11'][0]:.4f} +- {rows['M11'][1]:.4f}, |M11|/(|w1|^2/d) = "
            f"{rows['M11_norm'][0]:.4f} +- {rows['M11_norm'][1]:.4f}, Q11 = {rows['Q11'][0]:.4f} +- "
            f"{rows['Q11'][1]:.4f}, C1 = {rows['C1'][0]:.4f} (Q*11 = {q_star[0]:.4f}; {a.fp_seeds} seeds, "
            f"{time.perf_counter() - t0:.0f} s)",
            flush=True,
        )
        out["fixed_point"][str(d)] = {"M11": m11, "M11_norm": m11n, "Q11": q11, "C1": c1}


def takeoff_study(a, out):
    print(
        f"\n2. Random starts (the authors' initialisation), {a.iters} iterations, damping {a.damping}, "
        f"Onsager term '{a.onsager}'",
        flush=True,
    )
    seeds_per_d = a.seeds if len(a.seeds) == len(a.d) else a.seeds * len(a.d)
    for d, n_seeds in zip(a.d, seeds_per_d, strict=True):
        t0 = time.perf_counter()
        runs = []
        for s in range(n_seeds):
            r = run_gamp(d, a.alpha, a.iters, seed=s, damping=a.damping, v_reg=a.v_reg, onsager=a.onsager)
            C = authors_metric(r.M, r.Q)
            runs.append(
                dict(
                    seed=s,
                    C1=C[:, 0].tolist(),
                    C2=C[:, 1].tolist(),
                    M11=np.abs(r.M[:, 0, 0]).tolist(),
                    Q11=r.Q[:, 0, 0].tolist(),
                    A11=r.A[:, 0, 0].tolist(),
                    teacher_sq_norm=(np.sum(r.W**2, axis=1) / d).tolist(),
                    takeoff=takeoff_iteration(C[:, 0]),
                )
            )
        wall = time.perf_counter() - t0
        C1 = np.array([r["C1"] for r in runs])
        C2 = np.array([r["C2"] for r in runs])
        print(f"  d = {d}: {n_seeds} runs in {wall:.0f} s ({wall / n_seeds / a.iters:.2f} s per iteration)")
        for N in [n for n in a.at if n <= a.iters]:
            f1 = float(np.mean(C1[:, N - 1] >= LEARNED_MIN))
            f2 = float(np.mean(C2[:, N - 1] >= LEARNED_MIN))
            m = float(np.mean(np.array([r["M11"][N - 1] for r in runs])))
            print(
                f"    N = {N:3d}: layer 1 learned in {f1:.3f} +- {np.sqrt(f1 * (1 - f1) / n_seeds):.3f} of runs, "
                f"layer 2 in {f2:.3f}; mean |M11| = {m:.3f}"
            )
        print(f"    take-off iterations (first N from which C1 >= {LEARNED_MIN}): {[r['takeoff'] for r in runs]}")
        for k in range(2):
            it, learned = half_crossing_iterations(C1 if k == 0 else C2)
            if learned.sum() > 1:
                t = it[learned]
                print(
                    f"    layer {k + 1}: half its final value at iteration {t.mean():.1f} +- "
                    f"{t.std(ddof=1) / np.sqrt(t.size):.1f} (sd {t.std(ddof=1):.1f}; {t.size} runs that learned it)"
                )
        for r in runs:
            if r["takeoff"] > a.iters:
                print(
                    f"    not learned: seed {r['seed']}: C1 = {r['C1'][-1]:.3f}, Q11 = {r['Q11'][-1]:.3f}, "
                    f"A11 = {r['A11'][-1]:.2f}, |w|^2/d = {r['teacher_sq_norm'][0]:.3f}, "
                    f"{r['teacher_sq_norm'][1]:.3f}"
                )
        learned = np.array([r["takeoff"] <= a.iters for r in runs])
        for k in range(2):
            t = np.array([r["teacher_sq_norm"][k] for r in runs])
            if learned.any() and (~learned).any():
                print(
                    f"    |w_{k + 1}|^2/d: learned runs {t[learned].mean():.3f}, not learned {t[~learned].mean():.3f}"
                )
        out["takeoff"][str(d)] = runs
        print(flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--d", type=int, nargs="+", default=[200, 500, 1000])
    ap.add_argument("--seeds", type=int, nargs="+", default=[16, 12, 8], help="random-start runs per d")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--at", type=int, nargs="+", default=[10, 20, 34, 40, 50, 60, 100, 200])
    ap.add_argument("--alpha", type=float, default=1.2)
    ap.add_argument("--damping", type=float, default=0.8)
    ap.add_argument(
        "--onsager",
        choices=["damped", "latest"],
        default="damped",
        help="Onsager term of the damped iteration: damped (ours, consistent) or latest (the authors' code)",
    )
    ap.add_argument("--v-reg", type=float, default=1e-3)
    ap.add_argument("--fp-seeds", type=int, default=4)
    ap.add_argument("--fp-iters", type=int, default=20)
    ap.add_argument("--se-q", type=float, nargs=2, default=None, help="Q*_11 Q*_22 (skip the state evolution)")
    ap.add_argument("--se-samples", type=int, default=2000)
    ap.add_argument("--skip", choices=["fixed-point", "takeoff"], default=None)
    ap.add_argument("--json", default=None, help="write every run's trajectory here")
    a = ap.parse_args()
    out = {"args": vars(a), "fixed_point": {}, "takeoff": {}}
    if a.skip != "fixed-point":
        q_star = np.array(a.se_q) if a.se_q else se_fixed_point(a.alpha, a.se_samples, a.v_reg)
        out["q_star"] = q_star.tolist()
        fixed_point_study(a, q_star, out)
    if a.skip != "takeoff":
        takeoff_study(a, out)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(out, fh)


if __name__ == "__main__":
    main()
