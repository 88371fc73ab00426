"""Adam training of the GD transformer on one-shot Omniglot tasks (P1 spec §5.3), resumable.

* Loss: mean squared error between the scalar output and y in {-1, +1}; decision = sign of the output.
* Adam (lr 3e-4, betas (0.9, 0.999), coupled weight decay 5e-5), batch of tasks, ``epochs x steps_per_epoch`` steps.
* Initialisation: PyTorch defaults (spec §5.3). ``value_init_gain`` (default 1 = the spec) multiplies the initial value
  weights W_V of every layer; the laptop scale uses sqrt(3) for the L = 3 model only (see ``build_model``).
* Task batch of step ``s`` is drawn with ``numpy.random.default_rng([seed, s])``: the data stream is a pure function of
  the step, so a resumed run sees exactly the batches an uninterrupted run would have seen.
* Validation accuracy every ``val_every`` steps (and at the last step) on a **fixed** validation set (the reference
  resampled it each time); the model with the best validation accuracy is kept.
* A checkpoint (``torch.save`` of plain tensors/dicts, loadable with ``weights_only=True``) is written atomically
  every ``ckpt_every`` steps and at the end; ``train`` resumes from it when it exists.

Checkpoint dict: hparams, step, model (state dict), optimizer (state dict), best_model, best_val_acc, best_step,
history (dict of lists), config (training settings), done (bool).
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from smattn.p1.images.model import AttentionPathsTransformer
from smattn.p1.images.tasks import TaskSampler
from smattn.settings import Settings, scale_params, setting


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

    def __post_init__(self):
        super().__post_init__()
        if self.tasks_per_epoch < self.batch:
            raise ValueError(f"TrainConfig: tasks_per_epoch ({self.tasks_per_epoch}) < batch ({self.batch})")

    @property
    def steps_per_epoch(self) -> int:
        return self.tasks_per_epoch // self.batch  # drop-last

    @property
    def total_steps(self) -> int:
        n = self.epochs * self.steps_per_epoch
        return n if self.max_steps is None else min(n, int(self.max_steps))


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
    )
    kw = {k: p[f"gd_{k}"] for k in keys}
    return TrainConfig(**{"n_layers": n_layers, "n_heads": n_heads, **kw, **overrides})


def build_model(cfg: TrainConfig) -> AttentionPathsTransformer:
    """The initial network: PyTorch default initialisation with seed ``cfg.seed``, then the value weights W_V of
    every layer multiplied by ``cfg.value_init_gain`` (1: unchanged, the spec's initialisation).

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
    device = device or next(model.parameters()).device
    model.eval()
    out = []
    for i in range(0, len(x), batch):
        xb = torch.as_tensor(np.asarray(x[i : i + batch]), dtype=torch.float32, device=device)
        out.append(model(xb).double().cpu().numpy())
    return np.concatenate(out) if out else np.zeros(0)


def accuracy(f: np.ndarray, y: np.ndarray) -> float:
    """Fraction of examples with sign(f) = y (an exact zero output counts as wrong)."""
    f, y = np.asarray(f), np.asarray(y)
    if f.shape != y.shape:
        raise ValueError(f"accuracy: outputs {f.shape} and targets {y.shape} differ in shape")
    return float(np.mean(np.sign(f) == np.sign(y)))


def _save_atomic(obj, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def load_checkpoint(path: str | os.PathLike, map_location="cpu") -> dict:
    return torch.load(path, map_location=map_location, weights_only=True)


def model_from_checkpoint(ckpt: dict, which: str = "best_model") -> AttentionPathsTransformer:
    """Rebuild the model of a checkpoint; ``which`` = 'best_model' (selected) or 'model' (last)."""
    if which not in ("best_model", "model"):
        raise ValueError(f"model_from_checkpoint: which must be 'best_model' or 'model', got {which!r}")
    model = AttentionPathsTransformer(**ckpt["hparams"])
    model.load_state_dict(ckpt[which])
    return model


def train(
    cfg: TrainConfig,
    train_sampler: TaskSampler,
    val_x: np.ndarray,
    val_y: np.ndarray,
    checkpoint: str | os.PathLike,
    device=None,
    progress: bool = True,
    stop_after: int | None = None,
) -> dict:
    """Train (or resume) and return the final checkpoint dict.

    train_sampler: tasks of the training classes; val_x [n_val, 48, 192], val_y [n_val]: the fixed validation set.
    checkpoint: path of the resumable checkpoint. stop_after: stop (checkpointed) after this many steps of *this call*
    (used to test resumption); the returned dict then has done = False.
    """
    from tqdm import tqdm

    device = device or torch.device("cpu")
    ckpt_path = Path(checkpoint)
    model = build_model(cfg).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr, betas=(0.9, 0.999), weight_decay=cfg.weight_decay)
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
        },
    }
    if ckpt_path.exists():
        ck = load_checkpoint(ckpt_path, map_location=device)
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
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
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
    loss_fn = nn.MSELoss()

    def snapshot(done: bool) -> dict:
        return {
            "hparams": model.hparams(),
            "step": state["step"],
            "model": {k: v.detach().cpu().clone() for k, v in model.state_dict().items()},
            "optimizer": opt.state_dict(),
            "best_model": state["best_model"],
            "best_val_acc": state["best_val_acc"],
            "best_step": state["best_step"],
            "history": state["history"],
            "config": asdict(cfg),
            "done": done,
        }

    def validate():
        acc = accuracy(predict(model, val_x, device=device), val_y)
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
    start_step, t0 = state["step"], time.time()
    last_val = state["history"]["val_acc"][-1] if state["history"]["val_acc"] else float("nan")
    while state["step"] < total:
        s = state["step"]
        if s % cfg.val_every == 0 and (not state["history"]["val_step"] or state["history"]["val_step"][-1] != s):
            last_val = validate()
        batch = train_sampler.sample(np.random.default_rng([cfg.seed, s]), cfg.batch)
        xb = torch.as_tensor(batch.x, device=device)
        yb = torch.as_tensor(batch.y, device=device)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(xb), yb)
        if not torch.isfinite(loss):
            raise FloatingPointError(f"training loss became {loss.item()} at step {s}")
        loss.backward()
        opt.step()
        state["step"] = s + 1
        state["history"]["step"].append(s)
        state["history"]["loss"].append(float(loss.item()))
        state["history"]["wall_s"].append(time.time() - t0)
        bar.update(1)
        bar.set_postfix(loss=f"{loss.item():.4f}", val_acc=f"{last_val:.4f}", refresh=False)
        if state["step"] % cfg.ckpt_every == 0:
            _save_atomic(snapshot(done=False), ckpt_path)
        if stop_after is not None and state["step"] - start_step >= stop_after and state["step"] < total:
            state["history"]["session_steps"].append(state["step"] - start_step)
            state["history"]["session_seconds"].append(time.time() - t0)
            _save_atomic(snapshot(done=False), ckpt_path)
            bar.close()
            return snapshot(done=False)
    if not state["history"]["val_step"] or state["history"]["val_step"][-1] != state["step"]:
        last_val = validate()
    bar.close()
    state["history"]["session_steps"].append(state["step"] - start_step)
    state["history"]["session_seconds"].append(time.time() - t0)
    final = snapshot(done=True)
    _save_atomic(final, ckpt_path)
    elapsed = time.time() - t0
    n = state["step"] - start_step
    print(
        f"[train] {n} steps in {elapsed:.1f} s ({n / max(elapsed, 1e-9):.2f} steps/s); best val acc "
        f"{state['best_val_acc']:.4f} at step {state['best_step']}",
        flush=True,
    )
    return final
