# P2 (Troiani et al. 2025), learning dynamics: layer-wise learning over time.
#   Fig. 2 left   GAMP iterations: per-iteration layer similarity with the teacher (d = 1000, alpha = 1.2)
#   Fig. 2 right  plain SGD on the two-layer attention target (d = 500, alpha = 15, 8 runs)
#   Fig. 3 right  a two-layer tied-attention transformer trained on TREC (8 repetitions)

P2D = group_params("p2_dynamics")
P2D_TREC_REPS = list(range(P2D["trec_repetitions"]))
P2D_GAMP_RUNS = list(range(P2D["gamp_iter_runs"]))
# the keys that configure one TREC run (smattn.p2.dynamics.trec.trec_config), and the sweep's configurations
P2D_TREC = {k: v for k, v in P2D.items() if k.startswith("trec_") and not k.startswith("trec_sweep_")}
P2D_SWEEP = dict(
    init=[f"{v:g}" for v in P2D["trec_sweep_inits"] for _ in P2D["trec_sweep_optimizers"]],
    opt=[o for _ in P2D["trec_sweep_inits"] for o in P2D["trec_sweep_optimizers"]],
)
# the learning rates compared with the published curves at the notebook's init (wildcard values)
P2D_LRS = [f"{v:g}" for v in P2D["trec_sweep_lrs"]]


rule p2_gamp_run:
    """One GAMP run (own teacher, data and initialisation) recording M^t and Q^t per iteration."""
    output:
        run="results/p2_dynamics/gamp/run{run}.npz",
    log:
        "logs/p2_dynamics/p2_gamp_run_{run}.log",
    benchmark:
        "results/benchmarks/p2_dynamics/p2_gamp_run_{run}.tsv"
    wildcard_constraints:
        run=r"\d+",
    conda:
        "../envs/jax.yaml"
    # no gpu: NumPy only, nothing of it can run on a GPU (docs/cluster.md#which-jobs-get-a-gpu)
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p2_gamp_run"),
        runtime=planned_runtime("p2_gamp_run"),
    params:
        d=P2D["gamp_iter_d"],
        alpha=P2D["gamp_iter_alpha"],
        iterations=P2D["gamp_iter_steps"],
        runs=P2D["gamp_iter_runs"],
        seed=P2D["gamp_iter_seed"],
        damping=P2D["gamp_iter_damping"],
        onsager=P2D["gamp_iter_onsager"],
    script:
        "../scripts/p2_dynamics_gamp.py"


rule p2_fig2_left:
    """P2 Fig. 2 left: GAMP layer similarities per iteration, ours and the authors' published run."""
    input:
        runs=expand("results/p2_dynamics/gamp/run{run}.npz", run=P2D_GAMP_RUNS),
        ref_m=raw("reference/spoc/AMP_BO_2w_d1000_alpha1.2_samples1_seed1.npy"),
    output:
        **figure("figures/p2/fig2_left_gamp", "p2_fig2_left", "P2", "Fig. 2"),
        metrics="results/metrics/p2_dynamics/p2_fig2_left.json",
    log:
        "logs/p2_dynamics/p2_fig2_left.log",
    benchmark:
        "results/benchmarks/p2_dynamics/p2_fig2_left.tsv"
    conda:
        "../envs/jax.yaml"
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p2_fig2_left"),
        runtime=planned_runtime("p2_fig2_left"),
    script:
        "../scripts/p2_dynamics_fig2_left.py"


rule p2_gamp_growth:
    """First-layer growth of GAMP from an informed start against the state evolution's one-step prediction."""
    output:
        csv="results/p2_dynamics/gamp_growth.csv",
        metrics="results/metrics/p2_dynamics/p2_gamp_growth.json",
    log:
        "logs/p2_dynamics/p2_gamp_growth.log",
    benchmark:
        "results/benchmarks/p2_dynamics/p2_gamp_growth.tsv"
    conda:
        "../envs/jax.yaml"
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p2_gamp_growth"),
        runtime=planned_runtime("p2_gamp_growth"),
    params:
        d=P2D["gamp_growth_d"],
        alpha=P2D["gamp_iter_alpha"],
        seeds=P2D["gamp_growth_seeds"],
        iterations=P2D["gamp_growth_iterations"],
        m1=P2D["gamp_growth_m1"],
        q22=P2D["gamp_growth_q22"],
        se_samples=P2D["gamp_growth_se_samples"],
        seed=P2D["gamp_iter_seed"],
        damping=P2D["gamp_iter_damping"],
        onsager=P2D["gamp_iter_onsager"],
    script:
        "../scripts/p2_dynamics_gamp_growth.py"


