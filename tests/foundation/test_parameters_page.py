"""docs/parameters.md is what ``smattn.parameters_page`` generates from config.yaml and the schema, every config key
has a description in the schema, and every row of the docs pages' per-scale parameter tables (``| key | smoke |
laptop | paper | source |``) states the values config.yaml gives (mutations: a changed value, a changed description
and an edited docs cell each fail)."""

from __future__ import annotations

import copy
import shutil

import pytest

from smattn import parameters_page as pp
from smattn.config import group_names

COMMAND = "python -m smattn.parameters_page --write docs/parameters.md"


@pytest.fixture(scope="module")
def loaded(repo):
    return pp.load(repo)


def test_the_page_is_the_generated_one(repo, loaded):
    config, schema = loaded
    page = (repo / "docs" / "parameters.md").read_text(encoding="utf-8")
    assert page == pp.render(config, schema), f"docs/parameters.md is stale: run `{COMMAND}`"


def test_every_config_key_has_a_description(loaded):
    config, schema = loaded
    missing = [k for k in config if k not in group_names(schema) and not schema["properties"][k].get("description")]
    for group in group_names(schema):
        props = schema["$defs"][group]["properties"]
        missing += [f"{group}.{k}" for k in config[group] if not props.get(k, {}).get("description")]
    assert not missing


def test_the_docs_tables_agree_with_the_config(repo, loaded):
    config, schema = loaded
    errors = pp.table_errors(repo, config, schema)
    assert not errors, "\n".join(errors)


def test_every_group_key_has_a_row_in_a_docs_table(repo, loaded):
    config, schema = loaded
    groups = group_names(schema)
    seen: dict[str, set[str]] = {g: set() for g in groups}
    for page in pp.doc_pages(repo / "docs"):
        for row in pp.doc_rows(page.read_text(encoding="utf-8"), page.name, groups):
            seen.setdefault(row.group, set()).update(k.split(".")[0] for k in row.keys)
    missing = [f"{g}.{k}" for g in groups for k in config[g] if k not in seen[g]]
    assert not missing, f"keys without a row (and a source) in their engine page's parameter table: {missing}"
    assert all(seen[g] for g in groups)


def test_the_page_follows_a_changed_value_and_description(repo, loaded):
    config, schema = loaded
    page = pp.render(config, schema)
    changed = copy.deepcopy(config)
    changed["p1_images"]["gd_batch"]["laptop"] = 256
    assert pp.render(changed, schema) != page
    errors = pp.table_errors(repo, changed, schema)
    assert errors and all("p1_images.gd_batch" in e and "scale laptop" in e for e in errors), errors
    described = copy.deepcopy(schema)
    described["$defs"]["p2_theory"]["properties"]["n1d"]["description"] = "another meaning"
    assert "another meaning" in pp.render(config, described) and pp.render(config, described) != page


def test_a_plain_value_fills_every_scale(loaded):
    config, schema = loaded
    page = pp.render(config, schema)
    assert "| `gd_tasks_per_epoch` | 527878 | 527878 | 527878 |" in page
    assert "| `gd_batch` | 16 | 512 | 128 |" in page
    assert "| `nuts_presets.faithful.500` |" in page


@pytest.mark.parametrize(
    "value, text",
    [
        (1.0e-5, "1e-5"),
        (3.0e-4, "3e-4"),
        (1.5e-3, "1.5e-3"),
        (0.01, "0.01"),
        (0.9995, "0.9995"),
        (15.0, "15"),
        (0.0, "0"),
        (1.7320508075688772, "1.7320508075688772"),
        (527878, "527878"),
        (True, "true"),
        (None, "null"),
        ("transformers_adamw", "transformers_adamw"),
        ([0.6, 1.2], "0.6, 1.2"),
        ({"L2H4": [2], "L2H8": [4]}, "L2H4: [2], L2H8: [4]"),
        ({"default": {"chains": 1, "dtype": "float32"}}, "default: {chains: 1, dtype: float32}"),
    ],
)
def test_values_are_written_one_way(value, text):
    assert pp.format_value(value) == text


