"""GPU check before a paper-scale run: one command, one process, JAX and torch together (under 8 minutes on one H100).

1. What torch and JAX see (smattn.doctor) and the float32 matmul precision: the relative error of a float32 product
   under the workflow's setting (full float32, smattn.device) and under TF32, against float64.
2. The paper-size L2H4 network (N = 512, G = 128, batch 128, the paper's precision fp16 on a GPU) trained for
   ``--train-steps`` steps with the workflow's training step (benchmarks/p1_images_gd_steps.py): steps/s, FLOPs per
   step (counted on the real model), achieved FLOP/s against the GEMM peak measured in the same process, and the
   projected time of the paper's 41,240 steps.
3. One gradient of the collapsed NUTS potential at paper size (P = 600 training sequences, 16 paths, N = 500,
   float32), and the paper's N = 500 NUTS preset (10 chains x (20 + 20), vectorised over the chains): seconds per
   vectorised tree step and per chain gradient, and the projected times of the faithful presets.

The image-task inputs are the workflow's export (``--export``/``--theory``) when given, else random inputs of the
same shapes (timing does not depend on their values; tree lengths do, so give the export for NUTS projections).
``--unit-costs FILE`` writes the measured GPU rows of the cost plan (rules/unit_costs.csv format; merge with
tools/unit_costs.py --gpu-rows FILE). ``--tiny``: a few-second CPU run of the same code paths at toy sizes (the
test suite runs it so the check cannot rot).

    PYTHONPATH=src .venv/bin/python tools/gpu_check.py [--export results/p1_images/L2H4/export.npz
        --theory results/p1_images/L2H4/theory.npz] [--unit-costs gpu_units.csv] [--tiny]
"""

import argparse
import datetime as dt
import subprocess
import sys
import time
from pathlib import Path

# this folder's tools, and the benchmarks whose measuring code they reuse (benchmarks/p1_images_gd_steps.py,
# benchmarks/p1_hmc_nuts.py)
sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1] / "benchmarks")]

PAPER_STEPS = 41_240
PAPER = dict(
    L=2, H=4, N=512, G=128, batch=128, steps=3000, P=600, nuts_N=500, chains=10, warmup=20, samples=20, depth=10
)
TINY = dict(L=2, H=4, N=16, G=8, batch=8, steps=5, P=40, nuts_N=10, chains=2, warmup=3, samples=2, depth=3)
FAITHFUL = {"N = 10": (10, 100, 100), "N = 500": (10, 20, 20)}  # chains, warm-up, samples (config.yaml, p1_images)


