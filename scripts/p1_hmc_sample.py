"""P1 HMC task: NUTS posterior samples of one variant at one width (spec §3, §4.3): sampled mean-predictor accuracy
and sampled order parameter (Eq. 13), with divergences, r-hat and ESS. Weight samples are not stored."""

import numpy as np

from smattn.scriptio import run


def main(io):
    from smattn.device import jax_setup

    p = io.params
    platform = jax_setup(x64=(p.dtype == "float64"))
    from smattn.io import write_json
    from smattn.p1 import hmc_task as H
    from smattn.p1.action import Architecture
    from smattn.p1.attention import attentioned_inputs_from_heads
    from smattn.p1.predictor import accuracy
    from smattn.p1.sampler import run_nuts

    variant, N = io.wildcards.variant, int(io.wildcards.N)
    spec = H.VARIANTS[variant]
    train = H.generate_hmc(100, H.SEED_TRAIN, sigma_perp=spec["sigma_perp"])
    test = H.generate_hmc(1000, H.SEED_TEST, sigma_perp=spec["sigma_perp"])
    heads = [{"W": W} for W in H.head_matrices(variant)]
    Htot = int(np.prod([len(spec["layer1"]), len(spec["layer2"])]))
    # un-normalised path-attended inputs sum_s abar(s) x_s (sigma_0 = 1)
    scale = np.sqrt(train.x.shape[2] * Htot)
    xb = attentioned_inputs_from_heads(train.x, heads, "last") * scale
    xbt = attentioned_inputs_from_heads(test.x, heads, "last") * scale
    arch = Architecture.equal_width((len(spec["layer1"]), len(spec["layer2"])), N)
    res = run_nuts(
        xb, train.y, xbt, arch, float(p.temperature), int(p.warmup), int(p.samples), int(p.chains), int(p.seed), p.dtype
    )
    acc = accuracy(res.mean_predictor, test.y)
    out = {
        "variant": variant,
        "N": N,
        "acc": acc,
        "U_mean": res.U_mean.tolist(),
        "U_sem": (res.U.std(axis=0) / np.sqrt(np.maximum(res.ess_U, 1.0))).tolist(),
        "ess_U": res.ess_U.tolist(),
        "rhat_U": np.where(np.isfinite(res.rhat_U), res.rhat_U, -1.0).tolist(),
        "warmup": int(p.warmup),
        "samples": int(p.samples),
        "chains": int(p.chains),
        "seed": int(p.seed),
        "platform": platform,
        **res.summary(),
    }
    out["rhat_U_max"] = out["rhat_U_max"] if np.isfinite(out["rhat_U_max"]) else None
    print(f"{variant} N={N}: sampled acc {acc:.3f}, {res.summary()}")
    write_json(io.output.samples, out)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