TABLE = """## Parameters

`config.yaml`, section `g`.

| key | smoke | laptop | paper | source |
| --- | --- | --- | --- | --- |
| `d` | 10 | 100 | 1000 | paper |
| `lr` | 1e-3 | 1e-3 | 1e-3 | paper |
| `alphas` | 0.5, 1 | 4 values, 0.25 … 1 | 4 values, 0.25 … 1 | ours |
| `d`, `lr` | 10, 1e-3 | 100, 1e-3 | 1000, 1e-3 | both |
| `presets.a.default` |  | chains: 4 |  | ours |
"""
CONFIG = {
    "g": {
        "d": {"smoke": 10, "laptop": 100, "paper": 1000},
        "lr": 1.0e-3,
        "alphas": {"smoke": [0.5, 1.0], "laptop": [0.25, 0.5, 0.75, 1.0], "paper": [0.25, 0.5, 0.75, 1.0]},
        "presets": {"a": {"default": {"chains": 4}}},
    }
}


def _errors(text: str, config=CONFIG) -> list[str]:
    return [e for row in pp.doc_rows(text, "page.md", ["g"]) for e in pp.row_errors(row, config)]


def test_a_docs_table_that_agrees_passes():
    rows = pp.doc_rows(TABLE, "page.md", ["g"])
    assert [r.keys for r in rows] == [("d",), ("lr",), ("alphas",), ("d", "lr"), ("presets.a.default",)]
    assert {r.group for r in rows} == {"g"}
    assert _errors(TABLE) == []


@pytest.mark.parametrize(
    "old, new, fragment",
    [
        ("| `d` | 10 | 100 |", "| `d` | 10 | 200 |", "g.d` at scale laptop"),
        ("| `lr` | 1e-3 | 1e-3 | 1e-3 |", "| `lr` | 0.001 | 1e-3 | 1e-3 |", "g.lr` at scale smoke"),
        ("| 4 values, 0.25 … 1 | ours", "| 3 values, 0.25 … 1 | ours", "g.alphas` at scale paper"),
        ("| 10, 1e-3 | 100, 1e-3 |", "| 10, 1e-3 | 100, 1e-2 |", "g.d, lr` at scale laptop"),
        ("| `d` | 10 | 100 | 1000 |", "| `d` |  | 100 | 1000 |", "g.d` at scale smoke"),
        ("|  | chains: 4 |  |", "|  | chains: 2 |  |", "g.presets.a.default` at scale laptop"),
        ("| `lr` |", "| `lrate` |", "g.lrate` is not a key"),
        ("| `lr` |", "| lr |", "names no `config key`"),
        ("section `g`", "section g", "names no config group"),
    ],
)
def test_a_docs_table_that_disagrees_fails(old, new, fragment):
    assert TABLE.count(old) == 1
    errors = _errors(TABLE.replace(old, new))
    assert errors and any(fragment in e for e in errors), errors


def test_the_command_checks_and_writes(repo, tmp_path, capsys):
    assert pp.main(["--repo", str(repo), "--check"]) == 0
    copy_root = tmp_path / "repo"
    (copy_root / "schemas").mkdir(parents=True)
    shutil.copy2(repo / "config.yaml", copy_root / "config.yaml")
    shutil.copy2(repo / "schemas" / "config.schema.yaml", copy_root / "schemas" / "config.schema.yaml")
    shutil.copytree(repo / "docs", copy_root / "docs")
    text = (copy_root / "config.yaml").read_text(encoding="utf-8")
    old = "gd_batch: {smoke: 16, laptop: 512, paper: 128}"
    assert text.count(old) == 1
    (copy_root / "config.yaml").write_text(text.replace(old, old.replace("512", "256")), encoding="utf-8")
    assert pp.main(["--repo", str(copy_root), "--check"]) == 1
    err = capsys.readouterr().err
    assert "docs/parameters.md differs" in err and "docs/p1_images.md" in err and "p1_images.gd_batch" in err
    assert pp.main(["--repo", str(copy_root), "--write", str(copy_root / "docs" / "parameters.md")]) == 0
    assert "| `gd_batch` | 16 | 256 | 128 |" in (copy_root / "docs" / "parameters.md").read_text(encoding="utf-8")
