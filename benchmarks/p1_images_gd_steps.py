"""Benchmark: the GD transformer's training loop as ``smattn.p1.images.training.train`` runs it, task sampling included.

For each size (laptop L2H4 N = 64, G = 32; paper L2H4 N = 512, G = 128; optionally L3H3) and device (the CPU, and a
CUDA GPU when one is visible, at every precision) it prints, in one process:

* steps/s of the whole step (tasks drawn on the host, gathered on the device into the reused buffer, forward,
  backward, Adam) and the ms per step spent building the batch (host time; on a GPU the gather is asynchronous, so
  this is the time the host needs to enqueue it); on the CPU medians over the timed steps, the GEMM peak the best of
  three repetitions (other processes on the same cores lower both);
* the FLOPs of one step (counted by ``torch.utils.flop_counter`` on the real forward and backward: matmuls and
  attention products of the path form the loop trains), the achieved FLOP/s, and the ratio to
  the GEMM peak measured here on the same device: a matmul of the value projection's shape [B T, N] x [N, H N];
* the time 41 240 paper steps would take at that rate.

    PYTHONPATH=src .venv/bin/python benchmarks/p1_images_gd_steps.py [--store results/p1_images/images32.npz]
        [--threads 2] [--laptop-steps 30] [--paper-steps 3] [--l3]

Without the store the Omniglot training split is replaced by random images of its shape (1028 classes x 20).
"""

import argparse
import time
from pathlib import Path

import numpy as np
import torch

from smattn.p1.images.export import sequence_context
from smattn.p1.images.features import FEATURE_DIM
from smattn.p1.images.tasks import TaskSampler
from smattn.p1.images.training import TrainStep, build_model, make_optimizer, paper_train_config

PAPER_STEPS = 41_240
SIZES = {
    "laptop L2H4": (2, 4, 64, 32),
    "paper L2H4": (2, 4, 512, 128),
    "laptop L3H3": (3, 3, 64, 32),
    "paper L3H3": (3, 3, 512, 128),
}


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def gemm_peak(device, rows, n_in, n_out, dtype=torch.float32, tf32=False, reps=None):
    """FLOP/s of a [rows, n_in] x [n_in, n_out] matmul on ``device`` (best of a few timed repetitions)."""
    a = torch.randn(rows, n_in, device=device, dtype=dtype)
    b = torch.randn(n_in, n_out, device=device, dtype=dtype)
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    try:
        reps = reps or (50 if device.type == "cuda" else 5)
        best = float("inf")
        for _ in range(3):
            a @ b
            sync(device)
            t0 = time.perf_counter()
            for _ in range(reps):
                a @ b
            sync(device)
            best = min(best, (time.perf_counter() - t0) / reps)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved
    return 2.0 * rows * n_in * n_out / best


def step_flops(cfg, sampler, device):
    """FLOPs of one training step (forward + backward) counted on the real model."""
    from torch.utils.flop_counter import FlopCounterMode

    model = build_model(cfg).to(device)
    step = TrainStep(model, make_optimizer(model, cfg, device), cfg, device)
    x, y = sampler.sample_features(np.random.default_rng([cfg.seed, 0]), cfg.batch)
    with FlopCounterMode(display=False) as fc:
        step(x, y)
    return fc.get_total_flops()


