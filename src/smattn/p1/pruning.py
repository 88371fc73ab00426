"""Head pruning of a gradient-descent-trained network guided by the theory's order parameter (P1 spec §2.6, §6).

Heads are named ``(layer, head)`` with a 1-based layer and a 0-based head index (as ``head_scores`` returns them);
figure labels and ledger ids use the paper's 1-based "(l)h" form, see ``head_label``.

Pruning a set S_l of heads of layer l zeroes their outputs before the head sum and replaces that layer's factor
H^(-1/2) by (H - |S_l|)^(-1/2); nothing is retrained (``AttentionPathsTransformer.set_pruned_heads``).
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from .head_score import head_scores

Head = tuple[int, int]  # (layer 1-based, head 0-based)


def head_label(head: Head) -> str:
    """The paper's label of a head, 1-based: layer 1 head 0 -> '1.1'."""
    return f"{head[0]}.{head[1] + 1}"


def diagonal_scores(U: np.ndarray, heads: Sequence[int]) -> dict[Head, float]:
    """A baseline score from U's diagonal only: sum of |U_pipi| over the paths through the head, normalised by
    the maximum. U: [H_tot, H_tot]."""
    D = np.diag(np.abs(np.asarray(U, dtype=np.float64)))
    return head_scores(np.diag(D), tuple(heads))


def ascending(scores: Mapping[Head, float]) -> list[Head]:
    """Heads sorted by ascending score (ties broken by layer, then head)."""
    return sorted(scores, key=lambda h: (scores[h], h[0], h[1]))


def cumulative_sets(order: Sequence[Head], heads: Sequence[int]) -> list[list[Head]]:
    """The pruned sets for k = 0, 1, 2, ...: the first k heads of ``order`` that can be removed, skipping a head
    whose removal would empty its layer (so each layer keeps at least one head). Returns [[], [h1], [h1, h2], ...]."""
    left = {l + 1: int(H) for l, H in enumerate(heads)}
    chosen: list[Head] = []
    sets: list[list[Head]] = [[]]
    for h in order:
        if left[h[0]] <= 1:
            continue
        left[h[0]] -= 1
        chosen.append(h)
        sets.append(list(chosen))
    return sets


def as_mask_dict(pruned: Sequence[Head]) -> dict[int, list[int]]:
    """{layer 0-based: [heads 0-based]} as ``AttentionPathsTransformer.set_pruned_heads`` takes it."""
    out: dict[int, list[int]] = {}
    for layer, head in pruned:
        out.setdefault(layer - 1, []).append(head)
    return out


def params_per_head(model) -> int:
    """Trainable parameters that one head owns: W_V (N x N) and W_Q, W_K (G x D each)."""
    return model.width * model.width + 2 * model.qk_dim * model.token_dim


def params_removed_fraction(model, pruned: Sequence[Head]) -> float:
    return len(pruned) * params_per_head(model) / model.n_trainable()


def pruned_accuracies(model, sets: Mapping[str, tuple[np.ndarray, np.ndarray]], pruned: Sequence[Head],
                      predict) -> dict[str, float]:
    """Accuracy (fraction) on every evaluation set with ``pruned`` heads removed, by a forward pass of the pruned
    network; the model is restored after. sets: {name: (x [n, T, D], y [n] in {-1, +1})};
    predict(model, x) -> outputs [n]."""
    model.set_pruned_heads(as_mask_dict(pruned))
    try:
        return {name: float(np.mean(np.sign(predict(model, x)) == y)) for name, (x, y) in sets.items()}
    finally:
        model.set_pruned_heads(None)


def path_contributions(model, x: np.ndarray, batch: int = 64) -> np.ndarray:
    """Unscaled contribution of every attention path to the output of ``model``: [n, H^L] (paths row-major over
    (h_1..h_L), h_1 slowest), float64.

    The GD network is linear in its value path and its attention depends on the bare input only, so with head masks
    m_l and factors c_l = |kept heads of layer l|^(-1/2) the output is exactly
    f(x) = sum_paths prod_l c_l m_l[h_l] * contribution[x, path]: one pass gives every pruned network at once.
    """
    import torch

    device = next(model.parameters()).device
    H, N, L = model.n_heads, model.width, model.n_layers
    out = []
    with torch.no_grad():
        for i in range(0, len(x), batch):
            xb = torch.as_tensor(np.asarray(x[i:i + batch]), dtype=torch.float32, device=device)
            B, T, _ = xb.shape
            attn = model.attention(xb)
            z = model.input_proj(xb).unsqueeze(1)  # [B, paths so far, T, N]
            for l in range(L):
                v = model.value[l](z).view(B, z.shape[1], T, H, N)  # W_V,h z_s: [B, p, T(key), H, N]
                z = torch.einsum("bhst,bpshm->bphtm", attn[l], v).reshape(B, -1, T, N)
            out.append(model.readout(z.mean(dim=2)).squeeze(-1).double().cpu().numpy())
    return np.concatenate(out) if out else np.zeros((0, H ** L))


def path_weights(heads: Sequence[int], pruned: Sequence[Head]) -> np.ndarray:
    """prod_l c_l m_l[h_l] for every path ([H_tot]): masks of the pruned heads, c_l = kept^(-1/2)."""
    w = np.ones(1)
    for l, H in enumerate(heads):
        m = np.ones(int(H))
        for layer, head in pruned:
            if layer == l + 1:
                m[head] = 0.0
        if m.sum() == 0:
            raise ValueError(f"cannot prune every head of layer {l + 1}")
        w = np.outer(w, m / np.sqrt(m.sum())).ravel()
    return w


def accuracies_from_paths(contrib: Mapping[str, tuple[np.ndarray, np.ndarray]], heads: Sequence[int],
                          pruned: Sequence[Head]) -> dict[str, float]:
    """Accuracy on every set from precomputed path contributions {name: (contributions [n, H_tot], y [n])}."""
    w = path_weights(heads, pruned)
    return {name: float(np.mean(np.sign(c @ w) == y)) for name, (c, y) in contrib.items()}


def random_orders(all_heads: Sequence[Head], n_orders: int, seed: int) -> list[list[Head]]:
    """``n_orders`` random permutations of the heads (numpy Generator seeded with ``seed``)."""
    rng = np.random.default_rng(seed)
    heads = list(all_heads)
    return [[heads[i] for i in rng.permutation(len(heads))] for _ in range(n_orders)]
