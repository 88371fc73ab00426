"""One plotting style for both papers: every figure script draws with smattn.io.pyplot (FIGURE_STYLE), directly or
through smattn.p2.plotting, and none sets up matplotlib or its rcParams itself."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIGURE_SCRIPTS = sorted(p for p in (REPO / "scripts").glob("*.py") if "save_figure(" in p.read_text(encoding="utf-8"))


def test_pyplot_applies_the_one_style():
    from smattn.io import FIGURE_STYLE, pyplot
    from smattn.p2 import plotting

    plt = pyplot()
    assert plt.get_backend().lower() == "agg"
    for key, value in FIGURE_STYLE.items():
        want = [value] if key == "font.family" else value  # matplotlib keeps the family as a list
        assert plt.rcParams[key] == want, key
    assert plotting.setup() is plt and plotting.plt is plt


def test_every_figure_script_draws_with_the_shared_style():
    assert len(FIGURE_SCRIPTS) >= 15, [p.name for p in FIGURE_SCRIPTS]
    own_setup = re.compile(r"rcParams|style\.use|matplotlib\.use|rc_context|import matplotlib\.pyplot")
    shared = re.compile(r"\bpyplot\(\)|\bsetup\(\)|from smattn\.p2\.plotting import [^\n]*\bplt\b")
    offenders = {}
    for path in FIGURE_SCRIPTS:
        text = path.read_text(encoding="utf-8")
        if own_setup.search(text) or not shared.search(text):
            offenders[path.name] = (own_setup.findall(text), bool(shared.search(text)))
    assert not offenders, f"figure scripts that do not draw with smattn.io.pyplot: {offenders}"


def test_the_library_sets_the_style_in_one_place():
    src = REPO / "src" / "smattn"
    setters = sorted(
        p.relative_to(src).as_posix() for p in src.rglob("*.py") if "rcParams" in p.read_text(encoding="utf-8")
    )
    assert setters == ["io.py"]
