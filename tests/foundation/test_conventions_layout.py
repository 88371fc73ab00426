"""docs/CONVENTIONS.md's layout table names every module of the library, in the row of its package, and the only
module that imports Snakemake is the one the table says."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src" / "smattn"


def _package_rows() -> dict[str, str]:
    rows = {}
    for line in (REPO / "docs" / "CONVENTIONS.md").read_text(encoding="utf-8").splitlines():
        m = re.match(r"\| `src/smattn/([^`]*)`( top level)? \|(.*)\|\s*$", line)
        if m and (m.group(2) or m.group(1)):
            rows[m.group(1).rstrip("/")] = m.group(3)
    return rows


def test_every_module_is_listed_in_its_package_row():
    rows = _package_rows()
    missing = []
    for path in sorted(SRC.rglob("*.py")):
        if path.name == "__init__.py":
            continue
        package = path.parent.relative_to(SRC).as_posix()
        package = "" if package == "." else package
        if f"`{path.stem}`" not in rows.get(package, ""):
            missing.append(path.relative_to(SRC).as_posix())
    assert not missing, f"modules missing from docs/CONVENTIONS.md's layout table: {missing}"


def test_only_scriptio_imports_snakemake():
    importers = sorted(
        p.relative_to(SRC).as_posix()
        for p in SRC.rglob("*.py")
        if re.search(r"^\s*(import snakemake|from snakemake)", p.read_text(encoding="utf-8"), re.M)
    )
    assert importers == ["scriptio.py"]
