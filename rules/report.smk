# The metrics ledger and the claims table (P1 and P2), collected from every analysis rule.

CLAIM_FILES = sorted(
    f"claims/{Path(f).stem}.yaml"
    for f in GROUP_RULE_FILES
    if Path(workflow.basedir, "claims", f"{Path(f).stem}.yaml").exists()
)


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
    params:
        scale=SCALE,
    log:
        "logs/report/metrics_ledger.log",
    threads: 1
    resources:
        mem_mb=512,
        runtime=5,
    conda:
        "../envs/workflow.yaml"
    script:
        "../scripts/metrics_ledger.py"
