"""P1 Fig. 2e / 5c: accuracy vs width of the good + denoising network at sigma_perp = 5 (theory, sampled, GP).
Ledger: the accuracies, the theory's gain over the GP limit on the verdict test set (paired standard error), sampled
minus theory and the sampler's diagnostics (docs/p1_theory.md#claims)."""

import json

from smattn.scriptio import run


def main(io):
    import numpy as np

    from smattn.io import fmt_id, pyplot, save_figure, write_csv, write_metrics
    from smattn.p1.agreement import accuracy_gaps, sampled_record_metrics
    from smattn.p1.sampler import nuts_ledger_entries

    plt = pyplot()  # the figures' one style, the same for both papers

    th = json.load(open(io.input.theory))
    sample_files = io.input.samples if isinstance(io.input.samples, list) else [io.input.samples]
    samples = [json.load(open(f)) for f in sample_files if f]
    fig, ax = plt.subplots(figsize=(4.2, 3.2))
    ax.plot(
        [r["N"] for r in th["runs"]],
        [100 * r["acc"] for r in th["runs"]],
        ":x",
        color="tab:blue",
        label="theory (renormalised)",
    )
    if samples:
        ax.plot([s["N"] for s in samples], [100 * s["acc"] for s in samples], "o", color="black", label="sampled")
    ax.axhline(100 * th["acc_gp"], color="red", ls=":", label="GP")
    ax.set_xscale("log")
    ax.set_xlabel("width N")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title(io.params.title, fontsize=9)
    ax.legend(fontsize=7)
    save_figure(fig, io.output.png, io.output.pdf)
    plt.close(fig)
    rows = [["theory", r["N"], r["acc"], r["steps"], r["g_max"]] for r in th["runs"]]
    rows += [["sampled", s["N"], s["acc"], s["n_samples"], s["divergences"]] for s in samples]
    rows += [["gp", "", th["acc_gp"], "", ""]]
    write_csv(io.output.csv, ["kind", "N", "accuracy", "steps_or_samples", "g_max_or_divergences"], rows)

    # ledger: theory, GP and sampled accuracies of this layer-1 head (params.head: random or uniform)
    head = io.params.head
    m = {}
    for r in th["runs"]:
        m[f"p1.hmc2.acc_theory[head={head}][N={fmt_id(r['N'])}]"] = r["acc"]
    m[f"p1.hmc2.acc_gp[head={head}]"] = th["acc_gp"]
    with np.load(io.input.predictions) as z:
        pred = {k: z[k] for k in z.files}
    widths = [float(w) for w in pred["widths"]]
    for s in samples:
        tag = f"[head={head}][N={fmt_id(s['N'])}]"
        m.update({f"p1.hmc2.{k}{tag}": v for k, v in sampled_record_metrics(s, th, pred).items()})
        m.update(nuts_ledger_entries(s, "p1.hmc2.nuts", tag))
    lines = {"gp": pred["f_verdict_gp"], "theory": pred["f_verdict_theory"][0]}
    ((d, se),) = accuracy_gaps(lines, pred["y_verdict"], {"g": ("theory", "gp")}).values()
    name = f"theory_N{fmt_id(widths[0])}-gp"
    m[f"p1.hmc2.acc_gap[head={head}][{name}]"], m[f"p1.hmc2.acc_gap_se[head={head}][{name}]"] = d, se
    write_metrics(io.output.metrics, m)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
