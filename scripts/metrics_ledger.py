"""Rule metrics_ledger: merge metrics files into the ledger and render the claims table."""

from smattn.io import write_csv, write_json, write_text
from smattn.ledger import CLAIM_COLUMNS, claims_html, evaluate_claims, load_claims, merge_metrics, status_counts
from smattn.scriptio import run


def as_list(x):
    return [x] if isinstance(x, str) else list(x)


def main(io):
    metrics = merge_metrics(as_list(io.input.metrics))
    # groups_run: the figure groups this table covers (None: all); other groups' claims are "not run"
    groups_run = getattr(io.params, "groups_run", None)
    rows = evaluate_claims(load_claims(as_list(io.input.claims)), metrics, io.params.scale, groups_run)
    write_json(io.output.ledger, metrics)
    write_csv(io.output.claims_csv, CLAIM_COLUMNS, ([r[c] for c in CLAIM_COLUMNS] for r in rows))
    write_text(io.output.claims_html, claims_html(rows, io.params.scale))
    print(f"{len(metrics)} metrics, {len(rows)} claims: {status_counts(rows)}")


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
