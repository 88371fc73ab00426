"""Rows of the claims table: each claims-file row set against the metrics ledger.

Rules, with ``K = K_SIGMA``:

* ``match``: pass iff ``|ours - paper| <= K·√(se² + paper_se²) + fixed``. A ``{binomial: n}`` error is that of the
  reference proportion (the paper's value), ``√(p(1 - p)/n)``: the error of the hypothesis tested, never the estimate's
  (an estimate of 0.6 out of 10 would otherwise widen its own tolerance).
* ``deviation``: judged as a ``match`` first (pass when ours and the paper's value agree); when they do not, its
  ``explained_by`` check is evaluated (a ``match`` of the recomputed published value, or a significant ``compare``
  showing the exact map moves it): ``deviation explained`` when it holds, FAIL when it does not; the explanation
  opens with what the computation shows, its rule and numbers.
* ``compare``: with ``d`` the difference in the claimed direction and ``σ`` the combined error: ``significant`` iff
  ``d - Kσ > min_effect``, ``consistent`` iff ``d + Kσ >= min_effect``, without errors iff ``d + margin > min_effect``
  (``>=`` for ``<=``/``>=``). A binomial side's error is taken at the mean of the two sides (equality, the null).
* ``proportion``: exact binomial test of ``successes`` out of ``trials`` against ``paper``; pass iff its p-value is at
  least ``P_LEVEL`` (the level of K standard errors); the row shows the Clopper–Pearson 95 % interval.
* ``pvalue``: the rows of one ``family`` judged here are tested together by Holm's step-down at ``FAMILY_ALPHA``; a
  row fails iff Holm rejects it.
* ``range: [lo, hi]``: a row that would pass (or be explained) with a tolerance wider than ``(hi - lo) / 4`` is
  ``not informative``: the data could not have contradicted it. A FAIL stays a FAIL.

* ``cause`` (claim rows): on a FAIL, the cause's check is evaluated as a ``compare`` row and the explanation opens
  with ``not reproduced — cause: HYPOTHESIS (rule R; CHECK: TOLERANCE)`` when it holds, ``not reproduced —
  hypothesis refuted: …`` when it does not.

``judged_at`` limits a verdict to its scales (elsewhere ``judged at <scales> scale``); a row of a group that did not
run is ``not run``.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping

from scipy import stats

from .schema import (
    CALIBRATION,
    CITATION,
    DEVIATION,
    FAIL,
    FAMILY_ALPHA,
    INFO,
    K_SIGMA,
    NOT_INFORMATIVE,
    NOT_RUN,
    P_LEVEL,
    PASS,
    SHOWS,
    is_number,
)

#: the share of a row's plausible range that its tolerance may span and still inform
INFORMATIVE_SHARE = 0.25


def _value(metrics: Mapping[str, float], ref, claim: dict) -> float:
    if is_number(ref):
        return float(ref)
    if ref not in metrics:
        raise KeyError(f"{claim['source']}: row {claim['claim']!r} names metric {ref!r}, which no rule wrote")
    return metrics[ref]


def _se(metrics: Mapping[str, float], ref, reference: float, claim: dict) -> tuple[float, str]:
    """(standard error, its source in words) of ``ref``; a binomial error is evaluated at ``reference``."""
    if ref is None:
        return 0.0, "0"
    if isinstance(ref, dict):
        n = _value(metrics, ref["binomial"], claim)
        if not n >= 1:
            raise ValueError(f"{claim['source']}: row {claim['claim']!r}: binomial n = {n} must be >= 1")
        p = min(max(reference, 0.0), 1.0)
        return math.sqrt(p * (1.0 - p) / n), f"binomial at p = {p:.3g}, n = {n:g}"
    se = _value(metrics, ref, claim)
    if not se >= 0 or not math.isfinite(se):
        raise ValueError(f"{claim['source']}: row {claim['claim']!r}: standard error {ref!r} = {se} is not >= 0")
    return se, (f"{se:.3g}" if is_number(ref) else f"{ref} = {se:.3g}")


def fill_template(text: str, metrics: Mapping[str, float], claim: dict | None = None) -> str:
    """Replace every ``{{metric id}}`` in ``text`` by the metric's value (4 significant digits)."""

    def sub(m: re.Match) -> str:
        key = m.group(1)
        if key not in metrics:
            who = f"{claim['source']}: row {claim['claim']!r}" if claim else "text"
            raise KeyError(f"{who} cites metric {key!r}, which no rule wrote")
        return f"{metrics[key]:.4g}"

    return CITATION.sub(sub, text)


