"""P1 image task: the Bayesian theory on the exported heads of one GD model (docs/p1_images.md#theory-grid).

Every (N, T) of the grid is minimised to g_max < tol (asserted); per N the T with the best Omniglot *test* accuracy is
selected (the authors' rule: test-set selection); the GP line (U = 1) has its own T search; the kernel-task alignment
(PC overlaps) of the GP kernel and of the renormalised kernel at the smallest width and its selected T."""

import numpy as np

from smattn.scriptio import run


def main(io):
    from smattn.device import jax_setup

    jax_setup(x64=True)
    from smattn.io import write_json, write_npz
    from smattn.p1.alignment import pc_overlaps
    from smattn.p1.images.theory_grid import TEST_SETS, attentioned_sets, gp_line, run_grid, select_temperature
    from smattn.p1.kernels import kernel_U

    p = io.params
    widths = [float(n) for n in p.widths]
    temps = [float(t) for t in p.temperatures]
    with np.load(io.input.export) as z:
        ex = {k: z[k] for k in z.files}
    xi = attentioned_sets(ex)
    print(
        f"attentioned inputs: train {xi['train'].shape}, " + ", ".join(f"{s} {xi[s].shape}" for s in TEST_SETS),
        flush=True,
    )

    def report(r):
        s = r["summary"]
        print(
            f"N={r['N']:g} T={r['T']:g} ({r['init']}): steps {s['steps']}, g_max {s['g_max']:.2e}, "
            f"converged {s['converged']}, {r['seconds']:.1f} s; acc "
            + ", ".join(f"{k} {v:.3f}" for k, v in r["acc"].items()),
            flush=True,
        )

    recs = run_grid(ex, xi, widths, temps, tol=float(p.tol), warm_start=bool(p.warm_start), progress=report)
    sel = select_temperature(recs, widths, temps)
    gp = gp_line(ex, xi, [float(t) for t in p.gp_temperatures])
    Nmin = min(widths)
    U_small = sel[Nmin]["U"]
    y = np.asarray(ex["y_train"], np.float64)
    k = int(min(p.alignment_pcs, len(y)))
    ov_gp = pc_overlaps(kernel_U(np.eye(U_small.shape[0]), xi["train"]), y, k)
    ov_rn = pc_overlaps(kernel_U(U_small, xi["train"]), y, k)
    nN, nT = len(widths), len(temps)
    grid = {s: np.array([[r["acc"][s] for r in recs[i * nT : (i + 1) * nT]] for i in range(nN)]) for s in TEST_SETS}

    def summ(key):
        return np.array([[r["summary"][key] for r in recs[i * nT : (i + 1) * nT]] for i in range(nN)])

    arrays = {
        "widths": np.array(widths),
        "temperatures": np.array(temps),
        "U": np.array([[r["U"] for r in recs[i * nT : (i + 1) * nT]] for i in range(nN)]),
        "steps": summ("steps"),
        "g_max": summ("g_max"),
        "converged": summ("converged").astype(bool),
        "seconds": np.array([[r["seconds"] for r in recs[i * nT : (i + 1) * nT]] for i in range(nN)]),
        "T_selected": np.array([sel[N]["T"] for N in widths]),
        "U_selected": np.array([sel[N]["U"] for N in widths]),
        "gp_temperatures": np.array([g["T"] for g in gp["scan"]]),
        "gp_T_selected": np.array(gp["T"]),
        "overlap_gp": ov_gp,
        "overlap_renormalised": ov_rn,
        "alignment_N": np.array(Nmin),
        "alignment_T": np.array(sel[Nmin]["T"]),
    }
    for s in TEST_SETS:  # task-wise mean predictions beside the accuracies: paired errors of every comparison
        arrays[f"y_{s}"] = np.asarray(ex[f"y_{s}"], np.float64)
        arrays[f"f_{s}"] = np.array([[r["f"][s] for r in recs[i * nT : (i + 1) * nT]] for i in range(nN)])
        arrays[f"gp_f_{s}"] = np.array([g["f"][s] for g in gp["scan"]])
        arrays[f"acc_{s}"] = grid[s]
        arrays[f"acc_selected_{s}"] = np.array([sel[N]["acc"][s] for N in widths])
        arrays[f"gp_acc_{s}"] = np.array([g["acc"][s] for g in gp["scan"]])
        arrays[f"gp_acc_selected_{s}"] = np.array(gp["acc"][s])
    write_npz(io.output.theory, **arrays)
    write_json(
        io.output.summary,
        {
            "model": io.wildcards.model,
            "heads": ex["heads"].tolist(),
            "P": int(len(y)),
            "n_test": {s: int(len(ex[f"y_{s}"])) for s in TEST_SETS},
            "selected": [{"N": N, "T": sel[N]["T"], "acc": sel[N]["acc"], **sel[N]["summary"]} for N in widths],
            "gp": {"T": gp["T"], "acc": gp["acc"], "scan": [{"T": g["T"], "acc": g["acc"]} for g in gp["scan"]]},
            "all_converged": bool(arrays["converged"].all()),
            "max_g_max": float(arrays["g_max"].max()),
            "total_seconds": float(arrays["seconds"].sum()),
            "alignment": {
                "N": Nmin,
                "T": sel[Nmin]["T"],
                "max_overlap_gp": float(ov_gp.max()),
                "max_overlap_renormalised": float(ov_rn.max()),
            },
        },
    )
    print(f"grid of {len(recs)} runs in {arrays['seconds'].sum():.1f} s; all converged: {arrays['converged'].all()}")


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
