"""Ledger entries of the image task (ids of issue 6): theory accuracies at the selected T, selected T, GP accuracies,
sampled accuracies, sign agreement of U (theory vs GD), the maximal PC-label overlaps and the GD loop's speed
(steps/s, ms per step building batches)."""

import json

import numpy as np

from smattn.scriptio import run


def main(io):
    from smattn.io import fmt_id, write_metrics
    from smattn.p1.images.theory_grid import TEST_SETS

    m = {}
    for model, path in (("L2H4", io.input.theory_l2h4), ("L3H3", io.input.theory_l3h3)):
        th = np.load(path)
        for i, N in enumerate(th["widths"]):
            m[f"p1.img.T_selected[model={model}][N={fmt_id(N)}]"] = float(th["T_selected"][i])
            for s in TEST_SETS:
                m[f"p1.img.acc_theory[model={model}][set={s}][N={fmt_id(N)}]"] = float(th[f"acc_selected_{s}"][i])
        for s in TEST_SETS:
            m[f"p1.img.acc_gp[model={model}][set={s}]"] = float(th[f"gp_acc_selected_{s}"])
    for path in io.input.samples:
        d = json.load(open(path))
        for s in TEST_SETS:
            m[f"p1.img.acc_sampled[model={d['model']}][set={s}][N={d['N']}]"] = d["acc"][s]
    th = np.load(io.input.theory_l2h4)
    U = th["U_selected"][int(np.argmin(th["widths"]))]
    U_gd = np.array(json.load(open(io.input.gd_eval_l2h4))["U_gd"])
    off = ~np.eye(U.shape[0], dtype=bool)
    m["p1.img.U_sign_agreement[theory_vs_gd]"] = float(np.mean(np.sign(U[off]) == np.sign(U_gd[off])))
    tr = json.load(open(io.input.train_l2h4))  # the training loop's own timing (this run's device)
    if tr.get("steps_per_second") is not None:
        m["p1.img.gd_steps_per_s[model=L2H4]"] = float(tr["steps_per_second"])
    if tr.get("batch_ms_per_step") is not None:
        m["p1.img.gd_batch_ms[model=L2H4]"] = float(tr["batch_ms_per_step"])
    m["p1.img.alignment_max_overlap[kernel=gp]"] = float(th["overlap_gp"].max())
    m["p1.img.alignment_max_overlap[kernel=renormalised]"] = float(th["overlap_renormalised"].max())
    for k, v in m.items():
        print(f"{k} = {v:.6g}")
    write_metrics(io.output.metrics, m)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
