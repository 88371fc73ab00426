# P2 (Troiani et al. 2025), theory: Bayes-optimal learning of deep tied attention (state evolution, GAMP).
#   Fig. 1 left   L=2 overlaps Q11, Q22 vs alpha (SE + GAMP crosses), BO and plug-in errors, regimes
#   Fig. 1 right  phase diagram: last-layer and first-layer weak-recovery thresholds vs skip strength c
#   Fig. 3 left   depth 3: overlaps Q11, Q22, Q33 and plug-in errors
#   Fig. 5        App. E.2: first-layer overlap at convergence with the last-layer overlap clamped

from smattn.data.published import P2_PHASE_DIAGRAM_SKIPS

P2T = group_params("p2_theory")
P2T_GAMP_ALPHAS = [format(float(a), "g") for a in P2T["gamp_sweep_alphas"]]
P2T_SKIPS = [format(c, "g") for c in P2_PHASE_DIAGRAM_SKIPS]  # the authors' skip strengths c of the phase diagram


rule p2_l2_state_evolution:
    """L=2 SE curve at c = skip_c: explicit phase-II branch, SE iterations above alpha_first, BO/plug-in errors
    (also at the authors' published overlaps), standard errors of the ledger's points."""
    input:
        ref_bo=raw("reference/spoc/BO_2w.csv"),
    output:
        curve="results/p2_theory/l2_curve.json",
    log:
        "logs/p2_theory/p2_l2_state_evolution.log",
    benchmark:
        "results/benchmarks/p2_theory/p2_l2_state_evolution.tsv"
    # between-workflow cache with --cache (docs/cluster.md#sharing-expensive-outputs-between-checkouts)
    cache: OUTPUT_CACHE
    conda:
        "../envs/jax.yaml"
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p2_l2_state_evolution"),
        runtime=planned_runtime("p2_l2_state_evolution"),
    params:
        **{
            k: P2T[k]
            for k in (
                "skip_c",
                "v_reg",
                "n1d",
                "seed",
                "l2_alpha_points",
                "l2_q_points",
                "n_k",
                "n_curve",
                "n_se",
                "se_damping",
                "se_tol",
                "se_max_iter",
                "error_samples",
            )
        },
        **LIBRARY_KEY,
    script:
        "../scripts/p2_theory_l2_curve.py"


rule p2_gamp_alpha:
    """GAMP (Algorithm 1, analytic channel Jacobian) on synthetic data at one alpha, all runs: the project's variant
    (gamp_sweep_onsager), on data with the state evolution's pre-activation noise (variance v_reg)."""
    output:
        npz="results/p2_theory/gamp/alpha{alpha}.npz",
    log:
        "logs/p2_theory/p2_gamp_alpha{alpha}.log",
    benchmark:
        "results/benchmarks/p2_theory/p2_gamp_alpha_{alpha}.tsv"
    wildcard_constraints:
        alpha=r"[0-9.]+",
    conda:
        "../envs/jax.yaml"
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p2_gamp_alpha"),
        runtime=planned_runtime("p2_gamp_alpha"),
    params:
        d=P2T["gamp_sweep_d"],
        runs=P2T["gamp_sweep_runs"],
        iters=P2T["gamp_sweep_iterations"],
        damping=P2T["gamp_sweep_damping"],
        onsager=P2T["gamp_sweep_onsager"],
        n1d=P2T["gamp_sweep_n1d"],
        skip_c=P2T["skip_c"],
        v_reg=P2T["v_reg"],
        data_noise=P2T["v_reg"],
        seed=P2T["seed"],
    script:
        "../scripts/p2_theory_gamp.py"


rule p2_fig1_left:
    """P2 Fig. 1 left: overlaps, regimes at our thresholds, GAMP crosses (the project's variant over alpha, the
    authors' algorithm at alpha = 1.2 from the Fig. 2 left runs), errors; authors' curves dashed."""
    input:
        curve=rules.p2_l2_state_evolution.output.curve,
        gamp=expand(rules.p2_gamp_alpha.output.npz, alpha=P2T_GAMP_ALPHAS),
        # the authors' GAMP (their Onsager form, gamp_iter_onsager) at alpha = 1.2: rule p2_gamp_run
        gamp_authors=expand(
            "results/p2_dynamics/gamp/run{run}.npz",
            run=range(group_params("p2_dynamics")["gamp_iter_runs"]),
        ),
        thresholds=f"results/p2_theory/thresholds/c{format(P2T['skip_c'], 'g')}.json",
        ref_bo=raw("reference/spoc/BO_2w.csv"),
        ref_amp=raw("reference/spoc/AMP_2w.csv"),
        ref_err=raw("reference/spoc/gen_error_BO_2w.csv"),
        ref_err_one=raw("reference/spoc/gen_error_BO_2w_one_layer.csv"),
        ref_err_amp=raw("reference/spoc/gen_error_AMP_2w.csv"),
    output:
        **figure("figures/p2/fig1_left_overlaps", "p2_fig1_left", "P2", "Fig. 1"),
        metrics="results/metrics/p2_theory/p2_fig1_left.json",
    log:
        "logs/p2_theory/p2_fig1_left.log",
    benchmark:
        "results/benchmarks/p2_theory/p2_fig1_left.tsv"
    conda:
        "../envs/jax.yaml"
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p2_fig1_left"),
        runtime=planned_runtime("p2_fig1_left"),
    script:
        "../scripts/p2_theory_fig1_left.py"