rule p2_gamp_box:
    """The authors' GAMP runs that stay trapped with our integrator, rerun with the authors' box integrator. Its
    numbers are the cause of a P2 Fig. 1 left claim: they belong to the P2 theory group (claims/p2_theory.yaml)."""
    output:
        csv="results/p2_theory/gamp_box.csv",
        metrics="results/metrics/p2_theory/p2_gamp_box.json",
    log:
        "logs/p2_theory/p2_gamp_box.log",
    benchmark:
        "results/benchmarks/p2_theory/p2_gamp_box.tsv"
    conda:
        "../envs/jax.yaml"
    # no gpu: 2 x 2 channel integrals of a few hundred samples per iteration, latency-bound
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p2_gamp_box"),
        runtime=planned_runtime("p2_gamp_box"),
    params:
        d=P2D["gamp_box_d"],
        alpha=P2D["gamp_iter_alpha"],
        seeds=P2D["gamp_box_seeds"],
        iterations=P2D["gamp_box_iterations"],
        panels=P2D["gamp_box_panels"],
        jacobian=P2D["gamp_box_jacobian"],
        seed=P2D["gamp_iter_seed"],
        damping=P2D["gamp_iter_damping"],
        onsager=P2D["gamp_iter_onsager"],
    script:
        "../scripts/p2_dynamics_gamp_box.py"


rule p2_sgd_train:
    """SGD on the two-layer attention target: all runs in one batched JAX program."""
    output:
        runs="results/p2_dynamics/sgd_runs.npz",
    log:
        "logs/p2_dynamics/p2_sgd_train.log",
    benchmark:
        "results/benchmarks/p2_dynamics/p2_sgd_train.tsv"
    conda:
        "../envs/jax.yaml"
    # no gpu: d = 500, batch 200, latency-bound on any device (costs: docs/cluster.md#which-jobs-get-a-gpu)
    threads: 2
    resources:
        mem_mb=planned_mem_mb("p2_sgd_train"),
        runtime=planned_runtime("p2_sgd_train"),
    params:
        d=P2D["sgd_d"],
        alpha=P2D["sgd_alpha"],
        runs=P2D["sgd_runs"],
        epochs=P2D["sgd_epochs"],
        batch_size=P2D["sgd_batch_size"],
        steps_per_batch=P2D["sgd_steps_per_batch"],
        lr=P2D["sgd_lr"],
        weight_decay_times_d=P2D["sgd_weight_decay_times_d"],
        test_every=P2D["sgd_test_every"],
        seed=P2D["sgd_seed"],
        dtype=P2D["sgd_dtype"],
        chunk_epochs=P2D["sgd_chunk_epochs"],
    script:
        "../scripts/p2_dynamics_sgd.py"


rule p2_fig2_right:
    """P2 Fig. 2 right: sign-corrected layer metrics of every SGD run, their mean, the authors' traces."""
    input:
        runs=rules.p2_sgd_train.output.runs,
        ref_c1=raw("reference/spoc/C1_random.npy"),
        ref_c2=raw("reference/spoc/C2_random.npy"),
    output:
        **figure("figures/p2/fig2_right_sgd", "p2_fig2_right", "P2", "Fig. 2"),
        metrics="results/metrics/p2_dynamics/p2_fig2_right.json",
    log:
        "logs/p2_dynamics/p2_fig2_right.log",
    benchmark:
        "results/benchmarks/p2_dynamics/p2_fig2_right.tsv"
    conda:
        "../envs/jax.yaml"
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p2_fig2_right"),
        runtime=planned_runtime("p2_fig2_right"),
    params:
        epoch_axis=P2D["sgd_epoch_axis"],
    script:
        "../scripts/p2_dynamics_fig2_right.py"


rule p2_trec_run:
    """One repetition of the TREC experiment: split, train with AdamW, record S_l(t)."""
    input:
        train=raw("trec/train_5500.label"),
        vocab=raw("bert-base-uncased/vocab.txt"),
    output:
        run="results/p2_dynamics/trec/rep{rep}.npz",
    log:
        "logs/p2_dynamics/p2_trec_run_{rep}.log",
    benchmark:
        "results/benchmarks/p2_dynamics/p2_trec_run_{rep}.tsv"
    wildcard_constraints:
        rep=r"\d+",
    conda:
        "../envs/torch.yaml"
    # no gpu: batches of 16 questions, latency-bound on any device (costs: docs/cluster.md#which-jobs-get-a-gpu)
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p2_trec_run"),
        runtime=planned_runtime("p2_trec_run"),
    params:
        trec=P2D_TREC,
    script:
        "../scripts/p2_dynamics_trec.py"


rule p2_fig3_right:
    """P2 Fig. 3 right: TREC similarities S_1, S_2 of every repetition, their mean, the authors' curves."""
    input:
        runs=expand("results/p2_dynamics/trec/rep{rep}.npz", rep=P2D_TREC_REPS),
        ref_s1=raw("reference/spoc/dist_1.npy"),
        ref_s2=raw("reference/spoc/dist_2.npy"),
    output:
        **figure("figures/p2/fig3_right_trec", "p2_fig3_right", "P2", "Fig. 3"),
        accuracy_csv="figures/p2/fig3_right_trec_accuracy.csv",
        metrics="results/metrics/p2_dynamics/p2_fig3_right.json",
    log:
        "logs/p2_dynamics/p2_fig3_right.log",
    benchmark:
        "results/benchmarks/p2_dynamics/p2_fig3_right.tsv"
    conda:
        "../envs/jax.yaml"
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p2_fig3_right"),
        runtime=planned_runtime("p2_fig3_right"),
    script:
        "../scripts/p2_dynamics_fig3_right.py"


