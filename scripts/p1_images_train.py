"""P1 image task: train the GD transformer of one architecture (spec §5.3) on one-shot Omniglot tasks.

Resumable: the training state lives in ``params.state_dir`` (keyed by a hash of the training configuration) (not a rule output, so Snakemake never deletes it); a rerun
after an interruption continues from its last checkpoint. The output is the selected (best-validation) model."""

import hashlib
import json
from pathlib import Path

from smattn.scriptio import run


def main(io):
    import torch

    from smattn.device import torch_device
    from smattn.io import atomic_path, write_json
    from smattn.p1.images.datasets import load_store
    from smattn.p1.images.export import sequence_context, validation_set
    from smattn.p1.images.tasks import TaskSampler
    from smattn.p1.images.training import TrainConfig, train

    p = io.params
    cfg = TrainConfig(
        n_layers=int(p.n_layers),
        n_heads=int(p.n_heads),
        width=int(p.width),
        qk_dim=int(p.qk_dim),
        epochs=int(p.epochs),
        tasks_per_epoch=int(p.tasks_per_epoch),
        batch=int(p.batch),
        lr=float(p.lr),
        weight_decay=float(p.weight_decay),
        val_every=int(p.val_every),
        n_val=int(p.n_val),
        ckpt_every=int(p.ckpt_every),
        seed=int(p.seed),
        max_steps=None if p.max_steps is None else int(p.max_steps),
        value_init_gain=float(p.value_init_gain),
    )
    device = torch_device()
    print(f"device {device}; config {json.dumps(cfg.__dict__)}; total steps {cfg.total_steps}", flush=True)
    store = load_store(io.input.store)
    labels, pos = sequence_context(cfg.seed)
    sampler = TaskSampler(store["train_images"], labels, pos)
    vx, vy = validation_set(store, cfg.seed, cfg.n_val)
    # the resumable state is keyed by the training configuration, so runs at other scales/settings never collide
    # (value_init_gain at its default 1 is left out, so states written before that setting existed stay valid)
    hashed = {k: v for k, v in cfg.__dict__.items() if not (k == "value_init_gain" and v == 1.0)}
    key = hashlib.sha1(json.dumps(hashed, sort_keys=True).encode()).hexdigest()[:12]
    state = Path(p.state_dir) / f"train_state_{key}.pt"
    print(f"resumable state: {state} ({'resuming' if state.exists() else 'new'})", flush=True)
    ck = train(cfg, sampler, vx, vy, state, device=device, progress=True)
    h = ck["history"]
    keep = {k: ck[k] for k in ("hparams", "step", "best_model", "best_val_acc", "best_step", "history", "config")}
    with atomic_path(io.output.model) as tmp:
        torch.save(keep, tmp)
    steps_run, secs = sum(h["session_steps"]), sum(h["session_seconds"])
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
            "sessions": len(h["session_steps"]),
            "config": cfg.__dict__,
        },
    )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
