"""P1 image task: train the GD transformer of one architecture (docs/p1_images.md#training) on one-shot Omniglot tasks.

Resumable: the training state lives in ``params.state_dir`` (not a rule output, so Snakemake never deletes it), named
by a hash of the training settings, the input store's sha256 and the package version; a rerun after an interruption
continues from its last checkpoint, a finished state is reused only with ``params.reuse_finished``. The output is the
selected (best-validation) model; the summary holds steps/s and the ms per step spent building batches."""

import json
from pathlib import Path

from smattn.scriptio import run


def main(io):
    from smattn.device import gpu_job, pin_cpu_numerics

    # before torch starts: one network on every x86-64 CPU with AVX2 (config gd_cpu_numerics)
    pinned = pin_cpu_numerics(io.params.cpu_numerics)
    gpu_job(io, "torch")  # gpu=1 rule: stops here when it must have a GPU and sees none (smattn.device)
    import torch

    import smattn
    from smattn.data.fetch import file_digests
    from smattn.device import torch_device
    from smattn.io import atomic_path, write_json
    from smattn.p1.images.datasets import load_store
    from smattn.p1.images.export import sequence_context, validation_tasks
    from smattn.p1.images.tasks import TaskSampler
    from smattn.p1.images.training import TrainConfig, resolve_precision, state_key, train

    p = io.params
    device = torch_device()
    # "auto": bf16 where the device has bfloat16 instructions, else fp32 (the state key and summary hold the result)
    cfg = TrainConfig.from_params(p, precision=resolve_precision(p.precision, device))
    print(
        f"device {device}; cpu numerics {p.cpu_numerics} {pinned or '(native kernels)'}, torch capability "
        f"{torch.backends.cpu.get_cpu_capability()}; precision {p.precision} -> {cfg.precision}; config "
        f"{json.dumps(cfg.__dict__)}; "
        f"total steps {cfg.total_steps}",
        flush=True,
    )
    if device.type == "cpu" and cfg.precision == "fp16":
        print(
            "warning: fp16 autocast on a CPU is emulated (several times slower than fp32); set "
            "p1_images.gd_precision to fp32 or auto for a CPU run",
            flush=True,
        )
    store = load_store(io.input.store)
    labels, pos = sequence_context(cfg.seed)
    sampler = TaskSampler(store["train_images"], labels, pos)
    val = validation_tasks(store, cfg.seed, cfg.n_val)
    # other settings, other input data or another package version never share a state
    data_sha = file_digests(io.input.store)["sha256"]
    state = Path(p.state_dir) / f"train_state_{state_key(cfg, data_sha, smattn.__version__)}.pt"
    print(
        f"resumable state: {state} ({'found' if state.exists() else 'new'}; data sha256 {data_sha[:12]}, smattn "
        f"{smattn.__version__})",
        flush=True,
    )
    ck = train(cfg, sampler, val, state, device=device, progress=True, reuse_finished=bool(p.reuse_finished))
    h = ck["history"]
    keep = {k: ck[k] for k in ("hparams", "step", "best_model", "best_val_acc", "best_step", "history", "config")}
    with atomic_path(io.output.model) as tmp:
        torch.save(keep, tmp)
    steps_run, secs = sum(h["session_steps"]), sum(h["session_seconds"])
    batch_secs = sum(h.get("session_batch_seconds", []))
    write_json(
        io.output.summary,
        {
            "model": io.wildcards.model,
            "device": str(device),
            "steps": int(ck["step"]),
            "best_val_acc": float(ck["best_val_acc"]),
            "best_step": int(ck["best_step"]),
            "val_steps": h["val_step"],
            "val_acc": h["val_acc"],
            "final_loss_mean_last_100": float(sum(h["loss"][-100:]) / max(1, len(h["loss"][-100:]))),
            "n_trainable": sum(v.numel() for v in ck["best_model"].values()),
            "train_seconds": secs,
            "steps_per_second": steps_run / secs if secs > 0 else None,
            "batch_ms_per_step": 1e3 * batch_secs / steps_run if steps_run > 0 else None,
            "data_sha256": data_sha,
            "smattn_version": smattn.__version__,
            "cpu_numerics": {
                "setting": p.cpu_numerics,
                "environment": pinned,
                "torch_capability": torch.backends.cpu.get_cpu_capability(),
            },
            "sessions": len(h["session_steps"]),
            "config": cfg.__dict__,
        },
    )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
