"""Benchmark: wall time of the batched SGD experiment (P2 Fig. 2 right) on this machine.

    .venv/bin/python benchmarks/p2_dynamics_sgd.py [--epochs 1700] [--runs 8] [--dtype float32] [--threads 2]

Prints the compile+data time, the training wall time, seconds per epoch and the extrapolation to the paper's
1700 epochs. The paper scale (d = 500, alpha = 15, 8 runs, 1700 epochs) is the default.
"""

import argparse
import os
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=1700)
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--d", type=int, default=500)
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    if args.threads == 1:
        os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
    from smattn.device import jax_setup

    platform = jax_setup(x64=True)
    from smattn.p2.dynamics.sgd import paper_sgd_config, train_sgd
    from smattn.p2.trajectories import first_crossing, layer_cosines, sign_corrected

    cfg = paper_sgd_config(
        d=args.d,
        n_runs=args.runs,
        epochs=args.epochs,
        dtype=args.dtype,
        chunk_epochs=min(50, args.epochs),
        test_every=min(20, args.epochs),
    )
    t0 = time.perf_counter()
    out = train_sgd(cfg, progress=None)
    total = time.perf_counter() - t0
    train = out["wall_s"]
    per_epoch = train / cfg.epochs
    print(
        f"platform {platform}, dtype {cfg.dtype}, d={cfg.d}, alpha={cfg.alpha}, runs={cfg.n_runs}, "
        f"epochs={cfg.epochs} ({cfg.epochs * cfg.n_batches * cfg.steps_per_batch} steps per run)"
    )
    print(
        f"total {total:.1f} s (data + compile {total - train:.1f} s), training {train:.1f} s, "
        f"{per_epoch * 1e3:.1f} ms/epoch, {train / (cfg.epochs * cfg.n_batches * cfg.steps_per_batch) * 1e6:.0f} "
        f"us/step for all runs; extrapolated 1700 epochs: {per_epoch * 1700 / 60:.1f} min"
    )
    C = sign_corrected(layer_cosines(out["m"], out["q"]).transpose(2, 0, 1))
    for k in range(2):
        half = (first_crossing(C[k], 0.5) + 1) / cfg.n_batches
        print(f"layer {k + 1}: final C = {C[k, :, -1].mean():.4f}, epochs to half (mean over runs) {half.mean():.2f}")


if __name__ == "__main__":
    main()