rule p2_trec_sweep_run:
    """Sequential-learning sweep, one configuration: trec_sweep_reps short TREC runs at attention init std {init}
    with the AdamW variant {opt}, similarity to each run's last step (whole trainings of the main configuration are
    taken from p2_trec_run)."""
    input:
        train=raw("trec/train_5500.label"),
        vocab=raw("bert-base-uncased/vocab.txt"),
        main_runs=p2d_sweep_main_runs,
    output:
        runs="results/p2_dynamics/trec_sweep/{opt}_init{init}.npz",
    log:
        "logs/p2_dynamics/p2_trec_sweep_run_{opt}_{init}.log",
    benchmark:
        "results/benchmarks/p2_dynamics/p2_trec_sweep_run_{opt}_{init}.tsv"
    wildcard_constraints:
        opt=r"torch_adamw|transformers_adamw",
        init=r"[0-9][0-9.e+-]*",
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p2_trec_sweep_run"),
        runtime=planned_runtime("p2_trec_sweep_run"),
    params:
        trec=P2D_TREC,
        init=lambda wc: float(wc.init),
        opt=lambda wc: wc.opt,
        steps=P2D["trec_sweep_steps"],
        reps=P2D["trec_sweep_reps"],
    script:
        "../scripts/p2_dynamics_trec_sweep_run.py"


rule p2_trec_sweep:
    """Sequential-learning verdict per sweep configuration and over the sweep (table and metrics); the authors'
    published runs through the same criterion."""
    input:
        runs=expand(
            "results/p2_dynamics/trec_sweep/{opt}_init{init}.npz", zip, opt=P2D_SWEEP["opt"], init=P2D_SWEEP["init"]
        ),
        ref_s1=raw("reference/spoc/dist_1.npy"),
        ref_s2=raw("reference/spoc/dist_2.npy"),
    output:
        table="results/p2_dynamics/trec_sweep.csv",
        markdown="results/p2_dynamics/trec_sweep.md",
        metrics="results/metrics/p2_dynamics/p2_trec_sweep.json",
    log:
        "logs/p2_dynamics/p2_trec_sweep.log",
    benchmark:
        "results/benchmarks/p2_dynamics/p2_trec_sweep.tsv"
    conda:
        "../envs/jax.yaml"
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p2_trec_sweep"),
        runtime=planned_runtime("p2_trec_sweep"),
    params:
        # the configuration calibrated on the published curves (the main runs'): not counted as evidence
        calibrated_init=P2D["trec_attn_init_std"],
        calibrated_opt=P2D["trec_optimizer"],
    script:
        "../scripts/p2_dynamics_trec_sweep.py"


rule p2_trec_lr_run:
    """Learning rate at the notebook's init, one learning rate: trec_sweep_reps short TREC runs with AdamW learning
    rate {lr} at init std trec_sweep_lr_init and AdamW variant trec_sweep_lr_optimizer, similarity to each run's last
    step."""
    input:
        train=raw("trec/train_5500.label"),
        vocab=raw("bert-base-uncased/vocab.txt"),
    output:
        runs="results/p2_dynamics/trec_lr/lr{lr}.npz",
    log:
        "logs/p2_dynamics/p2_trec_lr_run_{lr}.log",
    benchmark:
        "results/benchmarks/p2_dynamics/p2_trec_lr_run_{lr}.tsv"
    wildcard_constraints:
        lr=r"[0-9][0-9.e+-]*",
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p2_trec_lr_run"),
        runtime=planned_runtime("p2_trec_lr_run"),
    params:
        trec=P2D_TREC,
        init=P2D["trec_sweep_lr_init"],
        opt=P2D["trec_sweep_lr_optimizer"],
        lr=lambda wc: float(wc.lr),
        steps=P2D["trec_sweep_steps"],
        reps=P2D["trec_sweep_reps"],
    script:
        "../scripts/p2_dynamics_trec_sweep_run.py"


rule p2_trec_lr:
    """Learning rate at the notebook's init: S_1 after step 20, S_1 and S_2 after one epoch and layer 2's largest change
    over the first 40 steps per learning rate against the published runs at the same reference step; fits per
    learning rate and their count (table and metrics)."""
    input:
        runs=expand("results/p2_dynamics/trec_lr/lr{lr}.npz", lr=P2D_LRS),
        ref_s1=raw("reference/spoc/dist_1.npy"),
        ref_s2=raw("reference/spoc/dist_2.npy"),
    output:
        table="results/p2_dynamics/trec_lr.csv",
        markdown="results/p2_dynamics/trec_lr.md",
        metrics="results/metrics/p2_dynamics/p2_trec_lr.json",
    log:
        "logs/p2_dynamics/p2_trec_lr.log",
    benchmark:
        "results/benchmarks/p2_dynamics/p2_trec_lr.tsv"
    conda:
        "../envs/jax.yaml"
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p2_trec_lr"),
        runtime=planned_runtime("p2_trec_lr"),
    script:
        "../scripts/p2_dynamics_trec_lr.py"
