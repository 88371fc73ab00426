"""NumPyro NUTS sampler of the Bayesian network's posterior (spec §3).

All Bayesian weights (``V0`` [N_0, D], ``Vl`` [H_l, N_l, N_{l-1}], ``a`` [N_L]) get i.i.d. Gaussian priors with the
block's variance; the likelihood is ``y ~ N(f(x), T)`` (variance T = the Gibbs temperature), so the posterior is the
Gibbs distribution of the theory. The fixed attention enters through the path-attended inputs ``xbar`` [P, H_tot, D]
(``sum_s abar_pi(s) x_s``); the forward pass :func:`smattn.p1.network.forward_paths` equals the layer-by-layer
network exactly.

Weight samples are never stored: a NumPyro ``postprocess_fn`` maps each sample to its test predictions
``f_test`` [P_test] and its order parameter ``U`` [H_tot, H_tot] (Eq. 13), which are all that is kept.
Diagnostics: divergences, mean acceptance, split r-hat and ESS of the U entries, wall time.

Precision: float64 needs ``jax_enable_x64`` (the default in this project); float32 needs it *off* (JAX's
precision is process-wide), so run float32 sampling in its own process.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from .action import Architecture
from .network import forward_paths, order_parameter_sample


@dataclass
class SampleResult:
    """f_test: [n_samples_total, P_test]; U: [n_samples_total, H, H] (chains pooled) plus diagnostics."""

    f_test: np.ndarray
    U: np.ndarray
    U_by_chain: np.ndarray
    divergences: int
    accept_prob: float
    rhat_U: np.ndarray
    ess_U: np.ndarray
    seconds: float
    dtype: str
    mean_leapfrog_steps: float = float("nan")

    @property
    def mean_predictor(self) -> np.ndarray:
        return self.f_test.mean(axis=0)

    @property
    def U_mean(self) -> np.ndarray:
        return self.U.mean(axis=0)

    def summary(self) -> dict:
        return {
            "divergences": int(self.divergences),
            "accept_prob": float(self.accept_prob),
            "rhat_U_max": float(np.nanmax(self.rhat_U)) if np.isfinite(self.rhat_U).any() else float("nan"),
            "ess_U_min": float(np.nanmin(self.ess_U)),
            "ess_U_mean": float(np.nanmean(self.ess_U)),
            "seconds": float(self.seconds),
            "dtype": self.dtype,
            "n_samples": int(self.U.shape[0]),
            "mean_leapfrog_steps": float(self.mean_leapfrog_steps),
        }


def _model(xbar, y, arch: Architecture, temperature, dtype):
    import numpyro
    import numpyro.distributions as dist

    D = xbar.shape[2]
    N = [int(n) for n in arch.widths]
    s0 = jnp.sqrt(jnp.asarray(arch.sigma2[0], dtype))
    weights = {"V0": numpyro.sample("V0", dist.Normal(jnp.zeros((N[0], D), dtype), s0))}
    for l, H in enumerate(arch.heads, start=1):
        sl = jnp.sqrt(jnp.asarray(arch.sigma2[l], dtype))
        weights[f"V{l}"] = numpyro.sample(f"V{l}", dist.Normal(jnp.zeros((H, N[l], N[l - 1]), dtype), sl))
    sa = jnp.sqrt(jnp.asarray(arch.sigma2_a, dtype))
    weights["a"] = numpyro.sample("a", dist.Normal(jnp.zeros((N[-1],), dtype), sa))
    f = forward_paths(weights, xbar)
    numpyro.sample("y", dist.Normal(f, jnp.sqrt(jnp.asarray(temperature, dtype))), obs=y)


def run_nuts(
    xbar_train: np.ndarray,
    y: np.ndarray,
    xbar_test: np.ndarray,
    arch: Architecture,
    temperature: float,
    num_warmup: int,
    num_samples: int,
    num_chains: int = 1,
    seed: int = 1,
    dtype: str = "float64",
    temperature_min: float = 1e-3,
    test_chunk: int = 1000,
    max_tree_depth: int = 10,
) -> SampleResult:
    """Sample the posterior with NUTS (NumPyro defaults), keeping only test predictions and U per sample.

    xbar_*: [P, H_tot, D] un-normalised path-attended inputs; y: [P]; the likelihood variance is
    max(temperature, temperature_min) as in the reference. NUTS settings are NumPyro's defaults (target acceptance
    0.8, diagonal mass matrix) with ``max_tree_depth`` (default 10, as in the reference).
    """
    from numpyro.diagnostics import effective_sample_size, split_gelman_rubin
    from numpyro.infer import MCMC, NUTS

    if dtype not in ("float64", "float32"):
        raise ValueError(f"dtype must be 'float64' or 'float32', got {dtype!r}")
    x64 = bool(jax.config.jax_enable_x64)
    if (dtype == "float64") != x64:
        raise RuntimeError(
            f"dtype={dtype} needs jax_enable_x64={dtype == 'float64'} (it is {x64}); "
            "JAX precision is process-wide: call smattn.device.jax_setup(x64=...) first"
        )
    if xbar_train.shape[1] != arch.n_paths or xbar_test.shape[1:] != xbar_train.shape[1:]:
        raise ValueError(f"xbar shapes {xbar_train.shape}, {xbar_test.shape} do not match {arch.n_paths} paths")
    if any(float(n) != int(n) for n in arch.widths):
        raise ValueError(f"widths must be integers for sampling, got {arch.widths}")
    jdt = jnp.float64 if dtype == "float64" else jnp.float32
    xb = jnp.asarray(xbar_train, jdt)
    yt = jnp.asarray(y, jdt)
    xt = jnp.asarray(xbar_test, jdt)
    T = max(float(temperature), float(temperature_min))

    def post(z):
        f_parts = [forward_paths(z, xt[i : i + test_chunk]) for i in range(0, xt.shape[0], test_chunk)]
        return {"f_test": jnp.concatenate(f_parts), "U": order_parameter_sample(z)}

    kernel = NUTS(_model, max_tree_depth=int(max_tree_depth))
    mcmc = MCMC(
        kernel,
        num_warmup=num_warmup,
        num_samples=num_samples,
        num_chains=num_chains,
        chain_method="sequential",
        progress_bar=False,
        postprocess_fn=post,
    )
    t0 = time.perf_counter()
    mcmc.run(jax.random.PRNGKey(seed), xb, yt, arch, T, jdt, extra_fields=("diverging", "accept_prob", "num_steps"))
    s = mcmc.get_samples(group_by_chain=True)
    extra = mcmc.get_extra_fields(group_by_chain=True)
    U_c = np.asarray(s["U"], dtype=np.float64)  # [chains, samples, H, H]
    f_c = np.asarray(s["f_test"], dtype=np.float64)
    seconds = time.perf_counter() - t0
    ess = np.asarray(effective_sample_size(U_c))
    rhat = np.asarray(split_gelman_rubin(U_c)) if num_chains > 1 else np.full(U_c.shape[2:], np.nan)
    return SampleResult(
        f_test=f_c.reshape(-1, f_c.shape[-1]),
        U=U_c.reshape(-1, *U_c.shape[2:]),
        U_by_chain=U_c,
        divergences=int(np.asarray(extra["diverging"]).sum()),
        accept_prob=float(np.asarray(extra["accept_prob"]).mean()),
        rhat_U=rhat,
        ess_U=ess,
        mean_leapfrog_steps=float(np.asarray(extra["num_steps"]).mean()),
        seconds=seconds,
        dtype=dtype,
    )
