"""P1 HMC task: theory runs of one model variant (docs/p1_theory.md#hmc-task) -- GP accuracy and the renormalised
theory at every width.

Output JSON: per width N the converged order parameters U^(1), U^(2), u, test accuracy, steps, g_max, converged flag,
seconds; the GP accuracy; for the 'all' variant also the GP accuracies of the good and good+denoising sub-networks.
Output NPZ ``kernels``: kernels for Fig. 2d / 5b (GP and renormalised training kernels at the smallest width, same-path
pre-kernels, PC overlaps). Output NPZ ``predictions``: the mean predictors of every GP line and of the theory at every
width on the paper's test set (``f_test_*``, labels ``y_test``; paired with the sampled predictors) and on the larger
verdict test set (``f_verdict_*``, ``y_verdict``; independent chains drawn in blocks from ``verdict_seed``), from which
the figure rules compute accuracy differences with paired standard errors. An unconverged minimisation is an error:
nothing is written.
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
    from smattn.p1.kernels import PathGram, kernel_U, same_path_kernels
    from smattn.p1.minimise import ActionProblem, minimise_action
    from smattn.p1.predictor import accuracy, predictor
    from smattn.progress import progress

    p = io.params
    variant = io.wildcards.variant
    spec = H.VARIANTS[variant]
    T = float(p.temperature)
    n_train, n_test = int(p.n_train), int(p.n_test)
    train = H.generate_hmc(n_train, H.SEED_TRAIN, sigma_perp=spec["sigma_perp"])
    test = H.generate_hmc(n_test, H.SEED_TEST, sigma_perp=spec["sigma_perp"])
    # the verdict test set: blocks of independent chains (seeds verdict_seed, verdict_seed + 1, ...)
    block = min(int(p.verdict_block), int(p.n_verdict))
    if int(p.n_verdict) % block or block % 2:
        raise ValueError(f"n_verdict {p.n_verdict} must be a multiple of an even verdict_block {block}")
    verdict = [
        H.generate_hmc(block, int(p.verdict_seed) + k, sigma_perp=spec["sigma_perp"])
        for k in range(int(p.n_verdict) // block)
    ]
    y_verdict = np.concatenate([d.y for d in verdict])

    def xis(v):
        heads = [{"W": W} for W in H.head_matrices(v)]
        xiv = np.concatenate([attentioned_inputs_from_heads(d.x, heads, "last") for d in verdict])
        return (
            attentioned_inputs_from_heads(train.x, heads, "last"),
            attentioned_inputs_from_heads(test.x, heads, "last"),
            xiv,
        )

    xi, xt, xv = xis(variant)
    Htot = xi.shape[1]
    head_counts = (len(spec["layer1"]), len(spec["layer2"]))
    out = {
        "variant": variant,
        "paths": spec["paths"],
        "heads": head_counts,
        "sigma_perp": spec["sigma_perp"],
        "temperature": T,
        "P": n_train,
        "P_test": n_test,
        "P_verdict": int(p.n_verdict),
        "verdict_seed": int(p.verdict_seed),
        "tol": float(p.tol),
    }
    preds = {"y_test": test.y, "y_verdict": y_verdict}

    def gp_line(name, a, b, c):
        preds[f"f_test_{name}"] = predictor(np.eye(a.shape[1]), a, train.y, b, T)
        preds[f"f_verdict_{name}"] = predictor(np.eye(a.shape[1]), a, train.y, c, T)
        return accuracy(preds[f"f_test_{name}"], test.y)

    out["acc_gp"] = gp_line("gp", xi, xt, xv)
    if variant == "all":
        for sub in ("good", "good_denoising"):
            out[f"acc_gp_{sub}"] = gp_line(f"gp_{sub}", *xis(sub))
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
        f_test = predictor(res.U, xi, train.y, xt, T)
        preds.setdefault("f_test_theory", []).append(f_test)
        preds.setdefault("f_verdict_theory", []).append(predictor(res.U, xi, train.y, xv, T))
        acc = accuracy(f_test, test.y)
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
    same = same_path_kernels(xi)
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
    write_npz(
        io.output.predictions,
        widths=np.array(widths),
        **{k: np.asarray(v) for k, v in preds.items()},
    )
    write_json(io.output.theory, out)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
