"""The metrics ledger and the claims table.

Analysis rules write flat ``{id: number}`` JSON files; ``merge_metrics`` joins them into one ledger (duplicate ids
are an error). ``claims/<group>.yaml`` files list the papers' claims; ``evaluate_claims`` sets each against the
ledger. Every row names where the paper makes the statement (``where``) and, except ``info`` rows, what the paper
says (``paper_says``). Kinds:

* ``match`` — ours agrees with a published number: pass iff ``|ours - paper| <= tolerance`` with
  ``tolerance = K_SIGMA * sqrt(se**2 + paper_se**2) + fixed``; ``se`` (ours) and ``paper_se`` are standard errors
  (a metric id, a number, or ``{binomial: n}`` for an accuracy measured on ``n`` independent test items), ``fixed``
  is the optional ``tolerance`` field, allowed only with a ``tolerance_reason`` (deterministic quantities:
  discretisation, a bound).
* ``deviation`` — a known disagreement with the paper, explained by a computation: the row states the value we
  expect (``expected``, with ``se`` / ``tolerance`` as for a match) and stays ``deviation explained`` only while
  ours is within that tolerance of it; if ours moves, the row fails.
* ``compare`` — an ordering or effect the paper states, ``check: {left, op, right}``. With ``d`` the difference in
  the claimed direction (``right - left`` for ``<``/``<=``, ``left - right`` for ``>``/``>=``), ``sigma`` the
  combined standard error of ``se_left`` and ``se_right`` and ``m`` the ``min_effect`` (0 unless the paper's words
  quantify the effect: "wide margin", "much better"; a ``min_effect_reason`` is required):
  ``test: significant`` passes iff ``d - K_SIGMA * sigma > m``, ``test: consistent`` iff ``d + K_SIGMA * sigma >= m``
  (the data do not contradict the claim), and without standard errors iff ``d + margin > m`` (``>=`` for ``<=`` /
  ``>=``), where the optional ``margin`` (with ``margin_reason``) is an allowance such as a baseline's spread.
* ``info`` — a number the papers do not state (diagnostics, costs); it may not carry a ``paper`` value.
* ``calibration`` — a number that was set to reproduce a published value: shown with the paper's, never a verdict.

``judged_at: [scale, ...]`` limits a verdict to those workflow scales; at any other the row says
``judged at <scales> scale``. A claim of a figure group that did not run is ``not run``. Explanations cite numbers
of the run as ``{{metric id}}``, filled in when the table is made.
"""

from __future__ import annotations

import html
import math
import operator
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path

import yaml

from .io import read_json

#: the one multiple of the combined standard error that every statistical tolerance of the ledger uses
K_SIGMA = 3.0

KINDS = ("match", "compare", "deviation", "info", "calibration")
SCALES = ("smoke", "laptop", "paper")
TESTS = ("significant", "consistent")
PASS, FAIL, DEVIATION, INFO, CALIBRATION, NOT_RUN = (
    "pass",
    "FAIL",
    "deviation explained",
    "info",
    "calibration",
    "not run",
)
#: statuses that are verdicts on a claim
VERDICTS = (PASS, FAIL, DEVIATION)

_OPS = {"<": operator.lt, ">": operator.gt, "<=": operator.le, ">=": operator.ge}
_CHECK_KEYS = {"left", "op", "right", "se_left", "se_right", "test", "min_effect", "min_effect_reason", "margin"}
_CHECK_KEYS |= {"margin_reason"}
_TEMPLATE = re.compile(r"\{\{\s*([^{}]+?)\s*\}\}")


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


# --- loading ---------------------------------------------------------------------------------------------------


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _check_ref(where: str, name: str, ref, allow_binomial: bool = False) -> None:
    """A reference to a number: a metric id (str), a number, or (standard errors) ``{binomial: n}``."""
    if isinstance(ref, str) or _is_number(ref):
        return
    if allow_binomial and isinstance(ref, dict) and set(ref) == {"binomial"}:
        n = ref["binomial"]
        if isinstance(n, str) or (_is_number(n) and n >= 1):
            return
    kinds = "a metric id, a number" + (" or {binomial: n}" if allow_binomial else "")
    raise ValueError(f"{where}: {name} must be {kinds}, not {ref!r}")


