"""P1 pruning: head scores from the theory's U, then accuracy of the GD-trained network with heads removed (no
retraining): every single head, cumulative in ascending-score order, by U's diagonal only, and random orders."""

import numpy as np

from smattn.scriptio import run


def main(io):
    import torch

    from smattn.device import torch_device
    from smattn.io import fmt_id, write_json, write_metrics
    from smattn.p1.head_score import head_scores
    from smattn.p1.images.datasets import load_store
    from smattn.p1.images.export import omniglot_test_tasks, ood_set
    from smattn.p1.images.training import model_from_checkpoint, predict
    from smattn.p1.pruning import (
        ascending,
        cumulative_sets,
        diagonal_scores,
        head_label,
        params_removed_fraction,
        accuracies_from_paths,
        path_contributions,
        pruned_accuracies,
        random_orders,
    )

    p = io.params
    name = io.wildcards.model
    ck = torch.load(io.input.model, map_location="cpu", weights_only=True)
    model = model_from_checkpoint(ck).to(torch_device()).eval()
    seed = int(ck["config"]["seed"])
    store = load_store(io.input.store)
    sets = {"omniglot": omniglot_test_tasks(store, seed, int(p.n_omniglot))}
    for s in ("mnist", "fashion"):
        sets[s] = ood_set(store, seed, s)
    with np.load(io.input.U, allow_pickle=False) as z:
        U, heads = z["U"], tuple(int(h) for h in z["heads"])
    if heads != (model.n_heads,) * model.n_layers:
        raise ValueError(f"U of heads {heads} does not belong to model {name} ({model.n_layers} x {model.n_heads})")
    # every pruned network from one pass: the output is a fixed linear combination of path contributions
    contrib = {s: (path_contributions(model, x), y) for s, (x, y) in sets.items()}
    acc = lambda pruned: accuracies_from_paths(contrib, heads, pruned)  # noqa: E731

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
    rand = [curve(o)[0] for o in random_orders(list(scores), int(p.random_orders), int(p.random_seed))]
    fractions = [params_removed_fraction(model, s) for s in theory_steps]
    rand_acc = {s: np.array([[c[k][s] for k in range(len(c))] for c in rand]) for s in sets}

    order = ascending(scores)
    result = {
        "model": name,
        "heads": heads,
        "n": {s: int(len(v[1])) for s, v in sets.items()},
        "base": base,
        "order": [head_label(h) for h in order],
        "score": {head_label(h): scores[h] for h in order},
        "score_diagonal": {head_label(h): diag[h] for h in order},
        "single": {head_label(h): single[h] for h in order},
        "cumulative": {
            "k": list(range(len(theory_steps))),
            "pruned": [[head_label(h) for h in s] for s in theory_steps],
            "params_removed_fraction": fractions,
            "theory": theory_curve,
            "diagonal": diag_curve,
            "random_mean": {s: rand_acc[s].mean(axis=0).tolist() for s in sets},
            "random_std": {s: rand_acc[s].std(axis=0).tolist() for s in sets},
            "random_orders": int(p.random_orders),
        },
    }
    write_json(io.output.result, result)
    m = {}
    for h in order:
        lab = head_label(h)
        if p.ledger_single:
            m[f"p1.prune.score[model={name}][head={lab}]"] = scores[h]
            m[f"p1.prune.drop_single[model={name}][head={lab}]"] = base["omniglot"] - single[h]["omniglot"]
    for k, acc in enumerate(theory_curve):
        for s, a in acc.items():
            m[f"p1.prune.acc_cumulative[model={name}][set={s}][k={fmt_id(k)}]"] = a
        m[f"p1.prune.acc_random_mean[model={name}][set=omniglot][k={fmt_id(k)}]"] = float(rand_acc["omniglot"][:, k].mean())
        m[f"p1.prune.params_removed_fraction[model={name}][k={fmt_id(k)}]"] = fractions[k]
    for s in sets:  # mean accuracy advantage of the theory's order over random orders, k >= 1
        gain = np.mean([theory_curve[k][s] - rand_acc[s][:, k].mean() for k in range(1, len(theory_curve))])
        m[f"p1.prune.gain_over_random[model={name}][set={s}]"] = float(gain)
        gain_d = np.mean([diag_curve[k][s] - rand_acc[s][:, k].mean() for k in range(1, len(diag_curve))])
        m[f"p1.prune.gain_over_random_diagonal[model={name}][set={s}]"] = float(gain_d)
    write_metrics(io.output.metrics, m)
    print(f"base {base}; order {result['order']}")


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
