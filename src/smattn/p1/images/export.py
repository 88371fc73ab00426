"""Export of a trained GD network to the Bayesian theory (docs/p1_images.md#export) and its GD evaluation.

From the selected checkpoint: the fixed query/key weights ``WQ``, ``WK`` [L, H, G, D] (used unchanged by the theory's
QK-style attention, scale 1/sqrt(G), softmax over keys); value weights ``WV`` [L, H, N, N], input projection
``W_in`` [N, D] and readout ``w_out`` [N] (for the empirical order parameter U_GD); and the sequences:

* ``x_train`` [P, 48, 192], ``y_train`` [P]: the first P/2 training tasks with y = +1, then the first P/2 with
  y = -1, among ``n_train_pool`` tasks drawn from the training classes with seed ``seed``;
* ``x_{omniglot,mnist,fashion}`` [n, 48, 192], ``y_*``: balanced test sets (the first n/2 with y = +1, then the
  first n/2 with y = -1; n = n_omniglot for Omniglot, n_test for the others) from ``n_test_pool`` Omniglot
  test-class tasks and from the full MNIST / Fashion-MNIST 0-vs-1 sequence sets.

Sequences are stored float32 (as the reference exported them); the theory converts to float64.
"""

from __future__ import annotations

import numpy as np
import torch

from smattn.p1.images.datasets import ood_images
from smattn.p1.images.model import AttentionPathsTransformer, gd_order_parameter
from smattn.p1.images.tasks import TaskSampler, TaskSet, balanced_subset, ood_sequences, ood_task_set
from smattn.p1.images.tokens import label_vectors, positional_encoding
from smattn.p1.images.training import accuracy_tasks

TEST_SETS = ("omniglot", "mnist", "fashion")
# distinct stream tags so that export/evaluation tasks never reuse the training batches' seeds
_TRAIN_POOL, _TEST_POOL, _EVAL_POOL, _VAL = 1_000_001, 1_000_002, 1_000_003, 1_000_004
_PRUNE_VAL = 1_000_005  # the pruning oracle's validation tasks (docs/p1_images.md#pruning)


