"""Head pruning of a gradient-descent-trained image-task network guided by the theory's order parameter (P1 Sec. 4,
Figs 3e, 3f, 7; see docs/p1_images.md).

Heads are named ``(layer, head)`` with a 1-based layer and a 0-based head index (as ``head_scores`` returns them);
figure labels and ledger ids use the paper's 1-based "(l)h" form, see ``head_label``.

Pruning a set S_l of heads of layer l zeroes their outputs before the head sum and replaces that layer's factor
H^(-1/2) by (H - |S_l|)^(-1/2); nothing is retrained (``AttentionPathsTransformer.set_pruned_heads``).

:func:`evaluate_pruning` runs the whole evaluation of one model (single-head drops, cumulative pruning in the
theory's order, in diag(U)'s order and in random orders) and returns a :class:`PruningEvaluation`, with a paired
bootstrap confidence interval over test tasks for every drop (:func:`drop_intervals`). Given validation sets, it also
prunes in an oracle's order (:func:`oracle_order`: heads ranked by their single-head drop on the validation set),
a reference for what any head score could reach on the same network.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

from ...progress import progress
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


def correct_from_paths(
    contrib: Mapping[str, tuple[np.ndarray, np.ndarray]], heads: Sequence[int], pruned: Sequence[Head]
) -> dict[str, np.ndarray]:
    """Per-task correctness (bool [n]) on every set from precomputed path contributions
    {name: (contributions [n, H_tot], y [n])}."""
    w = path_weights(heads, pruned)
    return {name: np.sign(c @ w) == y for name, (c, y) in contrib.items()}


def accuracies_from_paths(
    contrib: Mapping[str, tuple[np.ndarray, np.ndarray]], heads: Sequence[int], pruned: Sequence[Head]
) -> dict[str, float]:
    """Accuracy on every set from precomputed path contributions {name: (contributions [n, H_tot], y [n])}."""
    return {name: float(np.mean(c)) for name, c in correct_from_paths(contrib, heads, pruned).items()}


def bootstrap_counts(n: int, n_resamples: int, rng: np.random.Generator, chunk: int = 256):
    """Yield blocks of resampling counts: int [b, n] (b <= chunk, n_resamples rows in all), row r counting how
    often each of the n tasks is drawn when n tasks are drawn uniformly with replacement (one bootstrap resample)."""
    done = 0
    while done < n_resamples:
        b = min(chunk, n_resamples - done)
        idx = rng.integers(0, n, size=(b, n)) + n * np.arange(b)[:, None]
        yield np.bincount(idx.ravel(), minlength=b * n).reshape(b, n)
        done += b


def drop_intervals(base: np.ndarray, pruned: np.ndarray, n_resamples: int, seed, level: float) -> np.ndarray:
    """Paired bootstrap percentile intervals of accuracy drops over test tasks.

    base: bool [n], per-task correctness of the unpruned network; pruned: bool [m, n], the same n tasks evaluated
    by m pruned networks. Drop j = mean(base) - mean(pruned[j]) (a fraction; positive = accuracy lost). Every
    resample draws n tasks with replacement, the same tasks for the unpruned and all pruned networks (paired), from
    ``numpy.random.default_rng(seed)``; the interval is the (1 - level)/2 and (1 + level)/2 quantiles of the
    ``n_resamples`` resampled drops. Returns [m, 2] (low, high).
    """
    base = np.asarray(base, dtype=np.float64)
    pruned = np.atleast_2d(np.asarray(pruned, dtype=np.float64))
    n = base.shape[0]
    if pruned.shape[1] != n or n == 0:
        raise ValueError(f"drop_intervals: base [{n}] and pruned {pruned.shape} must share their n > 0 tasks")
    if not 0 < level < 1 or n_resamples < 1:
        raise ValueError(f"drop_intervals: need 0 < level < 1 and n_resamples >= 1, got {level}, {n_resamples}")
    d = base[:, None] - pruned.T  # [n, m] per-task drops in {-1, 0, 1}
    rng = np.random.default_rng(seed)
    boot = np.concatenate([c @ d for c in bootstrap_counts(n, int(n_resamples), rng)]) / n  # [n_resamples, m]
    return np.quantile(boot, [(1 - level) / 2, (1 + level) / 2], axis=0).T


def random_orders(all_heads: Sequence[Head], n_orders: int, seed: int) -> list[list[Head]]:
    """``n_orders`` random permutations of the heads (numpy Generator seeded with ``seed``)."""
    rng = np.random.default_rng(seed)
    heads = list(all_heads)
    return [[heads[i] for i in rng.permutation(len(heads))] for _ in range(n_orders)]


def oracle_order(single_drop: Mapping[Head, float]) -> list[Head]:
    """The oracle's pruning order: heads by ascending single-head accuracy drop measured on a validation split (the
    head whose removal costs least, or gains most, first; ties broken by layer, then head). It is pruned
    cumulatively by the theory order's rule (``cumulative_sets``)."""
    return ascending(single_drop)


