"""Work and memory models: the size of a job of each rule, computed from the run's resolved parameters.

``WORK[rule](params, wildcards)`` is the job's work in units of the rule's own (one function per rule, its docstring
says what it counts: FLOPs of a training, teacher draws x quadrature nodes x iterations of a state evolution,
gradients of NUTS...); a rule without an entry counts ``1`` (its cost does not depend on the scale's sizes).
``MEMORY[rule](params, wildcards)`` is the MB (2**20 bytes) of the rule's dominant arrays, or no entry where the
peak does not scale. ``params`` is the resolved configuration ``{group: {name: value}}`` at one scale,
``wildcards`` the job's wildcards ``{name: text}``. Plain floats; the seconds and MB a unit costs are ``units``'.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from smattn.p1.images.networks import architecture, layers_heads

#: copies of a job's dominant arrays held at its peak (inputs, temporaries of a vectorised step): memory models
ARRAY_COPIES = 2.0
PAPER_TOKENS = 48  # tokens per image-task sequence (2 x 16 patches + 16 query patches, P1 App. C)
TOKEN_DIM = 192
#: NUTS tree steps (leapfrog steps, i.e. gradients) per transition of the collapsed sampler, by task and width,
#: as measured by benchmarks/p1_hmc_nuts.py (docs/benchmarks.md): HMC task N = 10: 63; image task N = 500: 127;
#: image task N = 10: the workflow's laptop run (mean_leapfrog_steps of results/p1_images/L2H4/samples_N10.json).
NUTS_STEPS = {"p1_hmc_sample": {10: 63.0}, "p1_images_sample": {10: 31.0, 500: 127.0}}


def _n(x) -> int:
    return len(x) if isinstance(x, (list, tuple)) else int(x)


def gd_model(p: Mapping, model: str) -> tuple[int, int, int, int]:
    """(layers, heads, width N, query/key dimension G) of an image-task GD network (rules/p1_images.smk; a seed
    study's network, ``L2H4-seed43``, has its architecture's)."""
    i = p["p1_images"]
    L, H = layers_heads(model)
    return L, H, i["gd_width"], i["gd_qk_dim_h8" if architecture(model) == "L2H8" else "gd_qk_dim"]


def forward_flops(
    L: int, H: int, N: int, G: int, batch: int, T: int = PAPER_TOKENS, D: int = TOKEN_DIM, features: bool = True
) -> float:
    """FLOPs (2 per multiply-add) of one forward pass of the image-task transformer on ``batch`` sequences as
    smattn.p1.images.model computes it, the sum over attention paths: the path readouts (the value chain's weights),
    the product of the input with the stacked [queries; keys; path readouts], the attention logits, the path
    contraction. ``features``: the input as TokenFeatures (64 patch values + 3 label codes per token, plus the fold
    of the weights onto them and the positional products), as in training; else sequences x_0 of width D."""
    n = batch * T
    P = H**L
    O = 2 * L * H * G + P
    weights = sum(H ** (L - l) * N * N for l in range(L)) + P * N * D  # path readouts, then times W_in
    K = D
    if features:
        K = D // 3 + 3
        weights += O * D * 3 + T * D * O  # W labels^T, positions W^T
    product = n * K * O
    logits = L * batch * H * T * T * G
    chain = sum(H * batch * H ** (L - 1 - l) * T * T for l in range(L - 1)) + batch * T * P
    return 2.0 * (weights + product + logits + chain)


def train_steps(p: Mapping, model: str) -> int:
    """Optimiser steps of the image-task training of ``model``: epochs x batches per epoch, at most gd_max_steps."""
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
    L, H = layers_heads(model)
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
    x heads x test tasks (Omniglot + the MNIST and Fashion-MNIST 0-vs-1 test sets, ~4000 tasks), twice: the oracle's
    validation sets have the test sets' sizes."""
    q = p["p1_pruning"]
    L, H, N, G = gd_model(p, wc["model"])
    runs = L * H * (3 + q["random_orders"])
    return runs * forward_flops(L, H, N, G, 2 * (q["n_omniglot"] + 4000))


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


def _work_fig5b_draws(p, wc):
    """Label shuffles x P^2 (each shuffle contracts a P x P kernel) over the draws and their four paths."""
    h = p["p1_hmc"]
    return h["fig5b_draws"] * h["fig5b_draw_permutations"] * h["n_train"] ** 2


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


def _work_gamp_box(p, wc):
    """Trapped-run reruns: seeds x iterations x n x (d + box nodes), n = alpha d (the box runs of the trapped
    seeds dominate; their share is not known before the run, the unit cost holds the laptop's)."""
    d = p["p2_dynamics"]
    n = d["gamp_iter_alpha"] * d["gamp_box_d"]
    return d["gamp_box_seeds"] * d["gamp_box_iterations"] * n * (d["gamp_box_d"] + (4 * d["gamp_box_panels"]) ** 2)


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


def _trec_sweep_takes_main_runs(d, wc) -> bool:
    """Whether a sweep configuration takes its runs from the main runs instead of training (rules/p2_dynamics.smk,
    ``p2d_sweep_main_runs``, and scripts/p2_dynamics_trec_sweep_run.py): the main runs' init std and AdamW rule, no
    more runs than trec_repetitions, and whole trainings."""
    if "opt" not in wc or "init" not in wc:
        return False
    same = wc["opt"] == d["trec_optimizer"] and float(wc["init"]) == float(d["trec_attn_init_std"])
    q = min(d["trec_max_questions"] or TREC_QUESTIONS, TREC_QUESTIONS)
    full = d["trec_epochs"] * -(-(q - math.ceil(0.2 * q)) // d["trec_batch_size"])
    return same and d["trec_sweep_reps"] <= d["trec_repetitions"] and d["trec_sweep_steps"] >= full


def _work_trec_short_runs(d) -> float:
    """Short TREC runs of one configuration (the sweep's, the learning-rate comparison's): reps x optimiser steps
    (capped at trec_epochs epochs) x batch, in questions trained on as _work_trec counts them (the same loop)."""
    q = min(d["trec_max_questions"] or TREC_QUESTIONS, TREC_QUESTIONS)
    steps = min(d["trec_sweep_steps"], d["trec_epochs"] * -(-q // d["trec_batch_size"]))
    return d["trec_sweep_reps"] * steps * d["trec_batch_size"]


def _work_trec_sweep_run(p, wc):
    """One sweep configuration (_work_trec_short_runs); none for the configuration that takes the main runs."""
    d = p["p2_dynamics"]
    return 0.0 if _trec_sweep_takes_main_runs(d, wc) else _work_trec_short_runs(d)


def _work_trec_lr_run(p, wc):
    """One learning rate of the comparison at the notebook's init (_work_trec_short_runs)."""
    return _work_trec_short_runs(p["p2_dynamics"])


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
    "p1_fig5b_draws": _work_fig5b_draws,
    "p2_se_crosscheck": _work_se_crosscheck,
    "p2_gamp_run": _work_gamp_run,
    "p2_gamp_growth": _work_gamp_growth,
    "p2_gamp_box": _work_gamp_box,
    "p2_sgd_train": _work_sgd,
    "p2_trec_run": _work_trec,
    "p2_trec_sweep_run": _work_trec_sweep_run,
    "p2_trec_lr_run": _work_trec_lr_run,
}
#: a rule without unit costs of its own takes those of a rule that runs the same code on the same kind of data
UNIT_FROM = {
    "p2_trec_sweep_run": "p2_trec_run",
    "p2_trec_sweep": "p2_fig3_right",
    "p2_trec_lr_run": "p2_trec_run",
    "p2_trec_lr": "p2_fig3_right",
    "p1_images_network_seeds": "p1_fig3b",
}


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
