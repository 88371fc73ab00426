"""P2 Fig. 2 left, step 1: one GAMP run on the two-layer attention target (docs/p2_dynamics.md#gamp-iterations),
recording the overlaps M^t = W_hat^t W^T / d and Q^t = W_hat^t W_hat^t^T / d after every iteration.

Output ``run``: NPZ with M, Q (iters, 2, 2), test_error, delta, min_ess (iters,), teacher_sq_norm (2,), wall_s and
the configuration as JSON.
"""

import json
import time

import numpy as np

from smattn.scriptio import run


def main(io):
    from smattn.io import write_npz
    from smattn.p2.theory.gamp import run_gamp

    p = io.params
    r = int(io.wildcards.run)
    if r >= p.runs:
        raise ValueError(f"GAMP run {r} requested but gamp_iter_runs = {p.runs}")
    seed = int(p.seed) * 1000 + r
    cfg = dict(d=p.d, alpha=p.alpha, n_iter=p.iterations, seed=seed, damping=p.damping, onsager=p.onsager)
    print(f"[gamp] {json.dumps(cfg)}", flush=True)
    t0 = time.perf_counter()
    res = run_gamp(
        p.d, p.alpha, p.iterations, seed=seed, damping=p.damping, onsager=p.onsager, progress_desc=f"GAMP run {r}"
    )
    wall = time.perf_counter() - t0
    if not (np.all(np.isfinite(res.M)) and np.all(np.isfinite(res.Q))):
        raise FloatingPointError(f"GAMP run {r}: non-finite overlaps")
    tsq = (res.W * res.W).sum(1) / p.d
    for t in range(len(res.M)):
        c = np.abs(np.diag(res.M[t])) / np.sqrt(np.diag(res.Q[t]))
        print(
            f"[gamp] iter {t + 1}: |M_kk|/sqrt(Q_kk) = {c[0]:.4f}, {c[1]:.4f}; test error "
            f"{res.test_error[t]:.4f}; ||M^t - M^(t-1)|| = {res.delta[t]:.2e}; min ESS {res.min_ess[t]:.1f}",
            flush=True,
        )
    write_npz(
        io.output.run,
        M=res.M,
        Q=res.Q,
        test_error=res.test_error,
        delta=res.delta,
        min_ess=res.min_ess,
        teacher_sq_norm=tsq,
        wall_s=wall,
        config=json.dumps(cfg),
    )
    print(
        f"[gamp] run {r}: {p.iterations} iterations in {wall:.1f} s; final ||M^t - M^(t-1)||_F = {res.delta[-1]:.2e}",
        flush=True,
    )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
