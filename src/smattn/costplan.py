"""Cost plan: what every job of a run will cost at a scale, before it runs, from measured unit costs.

A job's cost is modelled as ``overhead_s + s_per_unit * work`` CPU seconds (or GPU seconds for a gpu=1 job run on a
GPU), where ``work`` is a size measure computed from the resolved parameters of the run (``WORK``: one function per
rule, e.g. teacher draws x quadrature nodes x iterations; ``1`` for a job whose cost does not depend on the scale),
and the peak memory as ``rss_base_mb + mb_per_unit * memory units`` (``MEMORY``; rules without an entry keep their
measured peak). The unit costs come from a recorded run (its cost table, ``results/costs/jobs.csv``) and from the
benchmark scripts, each row with the machine, date and commit it was measured on (``benchmarks/unit_costs.csv``,
written by ``benchmarks/unit_costs.py``); a GPU row that was computed from a card's peak instead of measured says so.

Shapes and units: work and memory units are plain floats (their meaning is in each function's docstring); times in
seconds, memory in MB (2**20 bytes), declared runtimes in minutes as Snakemake's ``runtime`` resource.

This module knows nothing of Snakemake: the workflow passes each job as a mapping (rule, wildcards, threads,
declared resources, the jobs it waits for) and the resolved parameters ``{group: {name: value}}``.
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields

from . import io as sio
from .costs import critical_path, ideal_time

#: a job's declared runtime must be at least this many times its projected wall time
RUNTIME_MARGIN = 2.0
#: ... and at most this many times, or RUNTIME_CEILING_MIN minutes where that is longer (a short job's request is
#: dominated by start-up and queue granularity, not by its projection)
RUNTIME_CEILING = 10.0
RUNTIME_CEILING_MIN = 60.0
#: the runtime a job requests: this many times its projection (more where the unit cost was computed, not measured),
#: at least REQUEST_MIN_RUNTIME minutes, within [RUNTIME_MARGIN, max(RUNTIME_CEILING x, RUNTIME_CEILING_MIN)]
REQUEST_MARGIN = {"measured": 3.0, "computed": 5.0}
REQUEST_MIN_RUNTIME = 10
#: each further attempt of a job (Snakemake's ``attempt``, after a failure) requests this factor more runtime, so a
#: job that ran out of time can finish on its retry
RETRY_GROWTH = 2.0
#: requested memory: the projected peak (host memory; for a GPU job at least its measured CPU peak) times this
#: margin, rounded up to REQUEST_MEM_STEP_MB, at least REQUEST_MIN_MEM_MB
REQUEST_MEM_MARGIN = 1.5
REQUEST_MEM_STEP_MB = 500
REQUEST_MIN_MEM_MB = 1000
#: copies of a job's dominant arrays held at its peak (inputs, temporaries of a vectorised step): memory models
ARRAY_COPIES = 2.0
PAPER_TOKENS = 48  # tokens per image-task sequence (2 x 16 patches + 16 query patches, P1 App. C)
TOKEN_DIM = 192
#: NUTS tree steps (leapfrog steps, i.e. gradients) per transition of the collapsed sampler, by task and width,
#: as measured by benchmarks/p1_hmc_nuts.py (README, Benchmarks): HMC task N = 10: 63; image task N = 500: 127;
#: image task N = 10: the workflow's laptop run (mean_leapfrog_steps of results/p1_images/L2H4/samples_N10.json).
NUTS_STEPS = {"p1_hmc_sample": {10: 63.0}, "p1_images_sample": {10: 31.0, 500: 127.0}}


# ---------------------------------------------------------------------------------------------------- work models


def _n(x) -> int:
    return len(x) if isinstance(x, (list, tuple)) else int(x)


def gd_model(p: Mapping, model: str) -> tuple[int, int, int, int]:
    """(layers, heads, width N, query/key dimension G) of an image-task GD model (rules/p1_images.smk)."""
    i = p["p1_images"]
    return {
        "L2H4": (2, 4, i["gd_width"], i["gd_qk_dim"]),
        "L3H3": (3, 3, i["gd_width"], i["gd_qk_dim"]),
        "L2H8": (2, 8, i["gd_width"], i["gd_qk_dim_h8"]),
    }[model]


def forward_flops(L: int, H: int, N: int, G: int, batch: int, T: int = PAPER_TOKENS, D: int = TOKEN_DIM) -> float:
    """FLOPs (2 per multiply-add) of one forward pass of the image-task transformer on ``batch`` sequences
    (smattn.p1.images.model: queries/keys from the bare input, the layer-1 value fold when it pays, the head mix)."""
    n = batch * T
    qk = 2 * n * D * H * G  # queries and keys of one layer
    logits = batch * H * T * T * G
    mix = batch * H * T * T * N
    plain1 = n * D * N + n * H * N * N
    fold1 = H * N * N * D + n * H * N * D
    value = min(plain1, fold1) + (L - 1) * n * H * N * N
    return 2.0 * (L * (qk + logits + mix) + value + batch * N)  # + the readout


def train_steps(p: Mapping, model: str) -> int:
    i = p["p1_images"]
    n = i["gd_epochs"] * (i["gd_tasks_per_epoch"] // i["gd_batch"])
    return n if i["gd_max_steps"] is None else min(n, int(i["gd_max_steps"]))


def _work_train(p, wc):
    """FLOPs of the training: steps x (forward + backward, 3 forwards) + the validation passes."""
    i = p["p1_images"]
    L, H, N, G = gd_model(p, wc["model"])
    steps = train_steps(p, wc["model"])
    step = 3 * forward_flops(L, H, N, G, i["gd_batch"])
    val = (steps // i["gd_val_every"] + 1) * forward_flops(L, H, N, G, i["gd_n_val"])
    return steps * step + val


def _work_export(p, wc):
    """Forward FLOPs of the evaluation and export passes (3 test sets of gd_eval_tasks, the sequence pools)."""
    i = p["p1_images"]
    L, H, N, G = gd_model(p, wc["model"])
    tasks = 3 * i["gd_eval_tasks"] + i["n_train_pool"] + i["n_test_pool"]
    return forward_flops(L, H, N, G, tasks)


def _paths(model: str) -> int:
    L, H = int(model[1]), int(model[3:])
    return H**L


def _work_images_theory(p, wc):
    """Grid points x P^3 x paths: one minimisation of the action per (N, T) and per GP temperature."""
    i = p["p1_images"]
    points = _n(i["widths"]) * _n(i["temperatures"]) + _n(i["gp_temperatures"])
    return points * i["P"] ** 3 * _paths(wc["model"])


def _nuts_steps(rule: str, N: int) -> float:
    table = NUTS_STEPS[rule]
    nearest = min(table, key=lambda w: abs(math.log(w / N)))
    return table[nearest]


def _preset(p, group, N):
    g = p[group]
    table = g["nuts_presets"][g["nuts_preset"]]
    return {**table["default"], **table.get(str(N), {})}


def _work_images_sample(p, wc):
    """Gradients of the collapsed potential (P x P kernel and its Cholesky): chains x transitions x tree steps, x 0.55
    in float32 (benchmarks/p1_collapsed_gradient.py: float32 over float64 per gradient)."""
    N = int(wc["N"])
    s = _preset(p, "p1_images", N)
    dtype = 0.55 if s["dtype"] == "float32" else 1.0
    return s["chains"] * (s["warmup"] + s["samples"]) * _nuts_steps("p1_images_sample", N) * dtype


def _work_hmc_sample(p, wc):
    """Gradients of the HMC task's collapsed potential (P = 100): chains x transitions x tree steps."""
    N = int(wc["N"])
    s = _preset(p, "p1_hmc", N)
    return s["chains"] * (s["warmup"] + s["samples"]) * _nuts_steps("p1_hmc_sample", N)


