"""First-layer growth of GAMP once the last layer is learned, against the state evolution (P2 Fig. 2 left).

GAMP runs from an informed start (last layer at Q22 = gamp_growth_q22, first layer at overlap gamp_growth_m1, on
the Bayes-optimal line); the ratio m1(1)/m1(0) of the first step, averaged over seeds, is set against the state
evolution's one-step prediction from the same overlap (docs/p2_dynamics.md#gamp-iterations).

Outputs ``csv`` (per seed and iteration: m1, ratio, Q11, A11) and ``metrics``.
"""

import numpy as np

from smattn.scriptio import run


def main(io):
    from smattn.io import write_csv, write_metrics
    from smattn.p2.theory.gamp_growth import gamp_growth_runs, se_growth_ratio
    from smattn.p2.theory.quadrature import QuadratureSettings

    p = io.params
    se = se_growth_ratio(p.alpha, p.m1, p.q22, damping=p.damping, n_samples=p.se_samples, seed=p.seed)
    print(
        f"[growth] SE one-step ratio {se['ratio']:.3f} +- {se['ratio_se']:.3f} (linearised "
        f"{se['ratio_linear']:.3f}, K1 = {se['K1']:.3f})",
        flush=True,
    )
    se_default = se_growth_ratio(
        p.alpha, p.m1, p.q22, damping=p.damping, n_samples=p.se_samples, seed=p.seed, quad=QuadratureSettings()
    )
    print(
        f"[growth] the same with GAMP's default grid: {se_default['ratio']:.3f} +- {se_default['ratio_se']:.3f}",
        flush=True,
    )
    seeds = [int(p.seed) * 1000 + 500 + s for s in range(p.seeds)]
    g = gamp_growth_runs(p.d, p.alpha, p.m1, p.q22, seeds, p.iterations, damping=p.damping, onsager=p.onsager)
    rows = [
        [s, t + 1, g.m1[i, t + 1], g.ratio[i, t], g.q11[i, t + 1], g.a11[i, t], g.m2_cos[i, t + 1]]
        for i, s in enumerate(seeds)
        for t in range(p.iterations)
    ]
    write_csv(io.output.csv, ["seed", "iteration", "m1", "ratio", "Q11", "A11", "layer2_cosine"], rows)
    for t in range(p.iterations):
        r = g.ratio[:, t]
        print(
            f"[growth] d = {p.d}, iteration {t + 1}: m1(t)/m1(t-1) = {r.mean():.3f} +- "
            f"{r.std(ddof=1) / np.sqrt(r.size):.3f} over {r.size} seeds; mean m1 = {g.m1[:, t + 1].mean():.4f}",
            flush=True,
        )
    ratio, stderr = g.first_step()
    gap = (ratio - se["ratio"]) / np.hypot(stderr, se["ratio_se"])
    write_metrics(
        io.output.metrics,
        {
            "p2.gamp_iter.layer1_growth_ratio": ratio,
            "p2.gamp_iter.layer1_growth_ratio_stderr": stderr,
            "p2.gamp_iter.layer1_growth_ratio_se_prediction": se["ratio"],
            "p2.gamp_iter.layer1_growth_ratio_se_prediction_stderr": se["ratio_se"],
            "p2.gamp_iter.layer1_growth_ratio_se_linearised": se["ratio_linear"],
            "p2.gamp_iter.layer1_growth_ratio_se_prediction_default_grid": se_default["ratio"],
            "p2.gamp_iter.layer1_growth_gap_sigma": float(gap),
        },
    )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