def precision_check(device):
    """Relative errors of float32 products (workflow setting vs TF32) on torch's and JAX's devices."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    import torch

    from smattn.doctor import relative_matmul_error

    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((1024, 1024)).astype(np.float32) for _ in range(2))
    ta, tb = torch.from_numpy(a).to(device), torch.from_numpy(b).to(device)
    out = {}
    saved = torch.backends.cuda.matmul.allow_tf32
    for name, tf32 in (("workflow", False), ("tf32", True)):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        out[f"torch {name}"] = relative_matmul_error(a, b, (ta @ tb).cpu().numpy())
    torch.backends.cuda.matmul.allow_tf32 = saved
    out["jax workflow"] = relative_matmul_error(a, b, jnp.asarray(a) @ jnp.asarray(b))
    with jax.default_matmul_precision("tensorfloat32"):
        out["jax tf32"] = relative_matmul_error(a, b, jnp.asarray(a) @ jnp.asarray(b))
    return out


def training(s, device, precision):
    """Steps/s, FLOPs per step, GEMM peak and the projection of the paper's steps (p1_images_gd_steps)."""
    import torch
    from p1_images_gd_steps import bench_loop, gemm_peak, step_flops, train_images

    from smattn.costs import forward_flops
    from smattn.p1.images.export import sequence_context
    from smattn.p1.images.tasks import TaskSampler
    from smattn.p1.images.training import paper_train_config

    images, source = train_images(None)
    labels, pos = sequence_context(42)
    sampler = TaskSampler(images, labels, pos).on(device)
    cfg = paper_train_config(
        s["L"], s["H"], width=s["N"], qk_dim=s["G"], batch=s["batch"], precision=precision, compile=False
    )
    flops = step_flops(cfg, sampler, device)
    t0 = time.perf_counter()
    sps, batch_ms = bench_loop(cfg, sampler, device, s["steps"])
    seconds = time.perf_counter() - t0
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(precision, torch.float32)
    peak = gemm_peak(device, cfg.batch * 48, s["N"], s["H"] * s["N"], dtype=dtype)
    # the paper run: its steps plus a validation pass of n_val tasks every val_every steps
    val = (PAPER_STEPS // cfg.val_every + 1) * forward_flops(s["L"], s["H"], s["N"], s["G"], cfg.n_val)
    projected = PAPER_STEPS / sps + val / (flops * sps)
    return dict(sps=sps, flops=flops, peak=peak, seconds=seconds, batch_ms=batch_ms, projected_s=projected, src=source)


def nuts_inputs(s, export, theory):
    import numpy as np

    from smattn.p1.action import Architecture

    if export:
        from p1_hmc_nuts import _image_inputs

        xb, y, xt, arch, T, _ = _image_inputs(s["nuts_N"], export, theory)
        return xb, y, xt, arch, T, f"export {export}"
    rng = np.random.default_rng(0)
    xb = rng.standard_normal((s["P"], 16, 192))
    xt = rng.standard_normal((64, 16, 192))
    y = rng.choice([-1.0, 1.0], s["P"])
    return xb, y, xt, Architecture.equal_width((4, 4), s["nuts_N"]), 0.5, "random inputs of the export's shapes"


def gradient_ms(xb, y, xt, arch, T, reps=20):
    """Milliseconds of one value-and-gradient of the collapsed potential (float32), compiled, on JAX's device."""
    import jax
    import jax.numpy as jnp

    from smattn.p1 import collapsed as C

    data = C.CollapsedData(xb, y, xt, 1.0, jnp.float32)
    N = int(arch.widths[-1])
    w = jax.random.normal(jax.random.PRNGKey(0), (data.Htot, N), jnp.float32)

    def f(w):
        return -C.marginal_log_likelihood(C.train_kernel(w @ w.T / N, data.G, data.iu), data.y, jnp.float32(T))

    g = jax.jit(jax.value_and_grad(f))
    jax.block_until_ready(g(w))
    t0 = time.perf_counter()
    for _ in range(reps):
        out = g(w)
    jax.block_until_ready(out)
    return 1e3 * (time.perf_counter() - t0) / reps


def nuts_run(s, xb, y, xt, arch, T):
    from smattn.p1.sampler import run_nuts

    r = run_nuts(
        xb, y, xt, arch, T, s["warmup"], s["samples"], s["chains"], 4, "float32", max_tree_depth=s["depth"],
        chain_method="vectorized",
    )  # fmt: skip
    steps = r.mean_leapfrog_steps * s["samples"]  # vectorised tree steps of the sampling phase (per chain, mean)
    compile_s = r.seconds_compile_sampling if r.seconds_compile_sampling == r.seconds_compile_sampling else 0.0
    seconds = max(r.seconds_sampling - compile_s, 1e-9)  # without the sampling loop's compilation
    return dict(result=r, s_per_step=seconds / max(steps, 1e-9), leapfrog=r.mean_leapfrog_steps)


def commit() -> str:
    try:
        r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10)
        return r.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tiny", action="store_true", help="toy sizes on the CPU (the test suite's run)")
    ap.add_argument("--export", default=None)
    ap.add_argument("--theory", default=None)
    ap.add_argument("--unit-costs", default=None, help="write the measured GPU rows of the cost plan here")
    ap.add_argument("--train-steps", type=int, default=None)
    a = ap.parse_args()
    s = dict(TINY if a.tiny else PAPER)
    if a.train_steps:
        s["steps"] = a.train_steps
    t_start = time.perf_counter()

    from smattn.device import jax_setup, torch_device
    from smattn.doctor import jax_report, torch_report

    jax_setup(x64=False)  # the paper presets sample in float32
    device = torch_device()
    torch_ok, lines = torch_report()
    print("\n".join(lines))
    jax_ok, lines = jax_report()
    print("\n".join(lines))
    on_gpu = device.type == "cuda" and jax_ok
    if not on_gpu and not a.tiny:
        print("WARNING: no GPU seen by both torch and JAX: the numbers below are the CPU's", flush=True)
    card = __import__("torch").cuda.get_device_name() if device.type == "cuda" else "CPU"

    errs = precision_check(device)
    print("float32 matmul, relative error vs float64: " + ", ".join(f"{k} {v:.1e}" for k, v in errs.items()))
    if on_gpu and max(errs["torch workflow"], errs["jax workflow"]) > 1e-5:
        print("FAIL: the workflow's float32 products are not full float32 on this GPU (TF32 is on)")

    precision = "fp16" if device.type == "cuda" else "fp32"
    tr = training(s, device, precision)
    print(
        f"training L{s['L']}H{s['H']} N = {s['N']}, batch {s['batch']}, {precision} on {card} ({tr['src']}): "
        f"{s['steps']} steps in {tr['seconds']:.1f} s, {tr['sps']:.2f} steps/s, {tr['flops'] / 1e9:.2f} GFLOP/step, "
        f"{tr['flops'] * tr['sps'] / 1e12:.2f} TFLOP/s = {100 * tr['flops'] * tr['sps'] / tr['peak']:.0f} % of the "
        f"GEMM peak measured here ({tr['peak'] / 1e12:.1f} TFLOP/s); {PAPER_STEPS} steps with validation: "
        f"{tr['projected_s'] / 3600:.2f} h",
        flush=True,
    )

    xb, y, xt, arch, T, src = nuts_inputs(s, a.export, a.theory)
    ms = gradient_ms(xb, y, xt, arch, T, reps=3 if a.tiny else 20)
    print(f"collapsed NUTS gradient, P = {xb.shape[0]}, N = {s['nuts_N']}, float32 ({src}): {ms:.2f} ms", flush=True)
    nr = nuts_run(s, xb, y, xt, arch, T)
    r = nr["result"]
    per_chain_grad = nr["s_per_step"] / s["chains"]
    print(
        f"NUTS N = {s['nuts_N']}, {s['chains']} chains x ({s['warmup']} + {s['samples']}), vectorised, float32: "
        f"{r.seconds:.1f} s ({r.seconds_warmup:.1f} warm-up with compilation), {nr['leapfrog']:.0f} tree steps per "
        f"transition, {1e3 * nr['s_per_step']:.2f} ms per vectorised step",
        flush=True,
    )
    for name, (chains, warmup, samples) in FAITHFUL.items():
        # every chain's tree at this preset's length, the chains in one vectorised program
        proj = (warmup + samples) * nr["leapfrog"] * nr["s_per_step"] * max(1.0, chains / s["chains"])
        print(f"projected faithful preset {name} ({chains} x ({warmup} + {samples})): {proj / 60:.1f} min")

    if a.unit_costs:
        from smattn.costs import UnitCost, write_unit_costs

        kind = "gpu" if on_gpu else "cpu"
        when, rev = dt.date.today().isoformat(), commit()
        rows = [
            UnitCost("p1_images_train", kind, 60.0, 1.0 / (tr["flops"] * tr["sps"]), 1.0, 4000.0, 0.0,
                     "smoke" if a.tiny else "paper", "measured",
                     f"tools/gpu_check.py: {tr['sps']:.2f} steps/s at {tr['flops'] / 1e9:.2f} GFLOP/step",
                     card, when, rev),
            # work unit of the cost plan: a float64-equivalent chain gradient (float32 counts 0.55)
            UnitCost("p1_images_sample", kind, 60.0, per_chain_grad / 0.55, 1.0, 4000.0, 0.0,
                     "smoke" if a.tiny else "paper", "measured",
                     f"tools/gpu_check.py: {1e3 * nr['s_per_step']:.2f} ms per vectorised step of "
                     f"{s['chains']} chains", card, when, rev),
        ]  # fmt: skip
        write_unit_costs(a.unit_costs, rows)
        print(f"unit costs written to {a.unit_costs}")
    print(f"gpu_check done in {time.perf_counter() - t_start:.0f} s")


if __name__ == "__main__":
    main()