def _validate(c: dict, where: str) -> None:
    kind = c["kind"]
    if kind not in KINDS:
        raise ValueError(f"{where}: kind {kind!r} is not one of {KINDS}")
    if kind != "info" and not c.get("where"):
        raise ValueError(f"{where}: needs 'where' (the section or figure of the paper the claim comes from)")
    if kind in ("match", "compare", "deviation") and not c.get("paper_says"):
        raise ValueError(f"{where}: needs 'paper_says' (what the paper states, which the row encodes)")
    if kind == "compare":
        chk = c.get("check")
        if not isinstance(chk, dict) or not {"left", "op", "right"} <= set(chk) <= _CHECK_KEYS:
            raise ValueError(
                f"{where}: compare needs check: {{left, op, right}} and optionally {sorted(_CHECK_KEYS - {'left'})}"
            )
        if chk["op"] not in _OPS:
            raise ValueError(f"{where}: op {chk['op']!r} is not one of {list(_OPS)}")
        for side in ("left", "right"):
            _check_ref(where, side, chk[side])
            if f"se_{side}" in chk:
                _check_ref(where, f"se_{side}", chk[f"se_{side}"], allow_binomial=True)
        has_se = "se_left" in chk or "se_right" in chk
        if has_se and chk.get("test") not in TESTS:
            raise ValueError(f"{where}: a compare with standard errors needs test: one of {TESTS}")
        if not has_se and "test" in chk:
            raise ValueError(f"{where}: test: {chk['test']} needs se_left and/or se_right")
        for key in ("min_effect", "margin"):
            if key in chk:
                _check_ref(where, key, chk[key])
                if not chk.get(f"{key}_reason"):
                    raise ValueError(f"{where}: {key} needs {key}_reason (why this size)")
        if "margin" in chk and has_se:
            raise ValueError(f"{where}: give either standard errors (se_left/se_right) or a margin, not both")
        return
    if "id" not in c:
        raise ValueError(f"{where}: needs 'id' (the metric it is about)")
    if c.get("paper") is not None and not _is_number(c["paper"]):
        raise ValueError(f"{where}: paper must be a number, not {c['paper']!r}")
    if kind == "info":
        if c.get("paper") is not None:
            raise ValueError(f"{where}: an info row may not carry a paper value: make it a verdict or a deviation")
        return
    if kind in ("match", "deviation"):
        if not _is_number(c.get("paper")) and kind == "match":
            raise ValueError(f"{where}: match needs 'paper' (the published number)")
        if kind == "deviation":
            if not _is_number(c.get("expected")):
                raise ValueError(f"{where}: deviation needs 'expected' (the value our explanation predicts)")
            if not c.get("explanation"):
                raise ValueError(f"{where}: deviation needs an 'explanation'")
        if "se" not in c and "tolerance" not in c:
            raise ValueError(f"{where}: {kind} needs 'se' (our standard error) and/or a fixed 'tolerance'")
        if "se" in c:
            _check_ref(where, "se", c["se"], allow_binomial=True)
        if "paper_se" in c:
            _check_ref(where, "paper_se", c["paper_se"])
        if "tolerance" in c:
            if not _is_number(c["tolerance"]) or c["tolerance"] < 0:
                raise ValueError(f"{where}: tolerance must be a number >= 0")
            if not c.get("tolerance_reason"):
                raise ValueError(f"{where}: a fixed tolerance needs tolerance_reason (why a fixed size is right)")


def load_claims(paths: Iterable[str | Path]) -> list[dict]:
    """All claims of the given YAML files, each checked for its fields; ``group`` is the file's stem."""
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
            where = f"{path}: claim {i} ({c['claim'][:60]!r})"
            _validate(c, where)
            judged = c.get("judged_at")
            if judged is not None and (
                not isinstance(judged, list) or not judged or any(s not in SCALES for s in judged)
            ):
                raise ValueError(f"{where}: judged_at must be a non-empty list of scales from {SCALES}")
            claims.append({**c, "source": str(path), "group": Path(path).stem})
    return claims


