"""pyproject.toml's version ranges, the lock (constraints/lock.txt: the exact set the workflow was run with, and
constraints/lock-gpu.txt: what the GPU install adds), the conda environments and the install commands agree: every pin
of the lock lies in pyproject's ranges, the conda environments pin the whole dependency set of their packages at the
lock's versions and install the library with their post-deploy script, and every install command of the README and of
CI installs with the lock. (Building the environments: test_env_install.py, marked slow.)"""

import importlib.metadata
import re
import tomllib

import pytest
import yaml
from packaging.markers import default_environment
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

LOCK = "constraints/lock.txt"
GPU_LOCK = "constraints/lock-gpu.txt"
#: Python versions the project supports; the lock was run on the first (CI installs it), the others are checked by
#: pip's dry runs in CI (.ci/lock_dry_run). Not 3.14: snakemake requires immutables, which has no wheel for it (0.21,
#: its newest release, stops at 3.13), although every other pin of the lock has one.
PYTHONS = ("3.11", "3.12", "3.13")
#: what an environment that holds one of these needs from the GPU lock: all of it (PyPI's torch and jax[cuda13] bring
#: the CUDA set on Linux; the CPU wheel of torch installed here shows none of it)
GPU_PACKAGES = ("torch", "jax-cuda13-plugin")


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


@pytest.fixture(scope="module")
def gpu_pins(repo):
    return read_lock(repo / GPU_LOCK)


def marker_environments(python: str, extras) -> list[dict[str, str]]:
    """The marker environments of a conda environment's CPython ``python`` on Linux x86-64, one per extra (and none)."""
    base = {**default_environment(), "sys_platform": "linux", "platform_system": "Linux", "os_name": "posix"}
    base |= {"platform_machine": "x86_64", "implementation_name": "cpython"}
    base |= {"platform_python_implementation": "CPython"}
    base |= {"python_version": python, "python_full_version": f"{python}.0", "implementation_version": f"{python}.0"}
    return [{**base, "extra": extra} for extra in ["", *sorted(extras)]]


def dependency_closure(requirements, pythons=PYTHONS) -> set[str]:
    """The names of ``requirements`` and, recursively, of what their installed distributions require on Linux x86-64
    for any of ``pythons`` (with the extras asked for). A distribution not installed here ends its branch: its name is
    in the set, its own requirements are not."""
    extras_seen: dict[str, set[str]] = {}
    todo = list(requirements)
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if name in extras_seen and set(req.extras) <= extras_seen[name]:
            continue
        extras = extras_seen.setdefault(name, set())
        extras |= set(req.extras)
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        envs = [env for python in pythons for env in marker_environments(python, extras)]
        for dep in map(Requirement, dist.requires or []):
            if dep.marker is None or any(dep.marker.evaluate(env) for env in envs):
                todo.append(dep)
    return set(extras_seen)


def env_spec(path) -> tuple[str, list[str], list[str]]:
    """(conda's python spec, the other conda packages, the pip section's lines without comments) of an env file."""
    deps = yaml.safe_load(path.read_text())["dependencies"]
    conda = [d for d in deps if isinstance(d, str)]
    python = next(d for d in conda if d.startswith("python"))
    pip = next(d["pip"] for d in deps if isinstance(d, dict) and "pip" in d)
    return python, [d for d in conda if d != python], [ln.split("#")[0].strip() for ln in pip]


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


def test_envs_match_the_lock(repo, project, pins, gpu_pins):
    """Every environment pins its pip packages at the lock's versions (the GPU lock's for the CUDA set), installs
    nothing by path (Snakemake runs the pip section from its copy of the file, .snakemake/conda/<hash>.yaml, where a
    relative path misses the repository) and allows the Pythons pyproject allows."""
    envs = sorted((repo / "envs").glob("*.yaml"))
    assert envs, "no conda environments"
    python = SpecifierSet(project["requires-python"])
    locked = {**pins, **gpu_pins}
    for env in envs:
        conda_python, conda, pip = env_spec(env)
        assert SpecifierSet(conda_python.removeprefix("python")) == python, f"{env.name}: {conda_python}"
        assert "pip" in conda, f"{env.name}: no pip"
        for line in pip:
            try:
                req = Requirement(line)
            except InvalidRequirement:  # a path or "-e ...": relative to Snakemake's copy of the file, not the repo
                pytest.fail(f"{env.name}: {line!r} is no requirement (the post-deploy script installs the library)")
            assert not req.url and not req.marker, f"{env.name}: {line}"
            specs = list(req.specifier)
            assert len(specs) == 1 and specs[0].operator == "==", f"{env.name}: {line} is not a pin"
            name = canonicalize_name(req.name)  # an extra (jax[cuda13]) pins the package itself
            assert locked.get(name) == Version(specs[0].version), f"{env.name}: {line} differs from the locks"
        names = [canonicalize_name(Requirement(line).name) for line in pip]
        assert len(names) == len(set(names)), f"{env.name}: a package listed twice"


