"""P1 pruning: the theory's order parameter U of one GD model's heads at width N and temperature T
(docs/p1_images.md#pruning: N = 10, T = 0.5), from the exported training sequences; refuses to write an unconverged
or non-PD result."""

import numpy as np

from smattn.scriptio import run


def main(io):
    from smattn.device import jax_setup
    from smattn.io import write_json, write_npz
    from smattn.p1.action import Architecture
    from smattn.p1.attention import attentioned_inputs_from_heads
    from smattn.p1.images.tasks import balanced_subset
    from smattn.p1.images.theory_grid import heads_from_export
    from smattn.p1.kernels import PathGram
    from smattn.p1.minimise import ActionProblem
    from smattn.p1.minimise_bfgs import minimise_action_bfgs

    jax_setup(x64=True)
    p = io.params
    with np.load(io.input.export, allow_pickle=False) as z:
        export = {k: z[k] for k in z.files}
    y_all = np.asarray(export["y_train"], np.float64)
    P = min(int(p.P), len(y_all))
    idx = balanced_subset(y_all, P)  # first P/2 with y = +1, then first P/2 with y = -1
    x, y = np.asarray(export["x_train"], np.float64)[idx], y_all[idx]
    heads = tuple(int(h) for h in export["heads"])
    xi = attentioned_inputs_from_heads(x, heads_from_export(export), "mean")
    prob = ActionProblem(Architecture.equal_width(heads, float(p.N)), PathGram(xi), y, float(p.T))
    res = minimise_action_bfgs(
        prob,
        tol=float(p.tol),
        max_steps=int(p.max_steps),
        desc=f"theory U of {io.wildcards.model} (BFGS, stops at g_max < {p.tol:g})",
    )
    summary = res.summary()
    print(f"heads {heads}, P = {P}, N = {p.N}, T = {p.T}: {summary}")
    if not res.converged:
        raise RuntimeError(f"theory U did not converge: g_max = {res.g_max:.3g} after {res.steps} steps (tol {p.tol})")
    if np.linalg.eigvalsh(res.U).min() <= 0:
        raise RuntimeError("theory U is not positive definite")
    write_npz(io.output.U, U=res.U, heads=np.array(heads), N=float(p.N), T=float(p.T), P=P)
    write_json(io.output.summary, {"heads": heads, "P": P, "N": float(p.N), "T": float(p.T), **summary})


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
