"""``docs/parameters.md`` from ``config.yaml`` and its schema, and the check of the docs' per-scale parameter tables.

Each fact about a parameter has one home: its value per scale is ``config.yaml``; its meaning, unit and the reason
of its bounds is the ``description`` of its leaf in ``schemas/config.schema.yaml``; why a value was chosen at a scale
(the paper, the authors' code, a benchmark or a study) is the ``source`` column of the engine page's parameter table
(``docs/p2_theory.md#parameters`` ...). :func:`render` writes the page that joins the first two, one section per
config group; :func:`table_errors` checks every row of the engine pages' tables (header ``| key | smoke | laptop |
paper | ...``) against ``config.yaml``, values written as :func:`format_value` writes them.

Command::

    python -m smattn.parameters_page --write docs/parameters.md   # regenerate the page
    python -m smattn.parameters_page --check                      # exit 1 if the page or a docs table disagrees
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from smattn.config import SCALES, group_names

#: the command that writes the page, as the page names it
COMMAND = "python -m smattn.parameters_page --write docs/parameters.md"
#: the header cells that mark a per-scale parameter table of a docs page
TABLE_HEADER = ("key", *SCALES)
#: what a long list may be written as in a docs table: "<n> values, <first> … <last>"
SUMMARY = re.compile(r"^(\d+) values, (.+) … (.+)$")

_FALLBACK = object()


def _number(x: float) -> str:
    """A float as short as it round-trips: whole values without a point, small ones as ``3e-4``."""
    if x == 0:
        return "0"
    if x.is_integer() and abs(x) < 1e16:
        return str(int(x))
    if abs(x) < 1e-2:
        for digits in range(17):
            text = f"{x:.{digits}e}"
            if float(text) == x:
                mantissa, exponent = text.split("e")
                return f"{mantissa}e{int(exponent)}"
    return repr(x)


def format_value(value: Any, nested: bool = False) -> str:
    """One config value as a table cell: YAML's spelling of scalars (``null``, ``true``), floats by
    :func:`_number`, a list as ``a, b`` and a mapping as ``k: v, k: v`` (brackets and braces only when nested)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return repr(value)
        return _number(value)
    if isinstance(value, (list, tuple)):
        text = ", ".join(format_value(v, nested=True) for v in value)
        return f"[{text}]" if nested or not value else text
    if isinstance(value, Mapping):
        text = ", ".join(f"{k}: {format_value(v, nested=True)}" for k, v in value.items())
        return f"{{{text}}}" if nested or not value else text
    return str(value)


def is_per_scale(value: Any) -> bool:
    """A ``{smoke, laptop, paper}`` mapping (one value per scale), as ``smattn.config`` reads it."""
    return isinstance(value, Mapping) and len(value) > 0 and all(k in SCALES for k in value)


def per_scale(value: Any) -> tuple[Any, Any, Any]:
    """The value at each scale of a config entry: a per-scale mapping gives each, a plain value all three."""
    if is_per_scale(value):
        return tuple(value.get(s, _FALLBACK) for s in SCALES)
    return (value, value, value)


def _cell(text: str) -> str:
    """Text made safe for a Markdown table cell, with ``docs/<page>.md#anchor`` made a link."""
    text = " ".join(str(text).split()).replace("|", "\\|")
    return re.sub(r"\bdocs/([\w.-]+\.md(?:#[\w-]+)?)", r"[\1](\1)", text)


def _fields(spec: Mapping) -> list[tuple[str, str]]:
    """(name, description) of the fields of an object leaf, through nested ``additionalProperties``."""
    while isinstance(spec, Mapping):
        if "properties" in spec:
            return [(k, v["description"]) for k, v in spec["properties"].items() if "description" in v]
        spec = spec.get("additionalProperties")
    return []


def _description(spec: Mapping) -> str:
    text = spec.get("description", "")
    fields = _fields(spec)
    if fields:
        text += " (fields: " + "; ".join(f"`{k}`: {d}" for k, d in fields) + ")"
    return text


def _is_table(value: Any) -> bool:
    """A plain mapping of mappings (``nuts_presets``): the page gives each of its leaf entries a row."""
    return (
        isinstance(value, Mapping)
        and bool(value)
        and not is_per_scale(value)
        and all(isinstance(v, Mapping) and v for v in value.values())
    )


def _leaves(key: str, value: Any) -> list[tuple[str, Any]]:
    if not _is_table(value):
        return [(key, value)]
    return [leaf for sub, v in value.items() for leaf in _leaves(f"{key}.{sub}", v)]