rule p2_thresholds_c:
    """Thresholds at one skip strength c: alpha_last (K at Q=0), alpha_first (regularised, noiseless) and literal."""
    output:
        json="results/p2_theory/thresholds/c{c}.json",
    log:
        "logs/p2_theory/p2_thresholds_c{c}.log",
    benchmark:
        "results/benchmarks/p2_theory/p2_thresholds_c_{c}.tsv"
    wildcard_constraints:
        c=r"[0-9.e-]+",
    # between-workflow cache with --cache (docs/cluster.md#sharing-expensive-outputs-between-checkouts)
    cache: OUTPUT_CACHE
    conda:
        "../envs/jax.yaml"
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p2_thresholds_c"),
        runtime=planned_runtime("p2_thresholds_c"),
    params:
        **LIBRARY_KEY,
        n_k=P2T["pd_n_k"],
        last_se_target=P2T["pd_last_se_target"],
        n_first=P2T["pd_n_first"],
        qmc_sets=P2T["pd_qmc_sets"],
        q_points=P2T["pd_q_points"],
        literal_samples=P2T["pd_literal_samples"],
        n1d=P2T["n1d"],
        v_reg=P2T["pd_v_reg"],
        q_max=P2T["pd_q_max"],
        seed=P2T["seed"],
    script:
        "../scripts/p2_theory_thresholds.py"


rule p2_pd_hypotheses:
    """Deviation note: first-layer thresholds read off short reference-style SE runs at a few c."""
    output:
        json="results/p2_theory/phase_diagram_hypotheses.json",
    log:
        "logs/p2_theory/p2_pd_hypotheses.log",
    benchmark:
        "results/benchmarks/p2_theory/p2_pd_hypotheses.tsv"
    conda:
        "../envs/jax.yaml"
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p2_pd_hypotheses"),
        runtime=planned_runtime("p2_pd_hypotheses"),
    params:
        skips=P2T["pd_hyp_skips"],
        n_samples=P2T["pd_hyp_samples"],
        iterations=P2T["pd_hyp_iterations"],
        alpha_step=P2T["pd_hyp_alpha_step"],
        alpha_max=P2T["pd_hyp_alpha_max"],
        authors_skips=P2T["pd_hyp_authors_skips"],
        authors_alpha_step=P2T["pd_hyp_authors_alpha_step"],
        level=P2T["pd_hyp_level"],
        v_reg=P2T["v_reg"],
        n1d=P2T["pd_hyp_n1d"],
        seed=P2T["seed"],
    script:
        "../scripts/p2_theory_pd_hypotheses.py"


rule p2_first_layer_stability:
    """alpha where the Q11 = 0 branch of the L = 2 SE turns unstable at c = skip_c, by root solves in alpha, and the
    growth per iteration at the published threshold, at the authors' SE-file switch-on and at alpha_critical.csv's
    first-layer threshold at each of its c."""
    input:
        ref_critical=raw("reference/spoc/alpha_critical.csv"),
        ref_bo=raw("reference/spoc/BO_2w.csv"),
    output:
        json="results/p2_theory/first_layer_stability.json",
    log:
        "logs/p2_theory/p2_first_layer_stability.log",
    benchmark:
        "results/benchmarks/p2_theory/p2_first_layer_stability.tsv"
    conda:
        "../envs/jax.yaml"
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p2_first_layer_stability"),
        runtime=planned_runtime("p2_first_layer_stability"),
    params:
        skip_c=P2T["skip_c"],
        n_samples=P2T["fs_n_samples"],
        qmc_sets=P2T["pd_qmc_sets"],
        alpha_bracket=P2T["fs_alpha_bracket"],
        start=P2T["fs_start"],
        level=P2T["pd_hyp_level"],
        damping=P2T["se_damping"],
        v_reg=P2T["pd_v_reg"],
        n1d=P2T["n1d"],
        seed=P2T["seed"],
    script:
        "../scripts/p2_theory_first_layer_stability.py"


