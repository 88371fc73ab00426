"""Progress lines: whole lines in a log (no carriage returns), first and last always written, interval checked."""

import io
import sys

import pytest

from smattn import progress as prog


def test_progress_writes_whole_lines_with_count_and_total(monkeypatch):
    buf = io.StringIO()
    monkeypatch.setattr(sys, "stderr", buf)
    monkeypatch.setenv("SMATTN_PROGRESS_INTERVAL", "1000")
    assert sum(prog.progress(range(50), desc="demo loop")) == sum(range(50))
    text = buf.getvalue()
    assert "\r" not in text
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert lines[0].startswith("demo loop") and "0/50" in lines[0]
    assert "50/50" in lines[-1]
    assert len(lines) <= 3  # a long interval: the first, the last (and at most one closing redraw)


def test_manual_updates_and_postfix(monkeypatch):
    buf = io.StringIO()
    monkeypatch.setattr(sys, "stderr", buf)
    monkeypatch.setenv("SMATTN_PROGRESS_INTERVAL", "1000")
    with prog.progress(total=4, desc="iterations") as bar:
        for r in (1e-1, 1e-2, 1e-3, 1e-4):
            bar.set_postfix(residual=f"{r:.0e}", refresh=False)
            bar.update(1)
    assert "4/4" in buf.getvalue() and "residual=1e-04" in buf.getvalue()


@pytest.mark.parametrize("raw", ["abc", "0", "-5"])
def test_bad_interval_is_named(monkeypatch, raw):
    monkeypatch.setenv("SMATTN_PROGRESS_INTERVAL", raw)
    with pytest.raises(ValueError, match="SMATTN_PROGRESS_INTERVAL"):
        prog.interval_s()


def test_a_long_postfix_is_not_cut(monkeypatch):
    buf = io.StringIO()
    monkeypatch.setattr(sys, "stderr", buf)
    monkeypatch.setenv("SMATTN_PROGRESS_INTERVAL", "1000")
    with prog.progress(total=1, desc="state evolution sweep at depth three", mininterval=0.0) as bar:
        bar.set_postfix(alpha="2", Q_diag=[0.9671, 0.9612, 0.9999], converged=True, iterations=23, refresh=False)
        bar.update(1)
    assert "iterations=23" in buf.getvalue()