# --- evaluation --------------------------------------------------------------------------------------------------


def _value(metrics: Mapping[str, float], ref, claim: dict) -> float:
    if _is_number(ref):
        return float(ref)
    if ref not in metrics:
        raise KeyError(f"{claim['source']}: claim {claim['claim']!r} names metric {ref!r}, which no rule wrote")
    return metrics[ref]


def _se(metrics: Mapping[str, float], ref, value: float, claim: dict) -> tuple[float, str]:
    """(standard error, its source in words) of ``ref``; ``value`` is the estimate a binomial error belongs to."""
    if ref is None:
        return 0.0, "0"
    if isinstance(ref, dict):
        n = _value(metrics, ref["binomial"], claim)
        if not n >= 1:
            raise ValueError(f"{claim['source']}: claim {claim['claim']!r}: binomial n = {n} must be >= 1")
        p = min(max(value, 0.0), 1.0)
        return math.sqrt(p * (1.0 - p) / n), f"binomial, n = {n:g}"
    se = _value(metrics, ref, claim)
    if not se >= 0 or not math.isfinite(se):
        raise ValueError(f"{claim['source']}: claim {claim['claim']!r}: standard error {ref!r} = {se} is not >= 0")
    return se, (f"{se:.3g}" if _is_number(ref) else f"{ref} = {se:.3g}")


def fill_template(text: str, metrics: Mapping[str, float], claim: dict | None = None) -> str:
    """Replace every ``{{metric id}}`` in ``text`` by the metric's value (4 significant digits)."""

    def sub(m: re.Match) -> str:
        key = m.group(1)
        if key not in metrics:
            who = f"{claim['source']}: claim {claim['claim']!r}" if claim else "text"
            raise KeyError(f"{who} cites metric {key!r}, which no rule wrote")
        return f"{metrics[key]:.4g}"

    return _TEMPLATE.sub(sub, text)


def _tolerance(c: dict, metrics: Mapping[str, float], value: float) -> tuple[float, str]:
    """Tolerance of a match or deviation row and where it comes from."""
    parts, tol = [], 0.0
    if "se" in c or "paper_se" in c:
        se, se_src = _se(metrics, c.get("se"), value, c)
        pse, pse_src = _se(metrics, c.get("paper_se"), value, c)
        tol += K_SIGMA * math.hypot(se, pse)
        parts.append(f"{K_SIGMA:g}·√(se² + se_paper²); se: {se_src}; se_paper: {pse_src}")
    if "tolerance" in c:
        tol += float(c["tolerance"])
        parts.append(f"fixed {float(c['tolerance']):.3g}: {c['tolerance_reason']}")
    return tol, " + ".join(parts)


def _judged_here(c: dict, scale: str | None) -> bool:
    return scale is None or scale in (c.get("judged_at") or [scale])


