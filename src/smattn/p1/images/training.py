"""Adam training of the GD transformer on one-shot Omniglot tasks (docs/p1_images.md#training), resumable.

* Loss: mean squared error between the scalar output and y in {-1, +1}; decision = sign of the output.
* Adam (lr 3e-4, betas (0.9, 0.999), coupled weight decay 5e-5), batch of tasks, ``epochs x steps_per_epoch`` steps.
* Initialisation: PyTorch defaults (docs/p1_images.md#training). ``value_init_gain`` (1 = the paper's) multiplies
  the initial value weights W_V of every layer; the laptop scale uses sqrt(3) for the L = 3 model only
  (see ``build_model``).
* Task batch of step ``s`` is drawn with ``numpy.random.default_rng([seed, s])``: the data stream is a pure function of
  the step, so a resumed run sees exactly the batches an uninterrupted run would have seen.
* Validation accuracy every ``val_every`` steps (and at the last step) on a **fixed** validation set (the reference
  resampled it each time); the model with the best validation accuracy is kept.
* A checkpoint (``torch.save`` of plain tensors/dicts, loadable with ``weights_only=True``) is written atomically
  every ``ckpt_every`` steps and at the end; ``train`` resumes from it when it exists and is unfinished (a finished
  one is reused only when asked: ``reuse_finished``).

The loop keeps the device busy: the patch tokens of every training and validation image live on the training device
(``TaskSampler.on``), a step draws its task indices on the host (microseconds), copies them (pinned, non-blocking on a
GPU) and gathers its sequences there into one reused buffer. Nothing inside a step waits for the device: the losses
stay on the device and are read, and checked for finiteness, every ``ckpt_every`` steps, before a checkpoint is
written (a non-finite loss stops training with ``FloatingPointError``, the last checkpoint left as it was).

Precision (``precision``): ``fp32``; ``tf32`` (TF32 matmuls on a CUDA device; on a CPU identical to fp32); ``bf16``
(autocast to bfloat16); ``fp16`` (autocast to float16 with a gradient scaler, the authors' Lightning
``precision=16``). ``compile``: ``torch.compile`` the training forward. On a CUDA device Adam is the fused kernel, so
the gradient scaler's inf check does not wait for the device either.

Checkpoint dict: hparams, step, model (state dict), optimizer (state dict), scaler (gradient scaler state dict),
best_model, best_val_acc, best_step, history (dict of lists), config (training settings), done (bool).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from smattn.io import atomic_path
from smattn.p1.images.model import AttentionPathsTransformer
from smattn.p1.images.tasks import DeviceTaskSet, TaskSampler, TaskSet, to_device
from smattn.settings import Settings, scale_params, setting

PRECISIONS = ("fp32", "tf32", "bf16", "fp16")
LR_SCHEDULES = ("constant", "warmup_cosine")


@dataclass(frozen=True, kw_only=True)
class TrainConfig(Settings):
    """Training settings; the workflow's values are the ``gd_*`` keys of config.yaml (:func:`paper_train_config`)."""

    n_layers: int = setting(ge=1)
    n_heads: int = setting(ge=1)
    width: int = setting(ge=1)
    qk_dim: int = setting(ge=1)
    epochs: int = setting(ge=1)
    tasks_per_epoch: int = setting(ge=1)
    batch: int = setting(ge=1)
    lr: float = setting(gt=0)
    weight_decay: float = setting(ge=0)
    val_every: int = setting(ge=1)
    n_val: int = setting(ge=1)
    ckpt_every: int = setting(ge=1)
    seed: int
    max_steps: int | None = setting(ge=1)  # optional cap on the total steps (None: epochs x steps_per_epoch)
    value_init_gain: float = setting(default=1.0, gt=0)  # factor on the default initial W_V (1 = PyTorch default)
    precision: str = setting(choices=PRECISIONS)  # see the module docstring
    compile: bool  # torch.compile the training forward
    lr_schedule: str = setting(default="constant", choices=LR_SCHEDULES)  # see ``learning_rate``
    warmup_steps: int = setting(default=0, ge=0)  # linear warm-up length of ``warmup_cosine``
    min_lr: float = setting(default=0.0, ge=0)  # learning rate at the last step of ``warmup_cosine``

    def __post_init__(self):
        super().__post_init__()
        if self.tasks_per_epoch < self.batch:
            raise ValueError(f"TrainConfig: tasks_per_epoch ({self.tasks_per_epoch}) < batch ({self.batch})")
        if self.lr_schedule == "warmup_cosine" and self.warmup_steps >= self.total_steps:
            raise ValueError(
                f"TrainConfig: warmup_steps ({self.warmup_steps}) must be below the total steps ({self.total_steps})"
            )
        if self.min_lr > self.lr:
            raise ValueError(f"TrainConfig: min_lr ({self.min_lr}) exceeds lr ({self.lr})")

    @property
    def steps_per_epoch(self) -> int:
        return self.tasks_per_epoch // self.batch  # drop-last

    @property
    def total_steps(self) -> int:
        n = self.epochs * self.steps_per_epoch
        return n if self.max_steps is None else min(n, int(self.max_steps))


