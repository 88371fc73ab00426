# P1 (Tiberi et al. 2024), head pruning guided by the theory's order parameter, no retraining
# (docs/p1_images.md#pruning):
#   Fig. 3e   normalised head scores vs single-head accuracy drop, L = 2, H = 4
#   Fig. 3f   ID / OOD accuracy after pruning the k lowest-scoring heads (vs random orders and a diag(U) score)
#   Fig. 7    the same two panels for L = 2, H = 8, G = G/2
# The GD models and their exports come from the image-task rules (rules/p1_images.smk).

P1P = group_params("p1_pruning")
P1P_MODELS = {"L2H4": P1P["theory_P"], "L2H8": P1P["theory_P_h8"]}


rule p1_pruning_theory_U:
    """Theory order parameter U of a GD model's heads at N = 10, T = 0.5, from its exported sequences."""
    input:
        export="results/p1_images/{model}/export.npz",
    output:
        U="results/p1_pruning/{model}/theory_U.npz",
        summary="results/p1_pruning/{model}/theory_U.json",
    log:
        "logs/p1_pruning/p1_pruning_theory_U_{model}.log",
    benchmark:
        "results/benchmarks/p1_pruning/p1_pruning_theory_U_{model}.tsv"
    wildcard_constraints:
        model="|".join(P1P_MODELS),
    conda:
        "../envs/torch.yaml"
    threads: 2
    resources:
        mem_mb=planned_mem_mb("p1_pruning_theory_U"),
        runtime=planned_runtime("p1_pruning_theory_U"),
    params:
        N=P1P["theory_N"],
        T=P1P["theory_T"],
        P=lambda wc: P1P_MODELS[wc.model],
        tol=P1P["tol"],
        max_steps=P1P["max_steps"],
    script:
        "../scripts/p1_pruning_theory.py"


rule p1_pruning_evaluate:
    """Scores from U; accuracy of the GD network with heads removed: single heads, cumulative by score, by diag(U),
    and random orders (ID Omniglot test tasks, OOD MNIST and Fashion-MNIST); paired bootstrap intervals of the drops."""
    input:
        model="results/p1_images/{model}/model.pt",
        store="results/p1_images/images32.npz",
        U="results/p1_pruning/{model}/theory_U.npz",
    output:
        result="results/p1_pruning/{model}/pruning.json",
        metrics="results/metrics/p1_pruning/pruning_{model}.json",
    log:
        "logs/p1_pruning/p1_pruning_evaluate_{model}.log",
    benchmark:
        "results/benchmarks/p1_pruning/p1_pruning_evaluate_{model}.tsv"
    wildcard_constraints:
        model="|".join(P1P_MODELS),
    conda:
        "../envs/torch.yaml"
    threads: 2
    resources:
        mem_mb=planned_mem_mb("p1_pruning_evaluate"),
        runtime=planned_runtime("p1_pruning_evaluate"),
    params:
        n_omniglot=P1P["n_omniglot"],
        random_orders=P1P["random_orders"],
        rank_k=lambda wc: P1P["rank_k"][wc.model],
        random_seed=P1P["random_seed"],
        bootstrap_resamples=P1P["bootstrap_resamples"],
        bootstrap_seed=P1P["bootstrap_seed"],
        ci_level=P1P["ci_level"],
        ledger_single=lambda wc: wc.model == "L2H4",
    script:
        "../scripts/p1_pruning_evaluate.py"


rule p1_pruning_figures:
    """P1 Figs 3e, 3f and 7."""
    input:
        small="results/p1_pruning/L2H4/pruning.json",
        large="results/p1_pruning/L2H8/pruning.json",
    output:
        **figure("figures/p1/fig3e", "p1_fig3e", "P1", "Fig. 3", name="fig3e"),
        **figure("figures/p1/fig3f", "p1_fig3f", "P1", "Fig. 3", name="fig3f"),
        **figure("figures/p1/fig7", "p1_fig7", "P1", "Fig. 7", name="fig7"),
        fig7_scores_csv="figures/p1/fig7_scores.csv",
    log:
        "logs/p1_pruning/p1_pruning_figures.log",
    benchmark:
        "results/benchmarks/p1_pruning/p1_pruning_figures.tsv"
    conda:
        "../envs/jax.yaml"
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p1_pruning_figures"),
        runtime=planned_runtime("p1_pruning_figures"),
    params:
        scale=SCALE,
    script:
        "../scripts/p1_pruning_figures.py"
