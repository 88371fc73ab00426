"""P2 Fig. 3 left, reference mode: the authors' depth-3 Monte-Carlo estimator recomputed and iterated in their SE."""

import time

import numpy as np

from smattn.io import json_safe, write_json
from smattn.p2.theory.authors_estimator import authors_state_evolution
from smattn.progress import progress
from smattn.scriptio import run


def main(io):
    P = io.params
    if not 2 <= P.tail <= P.iterations:
        raise ValueError(f"l3_authors_tail must lie in [2, l3_authors_iterations]; got {P.tail}, {P.iterations}")
    if not np.any(np.isclose(P.alphas, 2.0)):
        raise ValueError("l3_authors_alphas must contain 2 (the ledger's alpha)")
    t0 = time.time()
    out = {"alpha": [], "Q_mean": [], "Q_se": [], "history": [], "floor_fraction": []}
    for k, a in enumerate(sorted(P.alphas)):
        with progress(total=P.iterations, desc=f"authors' SE alpha={a:g}") as bar:
            r = authors_state_evolution(
                a,
                P.skip_c,
                q0=0.05,
                iterations=P.iterations,
                n_samples=P.n_samples,
                seed=P.seed + 17 * k,
                damping=P.damping,
                v_reg=P.v_reg,
                tail=P.tail,
                progress_bar=bar,
            )
        print(
            f"alpha={a:g}: Q diag over the last {P.tail} iterations {np.round(np.diag(r.Q_mean), 4)} "
            f"(se {np.round(np.diag(r.Q_se), 4)}); Z_out floored in {r.floor_fraction[-P.tail :].mean():.0%} "
            f"of the samples ({time.time() - t0:.0f} s)"
        )
        for key, val in (
            ("alpha", a),
            ("Q_mean", r.Q_mean),
            ("Q_se", r.Q_se),
            ("history", r.history),
            ("floor_fraction", r.floor_fraction),
        ):
            out[key].append(val)
    out.update(params=vars(P), time_s=time.time() - t0)
    write_json(io.output.json, json_safe(out))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