def learning_rate(cfg: TrainConfig, step: int) -> float:
    """Adam's learning rate at step ``step`` (0-based).

    ``constant``: ``cfg.lr`` at every step (the paper's runs). ``warmup_cosine``: linear rise from lr/warmup to lr
    over the first ``warmup_steps`` steps, then a half cosine from lr down to ``min_lr`` at the last step, the shape
    of the schedule in the authors' training code (Gradual warm-up + cosine annealing), which their paper runs
    switched off. A pure function of the step (like the task stream), so a resumed run follows the same schedule
    without any scheduler state; torch's chained schedulers would have to be checkpointed and stepped in lockstep.
    """
    if cfg.lr_schedule == "constant":
        return float(cfg.lr)
    w, n = cfg.warmup_steps, cfg.total_steps
    if step < w:
        return float(cfg.lr) * (step + 1) / w
    t = (step - w) / max(n - 1 - w, 1)
    return float(cfg.min_lr + 0.5 * (cfg.lr - cfg.min_lr) * (1.0 + math.cos(math.pi * min(t, 1.0))))


def paper_train_config(n_layers: int, n_heads: int, **overrides) -> TrainConfig:
    """TrainConfig of an L = n_layers, H = n_heads model with the paper-scale ``gd_*`` values of config.yaml, then
    ``overrides`` (field names). The paper's value-weight gain is 1 for every model."""
    p = scale_params("p1_images", "paper")
    keys = (
        "width",
        "qk_dim",
        "epochs",
        "tasks_per_epoch",
        "batch",
        "lr",
        "weight_decay",
        "val_every",
        "n_val",
        "ckpt_every",
        "seed",
        "max_steps",
        "precision",
        "compile",
        "lr_schedule",
        "warmup_steps",
        "min_lr",
    )
    kw = {k: p[f"gd_{k}"] for k in keys}
    return TrainConfig(**{"n_layers": n_layers, "n_heads": n_heads, **kw, **overrides})


def build_model(cfg: TrainConfig) -> AttentionPathsTransformer:
    """The initial network: PyTorch default initialisation with seed ``cfg.seed``, then the value weights W_V of
    every layer multiplied by ``cfg.value_init_gain`` (1: unchanged, the paper's initialisation).

    Why a gain exists: the default ``nn.Linear`` init (uniform +-1/sqrt(fan-in), variance 1/(3 fan-in)) shrinks the
    variance of the residual-free value chain by 3 per attention layer, so the initial output scales like 3^(-L/2)
    (and the gradient of every layer like the product of the others). With L = 3 the network starts ~2.7x closer to
    the degenerate saddle at zero output than with L = 2, and the first steps (output uncorrelated with the labels)
    shrink it further; its plateau then outlasts a laptop-scale step budget. sqrt(3) makes each W_V
    variance-preserving (std 1/sqrt(N)); the architecture, the other initialisations and the optimiser are unchanged.
    """
    torch.manual_seed(cfg.seed)
    model = AttentionPathsTransformer(cfg.n_layers, cfg.n_heads, cfg.width, cfg.qk_dim)
    if cfg.value_init_gain != 1.0:
        with torch.no_grad():
            for layer in model.value:
                layer.weight.mul_(float(cfg.value_init_gain))
    return model


@torch.no_grad()
def predict(model: nn.Module, x: np.ndarray | torch.Tensor, batch: int = 512, device=None) -> np.ndarray:
    """Model outputs for sequences x [n, 48, 192] -> [n] (float64 numpy)."""
    device = torch.device(device or next(model.parameters()).device)
    model.eval()
    out = []
    for i in range(0, len(x), batch):
        xb = x[i : i + batch]
        xb = xb.to(device, torch.float32) if torch.is_tensor(xb) else to_device(np.asarray(xb, np.float32), device)
        out.append(model(xb).double().cpu().numpy())
    return np.concatenate(out) if out else np.zeros(0)


