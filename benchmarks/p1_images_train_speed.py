"""Benchmark: a training step of the image task's GD transformer, layer by layer (before) and as its sum over attention
paths on the factored input (after), in one process.

For each laptop-scale model (L2H4, L3H3, L2H8: the settings of the job ``p1_images_train`` as this checkout's
Snakefile builds them at laptop scale, ``smattn.scriptio.job_from_workflow``) the process, on one thread:

* checks in float64 that both forms give the same outputs and gradients on a fixed batch (largest relative
  difference printed, float64 rounding ~1e-15 when they agree);
* times ``--steps`` Adam steps (forward, backward, update) of each form after two warm-up steps, alternating the
  forms over ``--repeats`` rounds: *before* = ``forward_layers`` on the sequences x_0 [B, 48, 192], the network's
  layer-by-layer definition (N-wide token vectors); *eager* = ``squared_error`` (the path form, each chunk of
  sequences differentiated right after its forward) on the same batch's ``TokenFeatures`` [B, 48, 67]; *after* = the
  same with its chunks compiled as the job's ``gd_compile`` says (what ``p1_images_train`` runs). All on the same
  task draws of real-shaped tokens (channel-replicated patches);
* counts the FLOPs of each step with torch's FLOP counter (forward and backward) and measures the core's float32 GEMM
  rate in the same process (a [B T, 64] x [64, 2 L H G] product of the step's shape, and a 1024^3 product), so it
  prints the fraction of that rate each form reaches.

Printed: per model the median ms per step of each form, the paired after/before and after/eager ratios per round and
their medians, FLOPs per step and GFLOP/s of each, the GEMM rates, and the float64 agreement. The training job runs
with ``keep_freed_memory`` (``smattn.memory``); so does this process.

    PYTHONPATH=src .venv/bin/python benchmarks/p1_images_train_speed.py --repeats 3
"""

import argparse
import statistics
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def job_config(model: str):
    """The job's TrainConfig (laptop scale), as the workflow builds it."""
    from smattn.p1.images.training import TrainConfig
    from smattn.scriptio import job_from_workflow

    params = vars(job_from_workflow("p1_images_train", {"model": model}, ["scale=laptop"], REPO / "Snakefile").params)
    return TrainConfig.from_params(params)


def batch(cfg, seed: int = 0):
    """A batch of B tasks over random replicated-patch tokens: (TokenFeatures, x_0, y)."""
    import numpy as np
    import torch

    from smattn.p1.images.features import assemble_features, patch_values
    from smattn.p1.images.tokens import image_tokens, label_vectors, positional_encoding

    rng = np.random.default_rng(seed)
    tokens = image_tokens(rng.integers(0, 256, size=(256, 32, 32), dtype=np.uint8), "omniglot")
    image = torch.from_numpy(rng.integers(0, 256, size=(cfg.batch, 3)))
    la = torch.from_numpy(rng.integers(0, 2, size=cfg.batch))
    label = torch.stack([la, 1 - la, torch.full_like(la, 2)], 1)
    labels, positions = torch.from_numpy(label_vectors(3)), torch.from_numpy(positional_encoding())
    feats = assemble_features(torch.from_numpy(patch_values(tokens)), image, label, labels, positions)
    y = torch.from_numpy(np.where(rng.integers(0, 2, size=cfg.batch) == 1, 1.0, -1.0).astype(np.float32))
    return feats, feats.x0(), y


def agreement(cfg) -> float:
    """Largest relative difference of outputs and gradients, float64, between the two forms (16 sequences)."""
    from smattn.p1.images.features import TokenFeatures
    from smattn.p1.images.training import build_model

    feats, _, y = batch(cfg, seed=1)
    m = build_model(cfg).double()
    f64 = TokenFeatures(feats.values[:16].double(), feats.labels.double(), feats.positions.double())
    out = []
    x64 = f64.x0()
    for fn in (lambda: m.forward_layers(x64), lambda: m(f64)):
        m.zero_grad(set_to_none=True)
        f = fn()
        ((f - y[:16].double()) ** 2).mean().backward()
        out.append([f.detach()] + [p.grad.detach().clone() for p in m.parameters()])
    return max(float((a - b).abs().max() / b.abs().max()) for a, b in zip(out[1], out[0], strict=True))


