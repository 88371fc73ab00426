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
    **benchmarks(rules.p2_first_layer_stability),
    **benchmarks(rules.p2_fig1_right),
    **benchmarks(rules.p2_alpha_critical_csv),
    **benchmarks(rules.p2_l3_authors_estimator),
    **benchmarks(rules.p2_l3_state_evolution),
    **benchmarks(rules.p2_fig3_left),
    **benchmarks(rules.p2_se_crosscheck),
    **benchmarks(rules.p2_fig5_clamped),
    **benchmarks(rules.p2_fig5),
    # P2 dynamics
    **benchmarks(rules.p2_gamp_run, run=P2D_GAMP_RUNS),
    **benchmarks(rules.p2_fig2_left),
    **benchmarks(rules.p2_gamp_growth),
    **benchmarks(rules.p2_gamp_box),
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
    **benchmarks(rules.p2_trec_lr_run, lr=P2D_LRS),
    **benchmarks(rules.p2_trec_lr),
    # P1 HMC: every variant at every sampled width
    **benchmarks(rules.p1_hmc_theory, variant=P1H_VARIANTS),
    **benchmarks(rules.p1_hmc_sample, variant=P1H_VARIANTS, N=[int(n) for n in P1H["sampled_widths"]]),
    **benchmarks(rules.p1_fig2c),
    **benchmarks(rules.p1_fig2d),
    **benchmarks(rules.p1_fig2e),
    **benchmarks(rules.p1_fig5b),
    **benchmarks(rules.p1_fig5b_draws),
    **benchmarks(rules.p1_fig5c),
    # P1 image task: three GD architectures (L2H8 only for pruning) and the seed study's networks, theory for those of
    # L2H4 and L3H3, samples for L2H4
    **benchmarks(rules.p1_images_prepare),
    **benchmarks(rules.p1_images_train, model=P1I_ALL_NETWORKS),
    **benchmarks(rules.p1_images_export, model=P1I_ALL_NETWORKS),
    **benchmarks(rules.p1_images_theory, model=[n for m in P1I_SEEDED for n in P1I_NETWORKS[m]]),
    **benchmarks(rules.p1_images_sample, model=["L2H4"], N=[int(n) for n in P1I["sampled_widths"]]),
    **benchmarks(rules.p1_fig3b),
    **benchmarks(rules.p1_fig3c),
    **benchmarks(rules.p1_fig3d),
    **benchmarks(rules.p1_fig6),
    **benchmarks(rules.p1_images_network_seeds),
    # P1 pruning
    **benchmarks(rules.p1_pruning_theory_U, model=list(P1P_MODELS)),
    **benchmarks(rules.p1_pruning_evaluate, model=list(P1P_MODELS)),
    **benchmarks(rules.p1_pruning_figures),
}


# each computing job with its threads, declared resources and the jobs it waits for (the DAG of the cost table's
# critical path and of the cost plan)
JOB_SPECS, JOB_PRODUCER = job_specs(COST_JOBS)


localrules:
    metrics_ledger,
    cost_plan,
    cost_table,
    group_claims,
    group_costs,
    paper_scale_doc,


rule cost_plan:
    """What every computing job of `all` will cost at the configured scale, before anything runs: projected CPU and
    GPU hours, peak memory, beside the declared runtime and mem_mb, flagging a runtime below twice its projection or
    above max(10x, 60 min) (smattn.costs; unit costs from rules/unit_costs.csv). `snakemake cost_plan --cores 1 --config scale=paper`.
    """
    input:
        units=UNIT_COSTS,
    output:
        plan=f"results/costs/plan_{SCALE}.csv",
        summary=f"results/costs/plan_{SCALE}.md",
    log:
        f"logs/report/cost_plan_{SCALE}.log",
    conda:
        "../envs/workflow.yaml"
    threads: 1
    resources:
        mem_mb=512,
        runtime=5,
    params:
        jobs=JOB_SPECS,
        config_params=PARAMS,
        scale=SCALE,
        cores=workflow._cores,
    script:
        "../scripts/cost_plan.py"


rule cost_table:
    """Wall time, CPU time and peak memory of every computing job, per job and per figure group, from the jobs'
    benchmarks; the run's critical path and ideal time beside its measured span; the plan's projections against the
    measured costs; a Markdown snippet for the timing cell of the scales table (docs/scales.md)."""
    input:
        benchmarks=list(COST_JOBS),
        plan=rules.cost_plan.output.plan,
    output:
        jobs="results/costs/jobs.csv",
        groups="results/costs/groups.csv",
        html=report(
            "results/costs/costs.html",
            caption="../report/costs.rst",
            category="Costs",
        ),
        readme="results/costs/README_table.md",
        check="results/costs/plan_vs_measured.csv",
    log:
        "logs/report/cost_table.log",
    conda:
        "../envs/workflow.yaml"
    threads: 1
    resources:
        mem_mb=512,
        runtime=5,
    params:
        jobs=JOB_SPECS,  # {benchmark: {group, rule, wildcards, threads, after, ...}}
        scale=SCALE,
        cores=workflow._cores,
    script:
        "../scripts/cost_table.py"


