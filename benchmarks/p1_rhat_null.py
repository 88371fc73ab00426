"""What split R-hat perfectly mixed chains give: the largest split R-hat over K entries of independent standard-normal
draws (4 chains x n draws), NumPyro's estimator, over repeated trials. Sets the laptop presets' number of samples:
a verdict "max R-hat <= 1.01" over the 136 U entries of the image task (10 of the HMC task) is only reachable with
enough draws even when the chains mix perfectly. Run:
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/p1_rhat_null.py [--trials 200]
"""

import argparse

import numpy as np
from numpyro.diagnostics import split_gelman_rubin


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    for draws, K in ((40, 136), (100, 136), (300, 136), (100, 10), (200, 10)):
        mx = np.array([split_gelman_rubin(rng.standard_normal((4, draws, K))).max() for _ in range(a.trials)])
        print(
            f"4 chains x {draws} independent draws, {K} entries: largest split R-hat median {np.median(mx):.4f}, "
            f"90 % quantile {np.quantile(mx, 0.9):.4f}, P(largest <= 1.01) {np.mean(mx <= 1.01):.2f}"
        )


if __name__ == "__main__":
    main()