def _work_hmc_theory(p, wc):
    """One action minimisation per width."""
    return _n(p["p1_hmc"]["widths"])


def _work_pruning_theory(p, wc):
    """Path-pair Gram contractions and the P x P solve of one minimisation: pairs x P^2 + P^3."""
    P = p["p1_pruning"]["theory_P_h8" if wc["model"] == "L2H8" else "theory_P"]
    paths = _paths(wc["model"])
    return paths * (paths + 1) / 2 * P**2 + P**3


def _work_pruning_evaluate(p, wc):
    """Forward FLOPs of the pruned-network evaluations: (single heads + score and diag(U) orders + random orders)
    x heads x test tasks (Omniglot + the MNIST and Fashion-MNIST 0-vs-1 test sets, ~4000 tasks)."""
    q = p["p1_pruning"]
    L, H, N, G = gd_model(p, wc["model"])
    runs = L * H * (3 + q["random_orders"])
    return runs * forward_flops(L, H, N, G, q["n_omniglot"] + 4000)


def _work_l2_curve(p, wc):
    """Channel averages: n1d^2 nodes x (alpha points x SE draws x iteration cap + branch points x draws) + errors."""
    t = p["p2_theory"]
    se = t["l2_alpha_points"] * t["n_se"] * t["se_max_iter"] + t["l2_q_points"] * t["n_curve"] + t["n_k"]
    return t["n1d"] ** 2 * se + 3 * t["l2_alpha_points"] * t["error_samples"]


