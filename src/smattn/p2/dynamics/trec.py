"""Training the tied-attention classifier on TREC and recording layer-wise learning (P2 Fig. 3 right; spec §7).

Pipeline of one repetition (the authors' procedure, spec §7, with seeds added):
  * random 80/20 split of the 5,452 training questions (validation size ``ceil(0.2 n)``: 4,361 / 1,091), a new
    split per repetition;
  * WordPiece ids with [CLS]/[SEP], truncated to ``max_length`` = 32;
  * padding as the authors' ``datasets.map(batched=True)`` did it: the examples of each split are taken in
    chunks of ``map_chunk`` (1000) consecutive examples and every example is padded to the longest of its chunk;
    a mini-batch is then padded again to its longest example (``map_chunk = 0`` pads per batch only);
  * AdamW (eps 1e-6, weight decay 0, betas (0.9, 0.999)), cross-entropy averaged over the batch, batch 16,
    reshuffled every epoch (the last batch is smaller), validation accuracy after every epoch;
  * after every optimiser step the Gram matrices ``W_l W_l^T`` (64 x 64) of both attention layers are recorded
    on disk; afterwards the similarity ``S_l(t)`` to the last step is computed in a streaming pass
    (:mod:`smattn.p2.dynamics.similarity`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from smattn.settings import Settings, scale_params, setting

from .similarity import GramRecorder

__all__ = [
    "TRECConfig",
    "paper_trec_config",
    "encode_questions",
    "split_indices",
    "chunk_padded_lengths",
    "collate",
    "train_trec_run",
    "steps_per_epoch",
]


@dataclass(frozen=True, kw_only=True)
class TRECConfig(Settings):
    """Parameters of the TREC experiment; the workflow's values are the ``trec_*`` keys of config.yaml
    (:func:`paper_trec_config` builds the paper scale). Fields without a config key keep the authors' values here."""

    epochs: int = setting(ge=1)
    repetitions: int = setting(ge=1)
    batch_size: int = setting(ge=1)
    lr: float = setting(gt=0)
    use_attention_mask: bool
    map_chunk: int = setting(ge=0)
    max_questions: int = setting(ge=0)  # 0: all questions; otherwise a seeded random subset (smoke runs)
    max_length: int = setting(ge=3)  # at least [CLS] w [SEP]
    seed: int = setting(ge=0)
    eps: float = setting(default=1e-6, gt=0)
    weight_decay: float = setting(default=0.0, ge=0)
    beta1: float = setting(default=0.9, ge=0, lt=1)
    beta2: float = setting(default=0.999, ge=0, lt=1)
    val_fraction: float = setting(default=0.2, gt=0, lt=1)
    embed_dim: int = setting(default=128, ge=1)
    hidden_dim: int = setting(default=64, ge=1)
    attn_init_std: float = setting(default=0.1, gt=0)


def paper_trec_config(**overrides) -> TRECConfig:
    """TRECConfig with the paper-scale ``trec_*`` values of config.yaml, then ``overrides`` (field names)."""
    p = scale_params("p2_dynamics", "paper")
    names = {"attention_mask": "use_attention_mask"}
    kw = {names.get(k[5:], k[5:]): v for k, v in p.items() if k.startswith("trec_")}
    return TRECConfig(**{**kw, **overrides})


def encode_questions(questions: Sequence, tokenizer) -> tuple[list[list[int]], np.ndarray]:
    """WordPiece ids (with [CLS]/[SEP], truncated by the tokenizer) and coarse label indices (n,) of questions.

    ``questions``: objects with ``.text`` and ``.coarse_index`` (:func:`smattn.data.trec.load_trec`).
    """
    if len(questions) == 0:
        raise ValueError("encode_questions: no questions given")
    enc = tokenizer.encode_batch([q.text for q in questions])
    ids = [list(e.ids) for e in enc]
    labels = np.array([q.coarse_index for q in questions], dtype=np.int64)
    return ids, labels


