"""The claims table as CSV columns, an HTML page (embedded in the Snakemake report) and Markdown (docs)."""

from __future__ import annotations

import html
from collections.abc import Mapping

from .panels import figure_status, headline_text, panel_line
from .schema import CALIBRATION, DEVIATION, FAIL, K_SIGMA, NOT_INFORMATIVE, NOT_RUN, PASS

CLAIM_COLUMNS = (
    "role",
    "figure",
    "claim",
    "paper_says",
    "where",
    "basis",
    "id",
    "paper",
    "ours",
    "tolerance",
    "tolerance_source",
    "status",
    "explanation",
)
# the HTML table folds where / paper_says (claims) or basis (checks) into the claim cell, the tolerance's source into
# its cell
HTML_COLUMNS = ("claim", "id", "paper", "ours", "tolerance", "status", "explanation")
CLAIM_COLUMN_WIDTHS = {"claim": 25, "id": 17, "paper": 6, "ours": 10, "tolerance": 14, "status": 7, "explanation": 21}
STATUS_COLOURS = {
    PASS: "#d9f2d9",
    FAIL: "#f8d0d0",
    DEVIATION: "#fff2cc",
    NOT_INFORMATIVE: "#f2e6f7",
    CALIBRATION: "#dde8f6",
    NOT_RUN: "#eeeeee",
}
PANEL_COLOURS = {
    "not reproduced": "#f8d0d0",
    "reproduced with explained deviations": "#fff2cc",
    "reproduced": "#d9f2d9",
    "not informative at this scale": "#f2e6f7",
}


def _html_cell(row: dict, col: str) -> str:
    text = html.escape(str(row[col]))
    if col == "claim":
        if row["role"] == "claim" and (row["paper_says"] or row["where"]):
            text += f"<br><small><i>{html.escape(row['where'])}</i>: {html.escape(row['paper_says'])}</small>"
        elif row["role"] == "check" and row["basis"]:
            text += f"<br><small><i>basis</i>: {html.escape(row['basis'])}</small>"
    if col == "tolerance" and row["tolerance_source"]:
        text += f"<br><small>{html.escape(row['tolerance_source'])}</small>"
    return f"<td>{text}</td>"


def _html_table(rows: list[dict]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in HTML_COLUMNS)
    cols = "".join(f'<col style="width:{CLAIM_COLUMN_WIDTHS[c]}%">' for c in HTML_COLUMNS)
    body = []
    for r in rows:
        colour = STATUS_COLOURS.get(r["status"], "#ffffff")
        body.append(f'<tr style="background:{colour}">{"".join(_html_cell(r, c) for c in HTML_COLUMNS)}</tr>')
    return f"<table><colgroup>{cols}</colgroup><tr>{head}</tr>{''.join(body)}</table>"


def claims_html(rows: list[dict], scale: str, groups: Mapping[str, str] | None = None) -> str:
    """A standalone HTML page: the headline (claims per paper by status, checks apart), one line per figure panel,
    the papers' claims, then the project's checks; ``groups``: which figure groups ran at which scale."""
    claims = [r for r in rows if r["role"] == "claim"]
    checks = [r for r in rows if r["role"] == "check"]
    panels = "".join(
        f'<li style="background:{PANEL_COLOURS.get(e["status"], "#ffffff")}">{html.escape(panel_line(e))}</li>'
        for e in figure_status(rows)
    )
    ran = ""
    if groups:
        ran = "<p>Groups: " + ", ".join(f"{html.escape(g)}: {html.escape(s)}" for g, s in groups.items()) + "</p>"
    # a fixed layout at the window's width, long ids and numbers broken anywhere: every column stays on screen
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'><title>Claims</title>"
        "<style>body{margin:8px;font-family:sans-serif}"
        "table{border-collapse:collapse;font-size:13px;table-layout:fixed;width:100%}"
        "td,th{border:1px solid #999;padding:3px 6px;vertical-align:top;text-align:left;overflow-wrap:anywhere;"
        "word-break:break-word}ul{font-size:13px}</style></head><body>"
        f"<h2>The papers' claims against this run (scale: {html.escape(scale)})</h2>"
        f"<p>{html.escape(headline_text(rows))} Statistical tolerances are {K_SIGMA:g} combined standard "
        f"errors.</p>{ran}<h3>Figures</h3><ul>{panels}</ul>"
        f"<h3>Claims of the papers ({len(claims)} rows)</h3>{_html_table(claims)}"
        f"<h3>Checks of this project ({len(checks)} rows): bounds, preconditions, engine targets, cross-checks, "
        f"diagnostics</h3>{_html_table(checks)}</body></html>\n"
    )


def _md_cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def claims_markdown(rows: list[dict]) -> list[str]:
    """Markdown lines: the figure lines, then the claims table, then the checks table."""
    lines = ["Figures:", ""]
    lines += [f"- {panel_line(e)}" for e in figure_status(rows) if e["status"] != "no claim rows"]
    lines += ["", headline_text(rows), ""]
    for role, title, src in (("claim", "Claims of the papers", "where"), ("check", "Checks of this project", "basis")):
        own = [r for r in rows if r["role"] == role]
        lines += [
            f"{title} ({len(own)} rows):",
            "",
            f"| {role} | {src} | ours | tolerance | paper | status |",
            "| --- | --- | ---: | --- | ---: | --- |",
        ]
        lines += [
            f"| {_md_cell(r['claim'])} | {_md_cell(r[src])} | {_md_cell(r['ours'])} | {_md_cell(r['tolerance'])} | "
            f"{_md_cell(r['paper'])} | {_md_cell(r['status'])} |"
            for r in own
        ]
        lines.append("")
    return lines
