"""P1 image task: NUTS posterior of the Bayesian network on the exported heads at width N (see docs/p1_images.md), at
the temperature the theory selected for that N: sampled mean-predictor accuracy on every test set and the sampled
order parameter (Eq. 13), with the sampler's diagnostics (split R-hat and bulk ESS of U and of the test predictions,
gradients per effective sample, tree depths), and every test task's sampled mean prediction with its Monte-Carlo
standard error (``f_mean`` / ``f_mc_se``, per test set) for the paired comparison with the theory. Weight samples are
not stored. On a CPU the chains run one after another on one XLA host device, whatever the job's threads (XLA's
kernels use them): chains spread over two host devices never finished at the laptop size (every thread waiting, with
XLA's default and with single-threaded kernels; benchmarks/p1_images_nuts_devices.py). The record's ``devices`` and
``chain_method`` say how they ran; on a GPU they are vectorised."""

import numpy as np

from smattn.scriptio import run


def main(io):
    from smattn.p1.sampler import settings_for_width, use_host_devices_for_chains

    p = io.params
    N = int(io.wildcards.N)
    nuts = settings_for_width(p.nuts, N)
    # one host device (module docstring), set before anything starts JAX (the GPU probe below does): XLA reads the
    # flag once, at its start
    devices = use_host_devices_for_chains(1, nuts["chains"])
    from smattn.device import gpu_job, jax_setup

    gpu_job(io, "jax")  # gpu=1 rule: stops here when it must have a GPU and sees none (smattn.device)
    platform = jax_setup(x64=(nuts["dtype"] == "float64"))
    from smattn.io import write_json
    from smattn.p1.images.theory_grid import TEST_SETS, sampling_inputs
    from smattn.p1.predictor import accuracy
    from smattn.p1.sampler import run_nuts

    with np.load(io.input.export) as z:
        ex = {k: z[k] for k in z.files}
    with np.load(io.input.theory) as z:
        xb, y, xt, arch, T = sampling_inputs(ex, z["widths"], z["T_selected"], N)
    res = run_nuts(
        xb,
        y,
        xt,
        arch,
        T,
        nuts["warmup"],
        nuts["samples"],
        nuts["chains"],
        nuts["seed"],
        nuts["dtype"],
        sampler=p.sampler,
    )
    f = res.mean_predictor
    # Monte-Carlo standard error of every task's mean prediction: posterior sd / sqrt(bulk ESS), the ESS clipped to
    # [1, draws] (an undefined ESS counts as one draw)
    ess = np.clip(np.nan_to_num(np.asarray(res.ess_f, np.float64), nan=1.0), 1.0, res.f_test.shape[0])
    f_se = res.f_test.std(axis=0) / np.sqrt(ess)
    acc, f_mean, f_mc_se, off = {}, {}, {}, 0
    for s in TEST_SETS:
        n = len(ex[f"y_{s}"])
        acc[s] = accuracy(f[off : off + n], ex[f"y_{s}"].astype(np.float64))
        f_mean[s], f_mc_se[s] = f[off : off + n].tolist(), f_se[off : off + n].tolist()
        off += n
    out = {
        "model": io.wildcards.model,
        "N": N,
        "T": T,
        "acc": acc,
        **{k: nuts[k] for k in ("warmup", "samples", "seed")},
        "platform": platform,
        "threads": int(io.threads or 1),
        "host_devices": devices,
        **res.record(),
        "f_mean": f_mean,
        "f_mc_se": f_mc_se,
    }
    print(f"N={N}, T={T}: sampled acc {acc}; {res.summary()}")
    for w in res.warnings():
        print(w)
    write_json(io.output.samples, out)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
