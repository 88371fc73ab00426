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
