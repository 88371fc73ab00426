"""P1 HMC task: theory runs of one model variant (docs/p1_theory.md#hmc-task) -- GP accuracy and the renormalised
theory at every width.

Output JSON: per width N the converged order parameters U^(1), U^(2), u, test accuracy, steps, g_max, converged flag,
seconds; the GP accuracy; for the 'all' variant also the GP accuracies of the good and good+denoising sub-networks.
Output NPZ: kernels for Fig. 2d / 5b (GP and renormalised training kernels at the smallest width, same-path
pre-kernels, PC overlaps). An unconverged minimisation is an error: nothing is written.
"""

import time

import numpy as np

from smattn.scriptio import run


def main(io):
    from smattn.device import jax_setup

    jax_setup(x64=True)
    from smattn.io import write_json, write_npz
    from smattn.p1 import hmc_task as H
    from smattn.p1.action import Architecture
    from smattn.p1.alignment import pc_overlaps
    from smattn.p1.attention import attentioned_inputs_from_heads
    from smattn.p1.kernels import PathGram, kernel_U, path_path_kernels
    from smattn.p1.minimise import ActionProblem, minimise_action
    from smattn.p1.predictor import accuracy, predictor
    from smattn.progress import progress

    p = io.params
    variant = io.wildcards.variant
    spec = H.VARIANTS[variant]
    T = float(p.temperature)
    train = H.generate_hmc(100, H.SEED_TRAIN, sigma_perp=spec["sigma_perp"])
    test = H.generate_hmc(1000, H.SEED_TEST, sigma_perp=spec["sigma_perp"])

    def xis(v):
        heads = [{"W": W} for W in H.head_matrices(v)]
        return (
            attentioned_inputs_from_heads(train.x, heads, "last"),
            attentioned_inputs_from_heads(test.x, heads, "last"),
        )

    xi, xt = xis(variant)
    Htot = xi.shape[1]
    head_counts = (len(spec["layer1"]), len(spec["layer2"]))
    out = {
        "variant": variant,
        "paths": spec["paths"],
        "heads": head_counts,
        "sigma_perp": spec["sigma_perp"],
        "temperature": T,
        "P": 100,
        "P_test": 1000,
        "tol": float(p.tol),
    }
    out["acc_gp"] = accuracy(predictor(np.eye(Htot), xi, train.y, xt, T), test.y)
    if variant == "all":
        for sub in ("good", "good_denoising"):
            a, b = xis(sub)
            out[f"acc_gp_{sub}"] = accuracy(predictor(np.eye(a.shape[1]), a, train.y, b, T), test.y)
    gram = PathGram(xi)
    runs = []
    widths = sorted(float(n) for n in p.widths)
    # compile once (first call includes JAX compilation), so that the recorded times are the minimisation's own
    t0 = time.perf_counter()
    minimise_action(ActionProblem(Architecture.equal_width(head_counts, widths[0]), gram, train.y, T), tol=float(p.tol))
    out["compile_and_first_run_seconds"] = time.perf_counter() - t0
    for N in progress(widths, desc=f"HMC theory {variant}: widths", unit="width"):
        prob = ActionProblem(Architecture.equal_width(head_counts, N), gram, train.y, T)
        t0 = time.perf_counter()
        res = minimise_action(prob, tol=float(p.tol))
        if not res.converged or min(res.min_eig) <= 0:
            raise RuntimeError(
                f"{variant} N={N:g}: minimisation not converged (steps {res.steps},"
                f" g_max {res.g_max:.3g}, min eig {min(res.min_eig):.3g}); no result written"
            )
        acc = accuracy(predictor(res.U, xi, train.y, xt, T), test.y)
        runs.append(
            {
                "N": N,
                "U": res.Us[0].tolist(),
                "U2": res.Us[1].tolist(),
                "u": res.u,
                "acc": acc,
                **res.summary(),
                "wall_seconds": time.perf_counter() - t0,
            }
        )
        print(f"{variant} N={N:g}: acc {acc:.3f} steps {res.steps} g_max {res.g_max:.2e} ({res.seconds:.2f} s)")
    out["runs"] = runs
    # kernels and alignment at the smallest width (Fig. 2d, Fig. 5b)
    U_small = np.asarray(runs[0]["U"])
    K_gp = kernel_U(np.eye(Htot), xi)
    K_rn = kernel_U(U_small, xi)
    k_max = min(int(p.alignment_pcs), 100)
    ov_gp, ov_rn = pc_overlaps(K_gp, train.y, k_max), pc_overlaps(K_rn, train.y, k_max)
    out["alignment"] = {"N": runs[0]["N"], "gp": ov_gp.tolist(), "renormalised": ov_rn.tolist()}
    C = path_path_kernels(xi)
    same = np.stack([C[i, i] for i in range(Htot)])
    write_npz(
        io.output.kernels,
        K_gp=K_gp,
        K_rn=K_rn,
        same_path=same,
        paths=np.array(spec["paths"]),
        y=train.y,
        overlap_gp=ov_gp,
        overlap_rn=ov_rn,
        N=runs[0]["N"],
    )
    write_json(io.output.theory, out)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