def drop_verdict(low: float, high: float) -> str:
    """Reading of a drop's interval (low, high): "significant drop" (low > 0), "significant gain" (high < 0),
    otherwise "no significant change" (the interval contains 0)."""
    if low > 0:
        return "significant drop"
    if high < 0:
        return "significant gain"
    return "no significant change"


@dataclass(frozen=True)
class BootstrapSettings:
    """Paired bootstrap of the drops over test tasks (``drop_intervals``): resamples, seed, interval level."""

    n_resamples: int
    seed: int
    level: float


@dataclass
class PruningEvaluation:
    """Accuracies (fractions) of one network with heads removed; sets are named as in ``evaluate_pruning``'s input.

    heads: heads per layer; n: {set: number of examples}; base: {set: unpruned accuracy}; order: heads by ascending
    theory score; scores / scores_diagonal: {head: normalised score} from U and from diag(U); single: {head: {set:
    accuracy with that one head removed}}; steps: the cumulative pruned sets of the theory's order (k = 0, 1, ...);
    params_removed_fraction: [len(steps)]; theory / diagonal: [len(steps)] of {set: accuracy} along the theory's and
    diag(U)'s orders; random: {set: [n_orders, len(steps)] accuracies along random orders}.
    Per-task correctness (bool [n]): correct_base {set}, correct_single {head: {set}}, correct_theory [len(steps)] of
    {set}. Drop intervals (fractions, ``drop_intervals`` with ``bootstrap``): single_ci {head: {set: (low, high)}}
    of base - single, theory_ci [len(steps)] of {set: (low, high)} of base - theory[k].
    Oracle (only for the sets given validation data): n_val {set: validation examples}; val_single_drop {set: {head:
    drop on the validation set}}; oracle_order {set: [Head]} (``oracle_order`` of those drops); oracle_steps {set:
    cumulative pruned sets}; oracle {set: [accuracy on the test set at k]}; correct_oracle {set: [bool [n] at k]};
    oracle_ci {set: [(low, high) of base - oracle[k]]}, from the same bootstrap resamples as theory_ci;
    oracle_subset_p {k: {set: share of the admissible k-head prunings at least as accurate as the oracle's on the test
    set}}, beside subset_p's share for the theory's.
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
    correct_base: dict[str, np.ndarray]
    correct_single: dict[Head, dict[str, np.ndarray]]
    correct_theory: list[dict[str, np.ndarray]]
    bootstrap: BootstrapSettings
    single_ci: dict[Head, dict[str, tuple[float, float]]]
    theory_ci: list[dict[str, tuple[float, float]]]
    subset_p: dict[int, dict[str, float]] = field(default_factory=dict)
    oracle_subset_p: dict[int, dict[str, float]] = field(default_factory=dict)
    n_val: dict[str, int] = field(default_factory=dict)
    val_single_drop: dict[str, dict[Head, float]] = field(default_factory=dict)
    oracle_order: dict[str, list[Head]] = field(default_factory=dict)
    oracle_steps: dict[str, list[list[Head]]] = field(default_factory=dict)
    oracle: dict[str, list[float]] = field(default_factory=dict)
    correct_oracle: dict[str, list[np.ndarray]] = field(default_factory=dict)
    oracle_ci: dict[str, list[tuple[float, float]]] = field(default_factory=dict)

    def random_mean(self, s: str, k: int) -> float:
        """Mean accuracy on set ``s`` over the random orders after k pruned heads."""
        return float(self.random[s][:, k].mean())

    def random_sd(self, s: str, k: int) -> float:
        """Standard deviation (ddof = 0) of the accuracy on set ``s`` over the random orders after k pruned heads."""
        return float(self.random[s][:, k].std())

    def drop_single(self, head: Head, s: str = "omniglot") -> float:
        """Accuracy lost (fraction) on set ``s`` when only ``head`` is removed."""
        return self.base[s] - self.single[head][s]

    def drop_cumulative(self, k: int, s: str = "omniglot") -> float:
        """Accuracy lost (fraction) on set ``s`` when the first k heads of the theory's order are removed."""
        return self.base[s] - self.theory[k][s]

    def drop_oracle(self, k: int, s: str) -> float:
        """Accuracy lost (fraction) on test set ``s`` when the first k heads of the oracle's order for ``s`` are
        removed."""
        return self.base[s] - self.oracle[s][k]

    def gain_over_random(self, curve: str = "theory") -> dict[str, float]:
        """{set: mean over k >= 1 of the accuracy of ``curve`` ("theory" or "diagonal") minus the random orders'
        mean accuracy}: how much better than chance that order prunes."""
        c = {"theory": self.theory, "diagonal": self.diagonal}[curve]
        return {
            s: float(np.mean([c[k][s] - self.random[s][:, k].mean() for k in range(1, len(c))])) for s in self.random
        }

    def as_json(self) -> dict:
        """JSON-ready record with the paper's head labels ("(l)h" as "l.h", see ``head_label``); drop intervals as
        [low, high] fractions (no per-task vectors)."""
        sets = list(self.random)
        return {
            "heads": self.heads,
            "n": self.n,
            "base": self.base,
            "order": [head_label(h) for h in self.order],
            "score": {head_label(h): self.scores[h] for h in self.order},
            "score_diagonal": {head_label(h): self.scores_diagonal[h] for h in self.order},
            "single": {head_label(h): self.single[h] for h in self.order},
            "single_drop_ci": {head_label(h): {s: list(v) for s, v in self.single_ci[h].items()} for h in self.order},
            "bootstrap": {
                "resamples": self.bootstrap.n_resamples,
                "seed": self.bootstrap.seed,
                "level": self.bootstrap.level,
                "over": "test tasks, paired",
            },
            "cumulative": {
                "k": list(range(len(self.steps))),
                "pruned": [[head_label(h) for h in s] for s in self.steps],
                "params_removed_fraction": self.params_removed_fraction,
                "theory": self.theory,
                "theory_drop_ci": [{s: list(v) for s, v in ci.items()} for ci in self.theory_ci],
                "diagonal": self.diagonal,
                "random_mean": {s: self.random[s].mean(axis=0).tolist() for s in sets},
                "random_std": {s: self.random[s].std(axis=0).tolist() for s in sets},
                "random_orders": int(next(iter(self.random.values())).shape[0]),
            },
            "oracle": {
                "n_val": self.n_val,
                "val_single_drop": {
                    s: {head_label(h): v for h, v in d.items()} for s, d in self.val_single_drop.items()
                },
                "order": {s: [head_label(h) for h in o] for s, o in self.oracle_order.items()},
                "pruned": {s: [[head_label(h) for h in p] for p in st] for s, st in self.oracle_steps.items()},
                "accuracy": self.oracle,
                "drop_ci": {s: [list(v) for v in ci] for s, ci in self.oracle_ci.items()},
            },
        }


