"""pyproject.toml's version ranges, the lock (constraints/lock.txt: the exact set the workflow was run with), the conda
environments and the install commands agree: every pin of the lock lies in pyproject's ranges, the conda
environments list the lock's versions, and every install command of the README and of CI installs with the lock."""

import re
import tomllib

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

LOCK = "constraints/lock.txt"
#: Python versions the project supports; the lock was run on the first (CI installs it), the others are checked by
#: pip's dry runs in CI (.ci/lock_dry_run)
PYTHONS = ("3.11", "3.12", "3.13")


def read_lock(path) -> dict[str, Version]:
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if not line:
            continue
        req = Requirement(line)
        specs = list(req.specifier)
        assert len(specs) == 1 and specs[0].operator == "==" and not req.marker, f"{LOCK}: {line!r} is not a pin"
        name = canonicalize_name(req.name)
        assert name not in pins, f"{LOCK}: {req.name} pinned twice"
        pins[name] = Version(specs[0].version)
    return pins


def project_requirements(project) -> list[tuple[str, Requirement]]:
    """(where, requirement) for the dependencies and every optional-dependency group of pyproject.toml."""
    reqs = [("dependencies", Requirement(d)) for d in project["dependencies"]]
    for group, deps in project.get("optional-dependencies", {}).items():
        reqs += [(f"[{group}]", Requirement(d)) for d in deps]
    return reqs


def lock_outside_ranges(project, pins) -> list[str]:
    """What of the lock pyproject's ranges refuse: a requirement the lock does not pin, or a pin outside its range."""
    bad = []
    for where, req in project_requirements(project):
        name = canonicalize_name(req.name)
        if name not in pins:
            bad.append(f"{where} {req}: not pinned in {LOCK}")
        elif not req.specifier.contains(pins[name], prereleases=True):
            bad.append(f"{where} {req}: the lock pins {name}=={pins[name]}")
    return bad


@pytest.fixture(scope="module")
def project(repo):
    return tomllib.loads((repo / "pyproject.toml").read_text())["project"]


@pytest.fixture(scope="module")
def pins(repo):
    return read_lock(repo / LOCK)


def test_lock_pins_lie_in_pyproject_ranges(project, pins):
    assert lock_outside_ranges(project, pins) == []
    for where, req in project_requirements(project):
        assert not any(s.operator in ("==", "===") for s in req.specifier), f"{where} {req}: a range, not a pin"
    python = SpecifierSet(project["requires-python"])
    assert [v for v in PYTHONS if v not in python] == [], project["requires-python"]
    assert "3.10" not in python and "3.14" not in python, project["requires-python"]


def test_lock_check_fails_on_a_pin_outside_a_range(project, pins):
    """The check above can fail: a lock whose numpyro is newer than the range, or that misses a package, is refused."""
    assert lock_outside_ranges(project, {**pins, "numpyro": Version("0.23.0")}) == [
        "dependencies numpyro<0.23,>=0.21: the lock pins numpyro==0.23.0"
    ]
    assert lock_outside_ranges(project, {k: v for k, v in pins.items() if k != "pytest"}) == [
        f"[test] {Requirement(next(d for d in project['optional-dependencies']['test'] if d.startswith('pytest')))}: "
        f"not pinned in {LOCK}"
    ]


def test_lock_keeps_the_gpu_image_admitted_and_torch_pinned(project, pins):
    """The ranges admit the preinstalled set of the GPU machines (Python 3.12, torch 2.11, JAX 0.11.2, NumPyro 0.21,
    NumPy 2.5, tokenizers 0.23.2), and the lock keeps torch at 2.13.0 (the CPU wheel on the project machines)."""
    ranges = {canonicalize_name(r.name): r.specifier for _, r in project_requirements(project)}
    gpu_image = {"torch": "2.11.0", "jax": "0.11.2", "jaxlib": "0.11.2", "numpyro": "0.21.0", "numpy": "2.5.2"}
    gpu_image["tokenizers"] = "0.23.2"
    assert [f"{n}=={v}" for n, v in gpu_image.items() if not ranges[n].contains(v)] == []
    assert "3.12" in SpecifierSet(project["requires-python"])
    assert pins["torch"] == Version("2.13.0")


def code_lines(path) -> list[str]:
    """The lines of a script, or of the fenced code blocks of a Markdown file."""
    text = path.read_text()
    if path.suffix != ".md":
        return [ln for ln in text.splitlines() if not ln.lstrip().startswith("#")]
    return [ln for block in re.findall(r"^```[^\n]*\n(.*?)^```", text, re.M | re.S) for ln in block.splitlines()]


def test_install_commands_use_the_lock(repo):
    """Every command that installs the project (pip install ... -e .) in the README's, the docs' and CI's commands
    names the lock."""
    found = {}
    for path in [repo / "README.md", repo / ".ci/run", *sorted((repo / "docs").glob("*.md"))]:
        for line in code_lines(path):
            if re.search(r"pip install\b.*-e \S*\.", line):
                found.setdefault(path.name, []).append(line)
                assert f"-c {LOCK}" in line, f"{path.name}: {line.strip()!r} installs without the lock"
    assert {"README.md", "run"} <= set(found), found
    readme = (repo / "README.md").read_text()
    assert f"pip install -c {LOCK} -e '.[test]' && .venv/bin/snakemake --profile profiles/local" in readme


def test_envs_match_the_lock(repo, project, pins):
    envs = sorted((repo / "envs").glob("*.yaml"))
    assert envs, "no conda environments"
    python = SpecifierSet(project["requires-python"])
    for env in envs:
        spec = yaml.safe_load(env.read_text())
        deps = spec["dependencies"]
        conda_python = next(d for d in deps if isinstance(d, str) and d.startswith("python"))
        assert SpecifierSet(conda_python.removeprefix("python")) == python, f"{env.name}: {conda_python}"
        pip = next(d["pip"] for d in deps if isinstance(d, dict) and "pip" in d)
        for line in pip:
            line = line.split("#")[0].strip()
            if line.startswith("-e"):
                continue
            name, version = line.split("==")
            name = name.split("[")[0]  # an extra (jax[cuda13]) pins the package itself
            assert pins.get(canonicalize_name(name)) == Version(version), f"{env.name}: {line} differs from {LOCK}"
