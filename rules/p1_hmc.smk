# P1 (Tiberi et al. 2024), hidden-Markov-chain task (docs/p1_theory.md#hmc-task): theory, posterior samples, figures.
#   Fig. 2c top     test accuracy vs N: renormalised theory, sampled network, three GP lines
#   Fig. 2c bottom  order parameter U at N = 10, 100, 1000 (paths g, d, a1, a2)
#   Fig. 2d         kernel PCs vs labels, GP and renormalised kernels (N = 10)
#   Fig. 2e         good + denoising network at sigma_perp = 5, random layer-1 head (paper text)
#   Fig. 5b         same-path pre-kernels, GP and renormalised kernels
#   Fig. 5c         as Fig. 2e with exactly uniform layer-1 head (the repo's 2-path configuration)

P1H = group_params("p1_hmc")
P1H_VARIANTS = ["all", "two_path_random", "two_path_uniform"]
# theory and sampling rules use envs/torch.yaml: the HMC data and heads are drawn with torch's CPU generator


# NUTS outputs of one variant at every sampled width
p1h_samples = lambda variant: [f"results/p1_hmc/samples_{variant}_N{int(n)}.json" for n in P1H["sampled_widths"]]


rule p1_hmc_theory:
    """Theory of one HMC variant: GP accuracies and the minimised action at every width."""
    output:
        theory="results/p1_hmc/theory_{variant}.json",
        kernels="results/p1_hmc/kernels_{variant}.npz",
        predictions="results/p1_hmc/predictions_{variant}.npz",
    log:
        "logs/p1_hmc/p1_hmc_theory_{variant}.log",
    benchmark:
        "results/benchmarks/p1_hmc/p1_hmc_theory_{variant}.tsv"
    wildcard_constraints:
        variant="|".join(P1H_VARIANTS),
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p1_hmc_theory"),
        runtime=planned_runtime("p1_hmc_theory"),
    params:
        widths=P1H["widths"],
        temperature=P1H["temperature"],
        tol=P1H["tol"],
        alignment_pcs=P1H["alignment_pcs"],
        n_train=P1H["n_train"],
        n_test=P1H["n_test"],
        n_verdict=P1H["n_verdict"],
        verdict_block=P1H["verdict_block"],
        verdict_seed=P1H["verdict_seed"],
    script:
        "../scripts/p1_hmc_theory.py"


rule p1_hmc_sample:
    """NUTS posterior of one HMC variant at width N: sampled accuracy and order parameter."""
    output:
        samples="results/p1_hmc/samples_{variant}_N{N}.json",
    log:
        "logs/p1_hmc/p1_hmc_sample_{variant}_N{N}.log",
    benchmark:
        "results/benchmarks/p1_hmc/p1_hmc_sample_{variant}_{N}.tsv"
    wildcard_constraints:
        variant="|".join(P1H_VARIANTS),
        N=r"\d+",
    conda:
        "../envs/torch.yaml"
    # no gpu: P = 100 sequences, latency-bound on any device (costs: docs/cluster.md#which-jobs-get-a-gpu);
    # one thread, the chains one after another: spread over two host devices they took 1.9x the CPU time and more
    # wall time (benchmarks/p1_hmc_sample_threads.py)
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p1_hmc_sample"),
        runtime=planned_runtime("p1_hmc_sample"),
    params:
        temperature=P1H["temperature"],
        sampler=P1H["sampler"],
        nuts=P1H["nuts_presets"][P1H["nuts_preset"]],
        n_train=P1H["n_train"],
        n_test=P1H["n_test"],
        rhat_null_trials=P1H["rhat_null_trials"],
    script:
        "../scripts/p1_hmc_sample.py"


rule p1_fig2c:
    """P1 Fig. 2c top (accuracy vs N) and bottom (U heatmaps)."""
    input:
        theory="results/p1_hmc/theory_all.json",
        predictions="results/p1_hmc/predictions_all.npz",
        samples=p1h_samples("all"),
    output:
        **figure("figures/p1/fig2c_top", "p1_fig2c_top", "P1", "Fig. 2", name="top"),
        **figure("figures/p1/fig2c_bottom", "p1_fig2c_bottom", "P1", "Fig. 2", name="bottom"),
        metrics="results/metrics/p1_hmc/p1_fig2c.json",
    log:
        "logs/p1_hmc/p1_fig2c.log",
    benchmark:
        "results/benchmarks/p1_hmc/p1_fig2c.tsv"
    conda:
        "../envs/jax.yaml"
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p1_fig2c"),
        runtime=planned_runtime("p1_fig2c"),
    script:
        "../scripts/p1_hmc_fig2c.py"


