"""P1 HMC task: NUTS posterior samples of one variant at one width (see docs/p1_theory.md): sampled mean-predictor
accuracy and sampled order parameter (Eq. 13), with the sampler's diagnostics (ArviZ R-hat, bulk and tail ESS and
Monte-Carlo standard errors of U and of the test predictions, the R-hat null of the run's shape and the p-value of
its largest R-hat, gradients per effective sample, tree depths). Weight samples are not stored. The chains spread
over the job's threads (one CPU device per thread; the rule gives one, so they run one after another; the draws are
those of that device count, smattn.p1.sampler)."""

import numpy as np

from smattn.scriptio import run


def main(io):
    from smattn.p1.sampler import settings_for_width, use_host_devices_for_chains

    p = io.params
    variant, N = io.wildcards.variant, int(io.wildcards.N)
    nuts = settings_for_width(p.nuts, N)
    use_host_devices_for_chains(io.threads, nuts["chains"])  # before JAX starts: chains spread over the threads
    from smattn.device import jax_setup

    platform = jax_setup(x64=(nuts["dtype"] == "float64"))
    from smattn.io import write_json
    from smattn.p1 import hmc_task as H
    from smattn.p1.action import Architecture
    from smattn.p1.attention import attentioned_inputs_from_heads
    from smattn.p1.predictor import accuracy, accuracy_mcse
    from smattn.p1.sampler import run_nuts

    spec = H.VARIANTS[variant]
    train = H.generate_hmc(int(p.n_train), H.SEED_TRAIN, sigma_perp=spec["sigma_perp"])
    test = H.generate_hmc(int(p.n_test), H.SEED_TEST, sigma_perp=spec["sigma_perp"])
    heads = [{"W": W} for W in H.head_matrices(variant)]
    Htot = int(np.prod([len(spec["layer1"]), len(spec["layer2"])]))
    # un-normalised path-attended inputs sum_s abar(s) x_s (sigma_0 = 1)
    scale = np.sqrt(train.x.shape[2] * Htot)
    xb = attentioned_inputs_from_heads(train.x, heads, "last") * scale
    xbt = attentioned_inputs_from_heads(test.x, heads, "last") * scale
    arch = Architecture.equal_width((len(spec["layer1"]), len(spec["layer2"])), N)
    res = run_nuts(
        xb,
        train.y,
        xbt,
        arch,
        float(p.temperature),
        nuts["warmup"],
        nuts["samples"],
        nuts["chains"],
        nuts["seed"],
        nuts["dtype"],
        sampler=p.sampler,
        rhat_null_trials=int(p.rhat_null_trials),
    )
    acc = accuracy(res.mean_predictor, test.y)
    out = {
        "variant": variant,
        "N": N,
        "acc": acc,
        "acc_mcse": accuracy_mcse(res.mean_predictor, res.mcse_f, test.y),
        **{k: nuts[k] for k in ("warmup", "samples", "seed")},
        "platform": platform,
        "threads": int(io.threads or 1),
        **res.record(),
    }
    print(f"{variant} N={N}: sampled acc {acc:.3f} +- {out['acc_mcse']:.3f} (MCSE), {res.summary()}")
    for w in res.warnings():
        print(w)
    write_json(io.output.samples, out)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