def _rows(key: str, value: Any, description: str, ncols: int) -> list[list[str]]:
    """The table rows of one key: one row, or for a mapping of mappings a row with the description and one row per
    leaf entry (``nuts_presets.faithful.default``)."""
    rows = [] if not _is_table(value) else [[f"`{key}`", *([""] * ncols), _cell(description)]]
    for name, leaf in _leaves(key, value):
        values = per_scale(leaf) if ncols == 3 else (leaf,)
        rows.append([f"`{name}`", *(_cell(format_value(v)) for v in values), "" if rows else _cell(description)])
    return rows


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def render(config: Mapping, schema: Mapping) -> str:
    """The page: the top-level keys, then one section and table per group of ``$defs``, keys in config order."""
    intro = (
        "Every parameter of `config.yaml`, one table per section: its value at each scale and its meaning (the "
        "`description` of its leaf in `schemas/config.schema.yaml`, with the reason of its bounds). A value written "
        "once in `config.yaml` holds at every scale and fills all three columns. Why a value was chosen at a scale "
        "(the paper, the authors' code, a benchmark or a study) is in the engine page's parameter table that each "
        "section links to. The page is generated: after changing a value in `config.yaml` or a description in the "
        f"schema, run `{COMMAND}`; `tests/foundation/test_parameters_page.py` fails while this page, the engine "
        "pages' tables and `config.yaml` disagree. Overriding a parameter on the command line: "
        "[scales.md](scales.md#parameters); how a parameter is declared: [CONVENTIONS.md](CONVENTIONS.md#config)."
    )
    groups = group_names(schema)
    sections = "Sections: [top level](#top-level), " + ", ".join(f"[{g}](#{g})" for g in groups) + "."
    out = [
        "# Parameters",
        "",
        f"<!-- Generated from config.yaml and schemas/config.schema.yaml by `{COMMAND}`; do not edit. -->",
        "",
        *textwrap.wrap(intro, 120, break_long_words=False, break_on_hyphens=False),
        "",
        *textwrap.wrap(sections, 120, break_long_words=False, break_on_hyphens=False),
        "",
    ]
    out += ["## Top level", ""]
    rows = []
    for key, spec in schema.get("properties", {}).items():
        if key in groups:
            continue
        value = config.get(key, spec.get("default"))
        rows += _rows(key, value, _description(spec), 1)
    out += _table(["key", "value", "meaning"], rows) + [""]
    for group in groups:
        gschema = schema["$defs"][group]
        props = gschema.get("properties", {})
        raw = config.get(group) or {}
        out += [f"## {group}", ""]
        if gschema.get("description"):
            text = _cell(gschema["description"]).rstrip(".") + "."
            out += [*textwrap.wrap(text, 120, break_long_words=False, break_on_hyphens=False), ""]
        keys = [k for k in raw if k in props] + [k for k in props if k not in raw]
        rows = []
        for key in keys:
            rows += _rows(key, raw.get(key), _description(props[key]), 3)
        out += _table(["key", *SCALES, "meaning"], rows) + [""]
    return "\n".join(out)


