"""P1 Fig. 5b: the same-path kernels' task alignment z over independent draws of the training set and the layer-2
random head (smattn.p1.kernel_draws), with the workflow's own network (the authors' seeds) placed in that
distribution. Ledger: per kernel the median and 5 / 95 % quantiles of z, the share of draws with z > 3, and the
quantile of the workflow's z and its distance from 0.5 (docs/p1_theory.md#kernel-statistics-fig-5b)."""

import numpy as np

from smattn.scriptio import run


def main(io):
    from smattn.io import write_metrics, write_npz
    from smattn.p1 import hmc_task as H
    from smattn.p1.kernel_draws import alignment_over_draws

    p = io.params
    kw = {"n_train": int(p.n_train), "n_perm": int(p.permutations)}
    draws = alignment_over_draws(int(p.draws), int(p.seed), **kw)
    own = alignment_over_draws(1, int(p.seed), seeds=[[H.SEED_TRAIN, H.SEED_L2_RANDOM]], **kw)
    z, z_own, n = draws["z"], own["z"][0], draws["z"].shape[0]
    if not np.all(np.isfinite(z)):
        raise RuntimeError("non-finite alignment z in the draws; no result written")
    m = {"p1.hmc.fig5b.draws": n}
    for i, name in enumerate(draws["paths"]):
        q05, q50, q95 = np.quantile(z[:, i], [0.05, 0.5, 0.95])
        m[f"p1.hmc.fig5b.draws_z_median[kernel={name}]"] = q50
        m[f"p1.hmc.fig5b.draws_z_q05[kernel={name}]"] = q05
        m[f"p1.hmc.fig5b.draws_z_q95[kernel={name}]"] = q95
        above = float(np.mean(z[:, i] > 3.0))
        m[f"p1.hmc.fig5b.draws_frac_z_above_3[kernel={name}]"] = above
        m[f"p1.hmc.fig5b.draws_own_z[kernel={name}]"] = z_own[i]
        q_own = float(np.mean(z[:, i] <= z_own[i]))
        m[f"p1.hmc.fig5b.draws_own_quantile[kernel={name}]"] = q_own
        m[f"p1.hmc.fig5b.draws_own_quantile_gap[kernel={name}]"] = abs(q_own - 0.5)
        print(
            f"{name}: z median {q50:.2f} (5-95 % {q05:.2f} .. {q95:.2f}), z > 3 in {above:.3f} of {n} draws; the "
            f"workflow's network: z {z_own[i]:.2f} at quantile {q_own:.3f}",
            flush=True,
        )
    write_metrics(io.output.metrics, m)
    write_npz(io.output.draws, z=z, excess=draws["excess"], seeds=draws["seeds"], paths=np.array(draws["paths"]))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
