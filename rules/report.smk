# The metrics ledger and the claims table (P1 and P2), collected from every analysis rule.

_missing_claims = [f for f in CLAIM_FILES if not Path(workflow.basedir, f).exists()]
if _missing_claims:
    raise WorkflowError(f"claim files listed in the Snakefile are missing: {', '.join(_missing_claims)}")


rule metrics_ledger:
    """Merge every rule's key numbers into results/metrics.json and set the papers' claims against them."""
    input:
        metrics=ALL_METRICS,
        claims=CLAIM_FILES,
    output:
        ledger="results/metrics.json",
        claims_csv="results/claims.csv",
        claims_html=report(
            "results/claims.html",
            caption="../report/claims.rst",
            category="Claims",
        ),
    log:
        "logs/report/metrics_ledger.log",
    conda:
        "../envs/workflow.yaml"
    threads: 1
    resources:
        mem_mb=512,
        runtime=5,
    params:
        scale=SCALE,
    script:
        "../scripts/metrics_ledger.py"


# Every computing job of the targets of `all`, with the wildcard values its consumers ask for: the cost table reads
# exactly these benchmark files, so neither a file left by an earlier run with other parameters nor a missing job
# can slip in (tests/foundation/test_workflow.py checks the list against the jobs of a dry run).
COST_JOBS = {
    **benchmarks(rules.data_summary),
    # P2 theory
    **benchmarks(rules.p2_l2_state_evolution),
    **benchmarks(rules.p2_gamp_alpha, alpha=P2T_GAMP_ALPHAS),
    **benchmarks(rules.p2_fig1_left),
    **benchmarks(rules.p2_thresholds_c, c=P2T_SKIPS),
    **benchmarks(rules.p2_pd_hypotheses),
    **benchmarks(rules.p2_fig1_right),
    **benchmarks(rules.p2_l3_authors_estimator),
    **benchmarks(rules.p2_fig3_left),
    **benchmarks(rules.p2_se_crosscheck),
    **benchmarks(rules.p2_fig5),
    # P2 dynamics
    **benchmarks(rules.p2_gamp_run, run=P2D_GAMP_RUNS),
    **benchmarks(rules.p2_fig2_left),
    **benchmarks(rules.p2_gamp_growth),
    **benchmarks(rules.p2_sgd_train),
    **benchmarks(rules.p2_fig2_right),
    **benchmarks(rules.p2_trec_run, rep=P2D_TREC_REPS),
    **benchmarks(rules.p2_fig3_right),
    **benchmarks(
        rules.p2_trec_sweep_run,
        opt=P2D["trec_sweep_optimizers"],
        init=[f"{v:g}" for v in P2D["trec_sweep_inits"]],
    ),
    **benchmarks(rules.p2_trec_sweep),
    # P1 HMC: every variant at every sampled width
    **benchmarks(rules.p1_hmc_theory, variant=P1H_VARIANTS),
    **benchmarks(rules.p1_hmc_sample, variant=P1H_VARIANTS, N=[int(n) for n in P1H["sampled_widths"]]),
    **benchmarks(rules.p1_fig2c),
    **benchmarks(rules.p1_fig2d),
    **benchmarks(rules.p1_fig2e),
    **benchmarks(rules.p1_fig5b),
    **benchmarks(rules.p1_fig5c),
    # P1 image task: three GD networks (L2H8 only for pruning), theory for L2H4 and L3H3, samples for L2H4
    **benchmarks(rules.p1_images_prepare),
    **benchmarks(rules.p1_images_train, model=list(P1I_MODELS)),
    **benchmarks(rules.p1_images_export, model=list(P1I_MODELS)),
    **benchmarks(rules.p1_images_theory, model=["L2H4", "L3H3"]),
    **benchmarks(rules.p1_images_sample, model=["L2H4"], N=[int(n) for n in P1I["sampled_widths"]]),
    **benchmarks(rules.p1_fig3b),
    **benchmarks(rules.p1_fig3c),
    **benchmarks(rules.p1_fig3d),
    **benchmarks(rules.p1_fig6),
    # P1 pruning
    **benchmarks(rules.p1_pruning_theory_U, model=list(P1P_MODELS)),
    **benchmarks(rules.p1_pruning_evaluate, model=list(P1P_MODELS)),
    **benchmarks(rules.p1_pruning_figures),
}


rule cost_table:
    """Wall time, CPU time and peak memory of every computing job, per job and per figure group, from the jobs'
    benchmarks; with a Markdown snippet for the README's timing table."""
    input:
        benchmarks=list(COST_JOBS),
    output:
        jobs="results/costs/jobs.csv",
        groups="results/costs/groups.csv",
        html=report(
            "results/costs/costs.html",
            caption="../report/costs.rst",
            category="Costs",
        ),
        readme="results/costs/README_table.md",
    log:
        "logs/report/cost_table.log",
    conda:
        "../envs/workflow.yaml"
    threads: 1
    resources:
        mem_mb=512,
        runtime=5,
    params:
        jobs=COST_JOBS,  # {benchmark: {group, rule, wildcards}}
        scale=SCALE,
    script:
        "../scripts/cost_table.py"
