"""The metrics ledger and the claims table.

Analysis rules write flat ``{id: number}`` JSON files; ``merge_metrics`` joins them into one ledger. ``claims/*.yaml``
rows are set against it by ``evaluate_claims``. Every row has a ``role``:

* ``claim`` — what a paper states or plots: ``where`` (the paper location, starting "P1 " or "P2 "), ``paper_says``
  and ``figure`` (the panel, one of ``PANELS``; "P1 text" / "P2 text" for statements without a figure).
* ``check`` — the project's own bounds, preconditions, engine targets, cross-checks and diagnostics: a ``basis``
  (what the check rests on) and never a paper location.

Claims and checks are counted apart; a figure panel's reproduction status comes from its claim rows only
(``panels.figure_status``). The kinds, tolerances and statuses are documented in ``schema`` and ``verdicts``.
"""

from .metrics import merge_metrics
from .panels import PANEL_STATUSES, figure_status, headline_counts, headline_text, panel_line
from .render import CLAIM_COLUMNS, claims_html, claims_markdown
from .schema import (
    CALIBRATION,
    DEVIATION,
    FAIL,
    INFO,
    K_SIGMA,
    KINDS,
    NOT_INFORMATIVE,
    NOT_RUN,
    P_LEVEL,
    PANELS,
    PASS,
    ROLES,
    SCALES,
    VERDICTS,
    load_claims,
    metric_refs,
)
from .verdicts import evaluate_claims, fill_template, holm_rejections, row_id, status_counts

__all__ = [
    "CALIBRATION",
    "CLAIM_COLUMNS",
    "DEVIATION",
    "FAIL",
    "INFO",
    "KINDS",
    "K_SIGMA",
    "NOT_INFORMATIVE",
    "NOT_RUN",
    "PANELS",
    "PANEL_STATUSES",
    "PASS",
    "P_LEVEL",
    "ROLES",
    "SCALES",
    "VERDICTS",
    "claims_html",
    "claims_markdown",
    "evaluate_claims",
    "figure_status",
    "fill_template",
    "headline_counts",
    "headline_text",
    "holm_rejections",
    "load_claims",
    "merge_metrics",
    "metric_refs",
    "panel_line",
    "row_id",
    "status_counts",
]
