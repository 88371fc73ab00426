"""Write (or check) tests/verdicts/expected_laptop.yaml from a laptop-scale run.

Usage:

* ``python tests/verdicts/record_expected.py results/groups/p2_theory/claims.csv ...``: from group claims tables (the
  group is the table's folder name);
* ``python tests/verdicts/record_expected.py --metrics results/metrics.json``: from the whole run's ledger (every group
  ran): the claims files are evaluated at laptop scale, so each row's group is its claims file;
* ``--check`` with either: write nothing, print every row whose status differs from the file's and exit 1 if any.

Reasons already in the file are kept for rows whose status did not change; a new FAIL or "not informative" gets the
placeholder ``TODO``, which the tier refuses until a reason replaces it. Groups not in the input keep their entries.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).parent
OUT = HERE / "expected_laptop.yaml"
CLAIMS = sorted((HERE.parent.parent / "claims").glob("*.yaml"))


def rows_from_tables(paths: list[str]) -> list[tuple[str, dict]]:
    out = []
    for p in paths:
        group = Path(p).parent.name
        with open(p, newline="", encoding="utf-8") as fh:
            out += [(group, r) for r in csv.DictReader(fh)]
    return out


def rows_from_metrics(path: str) -> list[tuple[str, dict]]:
    from smattn.ledger import evaluate_claims, load_claims

    claims = load_claims(CLAIMS)
    metrics = json.loads(Path(path).read_text(encoding="utf-8"))
    rows = evaluate_claims(claims, metrics, scale="laptop")
    return [(c["group"], r) for c, r in zip(claims, rows, strict=True)]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tables", nargs="*", help="group claims tables (results/groups/<group>/claims.csv)")
    ap.add_argument("--metrics", help="the whole run's ledger (results/metrics.json) instead of group tables")
    ap.add_argument("--check", action="store_true", help="compare with the file, write nothing")
    args = ap.parse_args(argv)
    pairs = rows_from_metrics(args.metrics) if args.metrics else rows_from_tables(args.tables)
    old_items = yaml.safe_load(OUT.read_text(encoding="utf-8")) if OUT.exists() else []
    old = {(e["group"], e["id"], e["claim"]): e for e in old_items or []}
    items, changed = [], []
    groups = {g for g, _ in pairs}
    for group, r in pairs:
        if r["status"] == "not run":
            continue
        e = {"group": group, "id": r["id"], "claim": r["claim"], "status": r["status"]}
        prev = old.get((group, r["id"], r["claim"]))
        if prev is None or prev["status"] != r["status"]:
            was = "new row" if prev is None else prev["status"]
            changed.append(f"{group} | {r['id']} | {r['claim']}: {was} -> {r['status']} ({r['ours']})")
        if r["status"] in ("FAIL", "not informative"):
            same = prev is not None and prev["status"] == r["status"] and prev.get("reason")
            e["reason"] = prev["reason"] if same else "TODO"
        items.append(e)
    seen = {(e["group"], e["id"], e["claim"]) for e in items}
    gone = [k for k in old if k[0] in groups and k not in seen]
    changed += [f"{g} | {i} | {c}: {old[(g, i, c)]['status']} -> row gone" for g, i, c in gone]
    if args.check:
        print("\n".join(changed) or "every recorded status holds")
        return 1 if changed else 0
    kept = [e for e in old_items or [] if e["group"] not in groups]
    OUT.write_text(
        "# The status of every claims row at laptop scale, by group (tests/verdicts/test_verdicts.py).\n"
        "# The p1_images and p1_pruning statuses are those of one laptop network, recorded on the project's machines\n"
        "# (docs/scales.md#the-projects-machines); other CPU kinds train networks whose image-task statuses differ\n"
        "# (docs/p1_images.md#training-loop).\n"
        + yaml.safe_dump(kept + items, sort_keys=False, allow_unicode=True, width=120),
        encoding="utf-8",
    )
    print(f"{len(kept) + len(items)} rows written to {OUT}; {len(changed)} changed:\n" + "\n".join(changed))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
