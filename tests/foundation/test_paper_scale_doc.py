"""scripts/paper_scale_doc.py: docs/paper_scale.md from the paper-scale runs' own claims and cost tables, and its
refusal of a run made at another scale."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

from smattn.ledger import CLAIM_COLUMNS


def write_run(root, target, scale, rows, jobs):
    d = root / target
    (d / "costs").mkdir(parents=True)
    with open(d / "claims.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, CLAIM_COLUMNS)
        w.writeheader()
        w.writerows({**dict.fromkeys(CLAIM_COLUMNS, ""), **r} for r in rows)
    groups = {"p2_theory": scale, "p1_hmc": "not run"}
    (d / "groups.json").write_text(json.dumps({"target": target, "scale": scale, "groups": groups}))
    with open(d / "costs/jobs.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, ["group", "rule", "wildcards", "wall_s", "cpu_s", "max_rss_mb", "started", "finished"])
        w.writeheader()
        w.writerows(jobs)


def run_script(repo, root, out):
    args = [sys.executable, str(repo / "scripts/paper_scale_doc.py")]
    args += ["--input", f"claims={root / 'p2/claims.csv'}", f"ran={root / 'p2/groups.json'}"]
    args += [
        f"costs={root / 'p2/costs/jobs.csv'}",
        "--output",
        f"doc={out}",
        "--params",
        json.dumps({"targets": ["p2"]}),
    ]
    env = {**os.environ, "PYTHONPATH": str(repo / "src")}
    return subprocess.run(args, capture_output=True, text=True, env=env, cwd=repo)


def job(rule, wc, cpu, wall):
    t = "2026-11-26T10:00:00+00:00"
    return {"group": "p2_theory", "rule": rule, "wildcards": wc, "wall_s": wall, "cpu_s": cpu, "max_rss_mb": "1",
            "started": t, "finished": "2026-11-26T11:30:00+00:00"}  # fmt: skip


def test_doc_lists_the_claims_of_the_groups_run_and_cpu_per_rule(repo, tmp_path):
    rows = [
        {"role": "claim", "figure": "P2 Fig. 1 right", "claim": "alpha_last at c = 1", "where": "P2 Fig. 1",
         "ours": "0.5012", "tolerance": "± 0.003", "paper": "0.5", "status": "pass"},
        {"role": "claim", "figure": "P2 Fig. 1 left", "claim": "a | b", "where": "P2", "ours": "1", "tolerance": "",
         "paper": "2", "status": "FAIL"},
        {"role": "check", "claim": "bound", "basis": "Jensen", "ours": "0.2", "status": "pass"},
        {"role": "claim", "figure": "P1 Fig. 2c top", "claim": "HMC accuracy", "status": "not run"},
    ]  # fmt: skip
    jobs = [job("p2_thresholds_c", "c=1", "100", "110"), job("p2_thresholds_c", "c=2", "140", "150"),
            job("p2_fig1_right", "", "3", "4")]  # fmt: skip
    write_run(tmp_path, "p2", "paper", rows, jobs)
    out = tmp_path / "paper_scale.md"
    r = run_script(repo, tmp_path, out)
    assert r.returncode == 0, r.stderr[-2000:]
    doc = out.read_text()
    assert "`snakemake p2 --config scale=paper`" in doc and "runs finished 2026-11-26T11:30" in doc
    # the figure lines open the document, counted from claim rows only
    assert doc.index("- P2 Fig. 1 left: not reproduced (1 FAIL)") < doc.index("## `snakemake p2`")
    assert "- P2 Fig. 1 right: reproduced (1 pass)" in doc and "P1 Fig. 2c top" not in doc
    assert "P2 claims (2): 1 FAIL, 1 pass; our checks (1): 1 pass." in doc
    assert "| alpha_last at c = 1 | P2 Fig. 1 | 0.5012 | ± 0.003 | 0.5 | pass |" in doc
    assert "| a \\| b | P2 | 1 |  | 2 | FAIL |" in doc
    assert "Checks of this project (1 rows):" in doc and "| bound | Jensen | 0.2 |" in doc
    assert "HMC accuracy" not in doc  # a group that did not run has no rows
    assert "3 computing jobs, 4.0 min CPU in all." in doc  # 243 CPU-s
    assert "| `p2_thresholds_c` | 2 | 4.0 min | 4.3 min |" in doc


def test_doc_refuses_a_run_at_another_scale(repo, tmp_path):
    write_run(tmp_path, "p2", "laptop", [], [job("p2_fig1_right", "", "3", "4")])
    r = run_script(repo, tmp_path, tmp_path / "paper_scale.md")
    assert r.returncode != 0 and "needs paper-scale runs; these ran at other scales: {'p2': 'laptop'}" in r.stderr
    assert not (tmp_path / "paper_scale.md").exists()