def _work_gamp_alpha(p, wc):
    """GAMP at one alpha: runs x iterations x n x (d + channel nodes), n = alpha d samples."""
    t = p["p2_theory"]
    n = float(wc["alpha"]) * t["gamp_sweep_d"]
    return t["gamp_sweep_runs"] * t["gamp_sweep_iterations"] * n * (t["gamp_sweep_d"] + t["gamp_sweep_n1d"] ** 2)


def _work_thresholds(p, wc):
    """Quasi-Monte-Carlo teacher draws of both thresholds at one c: K's draws with their quadrature check (1 + 1/4 +
    1/4 at 1.5x nodes) and q2 points x first-layer draws, twice (regularised and noiseless). The draws dominate: the
    measured cost hardly changes with the quadrature nodes (laptop n1d 24 -> paper 32)."""
    t = p["p2_theory"]
    return 1.8 * t["pd_n_k"] + 2 * t["pd_q_points"] * t["pd_n_first"]


AUTHORS_POINTS = 2e4  # integrand points per sample and iteration of the authors' box Monte-Carlo estimator


def _work_pd_hypotheses(p, wc):
    """Short SE runs scanned over alpha (upper bound: the whole grid) with our quadrature and the authors' estimator."""
    t = p["p2_theory"]
    ours = _n(t["pd_hyp_skips"]) * t["pd_hyp_alpha_max"] / t["pd_hyp_alpha_step"] * t["pd_hyp_n1d"] ** 2
    authors = _n(t["pd_hyp_authors_skips"]) * t["pd_hyp_alpha_max"] / t["pd_hyp_authors_alpha_step"] * AUTHORS_POINTS
    return t["pd_hyp_samples"] * t["pd_hyp_iterations"] * (ours + authors)


def _work_l3_authors(p, wc):
    t = p["p2_theory"]
    return _n(t["l3_authors_alphas"]) * t["l3_authors_iterations"] * t["l3_authors_n_samples"] * AUTHORS_POINTS


def _work_l3_state_evolution(p, wc):
    """Depth-3 SE: alphas x iteration cap x draws x l3_n1d^4 grid nodes (+ K draws, errors)."""
    t = p["p2_theory"]
    se = _n(t["l3_alphas"]) * (t["l3_max_iter"] * t["l3_n_samples"] + t["l3_n_k"]) * t["l3_n1d"] ** 4
    return se + 3 * _n(t["l3_alphas"]) * t["error_samples"]


def _work_fig5_clamped(p, wc):
    t = p["p2_theory"]
    return _n(t["fig5_q22"]) * t["se_max_iter"] * t["fig5_n_samples"] * t["n1d"] ** 2


def _work_first_layer_stability(p, wc):
    """Linearised SE maps at Q11 = 0 over the root solve in alpha: draws x n1d^2 nodes (the solve's iterations do not
    depend on the scale)."""
    t = p["p2_theory"]
    return t["fs_n_samples"] * t["n1d"] ** 2


