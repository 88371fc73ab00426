"""Head pruning of a gradient-descent-trained image-task network guided by the theory's order parameter (P1 Sec. 4,
Figs 3e, 3f, 7; see docs/p1_images.md).

Heads are named ``(layer, head)`` with a 1-based layer and a 0-based head index (as ``head_scores`` returns them);
figure labels and ledger ids use the paper's 1-based "(l)h" form, see ``head_label``.

Pruning a set S_l of heads of layer l zeroes their outputs before the head sum and replaces that layer's factor
H^(-1/2) by (H - |S_l|)^(-1/2); nothing is retrained (``AttentionPathsTransformer.set_pruned_heads``).

:func:`evaluate_pruning` runs the whole evaluation of one model (single-head drops, cumulative pruning in the
theory's order, in diag(U)'s order and in random orders) and returns a :class:`PruningEvaluation`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..head_score import head_scores

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


def pruned_accuracies(
    model, sets: Mapping[str, tuple[np.ndarray, np.ndarray]], pruned: Sequence[Head], predict
) -> dict[str, float]:
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
            xb = torch.as_tensor(np.asarray(x[i : i + batch]), dtype=torch.float32, device=device)
            B, T, _ = xb.shape
            attn = model.attention(xb)
            z = model.input_proj(xb).unsqueeze(1)  # [B, paths so far, T, N]
            for l in range(L):
                v = model.value[l](z).view(B, z.shape[1], T, H, N)  # W_V,h z_s: [B, p, T(key), H, N]
                z = torch.einsum("bhst,bpshm->bphtm", attn[l], v).reshape(B, -1, T, N)
            out.append(model.readout(z.mean(dim=2)).squeeze(-1).double().cpu().numpy())
    return np.concatenate(out) if out else np.zeros((0, H**L))


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


def accuracies_from_paths(
    contrib: Mapping[str, tuple[np.ndarray, np.ndarray]], heads: Sequence[int], pruned: Sequence[Head]
) -> dict[str, float]:
    """Accuracy on every set from precomputed path contributions {name: (contributions [n, H_tot], y [n])}."""
    w = path_weights(heads, pruned)
    return {name: float(np.mean(np.sign(c @ w) == y)) for name, (c, y) in contrib.items()}


def random_orders(all_heads: Sequence[Head], n_orders: int, seed: int) -> list[list[Head]]:
    """``n_orders`` random permutations of the heads (numpy Generator seeded with ``seed``)."""
    rng = np.random.default_rng(seed)
    heads = list(all_heads)
    return [[heads[i] for i in rng.permutation(len(heads))] for _ in range(n_orders)]


@dataclass
class PruningEvaluation:
    """Accuracies (fractions) of one network with heads removed; sets are named as in ``evaluate_pruning``'s input.

    heads: heads per layer; n: {set: number of examples}; base: {set: unpruned accuracy}; order: heads by ascending
    theory score; scores / scores_diagonal: {head: normalised score} from U and from diag(U); single: {head: {set:
    accuracy with that one head removed}}; steps: the cumulative pruned sets of the theory's order (k = 0, 1, ...);
    params_removed_fraction: [len(steps)]; theory / diagonal: [len(steps)] of {set: accuracy} along the theory's and
    diag(U)'s orders; random: {set: [n_orders, len(steps)] accuracies along random orders}.
    """

    heads: tuple[int, ...]
    n: dict[str, int]
    base: dict[str, float]
    order: list[Head]
    scores: dict[Head, float]
    scores_diagonal: dict[Head, float]
    single: dict[Head, dict[str, float]]
    steps: list[list[Head]]
    params_removed_fraction: list[float]
    theory: list[dict[str, float]]
    diagonal: list[dict[str, float]]
    random: dict[str, np.ndarray]

    def random_mean(self, s: str, k: int) -> float:
        """Mean accuracy on set ``s`` over the random orders after k pruned heads."""
        return float(self.random[s][:, k].mean())

    def drop_single(self, head: Head, s: str = "omniglot") -> float:
        """Accuracy lost (fraction) on set ``s`` when only ``head`` is removed."""
        return self.base[s] - self.single[head][s]

    def gain_over_random(self, curve: str = "theory") -> dict[str, float]:
        """{set: mean over k >= 1 of the accuracy of ``curve`` ("theory" or "diagonal") minus the random orders'
        mean accuracy}: how much better than chance that order prunes."""
        c = {"theory": self.theory, "diagonal": self.diagonal}[curve]
        return {
            s: float(np.mean([c[k][s] - self.random[s][:, k].mean() for k in range(1, len(c))])) for s in self.random
        }

    def as_json(self) -> dict:
        """JSON-ready record with the paper's head labels ("(l)h" as "l.h", see ``head_label``)."""
        sets = list(self.random)
        return {
            "heads": self.heads,
            "n": self.n,
            "base": self.base,
            "order": [head_label(h) for h in self.order],
            "score": {head_label(h): self.scores[h] for h in self.order},
            "score_diagonal": {head_label(h): self.scores_diagonal[h] for h in self.order},
            "single": {head_label(h): self.single[h] for h in self.order},
            "cumulative": {
                "k": list(range(len(self.steps))),
                "pruned": [[head_label(h) for h in s] for s in self.steps],
                "params_removed_fraction": self.params_removed_fraction,
                "theory": self.theory,
                "diagonal": self.diagonal,
                "random_mean": {s: self.random[s].mean(axis=0).tolist() for s in sets},
                "random_std": {s: self.random[s].std(axis=0).tolist() for s in sets},
                "random_orders": int(next(iter(self.random.values())).shape[0]),
            },
        }


