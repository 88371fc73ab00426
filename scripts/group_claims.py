"""Rule group_claims: the claims table of one target (`snakemake p2`, `snakemake p1_hmc`, ...): the claims of the
figure groups it ran judged on their metrics, every other group's claims "not run"; groups.json and the page say
which groups ran at which scale."""

from smattn.io import write_csv, write_json, write_text
from smattn.ledger import CLAIM_COLUMNS, claims_html, evaluate_claims, load_claims, merge_metrics, status_counts
from smattn.scriptio import run


def as_list(x):
    return [x] if isinstance(x, str) else list(x)


def main(io):
    groups_run = list(io.params.groups)
    claims = load_claims(as_list(io.input.claims))
    unknown = sorted({c["group"] for c in claims} - set(io.params.all_groups))
    if unknown:
        raise ValueError(f"claims of no figure group of the workflow: {unknown}")
    metrics = merge_metrics(as_list(io.input.metrics))
    rows = evaluate_claims(claims, metrics, io.params.scale, groups_run)
    ran = {g: (io.params.scale if g in groups_run else "not run") for g in io.params.all_groups}
    write_json(io.output.ledger, metrics)
    write_csv(io.output.claims_csv, CLAIM_COLUMNS, ([r[c] for c in CLAIM_COLUMNS] for r in rows))
    write_text(io.output.claims_html, claims_html(rows, io.params.scale, ran))
    write_json(io.output.ran, {"target": io.wildcards.target, "scale": io.params.scale, "groups": ran})
    print(f"target {io.wildcards.target}: {len(metrics)} metrics, {len(rows)} claims: {status_counts(rows)}")


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
