"""Adam training of the GD transformer on one-shot Omniglot tasks (docs/p1_images.md#training), resumable.

* Loss: mean squared error between the scalar output and y in {-1, +1}; decision = sign of the output.
* Adam (lr 3e-4, betas (0.9, 0.999), coupled weight decay 5e-5), batch of tasks, ``epochs x steps_per_epoch`` steps.
* Initialisation: PyTorch defaults (docs/p1_images.md#training). ``value_init_gain`` (1 = the paper's) multiplies
  the initial value weights W_V of every layer; config.yaml sets it per depth (``gd_value_init_gain_l2`` /
  ``gd_value_init_gain_l3``; see ``build_model``).
* Task batch of step ``s`` is drawn with ``numpy.random.default_rng([seed, s])``: the data stream is a pure function of
  the step, so a resumed run sees exactly the batches an uninterrupted run would have seen.
* Validation accuracy every ``val_every`` steps (and at the last step) on a **fixed** validation set (the reference
  resampled it each time); the model with the best validation accuracy is kept.
* A checkpoint (``torch.save`` of plain tensors/dicts, loadable with ``weights_only=True``) is written atomically
  by wall time, at the first sync point (every ``sync_every`` steps) after ``ckpt_minutes`` since the last one, and at
  the end; ``train`` resumes from it when it exists and is unfinished (a finished one is reused only when asked:
  ``reuse_finished``). Wall time rather than steps: the same cadence on a CPU (a few steps/s) and a GPU (hundreds),
  so a requeued job loses at most ``ckpt_minutes`` of work and a fast device does not write a checkpoint a second.
  Neither setting changes the result, so neither enters :func:`state_key`.

The loop keeps the device busy: the patch tokens of every training and validation image live on the training device
(``TaskSampler.on``), a step draws its task indices on the host (microseconds), copies them (pinned, non-blocking on a
GPU) and gathers its sequences there into one reused buffer. Nothing inside a step waits for the device: the losses
stay on the device and are read, and checked for finiteness, every ``sync_every`` steps, before a checkpoint is
written (a non-finite loss stops training with ``FloatingPointError``, the last checkpoint left as it was).

Precision (``precision``): ``fp32``; ``tf32`` (TF32 matmuls on a CUDA device; on a CPU identical to fp32); ``bf16``
(autocast to bfloat16); ``fp16`` (autocast to float16 with a gradient scaler, the authors' Lightning
``precision=16``); ``auto`` in the config (:func:`resolve_precision`): ``bf16`` where the device multiplies bfloat16
in hardware, else ``fp32`` (a CPU without bfloat16 instructions emulates them, several times slower than fp32).
``compile``: ``torch.compile`` the training loss (on a CPU its per-chunk function, fused into C++ kernels by
TorchInductor: :func:`smattn.p1.images.path_form.compiled_chunk_squared_error`). On a CUDA device Adam is the fused
kernel, so the gradient scaler's inf check does not wait for the device either.

Checkpoint dict: hparams, step, model (state dict), optimizer (state dict), scaler (gradient scaler state dict),
best_model, best_val_acc, best_step, history (dict of lists), config (training settings), done (bool).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from smattn.device import CPU_NUMERICS
from smattn.io import atomic_path
from smattn.memory import keep_freed_memory
from smattn.p1.images.features import FEATURE_DIM
from smattn.p1.images.model import AttentionPathsTransformer
from smattn.p1.images.path_form import cpp_compiler
from smattn.p1.images.tasks import DeviceTaskSet, TaskSampler, TaskSet, to_device
from smattn.progress import progress as progress_lines
from smattn.settings import Settings, scale_params, setting

PRECISIONS = ("fp32", "tf32", "bf16", "fp16")
#: the config's choices: a precision, or ``auto`` (:func:`resolve_precision`)
PRECISION_SETTINGS = (*PRECISIONS, "auto")
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
    sync_every: int = setting(ge=1)  # steps between reads of the losses (one host sync) and checkpoint opportunities
    ckpt_minutes: float = setting(default=10.0, ge=0)  # wall minutes between checkpoints (0: at every sync point)
    seed: int
    max_steps: int | None = setting(ge=1)  # optional cap on the total steps (None: epochs x steps_per_epoch)
    value_init_gain: float = setting(default=1.0, gt=0)  # factor on the default initial W_V (1 = PyTorch default)
    precision: str = setting(choices=PRECISIONS)  # see the module docstring
    compile: bool  # torch.compile the training forward
    lr_schedule: str = setting(default="constant", choices=LR_SCHEDULES)  # see ``learning_rate``
    warmup_steps: int = setting(default=0, ge=0)  # linear warm-up length of ``warmup_cosine``
    min_lr: float = setting(default=0.0, ge=0)  # learning rate at the last step of ``warmup_cosine``
    cpu_numerics: str = setting(default="native", choices=CPU_NUMERICS)  # smattn.device.pin_cpu_numerics

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
    params = {"gd_n_layers": n_layers, "gd_n_heads": n_heads, **scale_params("p1_images", "paper")}
    return TrainConfig.from_params(params, prefix="gd_", **overrides)


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
    """Model outputs [n] (float32, on the tasks' device) for a task set assembled on its device, as
    ``TokenFeatures``, in chunks of ``batch`` (the same function as ``predict`` on ``TaskSet.x()``, to float
    rounding)."""
    model.eval()
    out = [model(xb).float() for xb, _ in tasks.feature_batches(batch)]
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


#: settings of when to sync and checkpoint: they never change the trained model, so a state is resumed across them
CADENCE_SETTINGS = ("sync_every", "ckpt_minutes")


def state_key(cfg: TrainConfig, data_sha256: str, version: str) -> str:
    """12 hex digits naming a resumable training state: a hash of every training setting, the checksum of the input
    data and the package version, so a state of other settings, other data or another code version is never reused."""
    config = {k: v for k, v in asdict(cfg).items() if k not in CADENCE_SETTINGS}
    payload = {"config": config, "data_sha256": str(data_sha256), "version": str(version)}
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


def native_bf16(device: torch.device) -> bool:
    """Whether ``device`` multiplies bfloat16 matrices in hardware: a CUDA GPU that supports bfloat16
    (``torch.cuda.is_bf16_supported``), or an x86 CPU with AVX512-BF16 or AMX tiles (the instructions oneDNN's bfloat16
    kernels use). False for any other device or CPU (there bfloat16 products are emulated)."""
    if device.type == "cuda":
        return bool(torch.cuda.is_bf16_supported())
    if device.type != "cpu":
        return False
    probes = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(bool(getattr(torch.cpu, name, lambda: False)()) for name in probes)


def resolve_precision(setting: str, device: torch.device) -> str:
    """The training precision of the config value ``setting`` (:data:`PRECISION_SETTINGS`) on ``device``: ``auto`` is
    ``bf16`` where :func:`native_bf16`, else ``fp32``; any other value is itself."""
    if setting not in PRECISION_SETTINGS:
        raise ValueError(f"precision must be one of {PRECISION_SETTINGS}, got {setting!r}")
    if setting != "auto":
        return setting
    return "bf16" if native_bf16(device) else "fp32"


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
    """One Adam step on a batch (x: sequences [B, 48, 192] or their TokenFeatures; y [B]; device tensors) at the
    configured precision; returns the detached loss (0-dim device tensor). Never waits for the device. ``loss``: the
    model's ``squared_error``, compiled when ``cfg.compile``."""

    def __init__(self, model: nn.Module, opt: torch.optim.Optimizer, cfg: TrainConfig, device: torch.device):
        self.model, self.opt, self.precision, self.device = model, opt, cfg.precision, device
        # the squared error of the path form (AttentionPathsTransformer.squared_error)
        if cfg.compile and device.type == "cpu":  # the CPU's chunked loss compiles its chunk function
            cpp_compiler()  # before the first step: no compiler, a clear error
            self.loss = functools.partial(model.squared_error, compiled=True)
        else:
            self.loss = torch.compile(model.squared_error) if cfg.compile else model.squared_error
        self.scaler = torch.amp.GradScaler(device.type, enabled=cfg.precision == "fp16")

    def __call__(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        self.opt.zero_grad(set_to_none=True)
        with autocast(self.precision, self.device):
            loss = self.loss(x, y)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.opt)
        self.scaler.update()
        return loss.detach()


HISTORY_KEYS = (
    "step",
    "loss",
    "val_acc",
    "val_step",
    "wall_s",
    "session_steps",
    "session_seconds",
    "session_batch_seconds",
)


@dataclass
class TrainState:
    """Progress of a training run besides the model, optimiser and scaler states: the next step, the best
    validation accuracy so far (its step and its model's state dict, on the host) and the history lists
    (``HISTORY_KEYS``)."""

    step: int = 0
    best_val_acc: float = -1.0
    best_step: int = -1
    best_model: dict | None = None
    history: dict = field(default_factory=lambda: {k: [] for k in HISTORY_KEYS})

    @classmethod
    def from_checkpoint(cls, ck: dict) -> TrainState:
        return cls(
            step=int(ck["step"]),
            best_val_acc=float(ck["best_val_acc"]),
            best_step=int(ck["best_step"]),
            best_model=ck["best_model"],
            history={k: list(ck["history"].get(k, [])) for k in HISTORY_KEYS},
        )


def check_compatible(ck: dict, cfg: TrainConfig, hparams: dict, path) -> None:
    """Raise ValueError (naming the setting) when the checkpoint ``ck`` read from ``path`` was trained with another
    model, seed, batch, value-init gain, precision or learning-rate schedule than ``cfg`` / ``hparams`` ask for.
    States written before a setting existed carry its default (gain 1, fp32, constant schedule)."""
    if ck["hparams"] != hparams:
        raise ValueError(f"checkpoint {path} has model {ck['hparams']}, config asks for {hparams}")
    old = ck["config"]
    if old["seed"] != cfg.seed or old["batch"] != cfg.batch:
        raise ValueError(
            f"checkpoint {path} was trained with seed/batch {old['seed']}/{old['batch']}, config asks for "
            f"{cfg.seed}/{cfg.batch}"
        )
    ck_gain = float(old.get("value_init_gain", 1.0))
    if ck_gain != float(cfg.value_init_gain):
        raise ValueError(
            f"checkpoint {path} was initialised with value_init_gain {ck_gain}, config asks for {cfg.value_init_gain}"
        )
    ck_precision = old.get("precision", "fp32")
    if ck_precision != cfg.precision:
        raise ValueError(
            f"checkpoint {path} was trained with precision {ck_precision}, config asks for {cfg.precision}"
        )
    defaults = (("lr_schedule", "constant"), ("warmup_steps", 0), ("min_lr", 0.0))
    ck_sched = {k: old.get(k, d) for k, d in defaults}
    cfg_sched = {k: getattr(cfg, k) for k in ck_sched}
    if ck_sched != cfg_sched:
        raise ValueError(
            f"checkpoint {path} was trained with learning-rate schedule {ck_sched}, config asks for {cfg_sched}"
        )


def resume(
    path: Path, cfg: TrainConfig, model: nn.Module, step_fn: TrainStep, device, reuse_finished: bool
) -> TrainState:
    """The state to continue from: a fresh one when ``path`` does not exist (or holds a finished run and
    ``reuse_finished`` is false); otherwise the checkpoint's, after :func:`check_compatible`, with its model,
    optimiser and gradient-scaler states loaded into ``model`` / ``step_fn``."""
    ck = load_checkpoint(path, map_location=device) if path.exists() else None
    if ck is not None and ck.get("done") and not reuse_finished:
        print(
            f"[train] {path} holds a finished run: not reused (pass reuse_finished to reuse it); training from step 0",
            flush=True,
        )
        ck = None
    if ck is None:
        return TrainState()
    check_compatible(ck, cfg, model.hparams(), path)
    model.load_state_dict(ck["model"])
    step_fn.opt.load_state_dict(ck["optimizer"])
    if ck.get("scaler"):
        step_fn.scaler.load_state_dict(ck["scaler"])
    state = TrainState.from_checkpoint(ck)
    print(f"[train] resumed from {path} at step {state.step} (best val acc {state.best_val_acc:.4f})", flush=True)
    return state


def host_state_dict(model: nn.Module) -> dict:
    """A copy of the model's state dict on the host (kept as the best model, written in checkpoints)."""
    return {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}


def snapshot(model: nn.Module, step_fn: TrainStep, state: TrainState, cfg: TrainConfig, done: bool) -> dict:
    """The checkpoint dict (module docstring) of the current model, optimiser, scaler and ``state``."""
    return {
        "hparams": model.hparams(),
        "step": state.step,
        "model": host_state_dict(model),
        "optimizer": step_fn.opt.state_dict(),
        "scaler": step_fn.scaler.state_dict(),
        "best_model": state.best_model,
        "best_val_acc": state.best_val_acc,
        "best_step": state.best_step,
        "history": state.history,
        "config": asdict(cfg),
        "done": done,
    }


class LossBuffer:
    """Losses of the steps since the last read, kept on the device; :meth:`flush` reads them with one host sync,
    raises FloatingPointError at the first non-finite one (naming its step and the untouched checkpoint) and
    appends them to the history."""

    def __init__(self, first_step: int, checkpoint):
        self.pending: list[torch.Tensor] = []
        self.first_step = first_step
        self.checkpoint = checkpoint

    def add(self, loss: torch.Tensor) -> None:
        self.pending.append(loss)

    def flush(self, state: TrainState) -> float | None:
        """Append the pending losses to ``state.history['loss']``; returns the last one (None if none pending)."""
        if not self.pending:
            return None
        values = torch.stack(self.pending).double().cpu().tolist()
        for i, v in enumerate(values):
            if not math.isfinite(v):
                raise FloatingPointError(
                    f"training loss became {v} at step {self.first_step + i}; the checkpoint {self.checkpoint} is "
                    f"left as it was before step {self.first_step}"
                )
        state.history["loss"].extend(values)
        self.pending, self.first_step = [], state.step
        return values[-1]


def validate(model: nn.Module, val_tasks: DeviceTaskSet, cfg: TrainConfig, device, state: TrainState) -> float:
    """Validation accuracy of the current model at ``state.step``, recorded in the history; keeps the model as the
    best one when it improves on the best so far (strictly). Leaves the model in training mode."""
    with autocast(cfg.precision, device):
        acc = accuracy_tasks(model, val_tasks)
    model.train()
    state.history["val_acc"].append(acc)
    state.history["val_step"].append(state.step)
    if acc > state.best_val_acc:
        state.best_val_acc, state.best_step, state.best_model = acc, state.step, host_state_dict(model)
    return acc


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
    checkpoint: path of the resumable checkpoint (:func:`resume`). stop_after: stop (checkpointed) after this many
    steps of *this call* (used to test resumption); the returned dict then has done = False. reuse_finished: return a
    finished checkpoint as it is (default: a finished state is not reused, training starts again from step 0).
    progress: progress lines through ``smattn.progress``.
    """
    device = torch.device(device or "cpu")
    if device.type == "cpu":
        keep_freed_memory()
    ckpt_path = Path(checkpoint)
    model = build_model(cfg).to(device)
    step_fn = TrainStep(model, make_optimizer(model, cfg, device), cfg, device)
    state = resume(ckpt_path, cfg, model, step_fn, device, reuse_finished)

    total = cfg.total_steps
    tasks = train_sampler.on(device)
    val_tasks = val.to(device)
    xbuf = torch.empty(cfg.batch, val.positions.shape[0], FEATURE_DIM, dtype=torch.float32, device=device)
    losses = LossBuffer(state.step, ckpt_path)
    h = state.history
    last_val = h["val_acc"][-1] if h["val_acc"] else float("nan")
    start_step, t0, batch_seconds = state.step, time.time(), 0.0
    last_ckpt = time.monotonic()

    def read_losses():
        last = losses.flush(state)
        if last is not None:
            bar.set_postfix(loss=f"{last:.4f}", val_acc=f"{last_val:.4f}", refresh=False)

    def end_session(done: bool) -> dict:
        h["session_steps"].append(state.step - start_step)
        h["session_seconds"].append(time.time() - t0)
        h["session_batch_seconds"].append(batch_seconds)
        bar.close()
        ck = snapshot(model, step_fn, state, cfg, done)
        save_checkpoint(ck, ckpt_path)
        return ck

    def validated_here() -> bool:
        return bool(h["val_step"]) and h["val_step"][-1] == state.step

    model.train()
    bar = progress_lines(total=total, initial=state.step, desc="train", unit="step", disable=not progress)
    with precision_context(cfg.precision, device):
        while state.step < total:
            s = state.step
            if s % cfg.val_every == 0 and not validated_here():
                last_val = validate(model, val_tasks, cfg, device, state)
            tb = time.perf_counter()
            xb, yb = tasks.sample_features(np.random.default_rng([cfg.seed, s]), cfg.batch, out=xbuf)
            batch_seconds += time.perf_counter() - tb
            for group in step_fn.opt.param_groups:
                group["lr"] = learning_rate(cfg, s)
            losses.add(step_fn(xb, yb))
            state.step = s + 1
            h["step"].append(s)
            h["wall_s"].append(time.time() - t0)
            bar.update(1)
            if state.step % cfg.sync_every == 0:
                read_losses()
                if time.monotonic() - last_ckpt >= 60.0 * cfg.ckpt_minutes:
                    save_checkpoint(snapshot(model, step_fn, state, cfg, done=False), ckpt_path)
                    last_ckpt = time.monotonic()
            if stop_after is not None and state.step - start_step >= stop_after and state.step < total:
                read_losses()
                return end_session(done=False)
        read_losses()
        if not validated_here():
            last_val = validate(model, val_tasks, cfg, device, state)
    final = end_session(done=True)
    elapsed, n = time.time() - t0, state.step - start_step
    print(
        f"[train] {n} steps in {elapsed:.1f} s ({n / max(elapsed, 1e-9):.2f} steps/s, batches "
        f"{1e3 * batch_seconds / max(n, 1):.2f} ms/step); best val acc {state.best_val_acc:.4f} at step "
        f"{state.best_step}",
        flush=True,
    )
    return final
