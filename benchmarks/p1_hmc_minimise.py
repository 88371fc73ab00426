"""Benchmark: HMC theory minimisation at N = 10 (all four paths) to g_max < 1e-5.

Prints, in one process: Newton in the Cholesky parametrisation (first call incl. JAX compilation, then warm calls)
and the reference's scheme, plain Adam at lr 0.1 on M from the GP point (compiled while-loop), with steps, wall
time, g_max and the distance between the two minimisers. Run:
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/p1_hmc_minimise.py [--threads 1|2] [--N 10]
"""

import argparse
import os
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--N", type=float, default=10.0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    if a.threads == 1:
        os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
    from smattn.device import jax_setup

    jax_setup(x64=True)
    import numpy as np

    from smattn.p1 import hmc_task as H
    from smattn.p1.action import Architecture
    from smattn.p1.attention import attentioned_inputs_from_heads
    from smattn.p1.kernels import PathGram
    from smattn.p1.minimise import ActionProblem, minimise_action, minimise_action_adam

    tr = H.generate_hmc(100, H.SEED_TRAIN)
    xi = attentioned_inputs_from_heads(tr.x, [{"W": W} for W in H.head_matrices("all")], "last")
    prob = ActionProblem(Architecture.equal_width((2, 2), a.N), PathGram(xi), tr.y, 0.01)
    t0 = time.perf_counter()
    r = minimise_action(prob)
    cold = time.perf_counter() - t0
    warm = []
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        r = minimise_action(prob)
        warm.append(time.perf_counter() - t0)
    print(
        f"Newton (Cholesky) N={a.N:g}: steps {r.steps}, g_max {r.g_max:.2e}, converged {r.converged}, "
        f"first call {cold:.2f} s (incl. compile), warm median {np.median(warm):.3f} s "
        f"(min {min(warm):.3f}, max {max(warm):.3f})"
    )
    t0 = time.perf_counter()
    ad = minimise_action_adam(prob, lr=0.1)
    ad_cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    ad = minimise_action_adam(prob, lr=0.1)
    ad_warm = time.perf_counter() - t0
    print(
        f"Adam lr=0.1 from GP     N={a.N:g}: steps {ad.steps}, g_max {ad.g_max:.2e}, converged {ad.converged}, "
        f"first call {ad_cold:.2f} s (incl. compile), warm {ad_warm:.3f} s"
    )
    print(
        f"speed-up (warm Adam / warm Newton): {ad_warm / np.median(warm):.1f}x; "
        f"max |U_newton - U_adam| = {np.abs(r.U - ad.U).max():.2e}; action newton {r.action:.10f} adam {ad.action:.10f}"
    )


if __name__ == "__main__":
    main()
