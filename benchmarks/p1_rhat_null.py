"""The R-hat that perfectly mixed chains reach: the null of the largest rank-normalised split R-hat (ArviZ's
statistic) over the distinct U entries of independent standard-normal draws, for every NUTS preset of the workflow
(smattn.p1.convergence.rhat_null; the sampling rules compute it for their own run). For each preset it prints the
null's 95 % quantile (the R-hat verdict's threshold) with its Monte-Carlo standard error, the median, and the
fraction of perfectly mixed runs that a fixed threshold of 1.01 would pass; then how often converged chains with
lag-1 autocorrelation 0.2 and 0.4 (stationary AR(1)) exceed that quantile, and the p-value the R-hat verdict uses
instead (smattn.p1.convergence.rhat_pvalue_of_draws: the null of AR(1) chains of the run's autocorrelation) on one
such run, with its CPU time. Then it times one null both ways in the same process: ArviZ's per-parameter loop
against the vectorised copy (equal results), the reason the null uses the latter. Run:
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/p1_rhat_null.py [--trials 2000]
"""

import argparse
import time

import numpy as np

from smattn.p1 import convergence as C

# (task, preset, chains, draws, distinct U entries): HMC task 4 paths -> 10 entries, 2 paths -> 3; image task
# L = 2, H = 4 -> 16 paths -> 136 entries
PRESETS = (
    ("HMC", "faithful (paper)", 1, 100, 10),
    ("HMC 2-path", "faithful (paper)", 1, 100, 3),
    ("HMC", "recommended (laptop)", 4, 200, 10),
    ("HMC 2-path", "recommended (laptop)", 4, 200, 3),
    ("images", "faithful N = 10 (paper)", 10, 100, 136),
    ("images", "faithful N = 500 (paper)", 10, 20, 136),
    ("images", "recommended N = 10 (laptop)", 4, 300, 136),
)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    for task, preset, chains, draws, k in PRESETS:
        t = time.process_time()
        null = C.rhat_null(chains, draws, k, trials=a.trials, seed=a.seed)
        med = float(np.median(C.max_rhat_null(chains, draws, k, trials=a.trials, seed=a.seed)))
        print(
            f"{task:10s} {preset:28s} {chains:2d} x {draws:3d} draws, {k:3d} entries: 95 % quantile "
            f"{null.quantile:.4f} +- {null.se:.4f}, median {med:.4f}, P(largest <= 1.01) {null.pass_fraction_1_01:.2f} "
            f"({time.process_time() - t:.1f} CPU-s)"
        )
        for rho in (0.2, 0.4):
            ar1 = C.max_rhat_null_ar1(chains, draws, np.full(k, rho), a.trials, seed=a.seed + 1)
            x = C._ar1(np.random.default_rng(a.seed + 2).standard_normal((chains, draws, k)), np.full(k, rho))
            t = time.process_time()
            p = C.rhat_pvalue_of_draws(x, trials=a.trials, seed=a.seed)
            print(
                f"{'':40s} AR(1) rho = {rho}: above the independent-draw quantile {np.mean(ar1 > null.quantile):.2f} "
                f"of converged runs; one run: largest R-hat {p.observed:.4f}, rho read {p.rho_mean:.2f}, "
                f"p = {p.p:.3f} ({time.process_time() - t:.1f} CPU-s)"
            )
    rng = np.random.default_rng(a.seed)
    x = rng.standard_normal((4, 200, 2000))
    t0 = time.process_time()
    ref = C.rhat(x)
    t1 = time.process_time()
    fast = C.rhat_batched(x)
    t2 = time.process_time()
    print(
        f"R-hat of 2000 parameters, 4 x 200 draws: ArviZ {t1 - t0:.2f} CPU-s, vectorised {t2 - t1:.2f} CPU-s "
        f"({(t1 - t0) / (t2 - t1):.0f}x), largest difference {np.abs(ref - fast).max():.1e}"
    )


if __name__ == "__main__":
    main()
