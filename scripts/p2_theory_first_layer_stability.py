"""First-layer stability at c = skip_c (P2 App. E.2): the alpha where the Q11 = 0 branch of the two-layer SE becomes
unstable, by root solves in alpha (no SE iteration), and the growth per iteration at the published threshold and at
the authors' SE-file switch-on, with the iterations a read-off from a small Q11 needs there; and the growth at
alpha_critical.csv's first-layer threshold at each of its c (is Q11 = 0 still stable where the file puts it?)."""

import time

import numpy as np

from smattn.data.spoc import read_csv
from smattn.io import json_safe, write_json
from smattn.p2.theory.first_layer_stability import (
    NoPhaseTwoFixedPoint,
    StabilityProblem,
    alpha_first_stability,
    growth_factors,
    iterations_to_level,
    origin_growth,
    switch_on_bracket,
)
from smattn.p2.theory.quadrature import QuadratureSettings
from smattn.scriptio import run


def main(io):
    P = io.params
    t0 = time.time()
    c = float(P.skip_c)
    prob = StabilityProblem.from_sizes(
        c, P.n_samples, P.qmc_sets, P.seed + 5, quad=QuadratureSettings(n1d=P.n1d), v_reg=P.v_reg, damping=P.damping
    )
    root = alpha_first_stability(prob, bracket=tuple(P.alpha_bracket))
    print(
        f"alpha_first (stability) = {root['alpha']:.4f} ± {root['alpha_se']:.4f}, q2* = {root['q2']:.5f}, "
        f"lambda2 = {root['lambda2']:.3f} ({root['n_evaluations']} branch points, {time.time() - t0:.0f} s)"
    )
    # the published threshold at this c and the alphas between which the authors' SE file switches Q11 on
    csv = read_csv(io.input.ref_critical)
    k = int(np.argmin(np.abs(csv["skip"] - c)))
    if abs(csv["skip"][k] - c) > 1e-12:
        raise ValueError(f"alpha_critical.csv has no row at c = {c}")
    bo = read_csv(io.input.ref_bo)
    lo, hi = switch_on_bracket(bo["alpha"], bo["Q11"], P.level)
    named = {"published": float(csv["alpha1"][k]), "file_below": lo, "file_above": hi}

    def growth_at(problem, a):
        """lambda1 (with its spread over the draw sets) and lambda2 at the phase-II fixed point of alpha a, or at
        Q = 0 where a has none (at or below this problem's alpha_last: small samples near the threshold)."""
        try:
            g = growth_factors(problem, a, guess=root["q2"])
        except NoPhaseTwoFixedPoint:
            g = origin_growth(problem, a)
        sets = np.asarray(g["lambda1_sets"])
        se = float(np.std(sets, ddof=1) / np.sqrt(sets.size))
        return {"alpha": a, "q2": g["q2"], "lambda1": g["lambda1"], "lambda1_se": se, "lambda2": g["lambda2"]}

    growth = {}
    for name, a in named.items():
        growth[name] = g = growth_at(prob, a)
        g["iterations"] = iterations_to_level(g["lambda1"], P.start, P.level)
        print(
            f"{name}: alpha {a:.4f}: lambda1 {g['lambda1']:.4f} ± {g['lambda1_se']:.4f}, "
            f"{g['iterations']:.1f} iterations from Q11 = {P.start:g} to {P.level:g}"
        )
    # alpha_critical.csv's alpha1 at each of its c (the rows the claims set against ours): a threshold read off SE
    # runs lies where Q11 = 0 is already unstable; own draws per c, in ascending c
    csv_growth = []
    for j, kc in enumerate(np.argsort(csv["skip"])):
        cc = float(csv["skip"][kc])
        pc = (
            prob
            if cc == c
            else StabilityProblem.from_sizes(
                cc, P.n_samples, P.qmc_sets, P.seed + 100 + j, quad=prob.quad, v_reg=P.v_reg, damping=P.damping
            )
        )
        g = {"c": cc, **growth_at(pc, float(csv["alpha1"][kc]))}
        csv_growth.append(g)
        print(
            f"alpha_critical.csv at c = {cc:g}: alpha1 {g['alpha']:.4f}, q2* {g['q2']:.4f}, lambda1 "
            f"{g['lambda1']:.4f} ± {g['lambda1_se']:.4f}",
            flush=True,
        )
    write_json(
        io.output.json,
        json_safe(
            {
                "c": c,
                "root": root,
                "growth": growth,
                "csv_growth": csv_growth,
                "start": P.start,
                "level": P.level,
                "damping": P.damping,
                "v_reg": P.v_reg,
                "n_used": prob.n_used,
                "n_branch_points": len(prob.cache),
                "time_s": time.time() - t0,
            }
        ),
    )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