def _evaluate_compare(c: dict, metrics: Mapping[str, float]) -> dict:
    chk = c["check"]
    left, right = _value(metrics, chk["left"], c), _value(metrics, chk["right"], c)
    op = chk["op"]
    d = right - left if op in ("<", "<=") else left - right
    m = _value(metrics, chk.get("min_effect", 0.0), c)
    strict = op in ("<", ">")
    ident = f"{chk['left']} {op} {chk['right']}"
    ours = f"{left:.4g} {op} {right:.4g}"
    sources = []
    if "se_left" in chk or "se_right" in chk:
        se_l, src_l = _se(metrics, chk.get("se_left"), left, c)
        se_r, src_r = _se(metrics, chk.get("se_right"), right, c)
        sigma = math.hypot(se_l, se_r)
        bound = d - K_SIGMA * sigma if chk["test"] == "significant" else d + K_SIGMA * sigma
        ok = bound > m if (chk["test"] == "significant" and strict) else bound >= m
        word = "d − " if chk["test"] == "significant" else "d + "
        tolerance = f"{chk['test']}: {word}{K_SIGMA:g}σ = {bound:.3g} vs {m:.3g}"
        sources.append(f"σ = √(se_left² + se_right²) = {sigma:.3g}; se_left: {src_l}; se_right: {src_r}")
        ours = f"{ours} (d = {d:.3g} ± {sigma:.2g})"
    else:
        margin = _value(metrics, chk.get("margin", 0.0), c)
        if not margin >= 0:
            raise ValueError(f"{c['source']}: claim {c['claim']!r} has a negative margin {chk['margin']!r} = {margin}")
        ok = d + margin > m if strict else d + margin >= m
        tolerance = f"d + margin = {d + margin:.3g} vs {m:.3g}" if "margin" in chk else f"d = {d:.3g} vs {m:.3g}"
        if "margin" in chk:
            src = chk["margin"] if isinstance(chk["margin"], str) else f"{margin:g}"
            sources.append(f"margin {src} = {margin:.3g}: {chk['margin_reason']}")
        else:
            sources.append("exact comparison")
    if "min_effect" in chk:
        sources.append(f"min effect {m:.3g}: {chk['min_effect_reason']}")
    return {"id": ident, "ours": ours, "tolerance": tolerance, "tolerance_source": "; ".join(sources), "ok": ok}


def _evaluate_value(c: dict, metrics: Mapping[str, float]) -> dict:
    value = _value(metrics, c["id"], c)
    row = {"id": c["id"], "ours": f"{value:.4g}", "tolerance": "", "tolerance_source": "", "ok": None}
    if c["kind"] not in ("match", "deviation"):
        return row
    if "se" in c:
        se, _ = _se(metrics, c["se"], value, c)
        row["ours"] = f"{value:.4g} ± {se:.2g}"
    target = float(c["paper"] if c["kind"] == "match" else c["expected"])
    tol, source = _tolerance(c, metrics, value)
    row.update(tolerance=f"± {tol:.3g}", tolerance_source=source, ok=abs(value - target) <= tol)
    if c["kind"] == "deviation":
        row["tolerance"] = f"{target:.4g} ± {tol:.3g} (expected)"
    return row


def _judged_elsewhere(c: dict) -> str:
    return f"judged at {' and '.join(c['judged_at'])} scale"


def _row_without_numbers(c: dict, base: dict, status: str, explanation: str) -> dict:
    """A table row that shows no number: the claim's group did not run, or its numbers exist only at another scale."""
    ident = c.get("id") or f"{c['check']['left']} {c['check']['op']} {c['check']['right']}"
    empty = {"ours": "", "tolerance": "", "tolerance_source": ""}
    return {**base, "id": ident, **empty, "status": status, "explanation": explanation}


def evaluate_claims(
    claims: list[dict],
    metrics: Mapping[str, float],
    scale: str | None = None,
    groups_run: Iterable[str] | None = None,
) -> list[dict]:
    """Rows of the claims table (keys ``CLAIM_COLUMNS``), one per claim.

    ``scale``: the workflow scale (a claim whose ``judged_at`` does not list it gets no verdict there; None: every
    verdict is given). ``groups_run``: the figure groups whose metrics this run computed; a claim of another group
    is ``not run`` and its metrics are not read (None: every group ran).
    """
    ran = None if groups_run is None else set(groups_run)
    rows = []
    for c in claims:
        kind = c["kind"]
        base = {
            "claim": c["claim"],
            "paper_says": c.get("paper_says", ""),
            "where": c.get("where", ""),
            "paper": "" if c.get("paper") is None else f"{c['paper']:.4g}",
        }
        if ran is not None and c["group"] not in ran:
            rows.append(_row_without_numbers(c, base, NOT_RUN, f"the {c['group']} group did not run"))
            continue
        judged_here = _judged_here(c, scale)
        try:
            r = _evaluate_compare(c, metrics) if kind == "compare" else _evaluate_value(c, metrics)
        except KeyError:
            if judged_here or kind in ("info", "calibration"):
                raise
            # a claim of another scale whose numbers this scale does not compute (e.g. a width sampled only there)
            rows.append(_row_without_numbers(c, base, _judged_elsewhere(c), "not computed at this scale"))
            continue
        ok = r.pop("ok")
        explanation = fill_template(c.get("explanation", ""), metrics, c).strip()
        if kind == "info":
            status = INFO
        elif kind == "calibration":
            status = CALIBRATION
        elif not judged_here:
            status = _judged_elsewhere(c)
        elif kind == "deviation":
            status = DEVIATION if ok else FAIL
            if not ok:
                explanation = f"ours has moved away from the value the explanation predicts. {explanation}"
        else:
            status = PASS if ok else FAIL
        rows.append({**base, **r, "status": status, "explanation": " ".join(explanation.split())})
    return rows


