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


for _group_rules in GROUP_RULE_FILES:

    include: _group_rules


include: "rules/report.smk"


rule all:
    default_target: True
    input:
        ALL_FIGURES,
        "results/metrics.json",
        "results/claims.csv",
        "results/data/summary.json",
