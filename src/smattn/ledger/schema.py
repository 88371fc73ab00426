"""The claims files' row schema: roles, kinds, panels, and the loader that refuses a malformed row.

Row fields common to all kinds: ``claim`` (what the row checks, in our words), ``role`` (``claim`` | ``check``),
``kind``, optional ``judged_at: [scale, ...]`` (the scales whose numbers can decide it), ``explanation`` (may cite
metrics as ``{{id}}``) and ``range: [lo, hi]`` (the plausible range of the judged quantity: a row whose tolerance is
wider than a quarter of it is ``not informative`` instead of passing).

A claim row may carry ``cause: {hypothesis, rule, check}``: why it would not reproduce, as a computation of the
same run. ``hypothesis`` is the proposed cause in words (may cite ``{{id}}``), ``rule`` the workflow rule that
computes it, ``check`` a compare check (``{left, op, right}`` with optional errors and test, as a ``compare`` row)
that holds when the computation confirms the hypothesis. When the row FAILs, its explanation opens with
``not reproduced — cause: …`` (the check holds) or ``not reproduced — hypothesis refuted: …`` (it does not).

Kinds (``verdicts`` holds the exact rules):

* ``match`` — ``id`` agrees with ``paper`` within ``K_SIGMA`` combined standard errors ``se`` / ``paper_se`` (a metric
  id, a number, or ``{binomial: n}``, evaluated at the reference value) plus a fixed ``tolerance`` that needs a
  ``tolerance_reason`` (deterministic quantities only).
* ``deviation`` — a known disagreement with ``paper``, judged first as a ``match``; when ours and the paper's value
  disagree, ``explained_by: {shows, rule, check}`` says what the run computes about the published value: ``shows`` is
  ``reproduces the published value`` (the run recomputes it by the authors' procedure; ``check`` is a ``match``
  check ``{id, paper, se, paper_se}``) or ``the published value is not a fixed point`` (the exact map moves it;
  ``check`` is a compare check with a significance test). Our own value mapped once is a cross-check row, not an
  explanation.
* ``compare`` — ``check: {left, op, right}`` with optional standard errors and ``test: significant | consistent``.
* ``proportion`` — ``successes`` out of ``trials`` (metric ids) against the proportion ``paper``: an exact binomial
  test (``alternative``: two-sided, less, greater) at level ``P_LEVEL``.
* ``pvalue`` — checks only: ``p`` (a metric id) tested with its ``family`` by Holm's step-down at ``FAMILY_ALPHA``.
* ``info`` — a number no paper states; never a ``paper`` value. ``calibration`` — a number set to reproduce a
  published one: shown beside it, never a verdict. Both are checks.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from pathlib import Path

import yaml

#: the one multiple of the combined standard error that every statistical tolerance of the ledger uses
K_SIGMA = 3.0
#: the two-sided level of K_SIGMA standard errors (2·Φ(−3) = 0.0027): exact tests use the same level
P_LEVEL = math.erfc(K_SIGMA / math.sqrt(2.0))
#: family-wise error rate of a family of p-value checks (Holm)
FAMILY_ALPHA = 0.05

ROLES = ("claim", "check")
KINDS = ("match", "compare", "deviation", "proportion", "pvalue", "info", "calibration")
CLAIM_KINDS = ("match", "compare", "deviation", "proportion")
SCALES = ("smoke", "laptop", "paper")
TESTS = ("significant", "consistent")
ALTERNATIVES = ("two-sided", "less", "greater")
PASS, FAIL, DEVIATION, NOT_INFORMATIVE, INFO, CALIBRATION, NOT_RUN = (
    "pass",
    "FAIL",
    "deviation explained",
    "not informative",
    "info",
    "calibration",
    "not run",
)
#: statuses that are verdicts
VERDICTS = (PASS, FAIL, DEVIATION, NOT_INFORMATIVE)

#: figure panels of the papers; "text" gathers statements that no figure plots
PANELS = (
    "P1 Fig. 2c top",
    "P1 Fig. 2c bottom",
    "P1 Fig. 2d",
    "P1 Fig. 2e",
    "P1 Fig. 3b",
    "P1 Fig. 3c",
    "P1 Fig. 3d",
    "P1 Fig. 3e",
    "P1 Fig. 3f",
    "P1 Fig. 5b",
    "P1 Fig. 5c",
    "P1 Fig. 6",
    "P1 Fig. 7",
    "P1 text",
    "P2 Fig. 1 left",
    "P2 Fig. 1 right",
    "P2 Fig. 2 left",
    "P2 Fig. 2 right",
    "P2 Fig. 3 left",
    "P2 Fig. 3 right",
    "P2 Fig. 5",
    "P2 text",
)

OPS = ("<", ">", "<=", ">=")
_CHECK_KEYS = {"left", "op", "right", "se_left", "se_right", "test", "min_effect", "min_effect_reason", "margin"}
_CHECK_KEYS |= {"margin_reason"}


def is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _check_ref(where: str, name: str, ref, allow_binomial: bool = False) -> None:
    """A reference to a number: a metric id (str), a number, or (standard errors) ``{binomial: n}``."""
    if isinstance(ref, str) or is_number(ref):
        return
    if allow_binomial and isinstance(ref, dict) and set(ref) == {"binomial"}:
        n = ref["binomial"]
        if isinstance(n, str) or (is_number(n) and n >= 1):
            return
    kinds = "a metric id, a number" + (" or {binomial: n}" if allow_binomial else "")
    raise ValueError(f"{where}: {name} must be {kinds}, not {ref!r}")


_CAUSE_KEYS = {"hypothesis", "rule", "check"}


def _validate_cause(c: dict, where: str) -> None:
    cause = c.get("cause")
    if cause is None:
        return
    if c.get("role") != "claim":
        raise ValueError(f"{where}: only a claim row can carry a cause (a check is ours: it has no paper to miss)")
    if not isinstance(cause, dict) or set(cause) != _CAUSE_KEYS:
        raise ValueError(f"{where}: cause needs exactly {sorted(_CAUSE_KEYS)}, got {cause!r}")
    for key in ("hypothesis", "rule"):
        if not isinstance(cause[key], str) or not cause[key].strip():
            raise ValueError(f"{where}: cause.{key} must be a non-empty string")
    _validate_compare({"check": cause["check"]}, f"{where}: cause")


def _validate_role(c: dict, where: str) -> None:
    role, kind = c.get("role"), c["kind"]
    if role not in ROLES:
        raise ValueError(
            f"{where}: role must be 'claim' (a paper states or plots it) or 'check' (our own bound, precondition, "
            f"engine target, cross-check or diagnostic), not {role!r}"
        )
    if role == "claim":
        if kind not in CLAIM_KINDS:
            raise ValueError(f"{where}: a claim is judged: its kind must be one of {CLAIM_KINDS}, not {kind!r}")
        loc = c.get("where")
        if not isinstance(loc, str) or not loc.startswith(("P1 ", "P2 ")):
            raise ValueError(f"{where}: a claim needs 'where', the paper location ('P1 ...' or 'P2 ...')")
        if not c.get("paper_says"):
            raise ValueError(f"{where}: a claim needs 'paper_says' (what the paper states, which the row encodes)")
        if c.get("figure") not in PANELS:
            raise ValueError(f"{where}: a claim needs 'figure', one of {PANELS}; got {c.get('figure')!r}")
        if c["figure"][:2] != loc[:2]:
            raise ValueError(f"{where}: figure {c['figure']!r} and where {loc!r} name different papers")
    else:
        for key in ("where", "paper_says"):
            if key in c:
                raise ValueError(f"{where}: a check never cites the paper as its source: remove {key!r}, use 'basis'")
        if not c.get("basis"):
            raise ValueError(f"{where}: a check needs 'basis' (what it rests on: a bound derived here, a target...)")
        if "figure" in c and c["figure"] not in PANELS:
            raise ValueError(f"{where}: figure must be one of {PANELS}; got {c['figure']!r}")


def _validate_compare(c: dict, where: str) -> None:
    chk = c.get("check")
    if not isinstance(chk, dict) or not {"left", "op", "right"} <= set(chk) <= _CHECK_KEYS:
        raise ValueError(
            f"{where}: compare needs check: {{left, op, right}} and optionally {sorted(_CHECK_KEYS - {'left'})}"
        )
    if chk["op"] not in OPS:
        raise ValueError(f"{where}: op {chk['op']!r} is not one of {list(OPS)}")
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


#: what a deviation's computation can show about the published value
SHOWS = ("reproduces the published value", "the published value is not a fixed point")
_EXPLAINED_KEYS = {"shows", "rule", "check"}
_MATCH_CHECK_KEYS = {"id", "paper", "se", "paper_se"}


def _validate_explained_by(c: dict, where: str) -> None:
    ex = c.get("explained_by")
    if not isinstance(ex, dict) or set(ex) != _EXPLAINED_KEYS:
        raise ValueError(
            f"{where}: deviation needs explained_by with exactly {sorted(_EXPLAINED_KEYS)} (a computation of the same "
            f"run about the published value), got {ex!r}"
        )
    if ex["shows"] not in SHOWS:
        raise ValueError(f"{where}: explained_by.shows must be one of {SHOWS}, not {ex['shows']!r}")
    chk = ex["check"]
    if not isinstance(chk, dict):
        raise ValueError(f"{where}: explained_by.check must be a mapping, not {chk!r}")
    if ex["shows"] == SHOWS[0]:
        if not set(chk) <= _MATCH_CHECK_KEYS or not isinstance(chk.get("id"), str) or "paper" not in chk:
            raise ValueError(
                f"{where}: a recomputation of the published value is a match check {{id, paper, se, paper_se}}: "
                f"the recomputed value (a metric id) against the paper's, got {chk!r}"
            )
        for key in ("paper", "se", "paper_se"):
            if key in chk:
                _check_ref(where, f"explained_by.check.{key}", chk[key])
    else:
        if not {"left", "op", "right"} <= set(chk) or chk.get("test") != "significant":
            raise ValueError(
                f"{where}: 'not a fixed point' is shown by a compare check {{left, op, right, se_left/se_right}} with "
                f"test: significant (a stated significance), got {chk!r}"
            )
        _validate_compare({"check": chk}, f"{where}: explained_by")
    if not c.get("explanation"):
        raise ValueError(f"{where}: deviation needs an 'explanation'")


def _validate_value(c: dict, where: str) -> None:
    kind = c["kind"]
    if "id" not in c:
        raise ValueError(f"{where}: needs 'id' (the metric it is about)")
    if c.get("paper") is not None and not is_number(c["paper"]):
        raise ValueError(f"{where}: paper must be a number, not {c['paper']!r}")
    if kind == "info":
        if c.get("paper") is not None:
            raise ValueError(f"{where}: an info row may not carry a paper value: make it a verdict or a deviation")
        return
    if kind == "calibration":
        return
    if not is_number(c.get("paper")):
        raise ValueError(f"{where}: {kind} needs 'paper' (the published number)")
    if kind == "deviation":
        _validate_explained_by(c, where)
    if "se" not in c and "tolerance" not in c:
        raise ValueError(f"{where}: {kind} needs 'se' (our standard error) and/or a fixed 'tolerance'")
    if "se" in c:
        _check_ref(where, "se", c["se"], allow_binomial=True)
    if "paper_se" in c:
        _check_ref(where, "paper_se", c["paper_se"])
    if "tolerance" in c:
        if not is_number(c["tolerance"]) or c["tolerance"] < 0:
            raise ValueError(f"{where}: tolerance must be a number >= 0")
        if not c.get("tolerance_reason"):
            raise ValueError(f"{where}: a fixed tolerance needs tolerance_reason (why a fixed size is right)")


def _validate_proportion(c: dict, where: str) -> None:
    for key in ("successes", "trials"):
        if not isinstance(c.get(key), str):
            raise ValueError(f"{where}: proportion needs '{key}' (a metric id)")
    p0 = c.get("paper")
    if not is_number(p0) or not 0 <= p0 <= 1:
        raise ValueError(f"{where}: proportion needs 'paper', the proportion the paper implies, in [0, 1]")
    if c.get("alternative", "two-sided") not in ALTERNATIVES:
        raise ValueError(f"{where}: alternative must be one of {ALTERNATIVES}")


def _validate_pvalue(c: dict, where: str) -> None:
    if c.get("role") != "check":
        raise ValueError(f"{where}: a pvalue row is one of our tests: role check")
    if not isinstance(c.get("p"), str):
        raise ValueError(f"{where}: pvalue needs 'p' (the metric id of the p-value)")
    if not isinstance(c.get("family"), str) or not c["family"]:
        raise ValueError(f"{where}: pvalue needs 'family' (the rows tested together by Holm's method)")


def _validate_range(c: dict, where: str) -> None:
    rng = c.get("range")
    if rng is None:
        return
    if not (isinstance(rng, list) and len(rng) == 2 and all(is_number(x) for x in rng) and rng[0] < rng[1]):
        raise ValueError(f"{where}: range must be [lo, hi] with lo < hi, not {rng!r}")
    if c["kind"] not in ("match", "deviation", "compare"):
        raise ValueError(f"{where}: range belongs to match, deviation and compare rows")


def validate(c: dict, where: str) -> None:
    """Raise ValueError naming the row and the field if ``c`` breaks the schema."""
    kind = c["kind"]
    if kind not in KINDS:
        raise ValueError(f"{where}: kind {kind!r} is not one of {KINDS}")
    _validate_role(c, where)
    if kind == "compare":
        _validate_compare(c, where)
    elif kind == "proportion":
        _validate_proportion(c, where)
    elif kind == "pvalue":
        _validate_pvalue(c, where)
    else:
        _validate_value(c, where)
    _validate_range(c, where)
    _validate_cause(c, where)
    judged = c.get("judged_at")
    if judged is not None and (not isinstance(judged, list) or not judged or any(s not in SCALES for s in judged)):
        raise ValueError(f"{where}: judged_at must be a non-empty list of scales from {SCALES}")


_REF_KEYS = ("id", "se", "paper_se", "successes", "trials", "p", "left", "right", "se_left", "se_right")
_REF_KEYS += ("min_effect", "margin", "paper")
#: a metric cited in a row's text, ``{{id}}``
CITATION = re.compile(r"\{\{\s*([^{}]+?)\s*\}\}")


def metric_refs(c: dict) -> list[str]:
    """Every metric id row ``c`` can read, in order, without repeats: its own references (``id``, errors, counts,
    a compare's check), those of its ``explained_by`` and ``cause`` checks, and the ``{{id}}`` citations of its
    explanation and hypothesis. A number is no id; ``{binomial: n}`` names ``n``. A ``paper`` that is a string (an
    ``explained_by`` match check's published value) is an id."""
    refs: list = [c.get(k) for k in _REF_KEYS if k != "paper"]
    checks = [c.get("check"), (c.get("explained_by") or {}).get("check"), (c.get("cause") or {}).get("check")]
    for chk in (x for x in checks if isinstance(x, dict)):
        refs += [chk.get(k) for k in _REF_KEYS]
    for text in (c.get("explanation") or "", (c.get("cause") or {}).get("hypothesis") or ""):
        refs += [m.strip() for m in CITATION.findall(text)]
    refs = [r["binomial"] if isinstance(r, dict) else r for r in refs]
    return list(dict.fromkeys(r for r in refs if isinstance(r, str)))


def load_claims(paths: Iterable[str | Path]) -> list[dict]:
    """All rows of the given YAML files, each checked for its fields; ``group`` is the file's stem."""
    claims: list[dict] = []
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            items = yaml.safe_load(fh) or []
        if not isinstance(items, list):
            raise ValueError(f"{path}: a claims file must hold a list of rows")
        for i, c in enumerate(items):
            where = f"{path}: row {i}"
            if not isinstance(c, dict) or "claim" not in c or "kind" not in c:
                raise ValueError(f"{where}: needs at least 'claim', 'role' and 'kind'")
            validate(c, f"{path}: row {i} ({c['claim'][:60]!r})")
            claims.append({**c, "source": str(path), "group": Path(path).stem})
    return claims