@torch.no_grad()
def predict_tasks(model: nn.Module, tasks: DeviceTaskSet, batch: int = 512) -> torch.Tensor:
    """Model outputs [n] (float32, on the tasks' device) for a task set assembled on its device in chunks of
    ``batch`` (the chunks of ``predict``, so the same numbers as ``predict`` on ``TaskSet.x()``)."""
    model.eval()
    out = [model(xb).float() for xb, _ in tasks.batches(batch)]
    return torch.cat(out) if out else torch.zeros(0, device=tasks.device)


def accuracy_tasks(model: nn.Module, tasks: DeviceTaskSet | TaskSet, batch: int = 512) -> float:
    """Fraction of the tasks with sign(f) = y (an exact zero output counts as wrong); one host sync."""
    if isinstance(tasks, TaskSet):
        tasks = tasks.to(next(model.parameters()).device)
    f = predict_tasks(model, tasks, batch)
    return int((torch.sign(f) == torch.sign(tasks.y)).sum().item()) / max(1, len(tasks))


def accuracy(f: np.ndarray, y: np.ndarray) -> float:
    """Fraction of examples with sign(f) = y (an exact zero output counts as wrong)."""
    f, y = np.asarray(f), np.asarray(y)
    if f.shape != y.shape:
        raise ValueError(f"accuracy: outputs {f.shape} and targets {y.shape} differ in shape")
    return float(np.mean(np.sign(f) == np.sign(y)))


def save_checkpoint(obj: dict, path: str | os.PathLike) -> None:
    """``torch.save`` through ``smattn.io.atomic_path``: a unique temporary name beside ``path``, renamed on success,
    deleted on failure (never a half-written checkpoint, never a leftover temporary file)."""
    with atomic_path(path) as tmp:
        torch.save(obj, tmp)


def state_key(cfg: TrainConfig, data_sha256: str, version: str) -> str:
    """12 hex digits naming a resumable training state: a hash of every training setting, the checksum of the input
    data and the package version, so a state of other settings, other data or another code version is never reused."""
    payload = {"config": asdict(cfg), "data_sha256": str(data_sha256), "version": str(version)}
    return hashlib.sha1(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:12]


def load_checkpoint(path: str | os.PathLike, map_location="cpu") -> dict:
    return torch.load(path, map_location=map_location, weights_only=True)


def model_from_checkpoint(ckpt: dict, which: str = "best_model") -> AttentionPathsTransformer:
    """Rebuild the model of a checkpoint; ``which`` = 'best_model' (selected) or 'model' (last)."""
    if which not in ("best_model", "model"):
        raise ValueError(f"model_from_checkpoint: which must be 'best_model' or 'model', got {which!r}")
    model = AttentionPathsTransformer(**ckpt["hparams"])
    model.load_state_dict(ckpt[which])
    return model