rule p2_fig1_right:
    """P2 Fig. 1 right: phase diagram vs c with the authors' alpha_critical.csv; deviation note; the last-layer
    threshold implied by the decay of the authors' own SE file BO_2w.csv below it, tested against ours and the file's.
    """
    input:
        thresholds=expand(rules.p2_thresholds_c.output.json, c=P2T_SKIPS),
        hypotheses=rules.p2_pd_hypotheses.output.json,
        stability=rules.p2_first_layer_stability.output.json,
        ref=raw("reference/spoc/alpha_critical.csv"),
        ref_bo=raw("reference/spoc/BO_2w.csv"),
    output:
        **figure("figures/p2/fig1_right_phase_diagram", "p2_fig1_right", "P2", "Fig. 1"),
        md="results/p2/phase_diagram_deviation.md",
        metrics="results/metrics/p2_theory/p2_fig1_right.json",
    log:
        "logs/p2_theory/p2_fig1_right.log",
    benchmark:
        "results/benchmarks/p2_theory/p2_fig1_right.tsv"
    conda:
        "../envs/jax.yaml"
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p2_fig1_right"),
        runtime=planned_runtime("p2_fig1_right"),
    params:
        scale=SCALE,
        v_reg=P2T["pd_v_reg"],
        q_max=P2T["pd_q_max"],
        skip_c=P2T["skip_c"],
        se_file_level=P2T["se_file_level"],
    script:
        "../scripts/p2_theory_fig1_right.py"


rule p2_alpha_critical_csv:
    """P2 Fig. 1 right: the authors' alpha_critical.csv as data (its columns' scatter over c, the last layer's
    values against the bound 1/6 derived here), for the claims rows that compare our thresholds with it."""
    input:
        ref=raw("reference/spoc/alpha_critical.csv"),
    output:
        metrics="results/metrics/p2_theory/p2_alpha_critical_csv.json",
    log:
        "logs/p2_theory/p2_alpha_critical_csv.log",
    benchmark:
        "results/benchmarks/p2_theory/p2_alpha_critical_csv.tsv"
    conda:
        "../envs/jax.yaml"
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p2_alpha_critical_csv"),
        runtime=planned_runtime("p2_alpha_critical_csv"),
    script:
        "../scripts/p2_theory_alpha_critical_csv.py"


rule p2_l3_authors_estimator:
    """Depth 3, reference mode: the authors' Monte-Carlo estimator (floored Z_out) iterated in their SE."""
    output:
        json="results/p2_theory/l3_authors_estimator.json",
    log:
        "logs/p2_theory/p2_l3_authors_estimator.log",
    benchmark:
        "results/benchmarks/p2_theory/p2_l3_authors_estimator.tsv"
    conda:
        "../envs/jax.yaml"
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p2_l3_authors_estimator"),
        runtime=planned_runtime("p2_l3_authors_estimator"),
    params:
        skip_c=P2T["skip_c"],
        alphas=P2T["l3_authors_alphas"],
        n_samples=P2T["l3_authors_n_samples"],
        iterations=P2T["l3_authors_iterations"],
        tail=P2T["l3_authors_tail"],
        damping=P2T["l3_damping"],
        v_reg=P2T["v_reg"],
        seed=P2T["seed"],
    script:
        "../scripts/p2_theory_l3_authors.py"


rule p2_l3_state_evolution:
    """Depth 3 (numbers of Fig. 3 left): K at Q = 0, SE sweep on the 4-D Gauss-Hermite channel grid, fixed-point
    standard errors at the ledger's alphas, plug-in errors (also at the authors' published overlaps)."""
    input:
        ref_q=raw("reference/spoc/BO_3w.csv"),
    output:
        record="results/p2_theory/l3_se.json",
    log:
        "logs/p2_theory/p2_l3_state_evolution.log",
    benchmark:
        "results/benchmarks/p2_theory/p2_l3_state_evolution.tsv"
    # between-workflow cache with --cache (docs/cluster.md#sharing-expensive-outputs-between-checkouts)
    cache: OUTPUT_CACHE
    # the longest P2 job: started first, so that the others run beside it
    priority: 10
    conda:
        "../envs/jax.yaml"
    threads: 2
    resources:
        mem_mb=planned_mem_mb("p2_l3_state_evolution"),
        runtime=planned_runtime("p2_l3_state_evolution"),
    params:
        **LIBRARY_KEY,
        skip_c=P2T["skip_c"],
        alphas=P2T["l3_alphas"],
        n_samples=P2T["l3_n_samples"],
        n1d=P2T["l3_n1d"],
        n_k=P2T["l3_n_k"],
        damping=P2T["l3_damping"],
        max_iter=P2T["l3_max_iter"],
        tol=P2T["l3_tol"],
        v_reg=P2T["v_reg"],
        error_samples=P2T["error_samples"],
        seed=P2T["seed"],
    script:
        "../scripts/p2_theory_l3_curve.py"


