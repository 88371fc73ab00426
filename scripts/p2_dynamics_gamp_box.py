"""P2 Fig. 1 left, the authors' GAMP: the runs of their Onsager form whose first layer stays trapped with our
integrator, rerun with the authors' integrator (box z1 in [-3, 3]^2; docs/p2_dynamics.md#the-authors-integrator).

Outputs ``csv`` (one row per seed: final |M11|/sqrt(Q11), |M22|/sqrt(Q22), M11, Q11 with ours and, for trapped
seeds, with the box) and ``metrics`` (p2.L2.gamp_box.*).
"""

from smattn.scriptio import run


def main(io):
    from smattn.io import write_csv, write_metrics
    from smattn.p2.theory.box_channel import BoxRule
    from smattn.p2.theory.gamp_box import trapped_rerun

    p = io.params
    seeds = [int(p.seed) * 1000 + r for r in range(p.seeds)]
    rule = BoxRule(panels=int(p.panels))
    print(
        f"[gamp_box] d = {p.d}, alpha = {p.alpha}, {p.iterations} iterations, onsager {p.onsager}, seeds {seeds}; "
        f"box rule {rule.nodes_per_axis}^2 nodes, Jacobian {p.jacobian}",
        flush=True,
    )
    out = trapped_rerun(
        p.d,
        p.alpha,
        p.iterations,
        seeds,
        damping=p.damping,
        onsager=p.onsager,
        box=rule,
        box_jacobian=p.jacobian,
        log=lambda s: print(s, flush=True),
    )
    cols = ["seed", "C1", "C2", "M11", "Q11", "trapped", "C1_box", "C2_box", "M11_box", "Q11_box", "learned_box"]
    write_csv(io.output.csv, cols, [[r.get(k, "") for k in cols] for r in out["rows"]])
    trapped = out["trapped"]
    print(
        f"[gamp_box] {trapped:.0f} of {out['runs']:.0f} runs trapped with ours; {out['learned_of_trapped']:.0f} of "
        f"them learn the first layer with the authors' box",
        flush=True,
    )
    metrics = {
        "p2.L2.gamp_box.d": float(p.d),
        "p2.L2.gamp_box.runs": out["runs"],
        "p2.L2.gamp_box.trapped_runs": trapped,
        "p2.L2.gamp_box.learned_of_trapped": out["learned_of_trapped"],
        "p2.L2.gamp_box.iter_s_gauss_hermite": out["iter_s_gauss_hermite"],
    }
    if trapped > 0:  # no box run without a trapped seed
        metrics["p2.L2.gamp_box.iter_s_authors_box"] = out["iter_s_authors_box"]
    write_metrics(io.output.metrics, metrics)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
