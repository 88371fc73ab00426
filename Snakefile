# Regenerates every figure of
#   P1  Tiberi et al., "Dissecting the Interplay of Attention Paths in a Statistical Mechanics Theory of
#       Transformers" (NeurIPS 2024)
#   P2  Troiani et al., "Fundamental limits of learning in sequence multi-index models and deep attention
#       networks" (2025)
# from raw data. Scale switch: --config scale=smoke|laptop|paper (default laptop). See README.md.

from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "config.yaml"


validate(config, "schemas/config.schema.yaml")


include: "rules/common.smk"
include: "rules/data.smk"
# figure groups: each file reads like its paper's figure list
include: "rules/p2_theory.smk"
include: "rules/p2_dynamics.smk"
include: "rules/p1_hmc.smk"
include: "rules/p1_images.smk"
include: "rules/p1_pruning.smk"


# every figure of both papers (PNG; its PDF and CSV are declared beside it by the same rule)
ALL_FIGURES = figure_pngs(
    rules.p2_fig1_left,
    rules.p2_fig1_right,
    rules.p2_fig3_left,
    rules.p2_fig5,
    rules.p2_fig2_left,
    rules.p2_fig2_right,
    rules.p2_fig3_right,
    rules.p1_fig2c,
    rules.p1_fig2d,
    rules.p1_fig2e,
    rules.p1_fig5b,
    rules.p1_fig5c,
    rules.p1_fig3b,
    rules.p1_fig3c,
    rules.p1_fig3d,
    rules.p1_fig6,
    rules.p1_pruning_figures,
)
# flat {id: number} files merged into results/metrics.json (each written by the rule that computes the numbers)
ALL_METRICS = [
    rules.p2_fig1_left.output.metrics,
    rules.p2_fig1_right.output.metrics,
    rules.p2_alpha_critical_csv.output.metrics,
    rules.p2_fig3_left.output.metrics,
    rules.p2_fig5.output.metrics,
    rules.p2_se_crosscheck.output.metrics,
    rules.p2_fig2_left.output.metrics,
    rules.p2_gamp_growth.output.metrics,
    rules.p2_gamp_box.output.metrics,
    rules.p2_fig2_right.output.metrics,
    rules.p2_fig3_right.output.metrics,
    rules.p2_trec_sweep.output.metrics,
    rules.p2_trec_lr.output.metrics,
    rules.p1_fig2c.output.metrics,
    rules.p1_fig2e.output.metrics,
    rules.p1_fig5b.output.metrics,
    rules.p1_fig5b_draws.output.metrics,
    rules.p1_fig5c.output.metrics,
    rules.p1_fig3b.output.metrics,
    rules.p1_fig3c.output.metrics,
    rules.p1_fig3d.output.metrics,
    rules.p1_fig6.output.metrics,
    rules.p1_images_network_seeds.output.metrics,
    *expand(rules.p1_images_export.output.metrics, model=[n for m in P1I_SEEDED for n in P1I_NETWORKS[m]]),
    *expand(rules.p1_pruning_evaluate.output.metrics, model=P1P_MODELS),
]
# the papers' claims set against the ledger, one file per figure group
CLAIM_FILES = [
    "claims/p2_theory.yaml",
    "claims/p2_dynamics.yaml",
    "claims/p1_hmc.yaml",
    "claims/p1_images.yaml",
    "claims/p1_pruning.yaml",
]


# with --cache: the rules whose outputs come from the between-workflow cache have no benchmark (Snakemake's rule)
drop_cached_benchmarks(workflow.rules)


include: "rules/report.smk"


rule all:
    default_target: True
    input:
        ALL_FIGURES,
        rules.metrics_ledger.output.ledger,
        rules.metrics_ledger.output.claims_csv,
        rules.data_summary.output.summary,
        rules.cost_table.output,


# SLURM partition and account of every rule's jobs by kind (GPU or CPU), from config `cluster` (docs/cluster.md)
place_on_partitions(workflow.rules, config.get("cluster"))
