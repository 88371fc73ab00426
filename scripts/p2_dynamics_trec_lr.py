"""P2 Fig. 3 right, learning rate at the notebook's init: per learning rate, S_1 after step 20, S_1 and S_2 after one
epoch and layer 2's largest change over the first 40 steps (smattn.p2.dynamics.trec_metrics.lr_fit_quantities),
against the authors' published runs (dist_1.npy, dist_2.npy) at the same reference step, and whether each learning
rate fits them (lr_fit_verdict).

Our runs' similarities are to their own last step. Where that is not the published runs' final step (runs shorter
than the whole 40-epoch training), the published values are replaced by their bounds at our last step
(lr_fit_bounds, from the triangle inequality for the angles between Gram matrices); for whole trainings the bounds
are the published values themselves.

Outputs: ``table`` (CSV, one row per learning rate plus the published rows), ``markdown`` (the same table) and
``metrics``:
* per learning rate ``p2.trec_lr.{s1_step20,s1_epoch1,s2_epoch1,s2_change40}[lr=..]`` with ``_se`` siblings (means
  and standard errors over runs) and ``p2.trec_lr.fits[lr=..]`` (1 every quantity fits, 0 not);
* the counts ``p2.trec_lr.n_lrs``, ``p2.trec_lr.n_fit`` and ``p2.trec_lr.ref_step`` (the reference step, 1-based);
* ``p2.trec_lr.published.{q}`` and ``{q}_sd`` (the published runs as published: mean and sd over the 8 runs) and
  ``p2.trec_lr.published.{q}_lo``, ``{q}_hi``, ``{q}_se`` (their bounds at the reference step: means over runs, and
  the larger standard error of the two).
"""

import numpy as np

from smattn.scriptio import run

PUBLISHED_EPOCHS = 40  # the published arrays hold 40 epochs of 273 steps