def _work_se_crosscheck(p, wc):
    t = p["p2_theory"]
    return t["bf_points"] * (_n(t["l3_alphas"]) * t["l3_bf_draws"] + t["l2_bf_draws"])


def _work_gamp_run(p, wc):
    """One GAMP run of Fig. 2 left: iterations x n x (d + channel nodes), n = alpha d."""
    d = p["p2_dynamics"]
    n = d["gamp_iter_alpha"] * d["gamp_iter_d"]
    return d["gamp_iter_steps"] * n * (d["gamp_iter_d"] + 24**2)


def _work_gamp_growth(p, wc):
    d = p["p2_dynamics"]
    n = d["gamp_iter_alpha"] * d["gamp_growth_d"]
    return d["gamp_growth_seeds"] * d["gamp_growth_iterations"] * n * d["gamp_growth_d"] + d["gamp_growth_se_samples"]


def _work_sgd(p, wc):
    """SGD: runs x epochs x steps per batch x n x d (n = alpha d samples of two d-dimensional tokens)."""
    d = p["p2_dynamics"]
    n = d["sgd_alpha"] * d["sgd_d"]
    return d["sgd_runs"] * d["sgd_epochs"] * d["sgd_steps_per_batch"] * n * d["sgd_d"]


TREC_QUESTIONS = 5452  # training questions of TREC (train_5500.label)


def _work_trec(p, wc):
    """One TREC repetition: epochs x training questions."""
    d = p["p2_dynamics"]
    q = d["trec_max_questions"] or TREC_QUESTIONS
    return d["trec_epochs"] * min(q, TREC_QUESTIONS)