def holm_rejections(pvalues: Mapping[str, float], alpha: float) -> set[str]:
    """Keys whose hypotheses Holm's step-down procedure rejects at family-wise level ``alpha``. Written here: SciPy
    has no Holm correction (only ``false_discovery_control``, a false-discovery rate), and five lines do not justify
    statsmodels as a dependency."""
    ordered = sorted(pvalues.items(), key=lambda kv: kv[1])
    m, rejected = len(ordered), set()
    for i, (key, p) in enumerate(ordered):
        if p > alpha / (m - i):
            break
        rejected.add(key)
    return rejected


def _tolerance(c: dict, metrics: Mapping[str, float], reference: float) -> tuple[float, str]:
    """Tolerance of a match or deviation row and where it comes from."""
    parts, errors = [], []
    se, se_src = _se(metrics, c.get("se"), reference, c)
    if "se" in c:
        errors.append(se)
        parts.append(f"se: {se_src}")
    if "paper_se" in c:
        pse, src = _se(metrics, c["paper_se"], reference, c)
        errors.append(pse)
        parts.append(f"se_paper: {src}")
    if "expected_se" in c:
        ese, src = _se(metrics, c["expected_se"], reference, c)
        errors.append(ese)
        parts.append(f"se_expected: {src}")
    tol = K_SIGMA * math.sqrt(sum(e * e for e in errors)) if errors else 0.0
    text = [f"{K_SIGMA:g}·√(sum of squares); " + "; ".join(parts)] if errors else []
    if "tolerance" in c:
        tol += float(c["tolerance"])
        text.append(f"fixed {float(c['tolerance']):.3g}: {c['tolerance_reason']}")
    return tol, " + ".join(text)


def _evaluate_compare(c: dict, metrics: Mapping[str, float]) -> dict:
    chk = c["check"]
    left, right = _value(metrics, chk["left"], c), _value(metrics, chk["right"], c)
    op = chk["op"]
    d = right - left if op in ("<", "<=") else left - right
    m = _value(metrics, chk.get("min_effect", 0.0), c)
    strict = op in ("<", ">")
    ident = f"{chk['left']} {op} {chk['right']}"
    ours = f"{left:.4g} {op} {right:.4g}"
    sources, width = [], 0.0
    if "se_left" in chk or "se_right" in chk:
        null = 0.5 * (left + right)
        se_l, src_l = _se(metrics, chk.get("se_left"), null, c)
        se_r, src_r = _se(metrics, chk.get("se_right"), null, c)
        sigma = math.hypot(se_l, se_r)
        width = K_SIGMA * sigma
        bound = d - width if chk["test"] == "significant" else d + width
        ok = bound > m if (chk["test"] == "significant" and strict) else bound >= m
        word = "d − " if chk["test"] == "significant" else "d + "
        tolerance = f"{chk['test']}: {word}{K_SIGMA:g}σ = {bound:.3g} vs {m:.3g}"
        sources.append(f"σ = √(se_left² + se_right²) = {sigma:.3g}; se_left: {src_l}; se_right: {src_r}")
        ours = f"{ours} (d = {d:.3g} ± {sigma:.2g})"
    else:
        margin = _value(metrics, chk.get("margin", 0.0), c)
        if not margin >= 0:
            raise ValueError(f"{c['source']}: row {c['claim']!r} has a negative margin {chk['margin']!r} = {margin}")
        width = margin
        ok = d + margin > m if strict else d + margin >= m
        tolerance = f"d + margin = {d + margin:.3g} vs {m:.3g}" if "margin" in chk else f"d = {d:.3g} vs {m:.3g}"
        if "margin" in chk:
            src = chk["margin"] if isinstance(chk["margin"], str) else f"{margin:g}"
            sources.append(f"margin {src} = {margin:.3g}: {chk['margin_reason']}")
        else:
            sources.append("exact comparison")
    if "min_effect" in chk:
        sources.append(f"min effect {m:.3g}: {chk['min_effect_reason']}")
    return {"id": ident, "ours": ours, "tolerance": tolerance, "tolerance_source": "; ".join(sources), "ok": ok,
            "width": width}  # fmt: skip


def _evaluate_value(c: dict, metrics: Mapping[str, float]) -> dict:
    value = _value(metrics, c["id"], c)
    row = {"id": c["id"], "ours": f"{value:.4g}", "tolerance": "", "tolerance_source": "", "ok": None, "width": 0.0}
    if c["kind"] not in ("match", "deviation"):
        return row
    target = float(c["paper"])
    if "se" in c:
        se, _ = _se(metrics, c["se"], target, c)
        row["ours"] = f"{value:.4g} ± {se:.2g}"
    tol, source = _tolerance(c, metrics, target)
    row.update(tolerance=f"± {tol:.3g}", tolerance_source=source, ok=abs(value - target) <= tol, width=tol)
    return row


