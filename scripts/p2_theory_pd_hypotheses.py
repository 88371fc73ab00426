"""P2 Fig. 1 right, deviation note: first-layer thresholds read off short, noisy reference-style SE runs (the first
alpha of the grid where Q11 exceeds the level, found by bisection over the grid; phase_diagram_hypotheses)."""

import time

import numpy as np

from smattn.io import json_safe, write_json
from smattn.p2.theory.phase_diagram_hypotheses import read_off_threshold
from smattn.p2.theory.quadrature import QuadratureSettings
from smattn.scriptio import run


def main(io):
    P = io.params
    t0 = time.time()
    quad = QuadratureSettings(n1d=P.n1d)
    alphas = np.round(np.arange(P.alpha_step, P.alpha_max + 1e-9, P.alpha_step), 10)
    kw = dict(n_samples=P.n_samples, iterations=P.iterations, seed=P.seed, v_reg=P.v_reg, level=P.level)
    # the bisection starts from a guess: the read-off at the previous c (read-offs change little between
    # neighbouring c); the guess changes how many runs are made, not the read-off
    runs, guess = [], None
    for c in P.skips:
        runs.append(read_off_threshold(c, alphas, quad, guess=guess, **kw))
        guess = runs[-1]["alpha"] if np.isfinite(runs[-1]["alpha"]) else guess
    # the same reading with the authors' floored box Monte-Carlo estimator (10^4 points per integral), started
    # from our estimator's read-off at the same c where there is one
    alphas_au = np.round(np.arange(P.authors_alpha_step, P.alpha_max + 1e-9, P.authors_alpha_step), 10)
    ours = {r["c"]: r["alpha"] for r in runs if np.isfinite(r["alpha"])}
    runs_au, guess = [], None
    for c in P.authors_skips:
        guess = ours.get(float(c), guess)
        runs_au.append(read_off_threshold(c, alphas_au, quad, estimator="authors", guess=guess, **kw))
        guess = runs_au[-1]["alpha"] if np.isfinite(runs_au[-1]["alpha"]) else guess
    for r in runs + runs_au:
        print(
            f"c={r['c']:g} ({r['estimator']}): read-off alpha1 = {r['alpha']:.4f} (Q11 > {r['level']:g}; "
            f"{r['evaluations']} short runs)",
            flush=True,
        )
    write_json(
        io.output.json,
        json_safe(
            {
                "read_off": runs,
                "read_off_authors": runs_au,
                "alpha_step": P.alpha_step,
                "authors_alpha_step": P.authors_alpha_step,
                "v_reg": P.v_reg,
                "time_s": time.time() - t0,
            }
        ),
    )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
