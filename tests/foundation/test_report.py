"""The report as a reader sees it: every caption is valid reStructuredText (no docutils warning or error), and
the claims page loads in a real (headless) browser with its table inside the window."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from smattn.ledger import CLAIM_COLUMNS, claims_html, evaluate_claims, load_claims, metric_refs

REPO = Path(__file__).resolve().parents[2]
CAPTIONS = sorted((REPO / "report").glob("*.rst"))


def test_there_are_captions():
    assert len(CAPTIONS) >= 10


@pytest.mark.parametrize("path", CAPTIONS, ids=lambda p: p.name)
def test_caption_renders_without_docutils_messages(path):
    """Rendered the way ``snakemake --report`` does (Jinja, then docutils to HTML), failing on any warning."""
    from docutils.core import publish_parts
    from docutils.utils import SystemMessage
    from jinja2 import Environment

    text = Environment().from_string(path.read_text(encoding="utf-8")).render(snakemake=None, categories={}, files={})
    stream = io.StringIO()
    try:
        publish_parts(
            text, writer="html", settings_overrides={"halt_level": 2, "report_level": 1, "warning_stream": stream}
        )
    except SystemMessage as exc:
        pytest.fail(f"{path.name}: {exc}")
    assert "ERROR" not in stream.getvalue() and "WARNING" not in stream.getvalue(), stream.getvalue()


def _claims_page(tmp_path: Path) -> Path:
    """The claims page of every claim in claims/*.yaml (each metric set to a dummy value of a realistic width)."""
    claims = load_claims(sorted((REPO / "claims").glob("*.yaml")))
    metrics = {k: 0.123456789 for k in (r for c in claims for r in metric_refs(c))}

    # binomial standard errors name a count of test items: a count, not a fraction
    def binomial_counts(node):
        if isinstance(node, dict):
            if set(node) == {"binomial"}:
                yield node["binomial"]
            for v in node.values():
                yield from binomial_counts(v)
        elif isinstance(node, list):
            for v in node:
                yield from binomial_counts(v)

    counts = set(binomial_counts(claims)) | {c[k] for c in claims for k in ("successes", "trials") if k in c}
    metrics.update({k: 1234.0 for k in counts if k in metrics})
    rows = evaluate_claims(claims, metrics)
    page = tmp_path / "claims.html"
    # a probe records, after layout, whether anything is wider than the window (for the browser test below)
    probe = (
        "<script>window.addEventListener('load',()=>{const w=document.documentElement.clientWidth;"
        "const fit=[...document.querySelectorAll('table')].every(t=>t.getBoundingClientRect().right<=w+1);"
        "document.body.setAttribute('data-fit',String(fit&&document.documentElement.scrollWidth<=w+1));"
        "document.body.setAttribute('data-rows',String(document.querySelectorAll('tr').length));});</script>"
    )
    page.write_text(claims_html(rows, "smoke").replace("</body>", probe + "</body>"), encoding="utf-8")
    return page, len(rows)


def test_claims_table_wraps_its_cells():
    html = claims_html(
        [
            {
                **dict.fromkeys(CLAIM_COLUMNS, ""),
                "role": "check",
                "claim": "c",
                "id": "a.very.long.metric.id[without=spaces]" * 5,
                "ours": "1",
                "status": "info",
                "explanation": "x " * 200,
            }
        ],
        "smoke",
    )
    assert "table-layout:fixed" in html and "width:100%" in html and "overflow-wrap:anywhere" in html


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.parametrize("width", [1024, 1400])
def test_claims_page_fits_the_window_in_a_headless_browser(tmp_path, width, requirement_missing):
    browser = _chromium()
    if browser is None:
        requirement_missing(
            "no Chromium: install Debian's package (apt-get install -y chromium) to run the browser check"
        )
    page, n_rows = _claims_page(tmp_path)
    r = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--window-size={width},900",
            "--virtual-time-budget=5000",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    dom = r.stdout
    assert f'data-rows="{n_rows + 2}"' in dom, dom[:2000]  # two headers (claims, checks) + one row per row rendered
    assert 'data-fit="true"' in dom, "the claims table is wider than the window"


@pytest.mark.parametrize("ci", ["", "true"])
def test_browser_check_without_chromium_skips_and_fails_under_ci(repo, ci):
    """With no browser on the PATH (only this Python's folder), the check is skipped with the reason, or fails under
    CI=true: a CI run cannot land with no browser coverage."""
    env = dict(os.environ, PATH=str(Path(sys.executable).parent), CI=ci)
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-rs",
            "-p",
            "no:cacheprovider",
            "-q",
            "tests/foundation/test_report.py",
            "-k",
            "headless_browser",
        ],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    out = r.stdout + r.stderr
    assert "no Chromium" in out and "passed" not in out, out
    if ci:
        assert r.returncode != 0 and "2 failed" in out, out
    else:
        assert r.returncode == 0 and "2 skipped" in out, out
