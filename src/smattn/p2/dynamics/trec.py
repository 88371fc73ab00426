"""Training the tied-attention classifier on TREC and recording layer-wise learning (P2 Fig. 3 right;
docs/p2_dynamics.md#trec-transformer).

Pipeline of one repetition (the authors' procedure, with seeds added):
  * random 80/20 split of the 5,452 training questions (validation size ``ceil(0.2 n)``: 4,361 / 1,091), a new
    split per repetition;
  * WordPiece ids with [CLS]/[SEP], truncated to ``max_length`` = 32;
  * padding as the authors' ``datasets.map(batched=True)`` did it: the examples of each split are taken in
    chunks of ``map_chunk`` (1000) consecutive examples and every example is padded to the longest of its chunk;
    a mini-batch is then padded again to its longest example (``map_chunk = 0`` pads per batch only);
  * attention weights drawn N(0, attn_init_std^2) (config ``trec_attn_init_std``);
  * AdamW (eps 1e-6, weight decay 0, betas (0.9, 0.999)) in one of two variants (config ``trec_optimizer``: torch's
    rule or the ``transformers`` one the authors imported, :mod:`smattn.p2.dynamics.optim`), cross-entropy averaged
    over the batch, batch 16, reshuffled every epoch (the last batch is smaller), validation accuracy after every
    epoch;
  * after every optimiser step the Gram matrices ``W_l W_l^T`` (64 x 64) of both attention layers are recorded
    on disk; afterwards the similarity ``S_l(t)`` to the last step is computed in a streaming pass
    (:mod:`smattn.p2.dynamics.similarity`).
"""

from __future__ import annotations

import contextlib
import math
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from smattn.progress import progress as progress_bar
from smattn.settings import Settings, scale_params, setting

from .optim import OPTIMIZERS, make_stepper
from .similarity import GramRecorder