def gemm_rate(m: int, k: int, n: int, reps: int = 20) -> float:
    """GFLOP/s of a float32 [m, k] x [k, n] product on this thread."""
    import torch

    a, b, c = torch.randn(m, k), torch.randn(k, n), torch.empty(m, n)
    for _ in range(3):
        torch.mm(a, b, out=c)
    t = time.perf_counter()
    for _ in range(reps):
        torch.mm(a, b, out=c)
    return 2 * m * k * n * reps / (time.perf_counter() - t) / 1e9


def step_fn(opt):
    """One Adam step of the squared loss ``fn()``."""

    def step(fn):
        opt.zero_grad(set_to_none=True)
        fn().backward()
        opt.step()

    return step


def main() -> None:
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from smattn.memory import keep_freed_memory
    from smattn.p1.images.training import build_model, make_optimizer

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="L2H4,L3H3,L2H8")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    torch.set_num_threads(1)
    keep_freed_memory()
    dev = torch.device("cpu")
    print(f"one thread, {a.steps} timed steps per run, {a.repeats} rounds; fp32")
    for name in a.models.split(","):
        cfg = job_config(name)
        rel = agreement(cfg)
        feats, x0, y = batch(cfg)
        model = build_model(cfg)
        opt = make_optimizer(model, cfg, dev)
        forms = {
            "before": lambda m=model, x=x0, y=y: ((m.forward_layers(x) - y) ** 2).mean(),
            "eager": lambda m=model, x=feats, y=y: m.squared_error(x, y),
            "after": lambda m=model, x=feats, y=y, c=cfg.compile: m.squared_error(x, y, compiled=c),
        }
        step = step_fn(opt)

        flops = {}
        for label, fn in forms.items():
            # the compiled form runs the eager form's operations (its kernels escape the counter)
            with FlopCounterMode(display=False) as fc:
                step(forms["eager"] if label == "after" else fn)
            flops[label] = fc.get_total_flops()
        t0 = time.perf_counter()
        step(forms["after"])
        t_first = time.perf_counter() - t0  # the compilation, or Inductor's cache hit
        times = {label: [] for label in forms}
        for _ in range(a.repeats):
            for label, fn in forms.items():
                for _ in range(2):
                    step(fn)
                ts = []
                for _ in range(a.steps):
                    t = time.perf_counter()
                    step(fn)
                    ts.append(time.perf_counter() - t)
                times[label].append(statistics.median(ts))
        L, H, G = cfg.n_layers, cfg.n_heads, cfg.qk_dim
        rate_step = gemm_rate(cfg.batch * 48, 64, 2 * L * H * G)
        rate_big = gemm_rate(1024, 1024, 1024)
        ratios = [b / a_ for a_, b in zip(times["before"], times["after"], strict=True)]
        ratios_eager = [b / a_ for a_, b in zip(times["eager"], times["after"], strict=True)]
        print(f"{name}: float64 outputs and gradients of the two forms: largest relative difference {rel:.1e}")
        for label in forms:
            t = statistics.median(times[label])
            gf = flops[label] / t / 1e9
            print(
                f"  {label:6s} {1e3 * t:7.1f} ms/step, {flops[label] / 1e9:5.1f} GFLOP/step, {gf:5.1f} GFLOP/s = "
                f"{gf / rate_step:.0%} of the step-shaped GEMM rate, {gf / rate_big:.0%} of the 1024^3 rate"
            )
        print(
            f"  GEMM rates here: [{cfg.batch * 48}, 64] x [64, {2 * L * H * G}] {rate_step:.1f} GFLOP/s, 1024^3 "
            f"{rate_big:.1f} GFLOP/s; paired after/before per round {', '.join(f'{r:.3f}' for r in ratios)} "
            f"(median {statistics.median(ratios):.3f}, speed-up {1 / statistics.median(ratios):.2f}x); "
            f"after/eager {', '.join(f'{r:.3f}' for r in ratios_eager)} "
            f"(median {statistics.median(ratios_eager):.3f}); "
            f"after = compiled: {cfg.compile} (first step {t_first:.1f} s)",
            flush=True,
        )


if __name__ == "__main__":
    main()
