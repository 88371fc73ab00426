"""P1 HMC metrics for the ledger: theory and sampled accuracies, GP lines, U at N = 10, alignment, timing, and the
NUTS sampler's efficiency and convergence at the sampled widths."""

import json

import numpy as np

from smattn.scriptio import run

# sampler efficiency and convergence of the sampled widths (rhat_max: split R-hat over the U entries)
NUTS_METRICS = {"grads_per_ess": "grads_per_ess", "max_depth_fraction": "max_depth_fraction",
                "rhat_U_max": "rhat_max", "ess_per_s_sampling": "ess_per_s_sampling"}


def main(io):
    from smattn.io import fmt_id, write_metrics

    th = json.load(open(io.input.theory_all))
    m = {}
    for r in th["runs"]:
        m[f"p1.hmc.acc_theory[N={fmt_id(r['N'])}]"] = r["acc"]
    for f in io.input.samples_all:
        s = json.load(open(f))
        m[f"p1.hmc.acc_sampled[N={fmt_id(s['N'])}]"] = s["acc"]
        for key, name in NUTS_METRICS.items():
            if s.get(key) is not None:  # absent when not measurable (e.g. R-hat below 4 draws)
                m[f"p1.hmc.nuts.{name}[N={fmt_id(s['N'])}]"] = s[key]
    m["p1.hmc.acc_gp_all"] = th["acc_gp"]
    m["p1.hmc.acc_gp_good"] = th["acc_gp_good"]
    m["p1.hmc.acc_gp_good_denoising"] = th["acc_gp_good_denoising"]
    r10 = [r for r in th["runs"] if r["N"] == 10.0]
    if r10:
        U = np.asarray(r10[0]["U"])
        for i in range(4):
            for j in range(i, 4):
                m[f"p1.hmc.U[N=10][{i},{j}]"] = U[i, j]
        m["p1.hmc.minimise_seconds[N=10]"] = r10[0]["seconds"]
        al = th["alignment"]
        m["p1.hmc.alignment_max_overlap[kernel=gp]"] = max(al["gp"])
        m["p1.hmc.alignment_max_overlap[kernel=renormalised]"] = max(al["renormalised"])
    for head, f in (("random", io.input.theory_random), ("uniform", io.input.theory_uniform)):
        t = json.load(open(f))
        for r in t["runs"]:
            m[f"p1.hmc2.acc_theory[head={head}][N={fmt_id(r['N'])}]"] = r["acc"]
        m[f"p1.hmc2.acc_gp[head={head}]"] = t["acc_gp"]
    for head, files in (("random", io.input.samples_random), ("uniform", io.input.samples_uniform)):
        for f in files:
            s = json.load(open(f))
            m[f"p1.hmc2.acc_sampled[head={head}][N={fmt_id(s['N'])}]"] = s["acc"]
    write_metrics(io.output.metrics, m)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
