"""P2 Fig. 2 right, step 1: plain SGD on the two-layer attention target, all runs in one batched program.

Output ``runs``: NPZ with m, q (runs, records, 2), m0, q0 (2,), train_loss (runs, epochs), test_epochs,
test_error (runs, K), teacher_sq_norm (2,), records_per_epoch, wall_s, platform, matmul_precision and the
configuration as JSON.
"""

import json

from smattn.scriptio import run


def main(io):
    from smattn.device import jax_setup

    # float32 runs use full float32 matrix products on a GPU (no TF32; smattn.device, "Numerics"), as the authors'
    # float32 PyTorch runs did (PyTorch has not used TF32 for float32 matmuls by default since version 1.12)
    precision = "highest"
    platform = jax_setup(x64=True, matmul_precision=precision)
    from smattn.io import write_npz
    from smattn.p2.dynamics.sgd import SGDConfig, train_sgd

    p = io.params
    cfg = SGDConfig(
        d=p.d,
        alpha=p.alpha,
        n_runs=p.runs,
        epochs=p.epochs,
        batch_size=p.batch_size,
        steps_per_batch=p.steps_per_batch,
        lr=p.lr,
        weight_decay_times_d=p.weight_decay_times_d,
        test_every=p.test_every,
        seed=p.seed,
        dtype=p.dtype,
        chunk_epochs=p.chunk_epochs,
    )
    print(f"[sgd] JAX platform {platform}; config {json.dumps(cfg.as_dict())}", flush=True)
    out = train_sgd(cfg, progress=lambda s: print(s, flush=True))
    W = out["W"]
    write_npz(
        io.output.runs,
        m=out["m"],
        q=out["q"],
        m0=out["m0"],
        q0=out["q0"],
        train_loss=out["train_loss"],
        test_epochs=out["test_epochs"],
        test_error=out["test_error"],
        teacher_sq_norm=(W * W).sum(1) / cfg.d,
        records_per_epoch=cfg.n_batches,
        wall_s=out["wall_s"],
        platform=platform,
        matmul_precision=precision,
        config=json.dumps(cfg.as_dict()),
    )
    print(f"[sgd] {cfg.n_runs} runs x {cfg.epochs} epochs in {out['wall_s']:.1f} s", flush=True)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