__all__ = [
    "TRECConfig",
    "paper_trec_config",
    "trec_config",
    "encode_questions",
    "split_indices",
    "chunk_padded_lengths",
    "collate",
    "train_trec_run",
    "steps_per_epoch",
    "flushed_denormals",
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
    attn_init_std: float = setting(gt=0)
    optimizer: str = setting(choices=OPTIMIZERS)
    eps: float = setting(default=1e-6, gt=0)
    weight_decay: float = setting(default=0.0, ge=0)
    beta1: float = setting(default=0.9, ge=0, lt=1)
    beta2: float = setting(default=0.999, ge=0, lt=1)
    val_fraction: float = setting(default=0.2, gt=0, lt=1)
    embed_dim: int = setting(default=128, ge=1)
    hidden_dim: int = setting(default=64, ge=1)


SWEEP_PREFIX = "trec_sweep_"  # config keys of the sequential-learning sweep, not fields of one run


def trec_config(params, **overrides) -> TRECConfig:
    """TRECConfig from the ``trec_*`` keys of a p2_dynamics parameter mapping (config.yaml names; the sweep's
    ``trec_sweep_*`` keys are skipped, other keys ignored), then ``overrides`` (field names)."""
    names = {"attention_mask": "use_attention_mask"}
    kw = {
        names.get(k[5:], k[5:]): v
        for k, v in dict(params).items()
        if k.startswith("trec_") and not k.startswith(SWEEP_PREFIX)
    }
    return TRECConfig(**{**kw, **overrides})


def paper_trec_config(**overrides) -> TRECConfig:
    """TRECConfig with the paper-scale ``trec_*`` values of config.yaml, then ``overrides`` (field names)."""
    return trec_config(scale_params("p2_dynamics", "paper"), **overrides)


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


@contextlib.contextmanager
def sigterm_raises():
    """While active (main thread only), SIGTERM raises ``SystemExit(143)`` instead of killing the process at once,
    so that ``finally`` blocks and context managers (the Gram file's removal) run; the previous handler is restored
    on exit. SIGKILL cannot be caught: a file may then stay behind (it carries ``grams_`` in its name)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _raise(signum, frame):
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, _raise)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _padded_tables(ids: Sequence[Sequence[int]], padded_lengths: np.ndarray, pad_id: int = 0):
    """All examples as one (n, max padded length) id table padded with ``pad_id`` and its 0/1 attention mask.

    Rows ``b`` cut to the longest padded length among them equal :func:`collate` of those examples."""
    import torch

    lengths = np.fromiter((len(s) for s in ids), np.int64, len(ids))
    width = int(max(padded_lengths.max(), lengths.max()))
    table = np.full((len(ids), width), pad_id, np.int64)
    for i, seq in enumerate(ids):
        table[i, : len(seq)] = seq
    mask = (np.arange(width)[None, :] < lengths[:, None]).astype(np.int64)
    return torch.from_numpy(table), torch.from_numpy(mask)


@contextlib.contextmanager
def flushed_denormals(enabled: bool = True):
    """While active (and ``enabled``), the CPU flushes subnormal floats to zero (``torch.set_flush_denormal``: FTZ
    and DAZ on the calling thread); afterwards the default (off) is restored.

    The training loop runs its optimiser steps so. There the only subnormals of a TREC run are AdamW's first moments
    of embedding rows whose token has not been in a batch for some 800 steps (they decay by beta1 = 0.9 a step; the
    second moments, by 0.999, stay normal): arithmetic on them takes a slow path on x86 CPUs (torch's fused AdamW
    kernel took twice as long on a table of subnormal moments as on normal ones). Their contributions (an update of
    the parameter of about 1e-44, a term below 1e-38 added to a new moment of about 0.1 times a gradient) are below
    the rounding of the numbers they enter, so flushing them leaves the parameters, losses and similarities unchanged
    to the bit (compared on whole paper-scale runs by studies/p2_trec_speed.py --steps 10920)."""
    import torch

    if not enabled:
        yield
        return
    torch.set_flush_denormal(True)
    try:
        yield
    finally:
        torch.set_flush_denormal(False)


class _RowGradient:
    """The embedding lookup of the training loop, with the embedding's gradient kept in one dense table.

    ``lookup(ids)`` returns the batch's embedded tokens as a leaf (B, N, k); after the backward pass
    ``accumulate(x)`` zeroes the rows the previous step wrote and adds the leaf's gradient row by row, in token
    order: what autograd's embedding backward computes into a freshly allocated zero table every step (the same
    additions in the same order, hence the same gradient to the bit), without filling the whole table."""

    def __init__(self, weight, row_of):
        import torch

        self.weight, self.row_of = weight, row_of
        self.grad = torch.zeros_like(weight)
        self.rows = self.written = None

    def lookup(self, ids):
        self.rows = self.row_of[ids].reshape(-1)
        return self.weight.detach().index_select(0, self.rows).view(*ids.shape, -1).requires_grad_()

    def accumulate(self, x) -> None:
        if self.written is not None:
            self.grad.index_fill_(0, self.written, 0.0)
        self.grad.index_add_(0, self.rows, x.grad.reshape(-1, x.shape[-1]))
        self.written = self.rows
        self.weight.grad = self.grad


def train_trec_run(
    ids: Sequence[Sequence[int]],
    labels: np.ndarray,
    cfg: TRECConfig,
    rep: int,
    workdir: str | Path,
    device=None,
    vocab_size: int = 30522,
    progress: Callable[[str], None] | None = print,
    show_bar: bool = True,
    reference_steps: Sequence[int] = (),
    max_steps: int | None = None,
    compact_embedding: bool = True,
    record_block: int = 256,
    evaluate: bool = True,
    flush_denormals: bool = True,
) -> dict:
    """One repetition: split, train, record; returns the similarity trajectories and the training record.

    ``progress`` receives one line per epoch; ``show_bar`` adds a :func:`smattn.progress.progress` bar over the
    optimiser steps (whole lines on stderr). ``reference_steps``: 0-based steps ``r`` at which the similarity is
    also computed against ``W_l(r) W_l(r)^T`` instead of the last step (returned as ``similarity_to`` {r: (n_layers,
    steps)}); the sweep benchmark uses them to check short probes against full runs. ``max_steps`` stops training
    after that many optimiser steps (short probes; epochs not completed have a NaN validation accuracy).
    ``compact_embedding``: embed only the ids that occur in ``ids`` (and the padding id 0); the same trajectory
    as the full table (see :mod:`.trec_model`), about twice as fast on a CPU. ``evaluate=False`` skips the
    validation pass after every epoch (``val_accuracy`` all NaN; the training is the same: the pass draws nothing).
    ``flush_denormals``: the optimiser steps run with subnormal floats flushed to zero on a CPU
    (:func:`flushed_denormals`); the forward and backward passes do not.

    The step loop does not wait for the device: the packed Gram matrices and losses of ``record_block`` steps are
    kept on the device and copied to the host once per block (and at the end of every epoch); the data of the run
    are on the device from the start, and the batches are cut there.

    ids: n id lists, labels (n,) in [0, n_classes). Returns a dict with ``similarity`` (n_layers, steps) float64,
    ``val_accuracy`` (epochs,), ``train_loss`` (steps,), ``steps_per_epoch``, ``wall_s``, ``n_train``, ``n_val``.
    The Gram trajectory file lives in ``workdir`` only while the run lasts; it is removed when the run ends,
    raises, or receives SIGTERM (:func:`sigterm_raises`).
    """
    import torch

    from .trec_model import TiedAttentionClassifier

    if len(ids) != len(labels):
        raise ValueError(f"train_trec_run: {len(ids)} id lists but {len(labels)} labels")
    if record_block < 1:
        raise ValueError(f"train_trec_run: record_block must be >= 1, got {record_block}")
    labels = np.asarray(labels, dtype=np.int64)
    n_classes = int(labels.max()) + 1
    device = torch.device(device) if device is not None else torch.device("cpu")
    rng = np.random.default_rng([int(cfg.seed), int(rep)])
    idx = np.arange(len(ids))
    if cfg.max_questions and cfg.max_questions < len(ids):
        idx = np.sort(rng.choice(len(ids), cfg.max_questions, replace=False))
    tr_local, va_local = split_indices(len(idx), cfg.val_fraction, rng)
    tr, va = idx[tr_local], idx[va_local]
    padlen = np.zeros(len(ids), np.int64)  # padded length of every example used (chunk padding, per split)
    padlen[tr] = chunk_padded_lengths([len(ids[i]) for i in tr], cfg.map_chunk)
    padlen[va] = chunk_padded_lengths([len(ids[i]) for i in va], cfg.map_chunk)
    table, mask_table = _padded_tables(ids, padlen)
    table, mask_table = table.to(device), mask_table.to(device)
    labels_dev = torch.as_tensor(labels).to(device)

    kept = None
    if compact_embedding:
        kept = np.union1d(np.unique(np.concatenate([np.asarray(s, np.int64) for s in ids])), [0])
    gen = torch.Generator().manual_seed(int(rng.integers(2**62)))
    model = TiedAttentionClassifier(
        vocab_size=vocab_size,
        embed_dim=cfg.embed_dim,
        hidden_dim=cfg.hidden_dim,
        n_classes=n_classes,
        attn_init_std=cfg.attn_init_std,
        use_attention_mask=cfg.use_attention_mask,
        generator=gen,
        kept_ids=kept,
    ).to(device)
    opt = make_stepper(
        model.parameters(),
        cfg.optimizer,
        lr=cfg.lr,
        betas=(cfg.beta1, cfg.beta2),
        eps=cfg.eps,
        weight_decay=cfg.weight_decay,
    )
    loss_fn = torch.nn.CrossEntropyLoss()
    embed = _RowGradient(model.embedding.weight, model.row_of)
    spe = -(-len(tr) // cfg.batch_size)
    n_steps = spe * cfg.epochs if max_steps is None else min(spe * cfg.epochs, int(max_steps))
    if n_steps < 1:
        raise ValueError(f"train_trec_run: max_steps={max_steps} leaves no step to train")
    n_layers, h = len(model.attention), cfg.hidden_dim
    iu = torch.triu_indices(h, h, device=device)
    g_buf = torch.empty((record_block, n_layers, h, h), dtype=torch.float32, device=device)  # packed at a flush
    l_buf = torch.empty(record_block, dtype=torch.float32, device=device)
    train_loss = np.empty(n_steps)
    val_acc = np.full(cfg.epochs, np.nan)
    va_dev = torch.as_tensor(va).to(device)
    t0 = time.perf_counter()
    path = Path(workdir) / f"grams_rep{rep}_{int(time.time() * 1e6)}.npy"
    bar = progress_bar(total=n_steps, desc=f"TREC rep {rep}", unit="step", disable=not show_bar)

    def batch(rows_dev, rows_host):
        width = int(padlen[rows_host].max())
        mask = mask_table[rows_dev, :width] if cfg.use_attention_mask else None  # unused otherwise
        return table[rows_dev, :width], mask, labels_dev[rows_dev]

    ftz = device.type == "cpu" and flush_denormals
    with sigterm_raises(), GramRecorder(path, n_steps, n_layers, h) as rec, bar:
        step, held = 0, 0  # steps done; steps held in the device buffers

        def flush():
            nonlocal held
            if held:
                a = step - held
                rec.record_packed(a, g_buf[:held, :, iu[0], iu[1]].cpu().numpy())
                train_loss[a:step] = l_buf[:held].cpu().numpy()
                held = 0

        for epoch in range(cfg.epochs):
            model.train()
            order = tr[rng.permutation(len(tr))]
            order_dev = torch.as_tensor(order).to(device)
            for a in range(0, len(order), cfg.batch_size):
                if step == n_steps:
                    break
                x, m, y = batch(order_dev[a : a + cfg.batch_size], order[a : a + cfg.batch_size])
                opt.zero_grad()
                e = embed.lookup(x)
                loss = loss_fn(model.forward_embedded(e, x, m), y)
                loss.backward()
                embed.accumulate(e)
                with flushed_denormals(ftz):
                    opt.step()
                with torch.no_grad():
                    Ws = torch.stack([w.detach() for w in model.attention_weights()])  # (L, h, k)
                    torch.bmm(Ws, Ws.transpose(1, 2), out=g_buf[held])
                    l_buf[held] = loss.detach()
                held += 1
                step += 1
                bar.update(1)
                if held == record_block:
                    flush()
            flush()
            if step < spe * (epoch + 1):  # max_steps reached inside this epoch
                break
            if evaluate:
                model.eval()
                correct = torch.zeros((), dtype=torch.int64, device=device)
                with torch.inference_mode():
                    for a in range(0, len(va), cfg.batch_size):
                        x, m, y = batch(va_dev[a : a + cfg.batch_size], va[a : a + cfg.batch_size])
                        correct += (model(x, m).argmax(-1) == y).sum()
                val_acc[epoch] = int(correct) / len(va)
            if not np.isfinite(train_loss[step - spe : step]).all():
                raise FloatingPointError(f"TREC run {rep}: non-finite training loss in epoch {epoch + 1}")
            bar.set_postfix(epoch=epoch + 1, val_acc=f"{val_acc[epoch]:.3f}", refresh=False)
            if progress is not None:
                progress(
                    f"[trec] rep {rep} epoch {epoch + 1}/{cfg.epochs}"
                    f"  loss {train_loss[step - spe : step].mean():.4f}  val acc {val_acc[epoch]:.4f}"
                    f"  {time.perf_counter() - t0:.1f} s"
                )
        if not np.isfinite(train_loss).all():
            raise FloatingPointError(f"TREC run {rep}: non-finite training loss")
        wall = time.perf_counter() - t0
        sim = rec.similarity_to_final()
        sim_to = {int(r): rec.similarity_to(int(r)) for r in reference_steps}
    return {
        "similarity": sim,
        "similarity_to": sim_to,
        "val_accuracy": val_acc,
        "train_loss": train_loss,
        "steps_per_epoch": spe,
        "wall_s": wall,
        "n_train": len(tr),
        "n_val": len(va),
        "n_steps": n_steps,
    }
