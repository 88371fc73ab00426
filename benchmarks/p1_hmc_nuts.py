"""Benchmark: NUTS on the HMC task (all four paths) at N = 10: ESS per second of the U entries, float64 vs float32.

JAX precision is process-wide, so each precision runs in its own subprocess. Prints wall time, min/mean ESS of the 16
U entries, ESS/s, divergences, mean leapfrog steps and the sampled accuracy. Run:
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/p1_hmc_nuts.py [--N 10 --warmup 100 --samples 100]
"""

import argparse
import json
import os
import subprocess
import sys


def worker(dtype, N, warmup, samples, seed):
    from smattn.device import jax_setup

    platform = jax_setup(x64=(dtype == "float64"))
    import numpy as np

    from smattn.p1 import hmc_task as H
    from smattn.p1.action import Architecture
    from smattn.p1.attention import attentioned_inputs_from_heads
    from smattn.p1.predictor import accuracy
    from smattn.p1.sampler import run_nuts

    tr, te = H.generate_hmc(100, H.SEED_TRAIN), H.generate_hmc(1000, H.SEED_TEST)
    heads = [{"W": W} for W in H.head_matrices("all")]
    s = np.sqrt(231 * 4)
    xb = attentioned_inputs_from_heads(tr.x, heads, "last") * s
    xt = attentioned_inputs_from_heads(te.x, heads, "last") * s
    r = run_nuts(xb, tr.y, xt, Architecture.equal_width((2, 2), N), 0.01, warmup, samples, 1, seed, dtype)
    out = r.summary()
    out.update(
        platform=platform,
        acc=accuracy(r.mean_predictor, te.y),
        ess_per_s_min=out["ess_U_min"] / r.seconds,
        ess_per_s_mean=out["ess_U_mean"] / r.seconds,
        U_mean=np.round(r.U_mean, 3).tolist(),
    )
    print("RESULT " + json.dumps(out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--N", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--worker", choices=["float64", "float32"])
    a = ap.parse_args()
    if a.worker:
        worker(a.worker, a.N, a.warmup, a.samples, a.seed)
        return
    for dtype in ("float64", "float32"):
        cmd = [
            sys.executable,
            __file__,
            "--worker",
            dtype,
            "--N",
            str(a.N),
            "--warmup",
            str(a.warmup),
            "--samples",
            str(a.samples),
            "--seed",
            str(a.seed),
        ]
        res = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy())
        line = [l for l in res.stdout.splitlines() if l.startswith("RESULT ")]
        if not line:
            print(f"{dtype}: failed\n{res.stderr[-2000:]}")
            continue
        r = json.loads(line[0][7:])
        print(
            f"{dtype} ({r['platform']}): {r['seconds']:.1f} s incl. compile, ESS(U) min {r['ess_U_min']:.1f} "
            f"mean {r['ess_U_mean']:.1f}, ESS/s min {r['ess_per_s_min']:.2f} mean {r['ess_per_s_mean']:.2f}, "
            f"divergences {r['divergences']}, mean leapfrog {r['mean_leapfrog_steps']:.0f}, accept "
            f"{r['accept_prob']:.2f}, sampled acc {r['acc']:.3f}, U diag {[row[i] for i, row in enumerate(r['U_mean'])]}"
        )


if __name__ == "__main__":
    main()