rule p2_fig3_left:
    """P2 Fig. 3 left: depth-3 overlaps and plug-in errors with the authors' files and their estimator recomputed."""
    input:
        record=rules.p2_l3_state_evolution.output.record,
        authors=rules.p2_l3_authors_estimator.output.json,
        ref_q=raw("reference/spoc/BO_3w.csv"),
        ref_err=raw("reference/spoc/gen_error_BO_3w.csv"),
        ref_err_last=raw("reference/spoc/gen_error_BO_3w_last_layer.csv"),
    output:
        **figure("figures/p2/fig3_left_depth3", "p2_fig3_left", "P2", "Fig. 3"),
        metrics="results/metrics/p2_theory/p2_fig3_left.json",
    log:
        "logs/p2_theory/p2_fig3_left.log",
    benchmark:
        "results/benchmarks/p2_theory/p2_fig3_left.tsv"
    conda:
        "../envs/jax.yaml"
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p2_fig3_left"),
        runtime=planned_runtime("p2_fig3_left"),
    params:
        skip_c=P2T["skip_c"],
    script:
        "../scripts/p2_theory_fig3_left.py"


rule p2_fig5_clamped:
    """Numbers of P2 Fig. 5 (App. E.2): Q11 at convergence of the SE with Q22 clamped, with standard errors."""
    output:
        record="results/p2_theory/fig5_clamped.json",
    log:
        "logs/p2_theory/p2_fig5_clamped.log",
    benchmark:
        "results/benchmarks/p2_theory/p2_fig5_clamped.tsv"
    conda:
        "../envs/jax.yaml"
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p2_fig5_clamped"),
        runtime=planned_runtime("p2_fig5_clamped"),
    params:
        skip_c=P2T["skip_c"],
        alpha=P2T["fig5_alpha"],
        q22=P2T["fig5_q22"],
        n_samples=P2T["fig5_n_samples"],
        damping=P2T["se_damping"],
        tol=P2T["se_tol"],
        max_iter=P2T["se_max_iter"],
        v_reg=P2T["v_reg"],
        n1d=P2T["n1d"],
        seed=P2T["seed"],
    script:
        "../scripts/p2_theory_fig5_clamped.py"


rule p2_fig5:
    """P2 Fig. 5 (App. E.2): Q11 at convergence vs the clamped Q22; metrics of the claim."""
    input:
        record=rules.p2_fig5_clamped.output.record,
    output:
        **figure("figures/p2/fig5_clamped", "p2_fig5", "P2", "Fig. 5"),
        metrics="results/metrics/p2_theory/p2_fig5.json",
    log:
        "logs/p2_theory/p2_fig5.log",
    benchmark:
        "results/benchmarks/p2_theory/p2_fig5.tsv"
    conda:
        "../envs/jax.yaml"
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p2_fig5"),
        runtime=planned_runtime("p2_fig5"),
    params:
        skip_c=P2T["skip_c"],
    script:
        "../scripts/p2_theory_fig5.py"


rule p2_se_crosscheck:
    """Brute-force importance-sampling check of SE fixed points (L = 3 at every alpha; L = 2 at alpha 1.2 and 1.5,
    ours and the authors' SE file), the depth-3 overlaps and plug-in error at alpha = 2 by brute force (expected values
    of the ledger's deviations) and the count of unconverged SE points over Figs 1 left, 3 left and 5."""
    input:
        l2=rules.p2_l2_state_evolution.output.curve,
        l3=rules.p2_l3_state_evolution.output.record,
        fig5=rules.p2_fig5_clamped.output.record,
        ref_bo=raw("reference/spoc/BO_2w.csv"),
    output:
        json="results/p2_theory/se_crosscheck.json",
        metrics="results/metrics/p2_theory/p2_se_crosscheck.json",
    log:
        "logs/p2_theory/p2_se_crosscheck.log",
    benchmark:
        "results/benchmarks/p2_theory/p2_se_crosscheck.tsv"
    conda:
        "../envs/jax.yaml"
    threads: 1
    resources:
        mem_mb=planned_mem_mb("p2_se_crosscheck"),
        runtime=planned_runtime("p2_se_crosscheck"),
    params:
        skip_c=P2T["skip_c"],
        v_reg=P2T["v_reg"],
        n1d=P2T["n1d"],
        l3_n1d=P2T["l3_n1d"],
        l3_n_samples=P2T["l3_n_samples"],
        bf_points=P2T["bf_points"],
        l3_bf_draws=P2T["l3_bf_draws"],
        l2_bf_draws=P2T["l2_bf_draws"],
        error_samples=P2T["error_samples"],
        seed=P2T["seed"],
    script:
        "../scripts/p2_theory_se_crosscheck.py"
