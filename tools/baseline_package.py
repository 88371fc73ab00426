"""Load the P2 theory package of an earlier commit next to the current one, for same-process before/after timings.

``load_theory(rev)`` extracts ``src/smattn/p2/theory`` of git revision ``rev`` into a temporary folder and imports it
as a package of its own name (``p2theory_<rev>``): its relative imports resolve inside that copy, its absolute imports
(``smattn.progress``, ``smattn.io``) to the current library. Used by ``studies/p2_paper_cost.py``.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
THEORY = "src/smattn/p2/theory"


def load_theory(rev: str):
    """The module ``p2theory_<rev>`` (a package with the revision's theory modules as submodules)."""
    sha = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short=10", rev], check=True, capture_output=True, text=True
    ).stdout.strip()
    name = f"p2theory_{sha}"
    if name in sys.modules:
        return sys.modules[name]
    tmp = Path(tempfile.mkdtemp(prefix="p2theory_"))
    files = subprocess.run(
        ["git", "-C", str(ROOT), "ls-tree", "--name-only", sha, f"{THEORY}/"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    (tmp / name).mkdir()
    for f in files:
        if f.endswith(".py"):
            src = subprocess.run(["git", "-C", str(ROOT), "show", f"{sha}:{f}"], check=True, capture_output=True)
            (tmp / name / Path(f).name).write_bytes(src.stdout)
    sys.path.insert(0, str(tmp))
    return importlib.import_module(name)


def submodule(rev: str, module: str):
    """One module of the revision's theory package, e.g. submodule("main", "thresholds")."""
    pkg = load_theory(rev)
    return importlib.import_module(f"{pkg.__name__}.{module}")
