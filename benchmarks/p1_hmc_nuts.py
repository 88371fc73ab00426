"""Benchmark: NUTS on the HMC task (all four paths), collapsed vs full sampler, per gradient and per second.

For each sampler (and precision) it prints gradients (leapfrog steps of the sampling phase, all chains) per effective
sample (min bulk ESS over the U entries), ESS per second of the sampling phase with its compilation excluded, the
estimated compilation time of the sampling loop, warm-up time (with its compilation), the fraction of transitions at
the maximum tree depth, the mean tree depth and leapfrog steps, step size, divergences, max split R-hat of U and the
sampled accuracy. JAX precision is process-wide, so each sampler and precision is its own subprocess; inside it every
chain method of ``--chain-methods`` runs in turn on the same data (``--devices`` XLA host devices, one per thread),
and the ratio of their sampling-phase times is printed (sequential / parallel = the speed-up of parallel chains).
Run:
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/p1_hmc_nuts.py [--N 10 --warmup 100 --samples 100 --chains 1]
        [--samplers collapsed full] [--dtypes float64 float32] [--chain-methods sequential parallel --devices 2]
Add ``--images-export results/p1_images/L2H4/export.npz --images-theory results/p1_images/L2H4/theory.npz`` to run
the image task instead (at --N, at the T the theory selected at N or at the nearest theory width).
"""

import argparse
import json
import os
import subprocess
import sys


def _hmc_inputs(N):
    import numpy as np

    from smattn.p1 import hmc_task as H
    from smattn.p1.action import Architecture
    from smattn.p1.attention import attentioned_inputs_from_heads
    from smattn.p1.predictor import accuracy

    tr, te = H.generate_hmc(100, H.SEED_TRAIN), H.generate_hmc(1000, H.SEED_TEST)
    heads = [{"W": W} for W in H.head_matrices("all")]
    s = np.sqrt(tr.x.shape[2] * 4)
    xb = attentioned_inputs_from_heads(tr.x, heads, "last") * s
    xt = attentioned_inputs_from_heads(te.x, heads, "last") * s
    return xb, tr.y, xt, Architecture.equal_width((2, 2), N), 0.01, lambda f: accuracy(f, te.y)


def _image_inputs(N, export, theory):
    import numpy as np

    from smattn.p1.action import Architecture
    from smattn.p1.images.theory_grid import attentioned_sets
    from smattn.p1.predictor import accuracy

    with np.load(export) as z:
        ex = {k: z[k] for k in z.files}
    with np.load(theory) as z:
        widths, T_sel = [int(w) for w in z["widths"]], z["T_selected"]
    # the temperature selected at N; at a width the theory grid lacks (e.g. the paper's N = 500 on the laptop grid),
    # the one selected at the nearest width on a log scale (the sampler's cost hardly depends on T)
    nearest = min(widths, key=lambda w: abs(np.log(w / N)))
    T = float(T_sel[widths.index(nearest)])
    xi = attentioned_sets(ex)
    scale = np.sqrt(ex["x_train"].shape[2] * xi["train"].shape[1])
    heads = tuple(int(h) for h in ex["heads"])
    y_test = ex["y_omniglot"].astype(np.float64)
    return (
        xi["train"] * scale,
        ex["y_train"].astype(np.float64),
        xi["omniglot"] * scale,
        Architecture.equal_width(heads, N),
        T,
        lambda f: accuracy(f, y_test),
    )