rule p1_fig2d:
    """P1 Fig. 2d: PC overlaps with the labels, GP vs renormalised kernel."""
    input:
        kernels="results/p1_hmc/kernels_all.npz",
    output:
        **figure("figures/p1/fig2d", "p1_fig2d", "P1", "Fig. 2"),
    log:
        "logs/p1_hmc/p1_fig2d.log",
    benchmark:
        "results/benchmarks/p1_hmc/p1_fig2d.tsv"
    conda:
        "../envs/jax.yaml"
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p1_fig2d"),
        runtime=planned_runtime("p1_fig2d"),
    script:
        "../scripts/p1_hmc_fig2d.py"


rule p1_fig2e:
    """P1 Fig. 2e: good + denoising network (random layer-1 head) at sigma_perp = 5."""
    input:
        theory="results/p1_hmc/theory_two_path_random.json",
        predictions="results/p1_hmc/predictions_two_path_random.npz",
        samples=p1h_samples("two_path_random"),
    output:
        **figure("figures/p1/fig2e", "p1_fig2e", "P1", "Fig. 2"),
        metrics="results/metrics/p1_hmc/p1_fig2e.json",
    log:
        "logs/p1_hmc/p1_fig2e.log",
    benchmark:
        "results/benchmarks/p1_hmc/p1_fig2e.tsv"
    conda:
        "../envs/jax.yaml"
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p1_fig2e"),
        runtime=planned_runtime("p1_fig2e"),
    params:
        head="random",
        title="good + denoising paths (random layer-1 head), sigma_perp = 5",
    script:
        "../scripts/p1_hmc_fig2e_5c.py"


rule p1_fig5b:
    """P1 Fig. 5b: same-path pre-kernels and the GP / renormalised kernels; their task alignment and uniformity."""
    input:
        kernels="results/p1_hmc/kernels_all.npz",
    output:
        **figure("figures/p1/fig5b", "p1_fig5b", "P1", "Fig. 5"),
        metrics="results/metrics/p1_hmc/p1_fig5b.json",
    log:
        "logs/p1_hmc/p1_fig5b.log",
    benchmark:
        "results/benchmarks/p1_hmc/p1_fig5b.tsv"
    conda:
        "../envs/jax.yaml"
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p1_fig5b"),
        runtime=planned_runtime("p1_fig5b"),
    params:
        permutations=P1H["fig5b_permutations"],
        seed=P1H["fig5b_seed"],
    script:
        "../scripts/p1_hmc_fig5b.py"


rule p1_fig5b_draws:
    """P1 Fig. 5b: the same-path kernels' alignment over draws of the training set and the layer-2 random head, and
    where the workflow's network lies among them (is the adversarial path a1's alignment typical?)."""
    output:
        metrics="results/metrics/p1_hmc/p1_fig5b_draws.json",
        draws="results/p1_hmc/fig5b_draws.npz",
    log:
        "logs/p1_hmc/p1_fig5b_draws.log",
    benchmark:
        "results/benchmarks/p1_hmc/p1_fig5b_draws.tsv"
    conda:
        "../envs/jax.yaml"
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p1_fig5b_draws"),
        runtime=planned_runtime("p1_fig5b_draws"),
    params:
        draws=P1H["fig5b_draws"],
        permutations=P1H["fig5b_draw_permutations"],
        n_train=P1H["n_train"],
        seed=P1H["fig5b_draw_seed"],
    script:
        "../scripts/p1_hmc_fig5b_draws.py"


rule p1_fig5c:
    """P1 Fig. 5c: as Fig. 2e with the layer-1 random head replaced by exactly uniform attention."""
    input:
        theory="results/p1_hmc/theory_two_path_uniform.json",
        predictions="results/p1_hmc/predictions_two_path_uniform.npz",
        samples=p1h_samples("two_path_uniform"),
    output:
        **figure("figures/p1/fig5c", "p1_fig5c", "P1", "Fig. 5"),
        metrics="results/metrics/p1_hmc/p1_fig5c.json",
    log:
        "logs/p1_hmc/p1_fig5c.log",
    benchmark:
        "results/benchmarks/p1_hmc/p1_fig5c.tsv"
    conda:
        "../envs/jax.yaml"
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p1_fig5c"),
        runtime=planned_runtime("p1_fig5c"),
    params:
        head="uniform",
        title="good + denoising paths (uniform layer-1 head), sigma_perp = 5",
    script:
        "../scripts/p1_hmc_fig2e_5c.py"
