"""Rule group_claims: the claims table of one target (`snakemake p2`, `snakemake p1_hmc`, ...): the claims of the
groups it ran judged on their metrics, every other group's claims "not run"; groups.json says which ran at which scale.
"""

import inspect
from pathlib import Path

from smattn.io import write_csv, write_json, write_text
from smattn.ledger import CLAIM_COLUMNS, claims_html, evaluate_claims, load_claims, merge_metrics
from smattn.scriptio import run


def as_list(x):
    return [x] if isinstance(x, str) else list(x)


def claim_group(claim: dict) -> str:
    """A claim's figure group: the stem of its claims file (claims/p2_theory.yaml -> p2_theory)."""
    return Path(claim["source"]).stem


def judge(claims, metrics, scale, groups_run):
    """Rows of the table: ledger.evaluate_claims with groups_run (claims of other groups get "not run")."""
    if "groups_run" in inspect.signature(evaluate_claims).parameters:
        return evaluate_claims(claims, metrics, scale, groups_run=groups_run)
    # the ledger without a groups_run parameter: judge the claims of the groups that ran, the others "not run"
    ran = [c for c in claims if claim_group(c) in groups_run]
    judged = iter(evaluate_claims(ran, metrics, scale))
    return [
        next(judged)
        if claim_group(c) in groups_run
        else {**{k: "" for k in CLAIM_COLUMNS}, "claim": c["claim"], "id": c.get("id", ""), "status": "not run"}
        for c in claims
    ]


def main(io):
    groups_run = list(io.params.groups)
    claims = load_claims(as_list(io.input.claims))
    unknown = sorted({claim_group(c) for c in claims} - set(io.params.all_groups))
    if unknown:
        raise ValueError(f"claims files of no figure group: {unknown}")
    metrics = merge_metrics(as_list(io.input.metrics))
    rows = judge(claims, metrics, io.params.scale, set(groups_run))
    write_json(io.output.ledger, metrics)
    write_csv(io.output.claims_csv, CLAIM_COLUMNS, ([r[c] for c in CLAIM_COLUMNS] for r in rows))
    ran = {
        "target": io.wildcards.target,
        "scale": io.params.scale,
        "groups_run": groups_run,
        "groups_not_run": [g for g in io.params.all_groups if g not in groups_run],
    }
    write_json(io.output.ran, ran)
    note = (
        f"<p>Groups run at scale {io.params.scale}: {', '.join(groups_run)}; not run: "
        f"{', '.join(ran['groups_not_run']) or 'none'}.</p>"
    )
    page = claims_html(rows, io.params.scale)
    write_text(io.output.claims_html, page.replace("<body>", "<body>" + note, 1) if "<body>" in page else note + page)
    counts = {s: sum(r["status"] == s for r in rows) for s in sorted({r["status"] for r in rows})}
    print(
        f"target {io.wildcards.target} ({', '.join(groups_run)}) at {io.params.scale}: {len(metrics)} metrics; {counts}"
    )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