def worker(a):
    from smattn.p1.sampler import use_host_devices

    use_host_devices(a.devices)
    from smattn.device import jax_setup

    platform = jax_setup(x64=(a.worker_dtype == "float64"))
    import numpy as np

    from smattn.p1.sampler import run_nuts

    if a.images_export:
        xb, y, xt, arch, T, acc = _image_inputs(a.N, a.images_export, a.images_theory)
    else:
        xb, y, xt, arch, T, acc = _hmc_inputs(a.N)
    for method in a.chain_methods:
        r = run_nuts(
            xb, y, xt, arch, T, a.warmup, a.samples, a.chains, a.seed, a.worker_dtype, sampler=a.worker_sampler,
            chain_method=method, rhat_null_trials=0,
        )  # fmt: skip
        out = r.summary()
        out.update(
            platform=platform,
            acc=acc(r.mean_predictor),
            U_diag=np.round(np.diag(r.U_mean), 3).tolist(),
            U_offdiag_max=float(np.abs(r.U_mean - np.diag(np.diag(r.U_mean))).max()),
        )
        print("RESULT " + json.dumps(out), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--N", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--chains", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--samplers", nargs="+", default=["collapsed", "full"])
    ap.add_argument("--dtypes", nargs="+", default=["float64"])
    methods = ["sequential", "parallel", "vectorized"]
    ap.add_argument("--chain-methods", nargs="+", default=["sequential"], choices=methods)
    ap.add_argument("--devices", type=int, default=1, help="XLA host devices (parallel chains: one per thread)")
    ap.add_argument("--images-export")
    ap.add_argument("--images-theory")
    ap.add_argument("--worker-sampler")
    ap.add_argument("--worker-dtype")
    a = ap.parse_args()
    if a.worker_sampler:
        worker(a)
        return
    common = [
        "--N",
        str(a.N),
        "--warmup",
        str(a.warmup),
        "--samples",
        str(a.samples),
        "--chains",
        str(a.chains),
        "--seed",
        str(a.seed),
        "--devices",
        str(a.devices),
        "--chain-methods",
        *a.chain_methods,
    ]
    if a.images_export:
        common += ["--images-export", a.images_export, "--images-theory", a.images_theory]
    task = "images" if a.images_export else "HMC"
    print(f"{task} task, N = {a.N}, {a.chains} chain(s) x ({a.warmup} warm-up + {a.samples} samples), seed {a.seed}")
    for sampler in a.samplers:
        for dtype in a.dtypes:
            cmd = [sys.executable, __file__, "--worker-sampler", sampler, "--worker-dtype", dtype, *common]
            res = subprocess.run(cmd, check=False, capture_output=True, text=True, env=os.environ.copy())
            lines = [l for l in res.stdout.splitlines() if l.startswith("RESULT ")]
            if not lines:
                print(f"{sampler} {dtype}: failed\n{res.stderr[-2000:]}")
                continue
            sampling = {}
            for line in lines:
                r = json.loads(line[7:])
                sampling[r["chain_method"]] = r["seconds_sampling"] - r["seconds_compile_sampling"]
                print(
                    f"{sampler:9s} {dtype} ({r['platform']}, {r['chain_method']} on {r['devices']} device(s)): "
                    f"grads/ESS {r['grads_per_ess']:.0f}, ESS/s (sampling, no compile) {r['ess_per_s_sampling']:.2f}, "
                    f"compile (sampling loop) {r['seconds_compile_sampling']:.1f} s, "
                    f"warm-up {r['seconds_warmup']:.1f} s, "
                    f"sampling {r['seconds_sampling']:.1f} s, total {r['seconds']:.1f} s; at max depth "
                    f"{100 * r['max_depth_fraction']:.1f} %, mean depth {r['mean_tree_depth']:.2f}, mean leapfrog "
                    f"{r['mean_leapfrog_steps']:.0f}, step size {r['step_size_mean']:.3g}; ESS(U) bulk min "
                    f"{r['ess_U_min']:.1f}, tail min {r['ess_tail_U_min']:.1f}, R-hat(U) max {r['rhat_U_max']:.3f}, "
                    f"ESS(f) min {r['ess_f_min']:.1f}, divergences {r['divergences']}, accept {r['accept_prob']:.2f}; "
                    f"sampled acc {r['acc']:.3f}, U diag {r['U_diag']}, |U offdiag| max {r['U_offdiag_max']:.3f}"
                )
            if "sequential" in sampling and "parallel" in sampling:
                print(
                    f"{sampler:9s} {dtype}: sampling phase (compilation excluded) sequential / parallel = "
                    f"{sampling['sequential'] / sampling['parallel']:.2f}x"
                )


if __name__ == "__main__":
    main()