def bench_loop(cfg, sampler, device, steps):
    """(steps/s, batch ms/step) of ``steps`` steps of the training loop after two warm-up steps.

    On a GPU: total time of the ``steps`` steps (one sync at the end, as the loop). On the CPU every step completes
    before the next starts, so each step is timed and the median is reported (robust to other processes sharing the
    cores)."""
    model = build_model(cfg).to(device)
    model.train()
    step = TrainStep(model, make_optimizer(model, cfg, device), cfg, device)
    buf = torch.empty(cfg.batch, 48, FEATURE_DIM, device=device)
    pending = []
    for s in range(2):
        pending.append(step(*sampler.sample_features(np.random.default_rng([cfg.seed, s]), cfg.batch, out=buf)))
    sync(device)
    batch_s, step_s = [], []
    t0 = time.perf_counter()
    for s in range(2, 2 + steps):
        tb = time.perf_counter()
        xb, yb = sampler.sample_features(np.random.default_rng([cfg.seed, s]), cfg.batch, out=buf)
        batch_s.append(time.perf_counter() - tb)
        pending.append(step(xb, yb))
        step_s.append(time.perf_counter() - tb)
    losses = torch.stack(pending).cpu()  # the loop's one read of the losses
    elapsed = time.perf_counter() - t0
    if not torch.isfinite(losses).all():
        raise FloatingPointError("non-finite loss in the benchmark")
    if device.type == "cuda":
        return steps / elapsed, 1e3 * float(np.mean(batch_s))
    return 1.0 / float(np.median(step_s)), 1e3 * float(np.median(batch_s))


def train_images(store_path):
    if store_path and Path(store_path).exists():
        with np.load(store_path) as z:
            return z["train_images"], f"store {store_path}"
    rng = np.random.default_rng(0)
    return rng.integers(0, 256, size=(1028, 20, 32, 32), dtype=np.uint8), "random images of the training split's shape"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", default="results/p1_images/images32.npz")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--laptop-steps", type=int, default=30)
    ap.add_argument("--paper-steps", type=int, default=3)
    ap.add_argument("--l3", action="store_true", help="also the L3H3 sizes")
    ap.add_argument("--cpu-only", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    images, source = train_images(a.store)
    labels, pos = sequence_context(42)
    host = TaskSampler(images, labels, pos)
    t0 = time.perf_counter()
    n_bytes = host.tokens.nbytes  # builds the table
    print(
        f"training images: {source}; token table {n_bytes / 1e6:.0f} MB built in {time.perf_counter() - t0:.1f} s",
        flush=True,
    )
    devices = [("cpu", ["fp32"])]
    if torch.cuda.is_available() and not a.cpu_only:
        devices.append(("cuda", ["fp32", "tf32", "bf16", "fp16"]))
    sizes = {k: v for k, v in SIZES.items() if a.l3 or "L3" not in k}
    for dev_name, precisions in devices:
        device = torch.device(dev_name)
        label = f"CPU ({a.threads} threads)" if dev_name == "cpu" else f"GPU {torch.cuda.get_device_name()}"
        sampler = host.on(device)
        for name, (L, H, N, G) in sizes.items():
            steps = a.laptop_steps if "laptop" in name else a.paper_steps
            if dev_name == "cuda":
                steps *= 20
            for prec in precisions:
                cfg = paper_train_config(L, H, width=N, qk_dim=G, batch=128, lr=3e-4, precision=prec, compile=False)
                flops = step_flops(cfg, sampler, device)
                sps, batch_ms = bench_loop(cfg, sampler, device, steps)
                gemm_dtype = torch.bfloat16 if prec == "bf16" else torch.float16 if prec == "fp16" else torch.float32
                peak = gemm_peak(device, cfg.batch * 48, N, H * N, dtype=gemm_dtype, tf32=prec == "tf32")
                achieved = flops * sps
                total = PAPER_STEPS / sps
                print(
                    f"{label} {name} {prec}: {sps:.2f} steps/s, batch building {batch_ms:.2f} ms/step, "
                    f"{flops / 1e9:.2f} GFLOP/step -> {achieved / 1e9:.1f} GFLOP/s = {100 * achieved / peak:.0f} % "
                    f"of the value-projection GEMM peak ({peak / 1e9:.1f} GFLOP/s); {PAPER_STEPS} steps in "
                    f"{total / 3600:.2f} h",
                    flush=True,
                )
    if not torch.cuda.is_available():
        print("no GPU visible: GPU figures not measured")


if __name__ == "__main__":
    main()