@contextlib.contextmanager
def precision_context(precision: str, device: torch.device):
    """Process-wide matmul settings of a precision for the duration of training: TF32 on for ``tf32`` on a CUDA device
    (restored on exit); nothing otherwise (autocast is applied around each forward, see ``autocast``)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if precision != "tf32" or device.type != "cuda":
        yield
        return
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def autocast(precision: str, device: torch.device):
    """The autocast context of a forward pass: bfloat16 / float16 for ``bf16`` / ``fp16``, disabled otherwise."""
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    return torch.autocast(device_type=device.type, dtype=dtype or torch.float32, enabled=dtype is not None)


def make_optimizer(model: nn.Module, cfg: TrainConfig, device: torch.device) -> torch.optim.Adam:
    """Adam (betas 0.9, 0.999, coupled weight decay); the fused kernel on a CUDA device (no host sync in a scaled
    step), the default implementation elsewhere (the CPU numbers of the original loop)."""
    fused = True if device.type == "cuda" else None
    return torch.optim.Adam(
        model.parameters(), lr=cfg.lr, betas=(0.9, 0.999), weight_decay=cfg.weight_decay, fused=fused
    )


class TrainStep:
    """One Adam step on a batch (x [B, 48, 192], y [B] device tensors) at the configured precision; returns the
    detached loss (0-dim device tensor). Never waits for the device. ``forward``: the (possibly compiled) model."""

    def __init__(self, model: nn.Module, opt: torch.optim.Optimizer, cfg: TrainConfig, device: torch.device):
        self.model, self.opt, self.precision, self.device = model, opt, cfg.precision, device
        self.forward = torch.compile(model) if cfg.compile else model
        self.scaler = torch.amp.GradScaler(device.type, enabled=cfg.precision == "fp16")
        self.loss_fn = nn.MSELoss()

    def __call__(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        self.opt.zero_grad(set_to_none=True)
        with autocast(self.precision, self.device):
            loss = self.loss_fn(self.forward(x).float(), y)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.opt)
        self.scaler.update()
        return loss.detach()


def train(
    cfg: TrainConfig,
    train_sampler: TaskSampler,
    val: TaskSet,
    checkpoint: str | os.PathLike,
    device=None,
    progress: bool = True,
    stop_after: int | None = None,
    reuse_finished: bool = False,
) -> dict:
    """Train (or resume) and return the final checkpoint dict.

    train_sampler: tasks of the training classes; val: the fixed validation set (``TaskSampler.task_set``).
    checkpoint: path of the resumable checkpoint. stop_after: stop (checkpointed) after this many steps of *this call*
    (used to test resumption); the returned dict then has done = False. reuse_finished: return a finished checkpoint
    as it is (default: a finished state is not reused, training starts again from step 0).
    """
    from tqdm import tqdm

    device = torch.device(device or "cpu")
    ckpt_path = Path(checkpoint)
    model = build_model(cfg).to(device)
    opt = make_optimizer(model, cfg, device)
    step_fn = TrainStep(model, opt, cfg, device)
    state = {
        "step": 0,
        "best_val_acc": -1.0,
        "best_step": -1,
        "best_model": None,
        "history": {
            "step": [],
            "loss": [],
            "val_acc": [],
            "val_step": [],
            "wall_s": [],
            "session_steps": [],
            "session_seconds": [],
            "session_batch_seconds": [],
        },
    }
    ck = load_checkpoint(ckpt_path, map_location=device) if ckpt_path.exists() else None
    if ck is not None and ck.get("done") and not reuse_finished:
        print(
            f"[train] {ckpt_path} holds a finished run: not reused (pass reuse_finished to reuse it); training "
            "from step 0",
            flush=True,
        )
        ck = None
    if ck is not None:
        if ck["hparams"] != model.hparams():
            raise ValueError(f"checkpoint {ckpt_path} has model {ck['hparams']}, config asks for {model.hparams()}")
        if ck["config"]["seed"] != cfg.seed or ck["config"]["batch"] != cfg.batch:
            raise ValueError(
                f"checkpoint {ckpt_path} was trained with seed/batch {ck['config']['seed']}/"
                f"{ck['config']['batch']}, config asks for {cfg.seed}/{cfg.batch}"
            )
        ck_gain = float(ck["config"].get("value_init_gain", 1.0))  # states written before the key existed: 1
        if ck_gain != float(cfg.value_init_gain):
            raise ValueError(
                f"checkpoint {ckpt_path} was initialised with value_init_gain {ck_gain}, config asks "
                f"for {cfg.value_init_gain}"
            )
        ck_precision = ck["config"].get("precision", "fp32")
        if ck_precision != cfg.precision:
            raise ValueError(
                f"checkpoint {ckpt_path} was trained with precision {ck_precision}, config asks for {cfg.precision}"
            )
        sched_defaults = (("lr_schedule", "constant"), ("warmup_steps", 0), ("min_lr", 0.0))
        ck_sched = {k: ck["config"].get(k, d) for k, d in sched_defaults}  # states from before the keys: constant
        cfg_sched = {k: getattr(cfg, k) for k in ck_sched}
        if ck_sched != cfg_sched:
            raise ValueError(
                f"checkpoint {ckpt_path} was trained with learning-rate schedule {ck_sched}, config asks for "
                f"{cfg_sched}"
            )
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        if ck.get("scaler"):
            step_fn.scaler.load_state_dict(ck["scaler"])
        state.update(
            step=int(ck["step"]),
            best_val_acc=float(ck["best_val_acc"]),
            best_step=int(ck["best_step"]),
            best_model=ck["best_model"],
            history={k: list(ck["history"].get(k, [])) for k in state["history"]},
        )
        print(
            f"[train] resumed from {ckpt_path} at step {state['step']} (best val acc {state['best_val_acc']:.4f})",
            flush=True,
        )

    total = cfg.total_steps
    tasks = train_sampler.on(device)
    val_tasks = val.to(device)
    xbuf = torch.empty(cfg.batch, val.positions.shape[0], val.positions.shape[1], dtype=torch.float32, device=device)
    pending: list[torch.Tensor] = []  # losses of the steps since the last read, on the device
    pending_from = state["step"]

    def snapshot(done: bool) -> dict:
        return {
            "hparams": model.hparams(),
            "step": state["step"],
            "model": {k: v.detach().cpu().clone() for k, v in model.state_dict().items()},
            "optimizer": opt.state_dict(),
            "scaler": step_fn.scaler.state_dict(),
            "best_model": state["best_model"],
            "best_val_acc": state["best_val_acc"],
            "best_step": state["best_step"],
            "history": state["history"],
            "config": asdict(cfg),
            "done": done,
        }

    def flush_losses():
        """Read the pending losses (one host sync), stop on a non-finite one, append them to the history."""
        nonlocal pending, pending_from
        if not pending:
            return
        values = torch.stack(pending).double().cpu().tolist()
        for i, v in enumerate(values):
            if not math.isfinite(v):
                raise FloatingPointError(
                    f"training loss became {v} at step {pending_from + i}; the checkpoint "
                    f"{ckpt_path} is left as it was before step {pending_from}"
                )
        state["history"]["loss"].extend(values)
        pending, pending_from = [], state["step"]
        bar.set_postfix(loss=f"{values[-1]:.4f}", val_acc=f"{last_val:.4f}", refresh=False)

    def validate():
        with autocast(cfg.precision, device):
            acc = accuracy_tasks(model, val_tasks)
        model.train()
        state["history"]["val_acc"].append(acc)
        state["history"]["val_step"].append(state["step"])
        if acc > state["best_val_acc"]:
            state.update(
                best_val_acc=acc,
                best_step=state["step"],
                best_model={k: v.detach().cpu().clone() for k, v in model.state_dict().items()},
            )
        return acc

    def end_session():
        state["history"]["session_steps"].append(state["step"] - start_step)
        state["history"]["session_seconds"].append(time.time() - t0)
        state["history"]["session_batch_seconds"].append(batch_seconds)

    model.train()
    bar = tqdm(
        total=total,
        initial=state["step"],
        desc="train",
        unit="step",
        disable=not progress,
        mininterval=5.0,
        dynamic_ncols=True,
    )
    start_step, t0, batch_seconds = state["step"], time.time(), 0.0
    last_val = state["history"]["val_acc"][-1] if state["history"]["val_acc"] else float("nan")
    with precision_context(cfg.precision, device):
        while state["step"] < total:
            s = state["step"]
            if s % cfg.val_every == 0 and (not state["history"]["val_step"] or state["history"]["val_step"][-1] != s):
                last_val = validate()
            tb = time.perf_counter()
            xb, yb = tasks.sample(np.random.default_rng([cfg.seed, s]), cfg.batch, out=xbuf)
            batch_seconds += time.perf_counter() - tb
            for group in opt.param_groups:
                group["lr"] = learning_rate(cfg, s)
            pending.append(step_fn(xb, yb))
            state["step"] = s + 1
            state["history"]["step"].append(s)
            state["history"]["wall_s"].append(time.time() - t0)
            bar.update(1)
            if state["step"] % cfg.ckpt_every == 0:
                flush_losses()
                save_checkpoint(snapshot(done=False), ckpt_path)
            if stop_after is not None and state["step"] - start_step >= stop_after and state["step"] < total:
                flush_losses()
                end_session()
                save_checkpoint(snapshot(done=False), ckpt_path)
                bar.close()
                return snapshot(done=False)
        flush_losses()
        if not state["history"]["val_step"] or state["history"]["val_step"][-1] != state["step"]:
            last_val = validate()
    bar.close()
    end_session()
    final = snapshot(done=True)
    save_checkpoint(final, ckpt_path)
    elapsed = time.time() - t0
    n = state["step"] - start_step
    print(
        f"[train] {n} steps in {elapsed:.1f} s ({n / max(elapsed, 1e-9):.2f} steps/s, batches "
        f"{1e3 * batch_seconds / max(n, 1):.2f} ms/step); best val acc {state['best_val_acc']:.4f} at step "
        f"{state['best_step']}",
        flush=True,
    )
    return final