def admissible_subsets(all_heads: Sequence[Head], heads: Sequence[int], k: int) -> list[tuple[Head, ...]]:
    """Every set of k heads whose removal leaves each layer at least one head (as ``cumulative_sets`` does)."""
    per_layer = {l + 1: int(H) for l, H in enumerate(heads)}
    out = []
    for sub in combinations(sorted(all_heads), int(k)):
        removed = {l: sum(1 for h in sub if h[0] == l) for l in per_layer}
        if all(removed[l] < per_layer[l] for l in per_layer):
            out.append(sub)
    return out


def subset_rank_p(acc: Callable, subsets: Sequence[Sequence[Head]], pruned: Sequence[Head]) -> dict[str, float]:
    """{set: share of ``subsets`` whose pruned accuracy is at least that of ``pruned``} (``pruned`` among them).

    acc(pruned) -> {set: accuracy}. For a pruned set drawn uniformly from ``subsets`` this share is at most a with
    probability at most a: the rate at which a random pruning passes ``p <= a`` (ties count against ``pruned``)."""
    accs = [acc(list(sub)) for sub in progress(subsets, desc="all prunings of one size", unit="set")]
    return rank_share(accs, acc(list(pruned)))


def rank_share(accs: Sequence[Mapping[str, float]], ref: Mapping[str, float]) -> dict[str, float]:
    """{set: share of the accuracies ``accs`` (one {set: accuracy} per pruning) at least ``ref[set]``}, ties
    counting against ``ref`` (:func:`subset_rank_p` on accuracies already computed)."""
    return {s: float(np.mean([a[s] >= ref[s] - 1e-12 for a in accs])) for s in ref}