def sequence_context(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(label vectors [3, 192], positional table [48, 192]) of a model trained with ``seed``."""
    return label_vectors(seed), positional_encoding()


def validation_tasks(store: dict, seed: int, n_val: int) -> TaskSet:
    """The fixed validation set: n_val tasks on the 172 validation classes (x [n_val, 48, 192] = ``.x()``,
    y [n_val] = ``.y``)."""
    labels, pos = sequence_context(seed)
    return TaskSampler(store["val_images"], labels, pos).task_set(np.random.default_rng([seed, _VAL]), n_val)


def omniglot_test_tasks(store: dict, seed: int, n: int, stream: int = _TEST_POOL):
    labels, pos = sequence_context(seed)
    b = TaskSampler(store["test_images"], labels, pos).sample(np.random.default_rng([seed, stream]), n)
    return b.x, b.y


def ood_set(store: dict, seed: int, name: str) -> tuple[np.ndarray, np.ndarray]:
    labels, pos = sequence_context(seed)
    tr, te = ood_images(store, name)
    return ood_sequences(tr, te, name, labels, pos)


def omniglot_validation_tasks(store: dict, seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """n Omniglot tasks on the validation classes, from a stream of their own: no test task's class and not the
    training's checkpoint-selection tasks (``validation_tasks``). x [n, 48, 192], y [n]."""
    labels, pos = sequence_context(seed)
    b = TaskSampler(store["val_images"], labels, pos).sample(np.random.default_rng([seed, _PRUNE_VAL]), n)
    return b.x, b.y


def ood_validation_set(store: dict, seed: int, name: str) -> tuple[np.ndarray, np.ndarray]:
    """OOD 0-vs-1 validation sequences built like ``ood_set``'s from training images that no sequence of
    ``ood_set`` shows: as many queries per class as its test set, the query and both context images all drawn from
    the training images after the test sequences' context images. x [n, 48, 192], y [n]."""
    labels, pos = sequence_context(seed)
    tr, te = ood_images(store, name)
    n = {c: len(te[c]) for c in (0, 1)}
    used = n[0] + n[1]  # ood_set's context images: tr[c][:used]
    ctx = {c: tr[c][used : 2 * used] for c in (0, 1)}
    query = {c: tr[c][2 * used : 2 * used + n[c]] for c in (0, 1)}
    if any(len(query[c]) < n[c] for c in (0, 1)):
        raise ValueError(
            f"ood_validation_set: {name} needs {2 * used + n[0]} and {2 * used + n[1]} training images of classes 0"
            f" and 1, has {len(tr[0])} and {len(tr[1])}"
        )
    return ood_sequences(ctx, query, name, labels, pos)


def export_for_theory(
    model: AttentionPathsTransformer,
    store: dict,
    seed: int,
    P: int,
    n_test: int,
    n_train_pool: int,
    n_test_pool: int,
    n_omniglot: int | None = None,
) -> dict[str, np.ndarray]:
    """Arrays of the export (see module docstring), plus ``U_gd`` [H^L, H^L], ``labels`` and ``positions``.
    ``n_omniglot``: the size of the balanced Omniglot test set (default ``n_test``, the size of the MNIST and
    Fashion-MNIST ones, which their test images cap at 1960)."""
    n_omniglot = n_test if n_omniglot is None else int(n_omniglot)
    if n_train_pool < P or n_test_pool < n_omniglot:
        raise ValueError(
            f"export_for_theory: pools ({n_train_pool}, {n_test_pool}) smaller than P={P} / n_omniglot={n_omniglot}"
        )
    labels, pos = sequence_context(seed)
    tb = TaskSampler(store["train_images"], labels, pos).sample(
        np.random.default_rng([seed, _TRAIN_POOL]), n_train_pool
    )
    idx = balanced_subset(tb.y, P)
    out = {"x_train": tb.x[idx], "y_train": tb.y[idx]}
    xo, yo = omniglot_test_tasks(store, seed, n_test_pool)
    idx = balanced_subset(yo, n_omniglot)
    out["x_omniglot"], out["y_omniglot"] = xo[idx], yo[idx]
    for name in ("mnist", "fashion"):
        x, y = ood_set(store, seed, name)
        idx = balanced_subset(y, n_test)
        out[f"x_{name}"], out[f"y_{name}"] = x[idx], y[idx]
    with torch.no_grad():
        wq, wk = model.qk_weights()
        wv = model.value_weights()
        out.update(
            WQ=wq.cpu().numpy(),
            WK=wk.cpu().numpy(),
            WV=wv.cpu().numpy(),
            W_in=model.input_proj.weight.cpu().numpy(),
            w_out=model.readout.weight[0].cpu().numpy(),
            U_gd=gd_order_parameter(wv.double().cpu(), model.readout.weight[0].double().cpu()).numpy(),
        )
    out["labels"], out["positions"] = labels, pos
    out["heads"] = np.array([model.n_heads] * model.n_layers)
    return out


def gd_accuracies(
    model: AttentionPathsTransformer, store: dict, seed: int, n_omniglot: int, device=None
) -> dict[str, dict]:
    """GD accuracy on ``n_omniglot`` Omniglot test-class tasks and on all MNIST / Fashion-MNIST 0-vs-1 sequences.

    Returns {set: {"acc": fraction, "n": count}}. Sequences are assembled on ``device`` from patch tokens computed
    once per image (the same sequences as ``omniglot_test_tasks`` / ``ood_set``).
    """
    device = torch.device(device or next(model.parameters()).device)
    labels, pos = sequence_context(seed)
    sets = {
        "omniglot": TaskSampler(store["test_images"], labels, pos).task_set(
            np.random.default_rng([seed, _EVAL_POOL]), n_omniglot
        )
    }
    for name in ("mnist", "fashion"):
        tr, te = ood_images(store, name)
        sets[name] = ood_task_set(tr, te, name, labels, pos)
    return {name: {"acc": accuracy_tasks(model, ts.to(device)), "n": int(len(ts))} for name, ts in sets.items()}