def split_indices(n: int, val_fraction: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Random split of ``range(n)``: (train, validation), validation size ``ceil(val_fraction * n)``; both shuffled."""
    n_val = int(math.ceil(val_fraction * n))
    if not 0 < n_val < n:
        raise ValueError(f"split_indices: {n} examples cannot be split with val_fraction={val_fraction}")
    perm = rng.permutation(n)
    return perm[: n - n_val], perm[n - n_val :]


def chunk_padded_lengths(lengths: Sequence[int], chunk: int) -> np.ndarray:
    """Length of every example after padding each block of ``chunk`` consecutive examples to its longest.

    ``chunk = 0`` returns the lengths unchanged (padding per batch only).
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    if chunk == 0:
        return lengths.copy()
    out = np.empty_like(lengths)
    for a in range(0, len(lengths), chunk):
        out[a : a + chunk] = lengths[a : a + chunk].max()
    return out


def collate(ids: Sequence[Sequence[int]], padded_lengths: Sequence[int], pad_id: int = 0):
    """Batch of id lists -> (input_ids, attention_mask), both int64 (B, N) with N = max padded length.

    attention_mask is 1 on real tokens and 0 on padding (chunk padding included), as produced by the tokenizer.
    """
    import torch

    N = int(max(padded_lengths))
    B = len(ids)
    input_ids = torch.full((B, N), pad_id, dtype=torch.int64)
    mask = torch.zeros((B, N), dtype=torch.int64)
    for i, seq in enumerate(ids):
        input_ids[i, : len(seq)] = torch.as_tensor(seq, dtype=torch.int64)
        mask[i, : len(seq)] = 1
    return input_ids, mask


def steps_per_epoch(n_questions: int, cfg: TRECConfig) -> int:
    n_val = int(math.ceil(cfg.val_fraction * n_questions))
    return -(-(n_questions - n_val) // cfg.batch_size)


def _batches(order: np.ndarray, batch_size: int):
    for a in range(0, len(order), batch_size):
        yield order[a : a + batch_size]


def _adamw(params, cfg: TRECConfig):
    """torch AdamW with the configured hyper-parameters; the fused kernel (same update rule, ~7x faster on a CPU
    for the dense 30522 x 128 embedding) when this torch build offers it."""
    import torch

    params = list(params)
    kw = dict(lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), eps=cfg.eps, weight_decay=cfg.weight_decay)
    try:
        return torch.optim.AdamW(params, fused=True, **kw)
    except (RuntimeError, TypeError, ValueError):  # pragma: no cover - builds without the fused kernel
        return torch.optim.AdamW(params, **kw)


def train_trec_run(
    ids: Sequence[Sequence[int]],
    labels: np.ndarray,
    cfg: TRECConfig,
    rep: int,
    workdir: str | Path,
    device=None,
    vocab_size: int = 30522,
    progress: Callable[[str], None] | None = print,
) -> dict:
    """One repetition: split, train, record; returns the similarity trajectories and the training record.

    ids: n id lists, labels (n,) in [0, n_classes). Returns a dict with ``similarity`` (n_layers, steps) float64,
    ``val_accuracy`` (epochs,), ``train_loss`` (steps,), ``steps_per_epoch``, ``wall_s``, ``n_train``, ``n_val``.
    The Gram trajectory file lives in ``workdir`` only while the run lasts.
    """
    import torch

    from .trec_model import TiedAttentionClassifier

    if len(ids) != len(labels):
        raise ValueError(f"train_trec_run: {len(ids)} id lists but {len(labels)} labels")
    labels = np.asarray(labels, dtype=np.int64)
    n_classes = int(labels.max()) + 1
    device = device or torch.device("cpu")
    rng = np.random.default_rng([int(cfg.seed), int(rep)])
    idx = np.arange(len(ids))
    if cfg.max_questions and cfg.max_questions < len(ids):
        idx = np.sort(rng.choice(len(ids), cfg.max_questions, replace=False))
    tr_local, va_local = split_indices(len(idx), cfg.val_fraction, rng)
    tr, va = idx[tr_local], idx[va_local]
    tr_len = chunk_padded_lengths([len(ids[i]) for i in tr], cfg.map_chunk)
    va_len = chunk_padded_lengths([len(ids[i]) for i in va], cfg.map_chunk)
    pad_of = dict(zip(tr.tolist(), tr_len.tolist()))
    pad_of.update(zip(va.tolist(), va_len.tolist()))

    gen = torch.Generator().manual_seed(int(rng.integers(2**62)))
    model = TiedAttentionClassifier(
        vocab_size=vocab_size,
        embed_dim=cfg.embed_dim,
        hidden_dim=cfg.hidden_dim,
        n_classes=n_classes,
        attn_init_std=cfg.attn_init_std,
        use_attention_mask=cfg.use_attention_mask,
        generator=gen,
    ).to(device)
    opt = _adamw(model.parameters(), cfg)
    loss_fn = torch.nn.CrossEntropyLoss()
    spe = -(-len(tr) // cfg.batch_size)
    n_steps = spe * cfg.epochs
    n_layers = len(model.attention)
    train_loss = np.empty(n_steps)
    val_acc = np.empty(cfg.epochs)
    t0 = time.perf_counter()
    path = Path(workdir) / f"grams_rep{rep}_{int(time.time() * 1e6)}.npy"
    with GramRecorder(path, n_steps, n_layers, cfg.hidden_dim) as rec:
        step = 0
        for epoch in range(cfg.epochs):
            model.train()
            order = tr[rng.permutation(len(tr))]
            for b in _batches(order, cfg.batch_size):
                x, m = collate([ids[i] for i in b], [pad_of[i] for i in b])
                y = torch.as_tensor(labels[b])
                x, m, y = x.to(device), m.to(device), y.to(device)
                opt.zero_grad(set_to_none=True)
                loss = loss_fn(model(x, m), y)
                loss.backward()
                opt.step()
                with torch.no_grad():
                    Ws = torch.stack([w.detach() for w in model.attention_weights()])  # (L, h, k)
                    G = (Ws @ Ws.transpose(1, 2)).cpu().numpy()
                rec.record(step, G)
                train_loss[step] = float(loss.detach())
                step += 1
            model.eval()
            correct = 0
            with torch.no_grad():
                for b in _batches(va, cfg.batch_size):
                    x, m = collate([ids[i] for i in b], [pad_of[i] for i in b])
                    pred = model(x.to(device), m.to(device)).argmax(-1).cpu().numpy()
                    correct += int((pred == labels[b]).sum())
            val_acc[epoch] = correct / len(va)
            if not np.isfinite(train_loss[step - spe : step]).all():
                raise FloatingPointError(f"TREC run {rep}: non-finite training loss in epoch {epoch + 1}")
            if progress is not None:
                progress(
                    f"[trec] rep {rep} epoch {epoch + 1}/{cfg.epochs}  loss {train_loss[step - spe : step].mean():.4f}"
                    f"  val acc {val_acc[epoch]:.4f}  {time.perf_counter() - t0:.1f} s"
                )
        wall = time.perf_counter() - t0
        sim = rec.similarity_to_final()
    return {
        "similarity": sim,
        "val_accuracy": val_acc,
        "train_loss": train_loss,
        "steps_per_epoch": spe,
        "wall_s": wall,
        "n_train": len(tr),
        "n_val": len(va),
        "n_steps": n_steps,
    }
