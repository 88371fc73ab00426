"""GAMP runs on synthetic data of the two-layer attention target at one alpha (P2 Fig. 1 left, crosses of the
project's variant: the damped Onsager term, data with the state evolution's pre-activation noise)."""

import time

import numpy as np

from smattn.io import write_npz
from smattn.p2.theory.gamp import run_gamp
from smattn.p2.theory.quadrature import QuadratureSettings
from smattn.progress import progress
from smattn.scriptio import run


def main(io):
    P = io.params
    alpha = float(io.wildcards.alpha)
    recs = {k: [] for k in ("M", "Q", "test_error", "min_ess", "teacher_sq_norm", "time_s")}
    for r in progress(range(P.runs), desc=f"GAMP runs alpha={alpha:g}"):
        t0 = time.time()
        res = run_gamp(
            P.d,
            alpha,
            P.iters,
            seed=P.seed + 1000 * r + int(round(alpha * 100)),
            damping=P.damping,
            onsager=P.onsager,
            data_noise=P.data_noise,
            c=P.skip_c,
            v_reg=P.v_reg,
            quad=QuadratureSettings(n1d=P.n1d),
            progress_desc=f"GAMP alpha={alpha:g} run {r}",
        )
        recs["M"].append(res.M)
        recs["Q"].append(res.Q)
        recs["test_error"].append(res.test_error)
        recs["min_ess"].append(res.min_ess)
        recs["teacher_sq_norm"].append(np.sum(res.W**2, axis=1) / res.W.shape[1])
        recs["time_s"].append(time.time() - t0)
        print(
            f"alpha={alpha} run {r}: |M11|={abs(res.M[-1, 0, 0]):.4f} |M22|={abs(res.M[-1, 1, 1]):.4f} "
            f"err={res.test_error[-1]:.4f} ({recs['time_s'][-1]:.1f} s)"
        )
    write_npz(
        io.output.npz,
        alpha=alpha,
        d=P.d,
        onsager=P.onsager,
        data_noise=P.data_noise,
        **{k: np.asarray(v) for k, v in recs.items()},
    )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
