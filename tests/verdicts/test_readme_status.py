"""The README's per-panel status lines are those that the recorded laptop statuses give: the panels' statuses
computed (``smattn.ledger.figure_status``) from ``expected_laptop.yaml``'s row statuses, matched to the claims files'
rows, equal the block between the README's ``panel-status`` markers. Runs in the default suite (no workflow run)."""

from pathlib import Path

import yaml

from smattn.ledger import PANEL_STATUSES, figure_status, load_claims, row_id

REPO = Path(__file__).resolve().parents[2]
START, END = "<!-- panel-status:start -->", "<!-- panel-status:end -->"


def panel_status_block() -> str:
    """Markdown lines, one per panel status present: the status in italics and its panels."""
    claims = load_claims(sorted((REPO / "claims").glob("*.yaml")))
    expected = yaml.safe_load((REPO / "tests/verdicts/expected_laptop.yaml").read_text(encoding="utf-8"))
    status = {(e["group"], e["id"], e["claim"]): e["status"] for e in expected}
    rows = [
        {"role": c["role"], "figure": c.get("figure", ""), "status": status[(c["group"], row_id(c), c["claim"])]}
        for c in claims
    ]
    by_status: dict[str, list[str]] = {}
    for e in figure_status(rows):
        by_status.setdefault(e["status"], []).append(e["figure"])
    return "\n".join(f"- *{s}*: {', '.join(by_status[s])}" for s in PANEL_STATUSES if s in by_status)


def test_readme_panel_status_is_the_recorded_one():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert START in text and END in text, f"README.md lacks the {START} ... {END} block"
    block = text.split(START, 1)[1].split(END, 1)[0]
    want = panel_status_block()
    assert block.split() == want.split(), f"README.md's panel-status block should read (wrapped as you like):\n{want}"
