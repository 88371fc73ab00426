"""Per-figure reproduction status and the headline counts, from the claim rows of a claims table.

A panel's status comes from its ``role: claim`` rows only (checks support a figure, they never decide it):

* ``not reproduced`` — a claim row FAILs;
* ``reproduced with explained deviations`` — no FAIL, at least one ``deviation explained``;
* ``reproduced`` — every verdict a pass (rows that are ``not informative`` are counted beside it);
* ``not informative at this scale`` — every verdict ``not informative``;
* ``not run at this scale`` — no claim row of the panel is judged in this table (group not run, or judged at
  another scale);
* ``no claim rows`` — the panel is drawn but no row states what it must show.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from .schema import DEVIATION, FAIL, NOT_INFORMATIVE, PANELS, PASS

PANEL_STATUSES = (
    "not reproduced",
    "reproduced with explained deviations",
    "reproduced",
    "not informative at this scale",
    "not run at this scale",
    "no claim rows",
)


def _panel_status(counts: Counter) -> str:
    if counts[FAIL]:
        return "not reproduced"
    if counts[DEVIATION]:
        return "reproduced with explained deviations"
    if counts[PASS]:
        return "reproduced"
    if counts[NOT_INFORMATIVE]:
        return "not informative at this scale"
    return "not run at this scale"


def figure_status(rows: Iterable[dict]) -> list[dict]:
    """One entry per panel of ``PANELS``: ``{figure, status, counts, causes}`` with ``counts`` the claim rows'
    statuses and ``causes`` the failing claim rows by their cause: ``{(verdict, rule): n}``, ``(None, None)`` for
    rows without one (``verdicts.evaluate_claims``)."""
    by_panel: dict[str, Counter] = {p: Counter() for p in PANELS}
    causes: dict[str, Counter] = {p: Counter() for p in PANELS}
    present: set[str] = set()
    for r in rows:
        if r["role"] != "claim":
            continue
        present.add(r["figure"])
        status = "judged at another scale" if r["status"].startswith("judged at") else r["status"]
        by_panel[r["figure"]][status] += 1
        if status == FAIL:
            cause = r.get("cause") or {}
            causes[r["figure"]][(cause.get("verdict"), cause.get("rule"))] += 1
    out = []
    for panel in PANELS:
        counts = by_panel[panel]
        status = _panel_status(counts) if panel in present else "no claim rows"
        out.append(
            {"figure": panel, "status": status, "counts": dict(sorted(counts.items())), "causes": dict(causes[panel])}
        )
    return out


def _causes_text(causes: dict) -> str:
    parts = [
        f"{verdict}: rule {rule} ({n} FAIL)"
        for (verdict, rule), n in sorted(causes.items(), key=lambda kv: (kv[0][0] is None, str(kv[0])))
        if verdict is not None
    ]
    missing = causes.get((None, None), 0)
    if parts and missing:
        parts.append(f"no computed cause ({missing} FAIL)")
    return "; ".join(parts)


def panel_line(entry: dict) -> str:
    """``P2 Fig. 1 right: not reproduced (2 FAIL, 1 pass) — cause: rule p2_fig1_right (2 FAIL)``."""
    counts = ", ".join(f"{n} {s}" for s, n in entry["counts"].items())
    line = f"{entry['figure']}: {entry['status']}" + (f" ({counts})" if counts else "")
    causes = _causes_text(entry.get("causes") or {})
    return line + (f" — {causes}" if causes else "")


def headline_counts(rows: Iterable[dict]) -> dict[str, dict[str, int]]:
    """Claim rows by status per paper (``P1``, ``P2``), and the checks apart (``checks``)."""
    out: dict[str, Counter] = {"P1": Counter(), "P2": Counter(), "checks": Counter()}
    for r in rows:
        status = "judged at another scale" if r["status"].startswith("judged at") else r["status"]
        key = r["figure"][:2] if r["role"] == "claim" else "checks"
        out[key][status] += 1
    return {k: dict(sorted(v.items())) for k, v in out.items()}


def headline_text(rows: Iterable[dict]) -> str:
    """One sentence: the claims of each paper by status, then the checks."""
    h = headline_counts(list(rows))
    parts = []
    for key, label in (("P1", "P1 claims"), ("P2", "P2 claims"), ("checks", "our checks")):
        n = sum(h[key].values())
        parts.append(f"{label} ({n}): " + (", ".join(f"{v} {s}" for s, v in h[key].items()) or "none"))
    return "; ".join(parts) + "."