def evaluate_pruning(
    model,
    sets: Mapping[str, tuple[np.ndarray, np.ndarray]],
    U: np.ndarray,
    heads: Sequence[int],
    predict: Callable,
    n_random_orders: int,
    random_seed: int,
) -> PruningEvaluation:
    """Prune ``model`` guided by the theory's U [H_tot, H_tot] of its heads and measure every set's accuracy.

    sets: {name: (x [n, T, D], y [n] in {-1, +1})}; heads: heads per layer of U (must be the model's);
    predict(model, x) -> outputs [n]. Every pruned network is evaluated from one pass of path contributions
    (``path_contributions``), checked against the unpruned network's own forward pass (at most one tie may flip).
    Random orders: ``n_random_orders`` permutations from ``random_seed`` (``random_orders``).
    """
    heads = tuple(int(h) for h in heads)
    if heads != (model.n_heads,) * model.n_layers:
        raise ValueError(f"U of heads {heads} does not belong to a model of {model.n_layers} x {model.n_heads} heads")
    # every pruned network from one pass: the output is a fixed linear combination of path contributions
    contrib = {s: (path_contributions(model, x), y) for s, (x, y) in sets.items()}

    def acc(pruned):
        return accuracies_from_paths(contrib, heads, pruned)

    scores, diag = head_scores(U, heads), diagonal_scores(U, heads)
    base = acc([])
    forward = pruned_accuracies(model, sets, [], predict)  # the unpruned network's own forward pass
    if any(abs(base[s] - forward[s]) > 1.5 / len(sets[s][1]) for s in sets):  # at most one tie may flip
        raise RuntimeError(f"path decomposition disagrees with the network: {base} vs {forward}")
    single = {h: acc([h]) for h in scores}

    def curve(order):
        steps = cumulative_sets(order, heads)
        return [acc(pruned) for pruned in steps], steps

    theory_curve, theory_steps = curve(ascending(scores))
    diag_curve, _ = curve(ascending(diag))
    rand = [curve(o)[0] for o in random_orders(list(scores), int(n_random_orders), int(random_seed))]
    return PruningEvaluation(
        heads=heads,
        n={s: len(v[1]) for s, v in sets.items()},
        base=base,
        order=ascending(scores),
        scores=scores,
        scores_diagonal=diag,
        single=single,
        steps=theory_steps,
        params_removed_fraction=[params_removed_fraction(model, s) for s in theory_steps],
        theory=theory_curve,
        diagonal=diag_curve,
        random={s: np.array([[c[k][s] for k in range(len(c))] for c in rand]) for s in sets},
    )


def drops_points(result: Mapping) -> list[float]:
    """Single-head ID (Omniglot) accuracy drops in percentage points, in the order of ``result["order"]``;
    result: the record of ``PruningEvaluation.as_json``."""
    base = result["base"]["omniglot"]
    return [100 * (base - result["single"][h]["omniglot"]) for h in result["order"]]
