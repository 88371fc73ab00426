"""Ledger entries of the image task (ids of issue 6): theory accuracies at the selected T, selected T, GP accuracies,
sampled accuracies and the NUTS sampler's efficiency and convergence, sign agreement of U (theory vs GD) and the maximal PC-label overlaps."""

import json

import numpy as np

from smattn.scriptio import run

# sampler efficiency and convergence (sample-file key -> metric name; rhat_max: split R-hat over the U entries)
NUTS_METRICS = {"grads_per_ess": "grads_per_ess", "max_depth_fraction": "max_depth_fraction",
                "rhat_U_max": "rhat_max", "ess_per_s_sampling": "ess_per_s_sampling"}


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
        for key, name in NUTS_METRICS.items():
            if d.get(key) is not None:  # absent when not measurable (e.g. R-hat below 4 draws)
                m[f"p1.img.nuts.{name}[model={d['model']}][N={d['N']}]"] = d[key]
    th = np.load(io.input.theory_l2h4)
    U = th["U_selected"][int(np.argmin(th["widths"]))]
    U_gd = np.array(json.load(open(io.input.gd_eval_l2h4))["U_gd"])
    off = ~np.eye(U.shape[0], dtype=bool)
    m["p1.img.U_sign_agreement[theory_vs_gd]"] = float(np.mean(np.sign(U[off]) == np.sign(U_gd[off])))
    m["p1.img.alignment_max_overlap[kernel=gp]"] = float(th["overlap_gp"].max())
    m["p1.img.alignment_max_overlap[kernel=renormalised]"] = float(th["overlap_renormalised"].max())
    for k, v in m.items():
        print(f"{k} = {v:.6g}")
    write_metrics(io.output.metrics, m)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