# --- group targets: `snakemake p2`, `snakemake p1_hmc`, ... build one figure group (or one paper), its metrics, its
# claims table (the other groups' claims "not run") and its cost table, under results/groups/<target>/
CLAIM_GROUPS = [Path(f).stem for f in CLAIM_FILES]  # figure groups, named like their claims files
GROUP_FIGURES = {g: [f for f in ALL_FIGURES if JOB_SPECS[JOB_PRODUCER[f]]["group"] == g] for g in CLAIM_GROUPS}
GROUP_METRICS = {g: [m for m in ALL_METRICS if Path(m).parent.name == g] for g in CLAIM_GROUPS}
TARGET_GROUPS = {
    "p2": [g for g in CLAIM_GROUPS if g.startswith("p2_")],
    "p1": [g for g in CLAIM_GROUPS if g.startswith("p1_")],
    **{g: [g] for g in CLAIM_GROUPS},
}
# every computing job each target needs (its figures' and metrics' producers and all they wait for)
TARGET_JOBS = {
    t: jobs_upstream([f for g in gs for f in GROUP_FIGURES[g] + GROUP_METRICS[g]], JOB_SPECS, JOB_PRODUCER)
    for t, gs in TARGET_GROUPS.items()
}


rule group_claims:
    """The claims table of one target: its groups' claims judged on their metrics, every other group's "not run";
    groups.json records which groups ran at which scale."""
    input:
        metrics=lambda wc: [m for g in TARGET_GROUPS[wc.target] for m in GROUP_METRICS[g]],
        claims=CLAIM_FILES,
    output:
        ledger="results/groups/{target}/metrics.json",
        claims_csv="results/groups/{target}/claims.csv",
        claims_html=report(
            "results/groups/{target}/claims.html",
            caption="../report/claims.rst",
            category="Claims",
            subcategory="{target}",
        ),
        ran="results/groups/{target}/groups.json",
    log:
        "logs/report/group_claims_{target}.log",
    wildcard_constraints:
        target="|".join(TARGET_GROUPS),
    conda:
        "../envs/workflow.yaml"
    threads: 1
    resources:
        mem_mb=512,
        runtime=5,
    params:
        scale=SCALE,
        groups=lambda wc: TARGET_GROUPS[wc.target],
        all_groups=CLAIM_GROUPS,
    script:
        "../scripts/group_claims.py"


rule group_costs:
    """The cost table of one target's jobs (as rule cost_table, for the jobs the target needs)."""
    input:
        benchmarks=lambda wc: list(TARGET_JOBS[wc.target]),
    output:
        jobs="results/groups/{target}/costs/jobs.csv",
        groups="results/groups/{target}/costs/groups.csv",
        html="results/groups/{target}/costs/costs.html",
        readme="results/groups/{target}/costs/README_table.md",
    log:
        "logs/report/group_costs_{target}.log",
    wildcard_constraints:
        target="|".join(TARGET_GROUPS),
    conda:
        "../envs/workflow.yaml"
    threads: 1
    resources:
        mem_mb=512,
        runtime=5,
    params:
        jobs=lambda wc: TARGET_JOBS[wc.target],
        scale=SCALE,
        cores=workflow._cores,
    script:
        "../scripts/cost_table.py"


for _target, _groups in TARGET_GROUPS.items():

    rule:
        name:
            _target
        input:
            [f for g in _groups for f in GROUP_FIGURES[g]],
            expand(rules.group_claims.output.claims_csv, target=_target),
            expand(rules.group_costs.output.jobs, target=_target),


# --- docs/paper_scale.md: what the paper scale gave for the groups a CPU runs, from those runs' own tables
PAPER_DOC_TARGETS = ["p2", "p1_hmc"]


rule paper_scale_doc:
    """docs/paper_scale.md from the paper-scale runs of `snakemake p2` and `snakemake p1_hmc` (--config scale=paper):
    every claim of their groups with our number, its tolerance and the paper's, the CPU time per rule, date and
    commit. Stops if a run was not at paper scale."""
    input:
        claims=expand(rules.group_claims.output.claims_csv, target=PAPER_DOC_TARGETS),
        ran=expand(rules.group_claims.output.ran, target=PAPER_DOC_TARGETS),
        costs=expand(rules.group_costs.output.jobs, target=PAPER_DOC_TARGETS),
    output:
        doc="docs/paper_scale.md",
    log:
        "logs/report/paper_scale_doc.log",
    conda:
        "../envs/workflow.yaml"
    threads: 1
    resources:
        mem_mb=512,
        runtime=5,
    params:
        targets=PAPER_DOC_TARGETS,
    script:
        "../scripts/paper_scale_doc.py"


rule gpu_doctor:
    """What torch and JAX see on a GPU node (smattn.doctor): `snakemake --profile profiles/slurm gpu_doctor` submits
    it to the gpu partition; it fails unless both frameworks see the GPU (results/gpu_doctor.txt)."""
    output:
        report="results/gpu_doctor.txt",
    log:
        "logs/report/gpu_doctor.log",
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
        gpu=1,
    script:
        "../scripts/gpu_doctor.py"
