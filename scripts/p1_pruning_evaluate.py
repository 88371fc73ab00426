"""P1 pruning: head scores from the theory's U, then accuracy of the GD-trained network with heads removed (no
retraining): every single head, cumulative in ascending-score order, by U's diagonal only, and random orders; a
paired bootstrap interval over test tasks beside every drop; the rank correlation of head score and single-head
drop with its permutation null; the drops of an oracle order (heads ranked by their single-head drop on validation
sets disjoint from the test sets) beside the theory's, with the same intervals."""

import numpy as np

from smattn.scriptio import run


def main(io):
    import torch

    from smattn.data.published import P1_PRUNING_DROPS_POINTS
    from smattn.device import torch_device
    from smattn.io import fmt_id, write_json, write_metrics
    from smattn.p1.images.datasets import load_store
    from smattn.p1.images.export import omniglot_test_tasks, omniglot_validation_tasks, ood_set, ood_validation_set
    from smattn.p1.images.pruning import BootstrapSettings, drop_verdict, evaluate_pruning, head_label
    from smattn.p1.images.training import model_from_checkpoint, predict
    from smattn.p1.images.uncertainty import rank_correlation

    p = io.params
    name = io.wildcards.model
    ck = torch.load(io.input.model, map_location="cpu", weights_only=True)
    model = model_from_checkpoint(ck).to(torch_device()).eval()
    seed = int(ck["config"]["seed"])
    store = load_store(io.input.store)
    sets = {"omniglot": omniglot_test_tasks(store, seed, int(p.n_omniglot))}
    # the oracle's validation sets, of the test sets' sizes: Omniglot tasks on the validation classes, OOD sequences
    # built from training images that no test sequence shows
    val = {"omniglot": omniglot_validation_tasks(store, seed, int(p.n_omniglot))}
    for s in ("mnist", "fashion"):
        sets[s] = ood_set(store, seed, s)
        val[s] = ood_validation_set(store, seed, s)
    with np.load(io.input.U, allow_pickle=False) as z:
        U, heads = z["U"], tuple(int(h) for h in z["heads"])
    boot = BootstrapSettings(int(p.bootstrap_resamples), int(p.bootstrap_seed), float(p.ci_level))
    rank_k = [int(k) for k in p.rank_k]
    ev = evaluate_pruning(
        model, sets, U, heads, predict, int(p.random_orders), int(p.random_seed), boot, rank_k, validation=val
    )
    result = {"model": name, **ev.as_json()}
    write_json(io.output.result, result)
    m = {}
    for h in ev.order:
        lab = head_label(h)
        if p.ledger_single:
            m[f"p1.prune.score[model={name}][head={lab}]"] = ev.scores[h]
            m[f"p1.prune.drop_single[model={name}][head={lab}]"] = ev.drop_single(h, "omniglot")
            lo, hi = ev.single_ci[h]["omniglot"]
            m[f"p1.prune.drop_ci_low[model={name}][head={lab}]"] = lo
            m[f"p1.prune.drop_ci_high[model={name}][head={lab}]"] = hi
    for k, acc in enumerate(ev.theory):
        for s, a in acc.items():
            m[f"p1.prune.acc_cumulative[model={name}][set={s}][k={fmt_id(k)}]"] = a
            if k >= 1:  # accuracy lost with the k lowest-scoring heads, and its paired bootstrap interval
                m[f"p1.prune.drop_cumulative[model={name}][set={s}][k={fmt_id(k)}]"] = ev.drop_cumulative(k, s)
                lo, hi = ev.theory_ci[k][s]
                m[f"p1.prune.drop_ci_low[model={name}][set={s}][k={fmt_id(k)}]"] = lo
                m[f"p1.prune.drop_ci_high[model={name}][set={s}][k={fmt_id(k)}]"] = hi
                # test sequences the pruning gets right where the unpruned network does not, and the reverse
                c0, ck = ev.correct_base[s], ev.correct_theory[k][s]
                m[f"p1.prune.n_fixed[model={name}][set={s}][k={fmt_id(k)}]"] = int(np.sum(ck & ~c0))
                m[f"p1.prune.n_broken[model={name}][set={s}][k={fmt_id(k)}]"] = int(np.sum(c0 & ~ck))
        m[f"p1.prune.acc_random_mean[model={name}][set=omniglot][k={fmt_id(k)}]"] = ev.random_mean("omniglot", k)
        m[f"p1.prune.acc_random_sd[model={name}][set=omniglot][k={fmt_id(k)}]"] = ev.random_sd("omniglot", k)
        m[f"p1.prune.params_removed_fraction[model={name}][k={fmt_id(k)}]"] = ev.params_removed_fraction[k]
    for s, acc in ev.oracle.items():  # the oracle's order for set s, from its validation set, on its test set
        m[f"p1.prune.n_val[model={name}][set={s}]"] = ev.n_val[s]
        for k in range(1, len(acc)):
            m[f"p1.prune.oracle_drop[model={name}][set={s}][k={fmt_id(k)}]"] = ev.drop_oracle(k, s)
            lo, hi = ev.oracle_ci[s][k]
            m[f"p1.prune.oracle_drop_ci_low[model={name}][set={s}][k={fmt_id(k)}]"] = lo
            m[f"p1.prune.oracle_drop_ci_high[model={name}][set={s}][k={fmt_id(k)}]"] = hi
    for k, by_set in ev.subset_p.items():  # the theory's k-head pruning ranked among all k-head prunings
        for s, v in by_set.items():
            m[f"p1.prune.subset_p[model={name}][set={s}][k={fmt_id(k)}]"] = v
    for k, by_set in ev.oracle_subset_p.items():  # the oracle's k-head pruning ranked the same way
        for s, v in by_set.items():
            m[f"p1.prune.oracle_subset_p[model={name}][set={s}][k={fmt_id(k)}]"] = v
        print(f"k = {k}: share of all {k}-head prunings at least as accurate as the theory's: {by_set}", flush=True)
    # do the theory's head scores order the single-head ID drops? Spearman's rho with its permutation null
    drops = [ev.drop_single(h, "omniglot") for h in ev.order]
    rc = rank_correlation([ev.scores[h] for h in ev.order], drops, seed=int(p.random_seed))
    m[f"p1.prune.score_drop_rho[model={name}]"] = rc.observed
    m[f"p1.prune.score_drop_p[model={name}]"] = rc.p_value
    print(f"score vs single-head ID drop: Spearman {rc.observed:.3f}, one-sided p {rc.p_value:.3g} ({rc.draws} draws)")
    if p.ledger_single:  # the same statistic on the authors' drops (Fig. 3e, heads in ascending score order)
        pub = rank_correlation(np.arange(len(P1_PRUNING_DROPS_POINTS)), P1_PRUNING_DROPS_POINTS, seed=0)
        m[f"p1.prune.score_drop_rho_published[model={name}]"] = pub.observed
        m[f"p1.prune.score_drop_p_published[model={name}]"] = pub.p_value
    gain, gain_d = ev.gain_over_random("theory"), ev.gain_over_random("diagonal")
    for s in sets:  # test examples behind every accuracy (binomial errors); advantage of an order over random ones
        m[f"p1.prune.n[model={name}][set={s}]"] = ev.n[s]
        m[f"p1.prune.gain_over_random[model={name}][set={s}]"] = gain[s]
        m[f"p1.prune.gain_over_random_diagonal[model={name}][set={s}]"] = gain_d[s]
    write_metrics(io.output.metrics, m)
    print(f"base {ev.base}; order {result['order']}")
    for s in sets:
        print(f"oracle order for {s} (validation drops, {ev.n_val[s]} examples): {result['oracle']['order'][s]}")
    for k in range(1, len(ev.steps)):
        for s in sets:
            lo, hi = ev.theory_ci[k][s]
            olo, ohi = ev.oracle_ci[s][k]
            orc = " ".join(result["oracle"]["pruned"][s][k])
            print(
                f"k = {k} ({' '.join(result['cumulative']['pruned'][k])}), {s}: drop {ev.drop_cumulative(k, s):+.4f}"
                f" [{lo:+.4f}, {hi:+.4f}]: {drop_verdict(lo, hi)}; oracle ({orc})"
                f" {ev.drop_oracle(k, s):+.4f} [{olo:+.4f}, {ohi:+.4f}]: {drop_verdict(olo, ohi)}"
            )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
