"""The conda environments list the same packages and versions as pyproject.toml."""

import re
import tomllib

import yaml


def test_envs_match_pyproject(repo):
    project = tomllib.loads((repo / "pyproject.toml").read_text())["project"]
    pins = {}
    for dep in project["dependencies"]:
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)==([^\s;]+)", dep)
        assert m, f"pyproject dependency {dep!r} is not pinned with =="
        pins[m.group(1).lower()] = m.group(2)
    envs = sorted((repo / "envs").glob("*.yaml"))
    assert envs, "no conda environments"
    for env in envs:
        spec = yaml.safe_load(env.read_text())
        deps = spec["dependencies"]
        assert "python=3.11" in deps, env.name
        pip = next(d["pip"] for d in deps if isinstance(d, dict) and "pip" in d)
        for line in pip:
            line = line.split("#")[0].strip()
            if line.startswith("-e"):
                continue
            name, version = line.split("==")
            assert pins.get(name.lower()) == version, f"{env.name}: {line} differs from pyproject.toml"