def status_counts(rows: Iterable[dict]) -> dict[str, int]:
    """How many rows have each status (``judged at ...`` statuses counted together as ``judged at another scale``)."""
    counts = Counter("judged at another scale" if r["status"].startswith("judged at") else r["status"] for r in rows)
    return dict(sorted(counts.items()))


# --- rendering ---------------------------------------------------------------------------------------------------

CLAIM_COLUMNS = (
    "claim",
    "paper_says",
    "where",
    "id",
    "paper",
    "ours",
    "tolerance",
    "tolerance_source",
    "status",
    "explanation",
)
# the HTML table folds paper_says / where into the claim cell and the tolerance's source into its cell
HTML_COLUMNS = ("claim", "id", "paper", "ours", "tolerance", "status", "explanation")
CLAIM_COLUMN_WIDTHS = {"claim": 25, "id": 17, "paper": 6, "ours": 10, "tolerance": 14, "status": 7, "explanation": 21}
STATUS_COLOURS = {PASS: "#d9f2d9", FAIL: "#f8d0d0", DEVIATION: "#fff2cc", CALIBRATION: "#dde8f6", NOT_RUN: "#eeeeee"}


def _html_cell(row: dict, col: str) -> str:
    text = html.escape(str(row[col]))
    if col == "claim" and (row["paper_says"] or row["where"]):
        text += f"<br><small><i>{html.escape(row['where'])}</i>: {html.escape(row['paper_says'])}</small>"
    if col == "tolerance" and row["tolerance_source"]:
        text += f"<br><small>{html.escape(row['tolerance_source'])}</small>"
    return f"<td>{text}</td>"


def claims_html(rows: list[dict], scale: str, groups: Mapping[str, str] | None = None) -> str:
    """A standalone HTML page with the claims table (embedded in the Snakemake report); ``groups``: which figure
    groups ran and at which scale (``{group: scale or "not run"}``), listed above the table."""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in HTML_COLUMNS)
    body = []
    for r in rows:
        colour = STATUS_COLOURS.get(r["status"], "#ffffff")
        cells = "".join(_html_cell(r, c) for c in HTML_COLUMNS)
        body.append(f'<tr style="background:{colour}">{cells}</tr>')
    counts = ", ".join(f"{n} {s}" for s, n in status_counts(rows).items())
    ran = ""
    if groups:
        ran = "<p>Groups: " + ", ".join(f"{html.escape(g)}: {html.escape(s)}" for g, s in groups.items()) + "</p>"
    # a fixed layout at the window's width, long ids and numbers broken anywhere: every column stays on screen
    cols = "".join(f'<col style="width:{CLAIM_COLUMN_WIDTHS[c]}%">' for c in HTML_COLUMNS)
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'><title>Claims</title>"
        "<style>body{margin:8px}"
        "table{border-collapse:collapse;font-family:sans-serif;font-size:13px;table-layout:fixed;width:100%}"
        "td,th{border:1px solid #999;padding:3px 6px;vertical-align:top;text-align:left;overflow-wrap:anywhere;"
        "word-break:break-word}</style></head><body>"
        f"<h2>Claims of the papers against this run (scale: {html.escape(scale)})</h2>"
        f"<p>{html.escape(counts)}. Statistical tolerances are {K_SIGMA:g} combined standard errors.</p>{ran}"
        f"<table><colgroup>{cols}</colgroup><tr>{head}</tr>{''.join(body)}</table></body></html>\n"
    )
