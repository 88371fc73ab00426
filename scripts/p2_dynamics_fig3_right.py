"""P2 Fig. 3 right: similarity S_l(t) of W_l W_l^T to its final value on TREC against optimiser steps (epochs on
the top axis; ours: thin runs and mean; the authors' published means dashed with their min-max band), and our
validation accuracy per epoch. Metrics: start similarity and half-rise step per layer with standard errors over
runs (``_se``), the layer-2 change over the first 40 steps, and the sequential-learning quantities of these runs:
``p2.trec.phi`` (the fraction of its rise layer 2 has covered when layer 1 is learned) and
``p2.trec.half_rise_gap`` (layer 2's half-rise step minus layer 1's), each with ``_se`` (docs/p2_dynamics.md,
"TREC")."""

import json

import numpy as np

from smattn.scriptio import run


def main(io):
    from smattn.data.spoc import read_npy
    from smattn.io import save_figure, write_csv, write_metrics
    from smattn.p2.dynamics import trec_metrics as tm
    from smattn.p2.plotting import BLUE, DBLUE, DRED, RED, plt
    from smattn.p2.trajectories import log_spaced_indices

    runs = [np.load(f) for f in io.input.runs]
    spe = {int(r["steps_per_epoch"]) for r in runs}
    if len(spe) != 1:
        raise ValueError(f"repetitions disagree on steps per epoch: {sorted(spe)}")
    spe = spe.pop()
    S = np.stack([r["similarity"] for r in runs], axis=1)  # (layer, run, step)
    acc = np.stack([r["val_accuracy"] for r in runs])  # (run, epoch)
    ref = np.stack([read_npy(io.input.ref_s1), read_npy(io.input.ref_s2)])  # (layer, 8, 10920)
    cfg = json.loads(str(runs[0]["config"]))
    steps = np.arange(1, S.shape[-1] + 1)
    steps_ref = np.arange(1, ref.shape[-1] + 1)

    fig, (ax, axa) = plt.subplots(1, 2, figsize=(6.6, 3.1), gridspec_kw={"width_ratios": [2.2, 1]})
    for layer, (col, dcol) in enumerate(((BLUE, DBLUE), (RED, DRED))):
        ax.fill_between(steps_ref, ref[layer].min(0), ref[layer].max(0), color=dcol, alpha=0.12, lw=0)
        ax.plot(
            steps_ref,
            ref[layer].mean(0),
            color=dcol,
            lw=1.2,
            ls="--",
            label=f"layer {layer + 1}, authors (mean, range)",
        )
        for r in range(S.shape[1]):
            ax.plot(steps, S[layer, r], color=col, lw=0.5, alpha=0.35)
        ax.plot(steps, S[layer].mean(0), color=col, lw=2.0, label=f"layer {layer + 1}, ours (mean)")
    ax.set_xscale("log")
    ax.set_xlabel("optimiser steps")
    top = ax.secondary_xaxis("top", functions=(lambda s: s / spe, lambda e: e * spe))
    top.set_xlabel(f"epochs (ours: {spe} steps each)", fontsize=7.5)
    top.tick_params(labelsize=7)
    ax.set_ylabel(r"$\mathcal{S}_\ell(t)$: similarity of $W_\ell W_\ell^\top$ to final")
    mask_txt = "mask used" if cfg["use_attention_mask"] else "padding attended"
    opt_txt = {"torch_adamw": "torch AdamW", "transformers_adamw": "transformers AdamW"}[cfg["optimizer"]]
    fig.suptitle(
        f"TREC, {S.shape[1]} runs, attention init std {cfg['attn_init_std']:g}, {opt_txt}, "
        f"lr={cfg['lr']:g}, {mask_txt}",
        fontsize=8,
    )
    ax.set_ylim(0, 1.03)
    ax.set_xlim(1, max(S.shape[-1], ref.shape[-1]))
    ax.legend(fontsize=5.5, loc="center right", bbox_to_anchor=(1.0, 0.42), frameon=False)
    ep = np.arange(1, acc.shape[1] + 1)
    for r in range(acc.shape[0]):
        axa.plot(ep, acc[r], color="0.6", lw=0.6)
    axa.plot(ep, acc.mean(0), color="k", lw=1.6, marker=".", ms=3)
    axa.set_xlabel("epochs")
    axa.set_ylabel("validation accuracy")
    axa.set_ylim(0, 1)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    save_figure(fig, io.output.png, io.output.pdf)
    plt.close(fig)

    n = S.shape[-1]
    step_idx = log_spaced_indices(n, 1500)
    header = (
        ["step", "epoch"]
        + [f"S{l + 1}_mean" for l in range(2)]
        + [f"S{l + 1}_run{r}" for l in range(2) for r in range(S.shape[1])]
        + ["ref_S1_mean", "ref_S2_mean"]
    )
    rows = []
    for i in step_idx:
        row = [int(i) + 1, (i + 1) / spe, S[0, :, i].mean(), S[1, :, i].mean()]
        row += [S[l, r, i] for l in range(2) for r in range(S.shape[1])]
        row += [ref[0, :, i].mean(), ref[1, :, i].mean()] if i < ref.shape[-1] else ["", ""]
        rows.append(row)
    write_csv(io.output.csv, header, rows)
    write_csv(
        io.output.accuracy_csv,
        ["epoch"] + [f"run{r}" for r in range(acc.shape[0])] + ["mean"],
        [[int(e)] + list(acc[:, e - 1]) + [acc[:, e - 1].mean()] for e in ep],
    )

    ours = tm.summarise(S[0], S[1])
    pub = tm.summarise(ref[0], ref[1])
    metrics = {}
    R = S.shape[1]
    for q in tm.QUANTITIES:
        name, layer = q.split("[")
        metrics[f"p2.trec.{q}"] = float(ours[q].mean())
        if R >= 2:
            metrics[f"p2.trec.{name}_se[{layer}"] = float(ours[q].std(ddof=1) / np.sqrt(R))
        print(
            f"{q}: ours {np.round(ours[q], 4)} (mean {ours[q].mean():.4g}); authors mean {pub[q].mean():.4g}, "
            f"range {pub[q].min():.4g}-{pub[q].max():.4g}",
            flush=True,
        )
    for layer in range(2):
        metrics[f"p2.trec.epochs_to_half[layer={layer + 1}]"] = float((tm.half_rise_steps(S[layer]) / spe).mean())
    n40 = min(40, n)
    metrics["p2.trec.layer2_max_change[steps=40]"] = float(tm.max_change(S[1], n40).max())
    print(
        f"layer 2: max |S2(t) - S2(1)| over the first {n40} steps {tm.max_change(S[1], n40)} "
        f"(authors over 40: max {tm.max_change(ref[1], 40).max():.2g}); flat steps ours {tm.flat_steps(S[1])}, "
        f"authors {tm.flat_steps(ref[1])}",
        flush=True,
    )
    # the sequential-learning criterion on these whole trainings (the paper's own S; docs/p2_dynamics.md)
    seq = tm.sequential_verdict(tm.sequential_per_run(S[0], S[1], full_length=True))
    print(f"sequential learning (runs of this configuration): {seq}", flush=True)
    if seq["outcome"] != "undecided":
        for q, name in (("phi", "phi"), ("gap", "half_rise_gap")):
            metrics[f"p2.trec.{name}"] = seq[q]
            metrics[f"p2.trec.{name}_se"] = seq[f"{q}_se"]
    metrics["p2.trec.val_accuracy"] = float(acc[:, -1].mean())
    metrics["p2.trec.steps_per_s"] = float(np.mean([S.shape[-1] / float(r["wall_s"]) for r in runs]))
    write_metrics(io.output.metrics, metrics)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
