"""P2 Fig. 3 right: similarity S_l(t) of W_l W_l^T to its final value on TREC (ours: thin runs and mean;
authors' published means dashed), and our validation accuracy per epoch."""

import json

import numpy as np

from smattn.scriptio import run


def main(io):
    from smattn.data.spoc import read_npy
    from smattn.io import save_figure, write_csv, write_metrics
    from smattn.p2.plotting import BLUE, DBLUE, DRED, RED, plt
    from smattn.p2.trajectories import first_crossing, log_spaced_indices

    runs = [np.load(f) for f in io.input.runs]
    spe = {int(r["steps_per_epoch"]) for r in runs}
    if len(spe) != 1:
        raise ValueError(f"repetitions disagree on steps per epoch: {sorted(spe)}")
    spe = spe.pop()
    S = np.stack([r["similarity"] for r in runs], axis=1)  # (layer, run, step)
    acc = np.stack([r["val_accuracy"] for r in runs])  # (run, epoch)
    ref = np.stack([read_npy(io.input.ref_s1), read_npy(io.input.ref_s2)])  # (layer, 8, 10920)
    ref_spe = 273
    cfg = json.loads(str(runs[0]["config"]))
    x = (np.arange(S.shape[-1]) + 1) / spe
    xr = (np.arange(ref.shape[-1]) + 1) / ref_spe

    fig, (ax, axa) = plt.subplots(1, 2, figsize=(6.4, 2.9), gridspec_kw={"width_ratios": [2.2, 1]})
    for layer, (col, dcol) in enumerate(((BLUE, DBLUE), (RED, DRED))):
        for r in range(S.shape[1]):
            ax.plot(x, S[layer, r], color=col, lw=0.5, alpha=0.35)
        ax.plot(x, S[layer].mean(0), color=col, lw=2.0, label=f"layer {layer + 1} (ours, mean)")
        ax.plot(xr, ref[layer].mean(0), color=dcol, lw=1.2, ls="--", label=f"layer {layer + 1} (authors, mean)")
    ax.set_xscale("log")
    ax.set_xlabel("epochs")
    ax.set_ylabel(r"$\mathcal{S}_\ell(t)$: similarity of $W_\ell W_\ell^\top$ to final")
    mask_txt = "mask used" if cfg["use_attention_mask"] else "padding attended"
    ax.set_title(f"TREC, {S.shape[1]} runs, lr={cfg['lr']:g}, {mask_txt}", fontsize=8.5)
    ax.set_ylim(0, 1.03)
    ax.legend(fontsize=6.5, loc="lower right", frameon=False)
    ep = np.arange(1, acc.shape[1] + 1)
    for r in range(acc.shape[0]):
        axa.plot(ep, acc[r], color="0.6", lw=0.6)
    axa.plot(ep, acc.mean(0), color="k", lw=1.6, marker=".", ms=3)
    axa.set_xlabel("epochs")
    axa.set_ylabel("validation accuracy")
    axa.set_ylim(0, 1)
    fig.tight_layout()
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
        row = [int(i), x[i], S[0, :, i].mean(), S[1, :, i].mean()]
        row += [S[l, r, i] for l in range(2) for r in range(S.shape[1])]
        row += [ref[0, :, i].mean(), ref[1, :, i].mean()] if i < ref.shape[-1] else ["", ""]
        rows.append(row)
    write_csv(io.output.csv, header, rows)
    write_csv(
        io.output.accuracy_csv,
        ["epoch"] + [f"run{r}" for r in range(acc.shape[0])] + ["mean"],
        [[int(e)] + list(acc[:, e - 1]) + [acc[:, e - 1].mean()] for e in ep],
    )

    metrics = {}
    for layer in range(2):
        # half of the rise from the first recorded value to the final one (S starts well above 0)
        k = first_crossing(S[layer], 0.5, from_start=True)
        kr = first_crossing(ref[layer], 0.5, from_start=True)
        metrics[f"p2.trec.epochs_to_half[layer={layer + 1}]"] = float(((k + 1) / spe).mean())
        print(
            f"layer {layer + 1}: half at epochs {(k + 1) / spe} (mean {((k + 1) / spe).mean():.4f}); "
            f"authors {((kr + 1) / ref_spe).mean():.4f}; initial S ours {S[layer, :, 0].mean():.3f}, "
            f"authors {ref[layer, :, 0].mean():.3f}",
            flush=True,
        )
    metrics["p2.trec.val_accuracy"] = float(acc[:, -1].mean())
    metrics["p2.trec.steps_per_s"] = float(np.mean([S.shape[-1] / float(r["wall_s"]) for r in runs]))
    write_metrics(io.output.metrics, metrics)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