@dataclass(frozen=True)
class DocRow:
    """One row of a docs page's per-scale parameter table."""

    page: str
    line: int
    group: str | None
    keys: tuple[str, ...]
    cells: tuple[str, ...]  # the smoke, laptop and paper cells

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def _split_row(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def doc_rows(text: str, page: str, groups: list[str]) -> list[DocRow]:
    """The rows of every table of ``text`` whose header begins ``| key | smoke | laptop | paper |``.

    A table's group is its nearest heading when that names a group (``### p1_pruning``), else the first group
    named in backticks between that heading and the table (``config.yaml``, section ``p1_hmc``).
    """
    rows: list[DocRow] = []
    lines = text.splitlines()
    heading_group: str | None = None
    since_heading: list[str] = []
    in_table: str | None | bool = False
    for i, line in enumerate(lines, 1):
        stripped = line.strip()
        if stripped.startswith("#"):
            title = stripped.lstrip("#").strip()
            heading_group = title if title in groups else None
            since_heading = []
            in_table = False
            continue
        if in_table is not False:
            if not stripped.startswith("|"):
                in_table = False
            elif not re.match(r"^\|[\s|:-]+\|$", stripped):
                cells = _split_row(stripped)
                keys = tuple(re.findall(r"`([^`]+)`", cells[0])) if cells else ()
                scale_cells = tuple(cells[1:4]) + ("",) * max(0, 4 - len(cells))
                rows.append(DocRow(page, i, in_table, keys, scale_cells[:3]))
            continue
        if stripped.startswith("|") and tuple(_split_row(stripped)[:4]) == TABLE_HEADER:
            group = heading_group
            if group is None:
                named = [g for g in re.findall(r"`([^`]+)`", " ".join(since_heading)) if g in groups]
                group = named[0] if named else None
            in_table = group
            continue
        since_heading.append(line)
    return rows


def _lookup(value: Any, path: list[str], scale: str) -> Any:
    """The value at ``path`` (the dotted parts after the key) of a config entry at ``scale``."""
    if is_per_scale(value):
        value = value.get(scale, _FALLBACK)
    for part in path:
        if not isinstance(value, Mapping) or part not in value:
            return _FALLBACK
        value = value[part]
        if is_per_scale(value):
            value = value.get(scale, _FALLBACK)
    return value


def cell_agrees(cell: str, value: Any) -> bool:
    """Whether a docs cell states ``value``: its :func:`format_value` text, or for a list of three or more values
    ``<n> values, <first> … <last>``."""
    cell = cell.replace("\\|", "|")
    if cell == format_value(value):
        return True
    m = SUMMARY.match(cell)
    if m and isinstance(value, list) and len(value) >= 3:
        n, first, last = m.groups()
        return int(n) == len(value) and first == format_value(value[0], True) and last == format_value(value[-1], True)
    return False


def row_errors(row: DocRow, config: Mapping) -> list[str]:
    """Where one docs row disagrees with ``config.yaml``; empty when every cell states the config's value.

    A row names one key or several (then each cell lists their values, joined by ``, ``); a dotted key
    (``nuts_presets.faithful.default``) names an entry of a mapping, and only its cells may be left empty (an entry
    not used at that scale).
    """
    if row.group is None:
        return [f"{row.where}: the table names no config group (a heading or `section` naming one)"]
    if not row.keys:
        return [f"{row.where}: the first cell names no `config key`"]
    raw = config.get(row.group) or {}
    errors = []
    for key in row.keys:
        if key.split(".")[0] not in raw:
            errors.append(f"{row.where}: `{row.group}.{key}` is not a key of config.yaml")
    if errors:
        return errors
    dotted = any("." in k for k in row.keys)
    for scale, cell in zip(SCALES, row.cells, strict=True):
        values = [_lookup(raw[k.split(".")[0]], k.split(".")[1:], scale) for k in row.keys]
        if any(v is _FALLBACK for v in values):
            errors.append(f"{row.where}: `{row.group}.{', '.join(row.keys)}` has no value at scale {scale}")
            continue
        if cell == "" and dotted:
            continue
        if len(values) == 1:
            ok = cell_agrees(cell, values[0])
            expected = format_value(values[0])
        else:
            expected = ", ".join(format_value(v) for v in values)
            ok = cell.replace("\\|", "|") == expected
        if not ok:
            errors.append(
                f"{row.where}: `{row.group}.{', '.join(row.keys)}` at scale {scale}: the page says {cell!r}, "
                f"config.yaml {expected!r}"
            )
    return errors


def doc_pages(docs: Path) -> list[Path]:
    """The pages of ``docs`` that hold per-scale parameter tables (all but the generated page)."""
    return sorted(p for p in docs.glob("*.md") if p.name != "parameters.md")


def table_errors(repo: Path, config: Mapping, schema: Mapping) -> list[str]:
    """Every disagreement between the docs pages' per-scale parameter tables and ``config``."""
    groups = group_names(schema)
    errors = []
    for page in doc_pages(repo / "docs"):
        for row in doc_rows(page.read_text(encoding="utf-8"), f"docs/{page.name}", groups):
            errors += row_errors(row, config)
    return errors


def load(repo: Path) -> tuple[dict, dict]:
    """``config.yaml`` and the schema of the repository at ``repo``."""
    config = yaml.safe_load((repo / "config.yaml").read_text(encoding="utf-8"))
    schema = yaml.safe_load((repo / "schemas" / "config.schema.yaml").read_text(encoding="utf-8"))
    return config, schema


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m smattn.parameters_page",
        description="Write docs/parameters.md from config.yaml and schemas/config.schema.yaml, or check it and "
        "the docs pages' per-scale parameter tables against them.",
    )
    parser.add_argument("--repo", type=Path, default=Path.cwd(), help="repository root (default: the current folder)")
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", type=Path, metavar="PATH", help="write the page to PATH (docs/parameters.md)")
    action.add_argument(
        "--check",
        action="store_true",
        help="exit 1 if docs/parameters.md differs from the generated page or a docs table disagrees with the config",
    )
    args = parser.parse_args(argv)
    config, schema = load(args.repo)
    page = render(config, schema)
    if args.write:
        args.write.write_text(page, encoding="utf-8")
        return 0
    if args.check:
        problems = table_errors(args.repo, config, schema)
        target = args.repo / "docs" / "parameters.md"
        if not target.exists() or target.read_text(encoding="utf-8") != page:
            problems.insert(0, f"docs/parameters.md differs from the generated page: run `{COMMAND}`")
        for problem in problems:
            print(problem, file=sys.stderr)
        return 1 if problems else 0
    sys.stdout.write(page)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
