"""Write tests/verdicts/expected_laptop.yaml from the claims tables of a laptop-scale run of the verdicts groups.

Usage: ``python tests/verdicts/record_expected.py results/groups/p2_theory/claims.csv results/groups/p1_hmc/claims.csv``
(the group is the table's folder name). Reasons already in the file are kept for rows whose status did not change;
a new FAIL or "not informative" gets the placeholder ``TODO``, which the tier refuses until a reason replaces it.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).parent
OUT = HERE / "expected_laptop.yaml"


def main(paths: list[str]) -> None:
    old = {}
    if OUT.exists():
        for e in yaml.safe_load(OUT.read_text(encoding="utf-8")) or []:
            old[(e["group"], e["id"], e["claim"])] = e
    items = []
    for p in paths:
        group = Path(p).parent.name
        with open(p, newline="", encoding="utf-8") as fh:
            for r in csv.DictReader(fh):
                if r["status"] == "not run":
                    continue
                e = {"group": group, "id": r["id"], "claim": r["claim"], "status": r["status"]}
                prev = old.get((group, r["id"], r["claim"]))
                if r["status"] in ("FAIL", "not informative"):
                    same = prev is not None and prev["status"] == r["status"] and prev.get("reason")
                    e["reason"] = prev["reason"] if same else "TODO"
                items.append(e)
    OUT.write_text(
        "# The status of every row of the verdicts groups at laptop scale (tests/verdicts/test_verdicts.py).\n"
        + yaml.safe_dump(items, sort_keys=False, allow_unicode=True, width=120),
        encoding="utf-8",
    )
    print(f"{len(items)} rows written to {OUT}")


if __name__ == "__main__":
    main(sys.argv[1:])