def explained_text(c: dict, metrics: Mapping[str, float]) -> tuple[bool, str]:
    """(holds, text) of a disagreeing deviation row's ``explained_by`` check: text, the opening of the row's
    explanation, says what the computation shows, its rule and its numbers."""
    ex = c["explained_by"]
    chk = ex["check"]
    if ex["shows"] == SHOWS[0]:
        sub = {**c, "kind": "match", "id": chk["id"], "paper": _value(metrics, chk["paper"], c)}
        for key in ("se", "paper_se", "tolerance", "tolerance_reason"):
            sub.pop(key, None)
        sub.update({k: chk[k] for k in ("se", "paper_se") if k in chk})
        r = _evaluate_value(sub, metrics)
        numbers = f"{chk['id']} = {r['ours']} vs {sub['paper']:.4g} {r['tolerance']}"
    else:
        r = _evaluate_compare({**c, "check": chk}, metrics)
        numbers = f"{r['ours']}: {r['tolerance']}"
    word = "deviation explained" if r["ok"] else "not reproduced — explanation does not hold"
    return bool(r["ok"]), f"{word}: {ex['shows']} (rule {ex['rule']}; {numbers})."


def _evaluate_proportion(c: dict, metrics: Mapping[str, float]) -> dict:
    k, n = _value(metrics, c["successes"], c), _value(metrics, c["trials"], c)
    if not (n >= 1 and 0 <= k <= n and k == int(k) and n == int(n)):
        raise ValueError(f"{c['source']}: row {c['claim']!r}: {k} successes of {n} trials is not a count")
    alternative = c.get("alternative", "two-sided")
    test = stats.binomtest(int(k), int(n), float(c["paper"]), alternative=alternative)
    ci = test.proportion_ci(confidence_level=0.95, method="exact")
    return {
        "id": f"{c['successes']} / {c['trials']}",
        "ours": f"{int(k)}/{int(n)} = {k / n:.3g} (95 % CI {ci.low:.3g}–{ci.high:.3g})",
        "tolerance": f"exact binomial p = {test.pvalue:.3g} vs {P_LEVEL:.2g}",
        "tolerance_source": f"scipy.stats.binomtest, {alternative}, p0 = {float(c['paper']):.3g}",
        "ok": test.pvalue >= P_LEVEL,
        "width": 0.0,
    }


def _evaluate_pvalue(c: dict, metrics: Mapping[str, float]) -> dict:
    p = _value(metrics, c["p"], c)
    if not 0 <= p <= 1:
        raise ValueError(f"{c['source']}: row {c['claim']!r}: p-value {c['p']!r} = {p} is not in [0, 1]")
    return {"id": c["p"], "ours": f"p = {p:.3g}", "tolerance": "", "tolerance_source": "", "ok": None, "width": 0.0,
            "p": p}  # fmt: skip


_EVALUATORS = {"compare": _evaluate_compare, "proportion": _evaluate_proportion, "pvalue": _evaluate_pvalue}


CAUSE_CONFIRMED, CAUSE_REFUTED = "cause", "hypothesis refuted"


def cause_text(c: dict, metrics: Mapping[str, float]) -> tuple[str, str]:
    """(verdict, text) of a failing claim row's cause: verdict ``cause`` when the cause's check holds, else
    ``hypothesis refuted``; text, the opening of the row's explanation, names the rule and the check's numbers. A
    metric the cause names that no rule wrote raises KeyError, as for the row's own numbers."""
    cause = c["cause"]
    r = _evaluate_compare({**c, "check": cause["check"]}, metrics)
    hypothesis = fill_template(cause["hypothesis"], metrics, c).strip().rstrip(".")
    verdict = CAUSE_CONFIRMED if r["ok"] else CAUSE_REFUTED
    return verdict, f"not reproduced — {verdict}: {hypothesis} (rule {cause['rule']}; {r['ours']}: {r['tolerance']})."


def _judged_here(c: dict, scale: str | None) -> bool:
    return scale is None or scale in (c.get("judged_at") or [scale])


def _judged_elsewhere(c: dict) -> str:
    return f"judged at {' and '.join(c['judged_at'])} scale"


def row_id(c: dict) -> str:
    """The id a claims-table row shows: a compare's check, a proportion's counts, else the metric id."""
    if c["kind"] == "compare":
        return f"{c['check']['left']} {c['check']['op']} {c['check']['right']}"
    if c["kind"] == "proportion":
        return f"{c['successes']} / {c['trials']}"
    return c.get("id") or c.get("p")