def main(io):
    from smattn.data.spoc import read_npy
    from smattn.io import fmt_id, write_csv, write_metrics, write_text
    from smattn.p2.dynamics import trec_metrics as tm

    P1, P2 = read_npy(io.input.ref_s1), read_npy(io.input.ref_s2)
    n_pub = P1.shape[-1]
    pub_epoch = n_pub // PUBLISHED_EPOCHS
    Q = tm.LR_QUANTITIES
    published = tm.lr_fit_quantities(P1, P2, pub_epoch)
    metrics = {}
    for q in Q:
        metrics[f"p2.trec_lr.published.{q}"] = float(published[q].mean())
        metrics[f"p2.trec_lr.published.{q}_sd"] = float(published[q].std(ddof=1))

    rows, refs = [], set()
    for path in io.input.runs:
        z = np.load(path)
        S = z["similarity"]  # (runs, 2, steps), to each run's last step
        steps, full = S.shape[-1], int(z["full_steps"])
        ref = n_pub if steps == full else min(steps, n_pub)  # a whole training: the published final step
        refs.add(ref)
        bounds = tm.lr_fit_bounds(P1, P2, pub_epoch, ref)
        ours = tm.lr_fit_quantities(S[:, 0], S[:, 1], int(z["steps_per_epoch"]))
        res = tm.lr_fit_verdict(ours, bounds)
        lr = float(z["lr"])
        res.update(lr=lr, init=float(z["init"]), optimizer=str(z["optimizer"]), steps=steps, runs=S.shape[0])
        rows.append(res)
        label = f"lr={fmt_id(lr)}"
        for q in Q:
            metrics[f"p2.trec_lr.{q}[{label}]"] = res[q]
            metrics[f"p2.trec_lr.{q}_se[{label}]"] = res[f"{q}_se"]
        metrics[f"p2.trec_lr.fits[{label}]"] = float(res["fits"])
    if len(refs) != 1:
        raise ValueError(f"the learning rates' runs have different reference steps {sorted(refs)}")
    (ref,) = refs
    rows.sort(key=lambda r: r["lr"])
    for q in Q:
        for k in ("pub_lo", "pub_hi", "pub_se"):
            metrics[f"p2.trec_lr.published.{q}_{k[4:]}"] = rows[0][f"{q}_{k}"]
    metrics["p2.trec_lr.ref_step"] = ref
    metrics["p2.trec_lr.n_lrs"] = len(rows)
    metrics["p2.trec_lr.n_fit"] = sum(r["fits"] for r in rows)

    header = ["configuration", "lr", "init_std", "optimizer", "steps", "runs"]
    header += [c for q in Q for c in (q, f"{q}_se", f"{q}_fits")] + ["fits"]
    table = [
        [f"lr={fmt_id(r['lr'])}", r["lr"], r["init"], r["optimizer"], r["steps"], r["runs"]]
        + [r[c] for q in Q for c in (q, f"{q}_se", f"{q}_fits")]
        + [r["fits"]]
        for r in rows
    ]
    nan = float("nan")
    table.append(
        ["published (as published)", nan, nan, "", n_pub, P1.shape[0]]
        + [v for q in Q for v in (metrics[f"p2.trec_lr.published.{q}"], metrics[f"p2.trec_lr.published.{q}_sd"], "")]
        + [""]
    )
    for end in ("lo", "hi"):
        table.append(
            [f"published at step {ref} ({end})", nan, nan, "", ref, P1.shape[0]]
            + [v for q in Q for v in (rows[0][f"{q}_pub_{end}"], rows[0][f"{q}_pub_se"], "")]
            + [""]
        )
    write_csv(io.output.table, header, table)

    def cell(r, q):
        return f"{r[q]:.3g} ± {r[f'{q}_se']:.2g}" + ("" if r[f"{q}_fits"] else " ✗")

    def pub(q):
        lo, hi, se = (rows[0][f"{q}_pub_{k}"] for k in ("lo", "hi", "se"))
        return f"{lo:.3g} ± {se:.2g}" if lo == hi else f"[{lo:.3g}, {hi:.3g}] ± {se:.2g}"

    lines = [
        "| lr | runs x steps | S_1 after step 20 | S_1 after epoch 1 | S_2 after epoch 1 "
        "| largest change of S_2, steps 1-40 | fits |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {fmt_id(r['lr'])} | {r['runs']} x {r['steps']} | "
            + " | ".join(cell(r, q) for q in Q)
            + f" | {'yes' if r['fits'] else 'no'} |"
        )
    lines.append(
        f"| published, to step {ref} | 8 x {n_pub} | " + " | ".join(pub(q) for q in Q) + " | |",
    )
    lines.append(
        f"| published, as published (sd) | 8 x {n_pub} | "
        + " | ".join(
            f"{metrics[f'p2.trec_lr.published.{q}']:.3g} (sd {metrics[f'p2.trec_lr.published.{q}_sd']:.2g})" for q in Q
        )
        + " | |"
    )
    K = tm.LR_FIT["k_sigma"]
    init, opt = rows[0]["init"], rows[0]["optimizer"]
    lines += [
        "",
        f"Init std {fmt_id(init)}, {opt}. Means ± standard errors over runs; similarities to step {ref} (our runs' "
        f"last step). The published runs' similarities are to their final step ({n_pub}); at another reference step "
        "they are known only within bounds (the triangle inequality for the angles between Gram matrices), shown as "
        f"[lo, hi] (means over the 8 runs ± the larger standard error). A quantity fits (no ✗) if our mean lies in "
        f"[lo - {K:g} c, hi + {K:g} c], c the combined standard error; a learning rate fits if every quantity does. "
        f"Fit: {metrics['p2.trec_lr.n_fit']} of {len(rows)} (docs/p2_dynamics.md).",
    ]
    write_text(io.output.markdown, "\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)
    write_metrics(io.output.metrics, metrics)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
