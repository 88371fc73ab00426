"""Progress lines for long loops, readable in a rule's log (``tail -f logs/<group>/<rule>.log``).

Every loop that can run for more than a minute at the laptop scale reports through :func:`progress`: a tqdm bar
whose updates are written as whole lines (no carriage returns, which a log file would keep as one growing line),
at most one line every ``SMATTN_PROGRESS_INTERVAL`` seconds (default 30) plus the first and the last. Each line
carries the count, the rate and tqdm's estimate of the time left::

    state evolution alpha=1.20:  40%|####      | 12/30 [00:41<01:02, 3.4s/it]

Usage (both forms are plain tqdm objects)::

    for alpha in progress(alphas, desc="SE curve"):
        ...
    with progress(total=max_iter, desc="SE iterations") as bar:
        while ...:
            bar.update(1)
            bar.set_postfix(residual=f"{r:.1e}", refresh=False)
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable

from tqdm import tqdm

DEFAULT_INTERVAL_S = 30.0


class _LineWriter:
    """A text stream for tqdm that turns its carriage-return redraws into separate lines."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        text = text.replace("\r", "").strip("\n")
        if text.strip():
            self._stream.write(text + "\n")
        return len(text)

    def flush(self) -> None:
        self._stream.flush()


def interval_s() -> float:
    """Seconds between two progress lines: ``SMATTN_PROGRESS_INTERVAL`` (a positive number), else 30."""
    raw = os.environ.get("SMATTN_PROGRESS_INTERVAL")
    if raw is None:
        return DEFAULT_INTERVAL_S
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"SMATTN_PROGRESS_INTERVAL must be a number of seconds, got {raw!r}") from None
    if not value > 0:
        raise ValueError(f"SMATTN_PROGRESS_INTERVAL must be positive, got {raw!r}")
    return value


def progress(iterable: Iterable | None = None, *, desc: str, total: int | None = None, unit: str = "it", **kwargs):
    """A tqdm progress bar writing whole lines to stderr (the rule's log under the script harness).

    ``iterable``/``total``/``unit``/``desc`` as in tqdm; further keyword arguments are passed on."""
    options = dict(
        desc=desc,
        total=total,
        unit=unit,
        file=_LineWriter(sys.stderr),
        mininterval=interval_s(),
        maxinterval=max(interval_s(), 10.0),
        ascii=True,
        ncols=None,  # no width limit: a log line keeps its whole postfix (the bar itself stays 10 wide)
        dynamic_ncols=False,
        leave=True,
    )
    options.update(kwargs)
    return tqdm(iterable, **options)
