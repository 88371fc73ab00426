# P1 (Tiberi et al. 2024), hidden-Markov-chain task (spec §4): theory, posterior samples, figures.
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
    """Theory of one HMC variant: GP accuracies and the minimised action at every width (spec §2, §4.3)."""
    output:
        theory="results/p1_hmc/theory_{variant}.json",
        kernels="results/p1_hmc/kernels_{variant}.npz",
    wildcard_constraints:
        variant="|".join(P1H_VARIANTS),
    params:
        widths=P1H["widths"],
        temperature=P1H["temperature"],
        tol=P1H["tol"],
        alignment_pcs=P1H["alignment_pcs"],
    log:
        "logs/p1_hmc/p1_hmc_theory_{variant}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=15,
    conda:
        "../envs/torch.yaml"
    script:
        "../scripts/p1_hmc_theory.py"


rule p1_hmc_sample:
    """NUTS posterior of one HMC variant at width N: sampled accuracy and order parameter (spec §3)."""
    output:
        samples="results/p1_hmc/samples_{variant}_N{N}.json",
    wildcard_constraints:
        variant="|".join(P1H_VARIANTS),
        N=r"\d+",
    params:
        temperature=P1H["temperature"],
        sampler=P1H["sampler"],
        nuts=P1H["nuts_presets"][P1H["nuts_preset"]],
    log:
        "logs/p1_hmc/p1_hmc_sample_{variant}_N{N}.log",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=120,
        gpu=1,
    conda:
        "../envs/torch.yaml"
    script:
        "../scripts/p1_hmc_sample.py"


rule p1_fig2c:
    """P1 Fig. 2c top (accuracy vs N) and bottom (U heatmaps)."""
    input:
        theory="results/p1_hmc/theory_all.json",
        samples=p1h_samples("all"),
    output:
        top_png=report("figures/p1/fig2c_top.png", caption="../report/p1_fig2c_top.rst", category="P1",
                       subcategory="Fig. 2"),
        top_pdf="figures/p1/fig2c_top.pdf",
        top_csv="figures/p1/fig2c_top.csv",
        bottom_png=report("figures/p1/fig2c_bottom.png", caption="../report/p1_fig2c_bottom.rst", category="P1",
                          subcategory="Fig. 2"),
        bottom_pdf="figures/p1/fig2c_bottom.pdf",
        bottom_csv="figures/p1/fig2c_bottom.csv",
    log:
        "logs/p1_hmc/p1_fig2c.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    conda:
        "../envs/jax.yaml"
    script:
        "../scripts/p1_hmc_fig2c.py"


rule p1_fig2d:
    """P1 Fig. 2d: PC overlaps with the labels, GP vs renormalised kernel."""
    input:
        kernels="results/p1_hmc/kernels_all.npz",
    output:
        png=report("figures/p1/fig2d.png", caption="../report/p1_fig2d.rst", category="P1", subcategory="Fig. 2"),
        pdf="figures/p1/fig2d.pdf",
        csv="figures/p1/fig2d.csv",
    log:
        "logs/p1_hmc/p1_fig2d.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    conda:
        "../envs/jax.yaml"
    script:
        "../scripts/p1_hmc_fig2d.py"


rule p1_fig2e:
    """P1 Fig. 2e: good + denoising network (random layer-1 head) at sigma_perp = 5."""
    input:
        theory="results/p1_hmc/theory_two_path_random.json",
        samples=p1h_samples("two_path_random"),
    output:
        png=report("figures/p1/fig2e.png", caption="../report/p1_fig2e.rst", category="P1", subcategory="Fig. 2"),
        pdf="figures/p1/fig2e.pdf",
        csv="figures/p1/fig2e.csv",
    params:
        title="good + denoising paths (random layer-1 head), sigma_perp = 5",
    log:
        "logs/p1_hmc/p1_fig2e.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    conda:
        "../envs/jax.yaml"
    script:
        "../scripts/p1_hmc_fig2e_5c.py"


rule p1_fig5b:
    """P1 Fig. 5b: same-path pre-kernels and the GP / renormalised kernels."""
    input:
        kernels="results/p1_hmc/kernels_all.npz",
    output:
        png=report("figures/p1/fig5b.png", caption="../report/p1_fig5b.rst", category="P1", subcategory="Fig. 5"),
        pdf="figures/p1/fig5b.pdf",
        csv="figures/p1/fig5b.csv",
    log:
        "logs/p1_hmc/p1_fig5b.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    conda:
        "../envs/jax.yaml"
    script:
        "../scripts/p1_hmc_fig5b.py"


rule p1_fig5c:
    """P1 Fig. 5c: as Fig. 2e with the layer-1 random head replaced by exactly uniform attention."""
    input:
        theory="results/p1_hmc/theory_two_path_uniform.json",
        samples=p1h_samples("two_path_uniform"),
    output:
        png=report("figures/p1/fig5c.png", caption="../report/p1_fig5c.rst", category="P1", subcategory="Fig. 5"),
        pdf="figures/p1/fig5c.pdf",
        csv="figures/p1/fig5c.csv",
    params:
        title="good + denoising paths (uniform layer-1 head), sigma_perp = 5",
    log:
        "logs/p1_hmc/p1_fig5c.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    conda:
        "../envs/jax.yaml"
    script:
        "../scripts/p1_hmc_fig2e_5c.py"


rule p1_hmc_metrics:
    """Ledger entries of the HMC task (ids of issue 5)."""
    input:
        theory_all="results/p1_hmc/theory_all.json",
        theory_random="results/p1_hmc/theory_two_path_random.json",
        theory_uniform="results/p1_hmc/theory_two_path_uniform.json",
        samples_all=p1h_samples("all"),
        samples_random=p1h_samples("two_path_random"),
        samples_uniform=p1h_samples("two_path_uniform"),
    output:
        metrics="results/metrics/p1_hmc/p1_hmc_metrics.json",
    log:
        "logs/p1_hmc/p1_hmc_metrics.log",
    threads: 1
    resources:
        mem_mb=500,
        runtime=5,
    conda:
        "../envs/jax.yaml"
    script:
        "../scripts/p1_hmc_metrics.py"


ALL_FIGURES.extend(
    [
        "figures/p1/fig2c_top.png",
        "figures/p1/fig2c_bottom.png",
        "figures/p1/fig2d.png",
        "figures/p1/fig2e.png",
        "figures/p1/fig5b.png",
        "figures/p1/fig5c.png",
    ]
)
ALL_METRICS.append("results/metrics/p1_hmc/p1_hmc_metrics.json")