def evaluate_pruning(
    model,
    sets: Mapping[str, tuple[np.ndarray, np.ndarray]],
    U: np.ndarray,
    heads: Sequence[int],
    predict: Callable,
    n_random_orders: int,
    random_seed: int,
    bootstrap: BootstrapSettings,
    rank_k: Sequence[int] = (),
    validation: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None,
) -> PruningEvaluation:
    """Prune ``model`` guided by the theory's U [H_tot, H_tot] of its heads and measure every set's accuracy.

    sets: {name: (x [n, T, D], y [n] in {-1, +1})}; heads: heads per layer of U (must be the model's);
    predict(model, x) -> outputs [n]. Every pruned network is evaluated from one pass of path contributions
    (``path_contributions``), checked against the unpruned network's own forward pass (at most one tie may flip).
    Random orders: ``n_random_orders`` permutations from ``random_seed`` (``random_orders``). Drop intervals: for
    the i-th set (in the order of ``sets``), one paired bootstrap (``drop_intervals``, seed [bootstrap.seed, i])
    shared by its single-head and cumulative drops. rank_k: the k at which the theory's pruning is ranked among all
    admissible k-head prunings (``subset_rank_p``). validation: {set: (x, y)} for some of ``sets``, examples disjoint
    from that set's: each head's single-head drop there gives the oracle's order for that set (``oracle_order``),
    pruned cumulatively and evaluated on the test set with the theory order's bootstrap resamples (the resamples
    depend only on the set's size, so adding the oracle leaves every other interval unchanged).
    """
    heads = tuple(int(h) for h in heads)
    if heads != (model.n_heads,) * model.n_layers:
        raise ValueError(f"U of heads {heads} does not belong to a model of {model.n_layers} x {model.n_heads} heads")
    # every pruned network from one pass: the output is a fixed linear combination of path contributions
    contrib = {
        s: (path_contributions(model, x), y)
        for s, (x, y) in progress(sets.items(), desc="path contributions", total=len(sets), unit="set")
    }

    def correct(pruned):
        return correct_from_paths(contrib, heads, pruned)

    def acc(pruned):
        return accuracies_from_paths(contrib, heads, pruned)

    def mean(c):
        return {s: float(np.mean(v)) for s, v in c.items()}

    scores, diag = head_scores(U, heads), diagonal_scores(U, heads)
    correct_base = correct([])
    base = mean(correct_base)
    forward = pruned_accuracies(model, sets, [], predict)  # the unpruned network's own forward pass
    if any(abs(base[s] - forward[s]) > 1.5 / len(sets[s][1]) for s in sets):  # at most one tie may flip
        raise RuntimeError(f"path decomposition disagrees with the network: {base} vs {forward}")
    correct_single = {h: correct([h]) for h in scores}
    single = {h: mean(c) for h, c in correct_single.items()}

    def curve(order):
        steps = cumulative_sets(order, heads)
        return [acc(pruned) for pruned in steps], steps

    theory_steps = cumulative_sets(ascending(scores), heads)
    correct_theory = [correct(pruned) for pruned in theory_steps]
    theory_curve = [mean(c) for c in correct_theory]
    diag_curve, _ = curve(ascending(diag))
    orders = random_orders(list(scores), int(n_random_orders), int(random_seed))
    rand = [curve(o)[0] for o in progress(orders, desc="random head orders", unit="order")]
    validation = dict(validation or {})
    if set(validation) - set(sets):
        raise ValueError(f"validation sets {sorted(set(validation) - set(sets))} have no test set in {list(sets)}")
    val_contrib = {
        s: (path_contributions(model, x), y)
        for s, (x, y) in progress(
            validation.items(), desc="validation path contributions", total=len(validation), unit="set"
        )
    }
    val_base = accuracies_from_paths(val_contrib, heads, [])
    val_single = {h: accuracies_from_paths(val_contrib, heads, [h]) for h in scores}
    val_drop = {s: {h: val_base[s] - val_single[h][s] for h in scores} for s in val_contrib}
    orc_order = {s: oracle_order(d) for s, d in val_drop.items()}
    orc_steps = {s: cumulative_sets(o, heads) for s, o in orc_order.items()}
    correct_orc = {s: [correct_from_paths({s: contrib[s]}, heads, p)[s] for p in st] for s, st in orc_steps.items()}
    hs = list(scores)
    single_ci: dict[Head, dict[str, tuple[float, float]]] = {h: {} for h in hs}
    theory_ci: list[dict[str, tuple[float, float]]] = [{} for _ in theory_steps]
    oracle_ci: dict[str, list[tuple[float, float]]] = {}
    for i, s in enumerate(sets):
        orc = correct_orc.get(s, [])
        pruned = np.stack([correct_single[h][s] for h in hs] + [c[s] for c in correct_theory] + orc)
        ci = drop_intervals(correct_base[s], pruned, bootstrap.n_resamples, [int(bootstrap.seed), i], bootstrap.level)
        for j, h in enumerate(hs):
            single_ci[h][s] = (float(ci[j, 0]), float(ci[j, 1]))
        for k in range(len(theory_steps)):
            theory_ci[k][s] = (float(ci[len(hs) + k, 0]), float(ci[len(hs) + k, 1]))
        if orc:
            j0 = len(hs) + len(theory_steps)
            oracle_ci[s] = [(float(ci[j0 + k, 0]), float(ci[j0 + k, 1])) for k in range(len(orc))]
    subset_p: dict[int, dict[str, float]] = {}
    oracle_subset_p: dict[int, dict[str, float]] = {}
    for k in (int(k) for k in rank_k if int(k) < len(theory_steps)):
        subsets = admissible_subsets(list(scores), heads, k)
        accs = [acc(list(sub)) for sub in progress(subsets, desc="all prunings of one size", unit="set")]
        subset_p[k] = rank_share(accs, acc(list(theory_steps[k])))
        oracle_subset_p[k] = {
            s: rank_share(accs, acc(list(st[k])))[s] for s, st in orc_steps.items() if s in sets and k < len(st)
        }
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
        correct_base=correct_base,
        correct_single=correct_single,
        correct_theory=correct_theory,
        bootstrap=bootstrap,
        single_ci=single_ci,
        theory_ci=theory_ci,
        subset_p=subset_p,
        oracle_subset_p=oracle_subset_p,
        n_val={s: len(v[1]) for s, v in val_contrib.items()},
        val_single_drop=val_drop,
        oracle_order=orc_order,
        oracle_steps=orc_steps,
        oracle={s: [float(np.mean(c)) for c in cs] for s, cs in correct_orc.items()},
        correct_oracle=correct_orc,
        oracle_ci=oracle_ci,
    )


def drops_points(result: Mapping) -> list[float]:
    """Single-head ID (Omniglot) accuracy drops in percentage points, in the order of ``result["order"]``;
    result: the record of ``PruningEvaluation.as_json``."""
    base = result["base"]["omniglot"]
    return [100 * (base - result["single"][h]["omniglot"]) for h in result["order"]]
