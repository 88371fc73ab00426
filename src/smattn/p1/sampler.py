"""NumPyro NUTS sampler of the Bayesian network's posterior (see ``docs/p1_theory.md``).

All Bayesian weights (``V0`` [N_0, D], ``Vl`` [H_l, N_l, N_{l-1}], ``a`` [N_L]) get i.i.d. Gaussian priors with the
block's variance; the likelihood is ``y ~ N(f(x), T)`` (variance T = the Gibbs temperature), so the posterior is the
Gibbs distribution of the theory. The fixed attention enters through the path-attended inputs ``xbar`` [P, H_tot, D]
(``sum_s abar_pi(s) x_s``); the forward pass :func:`smattn.p1.network.forward_paths` equals the layer-by-layer
network exactly.

Two samplers of the same posterior:

* ``"collapsed"`` (default): ``V0`` is integrated out analytically (:mod:`smattn.p1.collapsed`); NUTS samples only
  ``V1..VL, a`` under the marginal likelihood ``y ~ N(0, K_U + T I)``, and each sample's test predictions are the
  Gaussian-process mean given that sample (Rao-Blackwellised). The stiff data-spanned ``V0`` directions are gone, so
  trees are ~50x shallower at the same accuracy of U and f.
* ``"full"``: every weight sampled, the authors' method (every transition tends to hit the maximum tree depth).

Weight samples are never stored: a NumPyro ``postprocess_fn`` maps each sample to its test predictions
``f_test`` [P_test] and its order parameter ``U`` [H_tot, H_tot] (Eq. 13), which are all that is kept.
Diagnostics (raw weights are not identifiable, so only on U and f), from ArviZ (:mod:`smattn.p1.convergence`):
rank-normalised split R-hat, bulk and tail ESS and the Monte-Carlo standard error of the U entries and of the test
predictions; the R-hat that perfectly mixed chains of the same shape reach (the 95 % quantile of the null of the
largest R-hat over the distinct U entries); divergences, acceptance, leapfrog steps per transition, fraction of
transitions at the maximum tree depth, warm-up and sampling wall time and an estimate of the compilation time.

Chains (``chain_method``): ``vectorized`` (batched in one program; the default on a GPU), ``parallel`` (one CPU
device per group of chains, :func:`use_host_devices`; the default on a CPU with several host devices) or
``sequential``. Every method draws the same chains from the same seed (each chain's key is split from the seed):
``parallel`` and ``sequential`` run the same per-chain program and agree to the bit when XLA's CPU kernels run
single-threaded (``--xla_cpu_multi_thread_eigen=false``, as tests/p1_hmc/test_chain_methods.py runs them);
``vectorized`` batches the arithmetic differently and agrees to rounding. With XLA's default multi-threaded kernels
the rounding depends on the number of host devices, and the chaotic dynamics carry it into other chains: a run's
draws are then those of its device count.
The float32 matrix-product precision is set explicitly (``matmul_precision``, default ``"highest"``: no TF32 on a GPU).

Precision: float64 needs ``jax_enable_x64`` (the default in this project); float32 needs it *off* (JAX's
precision is process-wide), so run float32 sampling in its own process.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ..progress import progress
from . import convergence as conv
from .action import Architecture
from .network import forward_paths, order_parameter_sample

SAMPLERS = ("collapsed", "full")
SETTING_KEYS = ("chains", "warmup", "samples", "seed", "dtype")


def settings_for_width(table: dict, N: int) -> dict:
    """NUTS settings of width N from a per-width table ``{"<N>" | "default": {chains, warmup, samples, seed, dtype}}``.

    The entry of N itself wins over ``default``; every key of :data:`SETTING_KEYS` must be present."""
    key = str(int(N))
    entry = table.get(key, table.get(int(N), table.get("default")))
    if entry is None:
        raise KeyError(f"no NUTS settings for N = {N} and no 'default' entry (keys: {sorted(map(str, table))})")
    missing = [k for k in SETTING_KEYS if k not in entry]
    if missing:
        raise KeyError(f"NUTS settings for N = {N} lack {missing}")
    return {k: entry[k] for k in SETTING_KEYS}


def use_host_devices(n: int) -> None:
    """Let XLA split the CPU into ``n`` devices (``--xla_force_host_platform_device_count``) so that chains can run in
    parallel. Must be called before JAX initialises its backend (before :func:`smattn.device.jax_setup`)."""
    if n < 1:
        raise ValueError(f"need at least one host device, got {n}")
    flags = re.sub(r"--xla_force_host_platform_device_count=\S+", "", os.environ.get("XLA_FLAGS", "")).split()
    os.environ["XLA_FLAGS"] = " ".join([f"--xla_force_host_platform_device_count={int(n)}", *flags])


def use_host_devices_for_chains(threads: int | None, num_chains: int) -> int:
    """One XLA host device per job thread, at most one per chain (:func:`use_host_devices`); returns that count.

    The count fixes the draws on a CPU (see the module docstring), so a sampling job's chains are those of its thread
    count."""
    n = max(1, min(int(threads or 1), int(num_chains)))
    use_host_devices(n)
    return n


def default_chain_method(num_chains: int = 1) -> str:
    """'vectorized' on a GPU (chains batched in one program); on a CPU 'parallel' when there are several host devices
    (:func:`use_host_devices`) and several chains, else 'sequential'."""
    if jax.default_backend() == "gpu":
        return "vectorized"
    return "parallel" if num_chains > 1 and jax.local_device_count() > 1 else "sequential"


def _chains_over_devices(num_chains: int, max_devices: int):
    """NumPyro ``chain_method`` callable: the chains spread over k local devices (k the largest divisor of num_chains
    not above ``max_devices`` or the device count), ``num_chains / k`` of them one after another on each device.

    Every k runs the same per-chain program (a ``lax.map`` body), so k = 1 (sequential) and k > 1 (parallel) give
    the same draws to the bit at a fixed host-device count with single-threaded XLA kernels (module docstring).
    Returns (callable, k)."""
    limit = min(num_chains, max_devices, jax.local_device_count())
    k = max(d for d in range(1, limit + 1) if num_chains % d == 0)
    devices = jax.local_devices()[:k]

    def method(fn):
        def run(args):
            per = num_chains // k
            split = jax.tree.map(lambda a: a.reshape(k, per, *a.shape[1:]), args)
            out = jax.pmap(lambda a: jax.lax.map(fn, a), devices=devices)(split)
            return jax.tree.map(lambda a: a.reshape(num_chains, *a.shape[2:]), out)

        return run

    return method, k


def _finite_or_none(obj):
    if isinstance(obj, dict):
        return {k: _finite_or_none(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_finite_or_none(v) for v in obj]
    if isinstance(obj, float) and not np.isfinite(obj):
        return None
    return obj


def _nanmax(a) -> float:
    a = np.asarray(a, dtype=np.float64)
    return float(np.nanmax(a)) if np.isfinite(a).any() else float("nan")


def _nanmin(a) -> float:
    a = np.asarray(a, dtype=np.float64)
    return float(np.nanmin(a)) if np.isfinite(a).any() else float("nan")


def _symmetric_diagnostic(fn, U_c: np.ndarray) -> np.ndarray:
    """A diagnostic of the distinct (upper-triangle) entries of a symmetric U [chains, draws, H, H] -> [H, H]."""
    H = U_c.shape[-1]
    iu = np.triu_indices(H)
    out = np.empty((H, H))
    out[iu] = fn(U_c[:, :, iu[0], iu[1]])
    out.T[iu] = out[iu]
    return out


@dataclass
class SampleResult:
    """Pooled samples and diagnostics of one NUTS run.

    f_test: [chains * samples, P_test]; U: [chains * samples, H, H]; U_by_chain: [chains, samples, H, H]; rhat_U,
    ess_U (bulk), ess_tail_U, mcse_U: [H, H]; rhat_f, ess_f (bulk), mcse_f: [P_test] (ArviZ,
    :mod:`smattn.p1.convergence`); rhat_p: the p-value of the largest R-hat over the distinct U entries
    under converged AR(1) chains of the run's shape and autocorrelation
    (:func:`smattn.p1.convergence.rhat_pvalue_of_draws`); num_steps: [chains, samples] leapfrog steps (= gradient
    evaluations) per kept transition; step_size: [chains]; seconds: whole run incl. compilation; seconds_warmup
    (incl. its compilation); seconds_sampling (sampling phase); seconds_compile_sampling: estimated compilation time
    inside the sampling phase (NaN when not measurable).
    """

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
    sampler: str = "full"
    chain_method: str = "sequential"
    devices: int = 1
    max_tree_depth: int = 10
    num_steps: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    step_size: np.ndarray = field(default_factory=lambda: np.zeros(0))
    ess_tail_U: np.ndarray = field(default_factory=lambda: np.zeros(0))
    mcse_U: np.ndarray = field(default_factory=lambda: np.zeros(0))
    rhat_f: np.ndarray = field(default_factory=lambda: np.zeros(0))
    ess_f: np.ndarray = field(default_factory=lambda: np.zeros(0))
    mcse_f: np.ndarray = field(default_factory=lambda: np.zeros(0))
    rhat_p: conv.RhatPvalue | None = None
    seconds_warmup: float = float("nan")
    seconds_sampling: float = float("nan")
    seconds_compile_sampling: float = float("nan")

    @property
    def mean_predictor(self) -> np.ndarray:
        return self.f_test.mean(axis=0)

    @property
    def U_mean(self) -> np.ndarray:
        return self.U.mean(axis=0)

    @property
    def n_chains(self) -> int:
        return int(self.U_by_chain.shape[0])

    @property
    def grads_per_ess(self) -> float:
        """Gradient evaluations of the sampling phase (all chains) per effective sample (min bulk ESS over U)."""
        return float(self.num_steps.sum()) / _nanmin(self.ess_U)

    @property
    def max_depth_fraction(self) -> float:
        """Fraction of kept transitions whose trajectory reached the maximum tree depth (2^depth - 1 steps)."""
        return float(np.mean(self.num_steps >= 2**self.max_tree_depth - 1))

    @property
    def mean_tree_depth(self) -> float:
        """Mean tree depth ceil(log2(steps + 1)) of the kept transitions."""
        return float(np.mean(np.ceil(np.log2(self.num_steps + 1.0))))

    @property
    def ess_per_s_sampling(self) -> float:
        """min bulk ESS over U per second of the sampling phase, its compilation excluded where it was measured."""
        c = self.seconds_compile_sampling
        t = self.seconds_sampling - (c if np.isfinite(c) else 0.0)
        return _nanmin(self.ess_U) / t

    def summary(self) -> dict:
        return {
            "sampler": self.sampler,
            "chain_method": self.chain_method,
            "devices": int(self.devices),
            "chains": self.n_chains,
            "divergences": int(self.divergences),
            "accept_prob": float(self.accept_prob),
            "rhat_U_max": _nanmax(self.rhat_U),
            "rhat_U_p": self.rhat_p.p if self.rhat_p is not None else float("nan"),
            "ess_U_min": _nanmin(self.ess_U),
            "ess_U_mean": float(np.nanmean(self.ess_U)),
            "ess_tail_U_min": _nanmin(self.ess_tail_U),
            "ess_bulk_per_chain_min": _nanmin(self.ess_U) / self.n_chains,
            "ess_tail_per_chain_min": _nanmin(self.ess_tail_U) / self.n_chains,
            "rhat_f_max": _nanmax(self.rhat_f),
            "ess_f_min": _nanmin(self.ess_f),
            "seconds": float(self.seconds),
            "seconds_warmup": float(self.seconds_warmup),
            "seconds_sampling": float(self.seconds_sampling),
            "seconds_compile_sampling": float(self.seconds_compile_sampling),
            "dtype": self.dtype,
            "n_samples": int(self.U.shape[0]),
            "mean_leapfrog_steps": float(self.mean_leapfrog_steps),
            "mean_tree_depth": self.mean_tree_depth,
            "max_tree_depth": int(self.max_tree_depth),
            "max_depth_fraction": self.max_depth_fraction,
            "grads_per_ess": self.grads_per_ess,
            "ess_per_s_sampling": self.ess_per_s_sampling,
            "step_size_mean": float(np.mean(self.step_size)) if self.step_size.size else float("nan"),
        }

    def record(self) -> dict:
        """JSON-ready diagnostics: :meth:`summary` plus the U-entry R-hat / ESS / Monte-Carlo standard error arrays
        (``U_sem``: ArviZ's MCSE of the posterior mean), the R-hat null and, per test item, the sampled mean
        predictor ``f_mean`` and its MCSE ``f_mcse``; non-finite numbers become None."""
        out = {
            **self.summary(),
            "U_mean": self.U_mean.tolist(),
            "rhat_U": self.rhat_U.tolist(),
            "ess_U": self.ess_U.tolist(),
            "ess_tail_U": self.ess_tail_U.tolist(),
            "U_sem": self.mcse_U.tolist(),
            "rhat_p": self.rhat_p.record() if self.rhat_p is not None else None,
            "f_mean": self.mean_predictor.tolist(),
            "f_mcse": self.mcse_f.tolist(),
        }
        return _finite_or_none(out)

    def warnings(self) -> list[str]:
        """Human-readable warnings: the largest R-hat of U improbable for converged chains (p < 0.05 under the AR(1)
        null of :func:`smattn.p1.convergence.rhat_pvalue_of_draws`), divergences, transitions at the maximum tree
        depth."""
        out = []
        if self.rhat_p is not None and self.rhat_p.p < 0.05:
            out.append(
                f"WARNING: largest R-hat of U {_nanmax(self.rhat_U):.3f} has p = {self.rhat_p.p:.3g} under converged "
                "AR(1) chains of this run's shape and autocorrelation: chains disagree"
            )
        if self.divergences:
            out.append(f"WARNING: {self.divergences} divergent transitions")
        if self.max_depth_fraction > 0.01:
            out.append(f"WARNING: {100 * self.max_depth_fraction:.0f} % of transitions at the maximum tree depth")
        return out


def _full_model(xbar, y, arch: Architecture = None, temperature=None, dtype=None):
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
    sampler: str = "collapsed",
    chain_method: str | None = None,
    matmul_precision: str = "highest",
    rhat_null_trials: int = 1000,
    diagnostics: bool = True,
) -> SampleResult:
    """Sample the posterior with NUTS (NumPyro defaults), keeping only test predictions and U per sample.

    xbar_*: [P, H_tot, D] un-normalised path-attended inputs; y: [P]; the likelihood variance is
    max(temperature, temperature_min) as in the reference. NUTS settings are NumPyro's defaults (target acceptance
    0.8, diagonal mass matrix) with ``max_tree_depth`` (default 10, as in the reference). ``sampler``: "collapsed"
    (V0 integrated out, GP-mean test predictions) or "full" (all weights, the authors' method). ``chain_method``:
    "sequential", "parallel" (chains spread over the
    local devices, see :func:`use_host_devices`) or "vectorized"; None picks :func:`default_chain_method`; every
    method gives the same chains. ``matmul_precision``: JAX's precision of float32 matrix products during sampling
    ("highest": full float32; "default": JAX's default, TF32 on recent NVIDIA GPUs; no effect on a CPU).
    ``rhat_null_trials``: repetitions of the R-hat verdict's null (:func:`smattn.p1.convergence.rhat_pvalue_of_draws`;
    0 skips it). ``diagnostics=False`` skips every ArviZ
    diagnostic (R-hat, ESS, MCSE are then NaN, the null None): for a timing run where ArviZ is not installed. The
    sampling phase runs in two equal halves when ``num_samples`` is even, so that the compilation of its loop (paid
    in the first half only) can be estimated.
    """
    from numpyro.infer import MCMC, NUTS

    from . import collapsed as C

    if sampler not in SAMPLERS:
        raise ValueError(f"sampler must be one of {SAMPLERS}, got {sampler!r}")
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
    if matmul_precision not in ("highest", "high", "default"):
        raise ValueError(f"matmul_precision must be 'highest', 'high' or 'default', got {matmul_precision!r}")
    chain_method = chain_method or default_chain_method(num_chains)
    if chain_method not in ("sequential", "parallel", "vectorized"):
        raise ValueError(f"chain_method must be 'sequential', 'parallel' or 'vectorized', got {chain_method!r}")
    numpyro_method, devices = chain_method, 1
    if chain_method != "vectorized" and num_chains > 1:
        numpyro_method, devices = _chains_over_devices(num_chains, 1 if chain_method == "sequential" else num_chains)
    jdt = jnp.float64 if dtype == "float64" else jnp.float32
    T = max(float(temperature), float(temperature_min))

    if sampler == "full":
        xb = jnp.asarray(xbar_train, jdt)
        xt = jnp.asarray(xbar_test, jdt)

        def post(z):
            f_parts = [forward_paths(z, xt[i : i + test_chunk]) for i in range(0, xt.shape[0], test_chunk)]
            return {"f_test": jnp.concatenate(f_parts), "U": order_parameter_sample(z)}

        model = partial(_full_model, arch=arch, temperature=T, dtype=jdt)
        args, jit_args = (xb, jnp.asarray(y, jdt)), False
    else:
        data = C.CollapsedData(xbar_train, y, xbar_test, float(arch.sigma2[0]), jdt)
        post = C.postprocess(data, jnp.asarray(T, jdt), int(arch.widths[0]))
        model = partial(C.collapsed_weights_model, arch=arch, iu=data.model_iu, temperature=T, dtype=jdt)
        args, jit_args = data.model_args(), True

    halves = 2 if num_samples % 2 == 0 and num_samples >= 2 else 1
    chunk = num_samples // halves
    mcmc = MCMC(
        NUTS(model, max_tree_depth=int(max_tree_depth)),
        num_warmup=num_warmup,
        num_samples=chunk,
        num_chains=num_chains,
        chain_method=numpyro_method,
        progress_bar=False,
        postprocess_fn=post,
        jit_model_args=jit_args,
    )
    fields = ("diverging", "accept_prob", "num_steps", "adapt_state.step_size")
    # one progress line per phase (warm-up, then each half of the samples): NumPyro's own bar redraws one line
    bar = progress(total=1 + halves, desc=f"NUTS {num_chains} chain(s) x ({num_warmup} + {num_samples})", unit="phase")
    precision = None if matmul_precision == "default" else matmul_precision
    t0 = time.perf_counter()
    with jax.default_matmul_precision(precision):
        mcmc.warmup(jax.random.PRNGKey(seed), *args, extra_fields=fields, collect_warmup=False)
        jax.block_until_ready(mcmc.post_warmup_state)
        t1 = time.perf_counter()
        bar.set_postfix(phase="warm-up done", refresh=False)
        bar.update(1)
        parts, times = [], []
        for half in range(halves):
            ts = time.perf_counter()
            mcmc.run(mcmc.post_warmup_state.rng_key, *args, extra_fields=fields)
            smp = {k: np.asarray(v) for k, v in mcmc.get_samples(group_by_chain=True).items()}
            ext = {k: np.asarray(v) for k, v in mcmc.get_extra_fields(group_by_chain=True).items()}
            times.append(time.perf_counter() - ts)
            parts.append((smp, ext))
            mcmc.post_warmup_state = mcmc.last_state
            bar.set_postfix(phase=f"samples {half + 1}/{halves}", refresh=False)
            bar.update(1)
    bar.close()
    t2 = time.perf_counter()

    def cat(i, k):
        return np.concatenate([p[i][k] for p in parts], axis=1)

    U_c = cat(0, "U").astype(np.float64)  # [chains, samples, H, H]
    f_c = cat(0, "f_test").astype(np.float64)  # [chains, samples, P_test]
    steps = cat(1, "num_steps").astype(np.int64)
    if halves == 2:
        s1, s2 = parts[0][1]["num_steps"].sum(), parts[1][1]["num_steps"].sum()
        compile_s = max(times[0] - s1 * times[1] / max(s2, 1), 0.0)
    else:
        compile_s = float("nan")
    return SampleResult(
        f_test=f_c.reshape(-1, f_c.shape[-1]),
        U=U_c.reshape(-1, *U_c.shape[2:]),
        U_by_chain=U_c,
        divergences=int(cat(1, "diverging").sum()),
        accept_prob=float(cat(1, "accept_prob").mean()),
        **_diagnostics(U_c, f_c, rhat_null_trials if diagnostics else None),
        mean_leapfrog_steps=float(steps.mean()),
        num_steps=steps,
        step_size=cat(1, "adapt_state.step_size")[:, -1].astype(np.float64),
        seconds=t2 - t0,
        seconds_warmup=t1 - t0,
        seconds_sampling=t2 - t1,
        seconds_compile_sampling=compile_s,
        dtype=dtype,
        sampler=sampler,
        chain_method=chain_method,
        devices=devices,
        max_tree_depth=int(max_tree_depth),
    )


def _diagnostics(U_c: np.ndarray, f_c: np.ndarray, rhat_null_trials: int | None) -> dict:
    """The ArviZ diagnostics of a run's U [chains, samples, H, H] and f [chains, samples, P_test]; all NaN (null
    None) when ``rhat_null_trials`` is None (no diagnostics asked for)."""
    if rhat_null_trials is None:
        H, P = U_c.shape[-1], f_c.shape[-1]
        nan_U, nan_f = np.full((H, H), np.nan), np.full(P, np.nan)
        return dict(rhat_U=nan_U, ess_U=nan_U, ess_tail_U=nan_U, mcse_U=nan_U, rhat_f=nan_f, ess_f=nan_f, mcse_f=nan_f)
    return dict(
        rhat_U=_symmetric_diagnostic(conv.rhat, U_c),
        ess_U=_symmetric_diagnostic(conv.ess_bulk, U_c),
        ess_tail_U=_symmetric_diagnostic(conv.ess_tail, U_c),
        mcse_U=_symmetric_diagnostic(conv.mcse_mean, U_c),
        rhat_f=conv.rhat(f_c),
        ess_f=conv.ess_bulk(f_c),
        mcse_f=conv.mcse_mean(f_c),
        rhat_p=_rhat_pvalue(U_c, rhat_null_trials),
    )


def _rhat_pvalue(U_c: np.ndarray, trials: int) -> conv.RhatPvalue | None:
    """p-value of the largest R-hat over the H (H + 1) / 2 distinct entries of U draws [chains, samples, H, H]
    (None when R-hat is undefined at this shape, a draw is not finite, or ``trials`` is 0)."""
    draws, H = U_c.shape[1], U_c.shape[-1]
    if trials < 1 or draws < 8 or not np.all(np.isfinite(U_c)):
        return None
    iu = np.triu_indices(H)
    return conv.rhat_pvalue_of_draws(U_c[:, :, iu[0], iu[1]], trials=trials)


# sample-record key -> ledger name of the sampler's efficiency and convergence (rhat_max: the largest rank-normalised
# split R-hat over the U entries; rhat_p: the p-value of rhat_max under converged AR(1) chains
# of the run's shape and autocorrelation; ess_*_per_chain_min: the smallest bulk / tail ESS over the U entries per
# chain, which the laptop presets are sized to bring to 100, Vehtari et al. 2021)
NUTS_LEDGER_NAMES = {
    "grads_per_ess": "grads_per_ess",
    "max_depth_fraction": "max_depth_fraction",
    "rhat_U_max": "rhat_max",
    "rhat_U_p": "rhat_p",
    "ess_U_min": "ess_bulk_min",
    "ess_tail_U_min": "ess_tail_min",
    "ess_bulk_per_chain_min": "ess_bulk_per_chain_min",
    "ess_tail_per_chain_min": "ess_tail_per_chain_min",
    "ess_per_s_sampling": "ess_per_s_sampling",
}


def nuts_ledger_entries(record: dict, prefix: str, suffix: str) -> dict[str, float]:
    """Ledger entries ``<prefix>.<name><suffix>`` of one sampling record's diagnostics (a dict written by a sampling
    script); a diagnostic that was not measurable (None, e.g. R-hat below 4 draws) is left out."""
    return {
        f"{prefix}.{name}{suffix}": float(record[key])
        for key, name in NUTS_LEDGER_NAMES.items()
        if record.get(key) is not None
    }
