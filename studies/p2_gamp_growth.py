"""First-layer growth of GAMP once the last layer is learned, against the state evolution (P2 Fig. 2 left).

Question: Once the last layer is learned, does GAMP's first layer grow per iteration as fast as the state evolution
predicts?
Finding: Slightly slower: from the informed start on the Bayes-optimal line (alpha = 1.2, Q22 = 0.997, m1 = 0.02)
the first-step ratio is 1.99 +- 0.36 (d = 500), 2.23 +- 0.24 (d = 1000), 2.34 +- 0.06 (d = 2000) against about 2.6
from the SE on the converged grid; the gap is GAMP's Jacobian average A11 (0.12-0.16 against alpha R11 =
0.055-0.063). The workflow's rule p2_gamp_growth measures the same at one setting; this script varies it.
Recorded in: docs/p2_dynamics.md, "First-layer growth against the state evolution".

GAMP starts with the last layer almost learned (Q22 = --q2) and the first layer at overlap --m1, on the Bayes-optimal
(Nishimori) line or off it (--off: Q11 and C_hat_11 as a random start leaves them, see
docs/p2_dynamics.md#gamp-iterations), and prints the ratio m1(t)/m1(t-1) per iteration (mean +- standard error over
seeds) beside the state evolution's one-step prediction from the same start.

    PYTHONPATH=src OMP_NUM_THREADS=1 python studies/p2_gamp_growth.py --d 500 1000 2000 --seeds 6 --iters 3
    PYTHONPATH=src OMP_NUM_THREADS=1 python studies/p2_gamp_growth.py --d 1000 --seeds 6 --off 0.08 0.63
"""

import argparse
import time

import numpy as np

from smattn.p2.theory.gamp_growth import gamp_growth_runs, se_growth_ratio


def mean_se(x):
    x = np.asarray(x, dtype=np.float64)
    return x.mean(), x.std(ddof=1) / np.sqrt(x.size) if x.size > 1 else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--d", type=int, nargs="+", default=[1000])
    ap.add_argument("--alpha", type=float, default=1.2)
    ap.add_argument("--m1", type=float, default=0.02)
    ap.add_argument("--q2", type=float, default=0.997)
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--damping", type=float, default=0.8)
    ap.add_argument("--v-reg", type=float, default=1e-3)
    ap.add_argument("--onsager-v-reg", action="store_true", help="Onsager term with C_hat + v_reg I")
    ap.add_argument("--onsager", choices=["damped", "latest"], default="damped", help="see run_gamp")
    ap.add_argument(
        "--off",
        type=float,
        nargs=2,
        metavar=("Q11", "C11"),
        default=None,
        help="off-Nishimori start of layer 1: self-overlap Q11 and variance C_hat_11",
    )
    ap.add_argument("--se-samples", type=int, default=20000)
    a = ap.parse_args()

    t0 = time.perf_counter()
    se = se_growth_ratio(a.alpha, a.m1, a.q2, damping=a.damping, v_reg=a.v_reg, n_samples=a.se_samples)
    print(
        f"SE one-step ratio from diag({a.m1}, {a.q2}): {se['ratio']:.3f} +- {se['ratio_se']:.3f}; linearised "
        f"1 - eta + eta alpha K1 = {se['ratio_linear']:.3f} (K1 = {se['K1']:.3f} +- {se['K1_se']:.3f}); "
        f"alpha R11 = {a.alpha * se['R11']:.4f} [{time.perf_counter() - t0:.0f} s]",
        flush=True,
    )
    for d in a.d:
        t0 = time.perf_counter()
        kw = {} if a.off is None else dict(self_overlap1=a.off[0], variance1=a.off[1])
        g = gamp_growth_runs(
            d,
            a.alpha,
            a.m1,
            a.q2,
            range(a.seeds),
            a.iters,
            damping=a.damping,
            v_reg=a.v_reg,
            onsager_v_reg=a.onsager_v_reg,
            onsager=a.onsager,
            **kw,
        )
        wall = time.perf_counter() - t0
        print(
            f"d = {d}: {a.seeds} seeds x {a.iters} iterations in {wall:.0f} s "
            f"({wall / a.seeds / a.iters:.1f} s per iteration)",
            flush=True,
        )
        for t in range(a.iters):
            r, rs = mean_se(g.ratio[:, t])
            m, ms = mean_se(g.m1[:, t + 1])
            q, _ = mean_se(g.q11[:, t + 1])
            aa, _ = mean_se(g.a11[:, t])
            print(
                f"  t={t + 1}: m1(t)/m1(t-1) = {r:.3f} +- {rs:.3f}   m1 = {m:.4f} +- {ms:.4f}   Q11 = {q:.4f}   "
                f"A11 = {aa:.4f} (SE alpha R11 at the start {a.alpha * se['R11']:.4f})   "
                f"layer-2 cosine {g.m2_cos[:, t + 1].mean():.4f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
