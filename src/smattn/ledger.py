"""The metrics ledger and the claims table.

Analysis rules write flat ``{id: number}`` JSON files; ``merge_metrics`` joins them into one ledger
(duplicate ids are an error). ``claims/<group>.yaml`` files list the paper's claims; ``evaluate_claims``
sets each against the ledger:

* ``kind: match`` — ours is within ``tolerance`` of the paper's number: ``pass`` / ``FAIL``;
* ``kind: compare`` — ``check: {left: id, op: "<" | ">" | "<=" | ">=", right: id}`` holds: ``pass`` / ``FAIL``;
* ``kind: deviation`` — a known, explained deviation: ``deviation explained`` (the explanation is shown);
* ``kind: info`` — a number reported beside the paper's, without a verdict.
"""

from __future__ import annotations

import html
import operator
from collections.abc import Iterable, Mapping
from pathlib import Path

import yaml

from .io import read_json

_OPS = {"<": operator.lt, ">": operator.gt, "<=": operator.le, ">=": operator.ge}
KINDS = ("match", "compare", "deviation", "info")


def merge_metrics(paths: Iterable[str | Path]) -> dict[str, float]:
    """Join metrics files into one ``{id: number}`` dict, sorted by id; duplicate ids raise ValueError."""
    merged: dict[str, float] = {}
    origin: dict[str, str] = {}
    for path in paths:
        data = read_json(path)
        if not isinstance(data, dict):
            raise ValueError(f"{path}: a metrics file must hold a JSON object {{id: number}}")
        for key, value in data.items():
            if key in merged:
                raise ValueError(f"metric {key!r} is written by both {origin[key]} and {path}")
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise ValueError(f"{path}: metric {key!r} has non-numeric value {value!r}")
            merged[key] = float(value)
            origin[key] = str(path)
    return dict(sorted(merged.items()))


def load_claims(paths: Iterable[str | Path]) -> list[dict]:
    """All claims of the given YAML files, each checked for its required fields."""
    claims: list[dict] = []
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            items = yaml.safe_load(fh) or []
        if not isinstance(items, list):
            raise ValueError(f"{path}: a claims file must hold a list of claims")
        for i, c in enumerate(items):
            where = f"{path}: claim {i}"
            if not isinstance(c, dict) or "claim" not in c or "kind" not in c:
                raise ValueError(f"{where}: needs at least 'claim' and 'kind'")
            if c["kind"] not in KINDS:
                raise ValueError(f"{where}: kind {c['kind']!r} is not one of {KINDS}")
            if c["kind"] == "compare":
                chk = c.get("check") or {}
                if set(chk) != {"left", "op", "right"} or chk["op"] not in _OPS:
                    raise ValueError(f"{where}: compare needs check: {{left, op, right}} with op in {list(_OPS)}")
            elif "id" not in c:
                raise ValueError(f"{where}: needs 'id' (the metric it is about)")
            if c["kind"] == "match" and (c.get("paper") is None or c.get("tolerance") is None):
                raise ValueError(f"{where}: match needs 'paper' and 'tolerance'")
            if c["kind"] == "deviation" and not c.get("explanation"):
                raise ValueError(f"{where}: deviation needs an 'explanation'")
            claims.append({**c, "source": str(path)})
    return claims


def _get(metrics: Mapping[str, float], key: str, claim: dict) -> float:
    if key not in metrics:
        raise KeyError(f"{claim['source']}: claim {claim['claim']!r} names metric {key!r}, which no rule wrote")
    return metrics[key]


def evaluate_claims(claims: list[dict], metrics: Mapping[str, float]) -> list[dict]:
    """Rows ``{claim, id, paper, ours, status, explanation}`` of the claims table."""
    rows = []
    for c in claims:
        kind = c["kind"]
        if kind == "compare":
            chk = c["check"]
            left, right = _get(metrics, chk["left"], c), _get(metrics, chk["right"], c)
            ok = _OPS[chk["op"]](left, right)
            ident = f"{chk['left']} {chk['op']} {chk['right']}"
            ours = f"{left:.4g} {chk['op']} {right:.4g}"
            status = "pass" if ok else "FAIL"
        else:
            ident = c["id"]
            value = _get(metrics, ident, c)
            ours = f"{value:.4g}"
            if kind == "match":
                status = "pass" if abs(value - float(c["paper"])) <= float(c["tolerance"]) else "FAIL"
            elif kind == "deviation":
                status = "deviation explained"
            else:
                status = "info"
        paper = c.get("paper")
        rows.append(
            {
                "claim": c["claim"],
                "id": ident,
                "paper": "" if paper is None else str(paper),
                "ours": ours,
                "status": status,
                "explanation": c.get("explanation", ""),
            }
        )
    return rows


CLAIM_COLUMNS = ("claim", "id", "paper", "ours", "status", "explanation")
CLAIM_COLUMN_WIDTHS = {"claim": 27, "id": 20, "paper": 7, "ours": 11, "status": 8, "explanation": 27}  # % of page


def claims_html(rows: list[dict], scale: str) -> str:
    """A standalone HTML page with the claims table (embedded in the Snakemake report)."""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in CLAIM_COLUMNS)
    body = []
    for r in rows:
        colour = {"pass": "#d9f2d9", "FAIL": "#f8d0d0", "deviation explained": "#fff2cc"}.get(r["status"], "#ffffff")
        cells = "".join(f"<td>{html.escape(str(r[c]))}</td>" for c in CLAIM_COLUMNS)
        body.append(f'<tr style="background:{colour}">{cells}</tr>')
    # a fixed layout at the window's width, long ids and numbers broken anywhere: every column stays on screen
    cols = "".join(f'<col style="width:{CLAIM_COLUMN_WIDTHS[c]}%">' for c in CLAIM_COLUMNS)
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'><title>Claims</title>"
        "<style>body{margin:8px}"
        "table{border-collapse:collapse;font-family:sans-serif;font-size:13px;table-layout:fixed;width:100%}"
        "td,th{border:1px solid #999;padding:3px 6px;vertical-align:top;text-align:left;overflow-wrap:anywhere;"
        "word-break:break-word}</style></head><body>"
        f"<h2>Claims of the papers against this run (scale: {html.escape(scale)})</h2>"
        f"<table><colgroup>{cols}</colgroup><tr>{head}</tr>{''.join(body)}</table></body></html>\n"
    )