def _row_without_numbers(c: dict, base: dict, status: str, explanation: str) -> dict:
    """A table row that shows no number: its group did not run, or its numbers exist only at another scale."""
    empty = {"ours": "", "tolerance": "", "tolerance_source": ""}
    return {**base, "id": row_id(c), **empty, "status": status, "explanation": explanation, "cause": None}


def _status(c: dict, ok, width: float, judged_here: bool) -> str:
    kind = c["kind"]
    if kind == "info":
        return INFO
    if kind == "calibration":
        return CALIBRATION
    if not judged_here:
        return _judged_elsewhere(c)
    if not ok:
        return FAIL
    rng = c.get("range")
    if rng is not None and width > INFORMATIVE_SHARE * (rng[1] - rng[0]):
        return NOT_INFORMATIVE
    return PASS


def _apply_holm(rows: list[dict], pending: dict[int, tuple[str, float]]) -> None:
    families: dict[str, dict[int, float]] = defaultdict(dict)
    for i, (family, p) in pending.items():
        families[family][i] = p
    for family, ps in families.items():
        rejected = holm_rejections(ps, FAMILY_ALPHA)
        for rank, (i, _p) in enumerate(sorted(ps.items(), key=lambda kv: kv[1])):
            level = FAMILY_ALPHA / (len(ps) - rank)
            rows[i]["status"] = FAIL if i in rejected else PASS
            rows[i]["tolerance"] = f"Holm: p vs {level:.3g} (rank {rank + 1} of {len(ps)})"
            rows[i]["tolerance_source"] = f"family {family!r}, family-wise level {FAMILY_ALPHA:g}"


def evaluate_claims(
    claims: list[dict],
    metrics: Mapping[str, float],
    scale: str | None = None,
    groups_run: Iterable[str] | None = None,
) -> list[dict]:
    """Rows of the claims table (keys ``render.CLAIM_COLUMNS``, and ``cause``: None, or for a failing claim row with
    a cause ``{verdict, rule}``), one per claims-file row.

    ``scale``: the workflow scale (a row whose ``judged_at`` does not list it gets no verdict there; None: every
    verdict is given). ``groups_run``: the figure groups whose metrics this run computed; a row of another group
    is ``not run`` and its metrics are not read (None: every group ran).
    """
    ran = None if groups_run is None else set(groups_run)
    rows: list[dict] = []
    pending: dict[int, tuple[str, float]] = {}
    for c in claims:
        base = {
            "role": c["role"],
            "figure": c.get("figure", ""),
            "claim": c["claim"],
            "paper_says": c.get("paper_says", ""),
            "where": c.get("where", ""),
            "basis": c.get("basis", ""),
            "paper": "" if c.get("paper") is None else f"{c['paper']:.4g}",
        }
        if ran is not None and c["group"] not in ran:
            rows.append(_row_without_numbers(c, base, NOT_RUN, f"the {c['group']} group did not run"))
            continue
        judged_here = _judged_here(c, scale)
        try:
            r = _EVALUATORS.get(c["kind"], _evaluate_value)(c, metrics)
        except KeyError:
            if judged_here or c["kind"] in ("info", "calibration"):
                raise
            # a row of another scale whose numbers this scale does not compute (e.g. a width sampled only there)
            rows.append(_row_without_numbers(c, base, _judged_elsewhere(c), "not computed at this scale"))
            continue
        ok, width, p = r.pop("ok"), r.pop("width"), r.pop("p", None)
        explanation = fill_template(c.get("explanation", ""), metrics, c).strip()
        status = _status(c, ok, width, judged_here)
        if c["kind"] == "pvalue" and judged_here:
            pending[len(rows)] = (c["family"], p)
        elif c["kind"] == "deviation" and status == FAIL:
            holds, text = explained_text(c, metrics)
            status = DEVIATION if holds else FAIL
            explanation = f"{text} {explanation}"
        cause = None
        if status == FAIL and "cause" in c:
            verdict, text = cause_text(c, metrics)
            cause = {"verdict": verdict, "rule": c["cause"]["rule"]}
            explanation = f"{text} {explanation}"
        rows.append({**base, **r, "status": status, "explanation": " ".join(explanation.split()), "cause": cause})
    _apply_holm(rows, pending)
    return rows


def status_counts(rows: Iterable[dict], role: str | None = None) -> dict[str, int]:
    """How many rows (of ``role``, or all) have each status (``judged at ...`` statuses counted together)."""
    counts = Counter(
        "judged at another scale" if r["status"].startswith("judged at") else r["status"]
        for r in rows
        if role is None or r["role"] == role
    )
    return dict(sorted(counts.items()))