def _work_trec_sweep_run(p, wc):
    """One sweep configuration: reps x optimiser steps (capped at trec_epochs epochs) x batch, in questions trained on
    as _work_trec counts them (the same training loop)."""
    d = p["p2_dynamics"]
    q = min(d["trec_max_questions"] or TREC_QUESTIONS, TREC_QUESTIONS)
    steps = min(d["trec_sweep_steps"], d["trec_epochs"] * -(-q // d["trec_batch_size"]))
    return d["trec_sweep_reps"] * steps * d["trec_batch_size"]


def _constant(p, wc):
    """A job whose cost does not depend on the scale's sizes (figures, data preparation)."""
    return 1.0


WORK: dict[str, Callable[[Mapping, Mapping], float]] = {
    "p1_images_train": _work_train,
    "p1_images_export": _work_export,
    "p1_images_theory": _work_images_theory,
    "p1_images_sample": _work_images_sample,
    "p1_hmc_theory": _work_hmc_theory,
    "p1_hmc_sample": _work_hmc_sample,
    "p1_pruning_theory_U": _work_pruning_theory,
    "p1_pruning_evaluate": _work_pruning_evaluate,
    "p2_l2_state_evolution": _work_l2_curve,
    "p2_gamp_alpha": _work_gamp_alpha,
    "p2_thresholds_c": _work_thresholds,
    "p2_pd_hypotheses": _work_pd_hypotheses,
    "p2_l3_authors_estimator": _work_l3_authors,
    "p2_l3_state_evolution": _work_l3_state_evolution,
    "p2_fig5_clamped": _work_fig5_clamped,
    "p2_first_layer_stability": _work_first_layer_stability,
    "p2_se_crosscheck": _work_se_crosscheck,
    "p2_gamp_run": _work_gamp_run,
    "p2_gamp_growth": _work_gamp_growth,
    "p2_sgd_train": _work_sgd,
    "p2_trec_run": _work_trec,
    "p2_trec_sweep_run": _work_trec_sweep_run,
}
#: a rule without unit costs of its own takes those of a rule that runs the same code on the same kind of data
UNIT_FROM = {"p2_trec_sweep_run": "p2_trec_run", "p2_trec_sweep": "p2_fig3_right"}


def _mem_pruning_theory(p, wc):
    """The path-pair Gram tensor: pairs x P^2 float64."""
    P = p["p1_pruning"]["theory_P_h8" if wc["model"] == "L2H8" else "theory_P"]
    paths = _paths(wc["model"])
    return paths * (paths + 1) / 2 * P**2 * 8 / 2**20


def _mem_images_theory(p, wc):
    P = p["p1_images"]["P"]
    paths = _paths(wc["model"])
    return paths * (paths + 1) / 2 * P**2 * 8 / 2**20


def _mem_gamp(d, alpha):
    return alpha * d * 2 * d * 8 / 2**20  # the data: n x 2 x d float64, n = alpha d


MEMORY: dict[str, Callable[[Mapping, Mapping], float]] = {
    "p1_pruning_theory_U": _mem_pruning_theory,
    "p1_images_theory": _mem_images_theory,
    "p2_gamp_alpha": lambda p, wc: _mem_gamp(p["p2_theory"]["gamp_sweep_d"], float(wc["alpha"])),
    "p2_gamp_run": lambda p, wc: _mem_gamp(p["p2_dynamics"]["gamp_iter_d"], p["p2_dynamics"]["gamp_iter_alpha"]),
    "p2_sgd_train": lambda p, wc: _mem_gamp(p["p2_dynamics"]["sgd_d"], p["p2_dynamics"]["sgd_alpha"]),
    "p2_thresholds_c": lambda p, wc: max(p["p2_theory"]["pd_literal_samples"], p["p2_theory"]["pd_n_k"]) * 64 / 2**20,
    "p2_l2_state_evolution": lambda p, wc: p["p2_theory"]["error_samples"] * 8 * 8 / 2**20,
}


def work(rule: str, params: Mapping, wildcards: Mapping) -> float:
    """Work units of a job of ``rule`` (``1`` for rules without a model) under resolved ``params``."""
    return float(WORK.get(rule, _constant)(params, wildcards))


def memory_units(rule: str, params: Mapping, wildcards: Mapping) -> float | None:
    """Memory units (MB of the rule's dominant arrays) of a job, or None when its peak does not scale."""
    f = MEMORY.get(rule)
    return None if f is None else float(f(params, wildcards))


def parse_wildcards(text: str) -> dict[str, str]:
    """``"model=L2H4 N=10"`` -> ``{"model": "L2H4", "N": "10"}`` (the cost table's wildcards column)."""
    return dict(item.split("=", 1) for item in text.split()) if text else {}


# ----------------------------------------------------------------------------------------------- unit-cost table


@dataclass(frozen=True)
class UnitCost:
    """Measured (or, for a GPU, computed) unit cost of one rule on one kind of device.

    ``overhead_s`` + ``s_per_unit`` x work = CPU seconds (device cpu) or GPU seconds (device gpu) of a job;
    ``cpu_per_wall`` = CPU seconds per wall second measured (threads actually used); memory
    ``rss_base_mb`` + ``mb_per_unit`` x memory units (``mb_per_unit`` 0: the measured peak, ``rss_base_mb``).
    ``calib_scale``: the scale of the run it was measured at; ``basis``: measured | computed."""

    rule: str
    device: str
    overhead_s: float
    s_per_unit: float
    cpu_per_wall: float
    rss_base_mb: float
    mb_per_unit: float
    calib_scale: str
    basis: str
    source: str
    machine: str
    date: str
    commit: str


UNIT_COLUMNS = tuple(f.name for f in fields(UnitCost))


def read_unit_costs(path: str | os.PathLike) -> list[UnitCost]:
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    missing = set(UNIT_COLUMNS) - set(rows[0] if rows else UNIT_COLUMNS)
    if missing:
        raise ValueError(f"{path}: unit-cost table without columns {sorted(missing)}")
    out = []
    for r in rows:
        num = {k: float(r[k]) for k in ("overhead_s", "s_per_unit", "cpu_per_wall", "rss_base_mb", "mb_per_unit")}
        out.append(UnitCost(**{**r, **num}))
    return out


def write_unit_costs(path: str | os.PathLike, units: Iterable[UnitCost]) -> None:
    sio.write_csv(path, UNIT_COLUMNS, ([str(v) for v in asdict(u).values()] for u in units))


def choose_unit(units: Sequence[UnitCost], rule: str, device: str, scale: str) -> UnitCost | None:
    """The unit cost of ``rule`` on ``device``: the one measured at ``scale`` if any, else a measured one (the
    largest calibration scale), else a computed one; a rule without any takes those of its ``UNIT_FROM`` rule."""
    cand = [u for u in units if u.rule == rule and u.device == device]
    if not cand and rule in UNIT_FROM:
        return choose_unit(units, UNIT_FROM[rule], device, scale)
    if not cand:
        return None
    order = {"smoke": 0, "laptop": 1, "paper": 2}
    return max(cand, key=lambda u: (u.calib_scale == scale, u.basis == "measured", order.get(u.calib_scale, -1)))


def calibrate(
    measured: Sequence[Mapping],
    env_overhead_s: Mapping[str, float],
    env_rss_mb: Mapping[str, float],
    *,
    scale: str,
    source: str,
    machine: str,
    date: str,
    commit: str,
) -> list[UnitCost]:
    """CPU unit costs per rule from a run's jobs (each a mapping with rule, env, work, mem_units, cpu_s, wall_s,
    max_rss_mb as numbers). The overhead is the environment's measured start-up (Python and its imports, ``env``
    torch or jax) capped at the job's CPU time; ``s_per_unit`` is the rule's CPU time beyond the overheads over its
    work, summed over its jobs (the ratio estimator: large jobs weigh most); ``cpu_per_wall`` the median CPU/wall.
    Memory: for a rule with a memory model (MB of its dominant arrays) the peak is ``ARRAY_COPIES`` x those MB on
    top of what the job held besides them (the median of max_rss - ARRAY_COPIES x units); for the others, the
    largest measured peak."""

    def median(xs):
        xs = sorted(xs)
        k = len(xs) // 2
        return xs[k] if len(xs) % 2 else 0.5 * (xs[k - 1] + xs[k])

    by_rule: dict[str, list[Mapping]] = {}
    for j in measured:
        if j.get("cpu_s") is None or not j.get("wall_s"):
            continue
        by_rule.setdefault(j["rule"], []).append(j)
    out = []
    for rule, jobs in by_rule.items():
        env = jobs[0]["env"]
        overhead = min(env_overhead_s[env], min(j["cpu_s"] for j in jobs))
        rate = sum(max(j["cpu_s"] - overhead, 0.0) for j in jobs) / sum(j["work"] for j in jobs)
        cpu_per_wall = median([max(j["cpu_s"], 1e-3) / j["wall_s"] for j in jobs])
        rss = [j for j in jobs if j.get("max_rss_mb") is not None]
        if not rss:
            base, per = env_rss_mb[env], 0.0
        elif jobs[0].get("mem_units") is None:
            base, per = max(j["max_rss_mb"] for j in rss), 0.0
        else:
            per = ARRAY_COPIES
            base = max(env_rss_mb[env], median([j["max_rss_mb"] - per * j["mem_units"] for j in rss]))
        out.append(
            UnitCost(
                rule, "cpu", overhead, rate, cpu_per_wall, base, per, scale, "measured", source, machine, date, commit
            )
        )
    return out


# ------------------------------------------------------------------------------------------------------ the plan

PLAN_COLUMNS = (
    "group",
    "rule",
    "wildcards",
    "device",
    "threads",
    "work",
    "cpu_h",
    "gpu_h",
    "wall_h",
    "peak_mem_mb",
    "runtime_min",
    "mem_mb",
    "runtime_over_projection",
    "flag",
    "unit_basis",
    "unit_source",
)


@dataclass(frozen=True)
class PlanRow:
    group: str
    rule: str
    wildcards: str
    device: str
    threads: int
    work: float
    cpu_s: float | None
    gpu_s: float
    wall_s: float | None
    peak_mem_mb: float | None
    runtime_min: float
    mem_mb: float
    flag: str
    unit_basis: str
    unit_source: str

    @property
    def runtime_ratio(self) -> float | None:
        return None if not self.wall_s else 60.0 * self.runtime_min / self.wall_s

    def cells(self) -> list[str]:
        def h(s):
            return "" if s is None else f"{s / 3600:.4f}"

        ratio = self.runtime_ratio
        return [
            self.group,
            self.rule,
            self.wildcards,
            self.device,
            str(self.threads),
            f"{self.work:.6g}",
            h(self.cpu_s),
            h(self.gpu_s),
            h(self.wall_s),
            "" if self.peak_mem_mb is None else f"{self.peak_mem_mb:.0f}",
            f"{self.runtime_min:g}",
            f"{self.mem_mb:g}",
            "" if ratio is None else f"{ratio:.2f}",
            self.flag,
            self.unit_basis,
            self.unit_source,
        ]


def job_device(gpu: bool, on_gpu: bool) -> str:
    """The device a job's cost is projected on: ``gpu`` for a gpu=1 job of a run on GPUs, else ``cpu``."""
    return "gpu" if (on_gpu and gpu) else "cpu"


def _project(u: UnitCost, rule: str, params: Mapping, wc: Mapping, device: str, threads: int):
    """(work, cpu_s, gpu_s, wall_s, peak MB) of one job under unit cost ``u``."""
    w = work(rule, params, wc)
    seconds = u.overhead_s + u.s_per_unit * w
    mu = memory_units(rule, params, wc)
    mem = u.rss_base_mb + (u.mb_per_unit * mu if mu is not None else 0.0)
    if device == "gpu":
        return w, seconds, seconds, seconds, mem  # a host thread drives the card for the whole job
    # the job's own cores: as parallel as measured, within [1, threads] (a measured ratio below 1 is other processes
    # sharing the cores, not the job)
    return w, seconds, 0.0, seconds / min(max(u.cpu_per_wall, 1.0), float(threads)), mem


def runtime_bounds(wall_s: float) -> tuple[float, float]:
    """[lowest, highest] declared runtime (min) the plan accepts for a job projected to take ``wall_s`` seconds."""
    wall_min = wall_s / 60.0
    return RUNTIME_MARGIN * wall_min, max(RUNTIME_CEILING * wall_min, RUNTIME_CEILING_MIN)


@dataclass(frozen=True)
class Request:
    """What a job asks the scheduler for: ``runtime_min`` (Snakemake ``runtime``) and ``mem_mb``, with the
    projection they were sized from."""

    runtime_min: int
    mem_mb: int
    wall_s: float
    peak_mem_mb: float
    device: str
    basis: str


def request(
    rule: str,
    params: Mapping,
    wildcards: Mapping,
    scale: str,
    attempt: int = 1,
    *,
    units: Sequence[UnitCost],
    threads: int = 1,
    gpu: bool = False,
) -> Request:
    """The runtime and memory a job of ``rule`` requests at ``scale`` on its ``attempt`` (1 the first), sized from its
    projection (the same as the plan's: a gpu=1 job on a GPU at paper scale). Runtime: ``REQUEST_MARGIN`` x the
    projected wall time (by the unit cost's basis), at least ``REQUEST_MIN_RUNTIME`` min, within
    :func:`runtime_bounds`, times ``RETRY_GROWTH ** (attempt - 1)``; memory: the projected peak x
    ``REQUEST_MEM_MARGIN`` rounded up. Raises ValueError for a rule without a unit cost."""
    device = job_device(gpu, scale == "paper")
    u = choose_unit(units, rule, device, scale)
    if u is None:
        raise ValueError(f"no unit cost for {rule} on {device}: measure it (benchmarks/unit_costs.py)")
    _, _, _, wall_s, peak = _project(u, rule, params, wildcards, device, threads)
    if device == "gpu":  # the host side of a GPU job holds at least what the same job held on the CPU
        cpu = choose_unit(units, rule, "cpu", scale)
        if cpu is not None:
            peak = max(peak, _project(cpu, rule, params, wildcards, "cpu", threads)[4])
    lo, hi = runtime_bounds(wall_s)
    minutes = max(REQUEST_MARGIN.get(u.basis, max(REQUEST_MARGIN.values())) * wall_s / 60.0, REQUEST_MIN_RUNTIME)
    minutes = max(min(math.ceil(minutes), math.floor(hi)), math.ceil(lo))
    minutes = math.ceil(minutes * RETRY_GROWTH ** (max(int(attempt), 1) - 1))
    mem = max(REQUEST_MIN_MEM_MB, math.ceil(peak * REQUEST_MEM_MARGIN / REQUEST_MEM_STEP_MB) * REQUEST_MEM_STEP_MB)
    return Request(int(minutes), int(mem), wall_s, peak, device, u.basis)


def project_job(job: Mapping, params: Mapping, units: Sequence[UnitCost], scale: str, on_gpu: bool) -> PlanRow:
    """The plan row of one job (``job``: group, rule, wildcards text, threads, gpu, runtime (min), mem_mb)."""
    rule, wc = job["rule"], parse_wildcards(job["wildcards"])
    device = job_device(bool(job.get("gpu")), on_gpu)
    u = choose_unit(units, rule, device, scale)
    flags = []
    if u is None:
        w = work(rule, params, wc)
        cpu_s = gpu_s = wall_s = mem = None
        flags.append(f"no unit cost for {rule} on {device}")
        basis = source = ""
    else:
        w, cpu_s, gpu_s, wall_s, mem = _project(u, rule, params, wc, device, int(job["threads"]))
        basis, source = u.basis, u.source
    gpu_s = gpu_s or 0.0
    row = PlanRow(
        job["group"],
        rule,
        job["wildcards"],
        device,
        int(job["threads"]),
        w,
        cpu_s,
        gpu_s,
        wall_s,
        mem,
        float(job["runtime"]),
        float(job["mem_mb"]),
        "",
        basis,
        source,
    )
    ratio = row.runtime_ratio
    if ratio is not None:
        lo, hi = runtime_bounds(row.wall_s)
        if row.runtime_min < lo:
            flags.append(f"runtime {row.runtime_min:g} min < {RUNTIME_MARGIN:g} x projected {row.wall_s / 60:.1f} min")
        elif row.runtime_min > hi:
            flags.append(
                f"runtime {row.runtime_min:g} min > max({RUNTIME_CEILING:g} x projected {row.wall_s / 60:.1f} min, "
                f"{RUNTIME_CEILING_MIN:g} min)"
            )
    if mem is not None and mem > row.mem_mb:
        flags.append(f"mem_mb {row.mem_mb:g} < projected peak {mem:.0f} MB")
    return PlanRow(**{**asdict(row), "flag": "; ".join(flags)})


def plan_summary(rows: Sequence[PlanRow], after: Mapping[str, Sequence[str]], keys: Sequence[str], cores: int) -> dict:
    """Totals of a plan: CPU and GPU hours (all, per group), flagged jobs, critical path and ideal time on ``cores``."""
    durations = {k: (r.wall_s or 0.0) for k, r in zip(keys, rows, strict=True)}
    threads = {k: r.threads for k, r in zip(keys, rows, strict=True)}
    length, path = critical_path(durations, after)
    groups: dict[str, dict] = {}
    for r in rows:
        g = groups.setdefault(r.group, {"jobs": 0, "cpu_h": 0.0, "gpu_h": 0.0})
        g["jobs"] += 1
        g["cpu_h"] += (r.cpu_s or 0.0) / 3600
        g["gpu_h"] += r.gpu_s / 3600
    return {
        "jobs": len(rows),
        "cpu_h": sum((r.cpu_s or 0.0) for r in rows) / 3600,
        "gpu_h": sum(r.gpu_s for r in rows) / 3600,
        # what the jobs ask the scheduler for: threads x runtime, and the runtime of the jobs on a GPU
        "requested_cpu_h": sum(r.threads * r.runtime_min for r in rows) / 60,
        "requested_gpu_h": sum(r.runtime_min for r in rows if r.device == "gpu") / 60,
        "groups": groups,
        "flagged": [r for r in rows if r.flag],
        "critical_path_h": length / 3600,
        "critical_path": [f"{rows[keys.index(k)].rule} {rows[keys.index(k)].wildcards}".strip() for k in path],
        "ideal_h": ideal_time(durations, threads, after, cores) / 3600,
        "cores": cores,
    }
