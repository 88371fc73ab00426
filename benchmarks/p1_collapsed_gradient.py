"""Benchmark: cost of one gradient of the collapsed NUTS potential on the image task (P = 600 training sequences).

Times ``value_and_grad`` of the V0-marginal negative log likelihood at N = 10, in the same process, for
    baseline  : K_U from the full flattened Gram tensor [n_pairs, P*P], inverse by XLA (triangular solve + product)
    triangle  : K_U from the Gram tensor's upper triangles [n_pairs, P(P+1)/2], inverse by XLA
    lapack    : upper triangles, Cholesky factor and inverse by LAPACK potrf + potri, the P x P matrix unpacked and
                its gradient symmetrised and gathered by XLA
    packed    : the kernel stays packed: one LAPACK callback factors, solves and inverts in place and returns the
                packed gradient (smattn.p1.collapsed.packed_marginal_log_likelihood: what the sampler runs)
and prints ms per gradient and the speed-up against the baseline and the paired packed/lapack ratio, for float64 and
float32 (JAX precision is process-wide: each precision runs in its own subprocess). ``--random``: inputs of the
laptop export's shape (P = 600, 16 paths, D = 192) drawn at random instead of a run's export. Run:
    OMP_NUM_THREADS=1 PYTHONPATH=src .venv/bin/python benchmarks/p1_collapsed_gradient.py \\
        --images-export results/p1_images/L2H4/export.npz --images-theory results/p1_images/L2H4/theory.npz
"""

import argparse
import subprocess
import sys
import time


def worker(a):
    from smattn.device import jax_setup

    jax_setup(x64=(a.worker_dtype == "float64"))
    import jax
    import jax.numpy as jnp
    import numpy as np

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    from p1_hmc_nuts import _image_inputs

    from smattn.p1 import collapsed as C
    from smattn.p1.kernels import PathGram

    if a.random:
        rng = np.random.default_rng(0)
        xb, xt = rng.standard_normal((600, 16, 192)), rng.standard_normal((10, 16, 192))
        y, T = np.sign(rng.standard_normal(600)), 0.5
    else:
        xb, y, xt, arch, T, _ = _image_inputs(a.N, a.images_export, a.images_theory)
    dtype = jnp.float64 if a.worker_dtype == "float64" else jnp.float32
    data = C.CollapsedData(xb, y, xt, 1.0, dtype)
    P, H = data.P, data.Htot
    scale = np.sqrt(1.0 / (data.D * H))
    G_full = jnp.asarray(PathGram(np.asarray(xb, np.float64) * scale).G.reshape(-1, P * P), dtype)
    w = jax.random.normal(jax.random.PRNGKey(0), (H, a.N), dtype)
    Tj = jnp.asarray(T, dtype)

    def potential(kernel):
        def f(w):
            return -C.marginal_log_likelihood(kernel(w @ w.T / a.N), data.y, Tj)

        return jax.jit(jax.value_and_grad(f))

    def timed(fn, reps=a.reps):
        jax.block_until_ready(fn(w))  # compile
        t = time.perf_counter()
        for _ in range(reps):
            out = fn(w)
        jax.block_until_ready(out)
        return (time.perf_counter() - t) / reps, out

    full = lambda U: (U[data.iu] @ G_full).reshape(P, P)  # noqa: E731
    tri = lambda U: C.train_kernel(U, data.G, data.iu)  # noqa: E731
    lapack_inverse = C.cholesky_and_inverse
    C.cholesky_and_inverse = C.xla_cholesky_and_inverse  # baselines: the inverse by XLA (looked up when traced)
    t_base, (v0, g0) = timed(potential(full))
    t_tri, (v1, g1) = timed(potential(tri))
    C.cholesky_and_inverse = lapack_inverse
    packed = jax.jit(
        jax.value_and_grad(lambda w: -C.packed_marginal_log_likelihood((w @ w.T / a.N)[data.iu] @ data.G, data.y, Tj))
    )
    lapack, ratios = potential(tri), []
    for _ in range(a.rounds):  # paired rounds: packed against lapack, alternating
        t_cur, (v2, g2) = timed(lapack)
        t_packed, (v3, g3) = timed(packed)
        ratios.append(t_packed / t_cur)
    rel = max(float(jnp.max(jnp.abs(g - g0)) / jnp.max(jnp.abs(g0))) for g in (g1, g2, g3))
    print(
        f"{a.worker_dtype}: P = {P}, {H} paths, N = {a.N}, backend {jax.default_backend()}; ms per gradient: "
        f"baseline {1e3 * t_base:.1f}, triangle {1e3 * t_tri:.1f} ({t_base / t_tri:.2f}x), "
        f"lapack {1e3 * t_cur:.1f} ({t_base / t_cur:.2f}x), packed {1e3 * t_packed:.1f} ({t_base / t_packed:.2f}x); "
        f"paired packed/lapack per round {', '.join(f'{r:.3f}' for r in ratios)} (median {np.median(ratios):.3f}); "
        f"max relative gradient difference {rel:.1e}, potential {float(v0):.6g} / {float(v3):.6g}"
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--N", type=int, default=10)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--dtypes", nargs="+", default=["float64", "float32"])
    ap.add_argument("--images-export", default="results/p1_images/L2H4/export.npz")
    ap.add_argument("--images-theory", default="results/p1_images/L2H4/theory.npz")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--random", action="store_true")
    ap.add_argument("--worker-dtype")
    a = ap.parse_args()
    if a.worker_dtype:
        return worker(a)
    for dt in a.dtypes:
        cmd = [sys.executable, __file__, "--worker-dtype", dt, "--N", str(a.N), "--reps", str(a.reps)]
        cmd += ["--rounds", str(a.rounds)] + (["--random"] if a.random else [])
        cmd += ["--images-export", a.images_export, "--images-theory", a.images_theory]
        subprocess.run(cmd, check=True)


if __name__ == "__main__":
    main()