def test_gpu_lock_adds_to_the_lock(pins, gpu_pins):
    """The GPU lock holds only what the lock does not (the CUDA plugin of the locked jaxlib, NVIDIA's libraries,
    triton)."""
    assert gpu_pins and not set(gpu_pins) & set(pins)
    assert gpu_pins["jax-cuda13-plugin"] == gpu_pins["jax-cuda13-pjrt"] == pins["jaxlib"] == pins["jax"]
    assert "triton" in gpu_pins and any(n.startswith("nvidia-cudnn") for n in gpu_pins)
    assert {n for n in gpu_pins if not n.startswith(("nvidia-", "cuda-"))} == {
        "jax-cuda13-plugin",
        "jax-cuda13-pjrt",
        "triton",
    }


def test_lock_is_the_whole_installed_set(pins):
    """The lock is what `pip freeze --all` of a fresh install gives: everything smattn[test] requires, recursively (for
    every supported Python), and the installer itself; setuptools, which torch requires, would otherwise float to its
    newest release."""
    why = locked_installation({n: v for n, v in pins.items() if n != "pip"})
    if why:
        pytest.skip(f"the installed set is not the lock's ({why}); the check reads the lock's installed metadata")
    wanted = dependency_closure([Requirement("smattn[test]")]) - {"smattn"}
    assert sorted(wanted ^ (set(pins) - {"pip"})) == []
    assert {"pip", "setuptools"} <= set(pins)


def locked_installation(pins) -> str | None:
    """Why the installed set is not the lock's (for the checks that read installed metadata), or None."""
    for name, version in pins.items():
        try:
            installed = Version(importlib.metadata.version(name))
        except importlib.metadata.PackageNotFoundError:
            return f"{name} is not installed"
        if Version(installed.public) != version:
            return f"{name} {installed} is installed, the lock pins {version}"
    return None


def test_envs_pin_their_whole_dependency_set(repo, pins, gpu_pins):
    """conda runs the pip section as `pip install -U -r <it>`: any dependency it does not pin would take its newest
    release. So each environment's pip section is closed under the requirements of its packages (read from the installed
    lock, for Linux x86-64 and every supported Python); one with torch or the JAX CUDA plugin holds the whole GPU lock
    (what PyPI's torch and jax[cuda13] bring there), and each pins setuptools (what the post-deploy script builds the
    library with)."""
    why = locked_installation({n: v for n, v in pins.items() if n not in ("pip", "setuptools")})
    if why:
        pytest.skip(f"the installed set is not the lock's ({why}); the check reads the lock's installed metadata")
    for env in sorted((repo / "envs").glob("*.yaml")):
        reqs = [Requirement(line) for line in env_spec(env)[2]]
        listed = {canonicalize_name(r.name) for r in reqs}
        closure = dependency_closure(reqs)
        assert sorted(closure - listed) == [], f"{env.name}: dependencies not pinned"
        if listed & set(GPU_PACKAGES) or closure & set(gpu_pins):
            assert sorted(set(gpu_pins) - listed) == [], f"{env.name}: part of {GPU_LOCK} missing"
        assert "setuptools" in listed, f"{env.name}: setuptools (the build backend of smattn) not pinned"


def test_envs_install_the_library_after_creation(repo, pins):
    """Each environment has the post-deploy script that installs smattn (editable, from Snakemake's working
    directory: the repository root), they are one script, and the setuptools the envs pin can build the library."""
    envs = sorted((repo / "envs").glob("*.yaml"))
    scripts = {env.name: env.with_suffix(".post-deploy.sh") for env in envs}
    assert [name for name, s in scripts.items() if not s.is_file()] == []
    texts = {s.read_text() for s in scripts.values()}
    assert len(texts) == 1, "the envs/*.post-deploy.sh differ"
    text = texts.pop()
    assert text.startswith("#!/usr/bin/env bash\n")  # Snakemake runs it with the interpreter of its shebang
    assert 'pip install --no-deps --no-build-isolation --no-index -e "$PWD"' in text
    build = tomllib.loads((repo / "pyproject.toml").read_text())["build-system"]
    assert build["build-backend"] == "setuptools.build_meta"
    assert [canonicalize_name(Requirement(r).name) for r in build["requires"]] == ["setuptools"]
    assert Requirement(build["requires"][0]).specifier.contains(pins["setuptools"])
