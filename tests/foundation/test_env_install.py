"""The conda environments (envs/*.yaml) build the way `snakemake --sdm conda` builds them, and hold the library.

Snakemake 9 (snakemake/deployment/conda.py, Env.create) copies each env file to <conda-prefix>/<hash>.yaml (default
prefix .snakemake/conda of the working directory) and runs `conda env create --file <that copy> --prefix
<conda-prefix>/<hash>` from the working directory; conda (conda/env/installers/pip.py) writes the pip section to a
temporary requirements file beside the copy and runs `python -m pip install -U -r <it> --exists-action=b` from that
folder. Snakemake then copies envs/<name>.post-deploy.sh to <conda-prefix>/<hash>.post-deploy.sh and runs it, with the
environment active, from the working directory.

No conda here: the tests put a stand-in `conda` first on PATH that answers Snakemake's checks (info, version, channel
priority) and creates an environment as conda does, except that it makes a venv of this Python instead of solving the
conda packages (python, pip, the compiler) and runs the pip section exactly as conda's pip installer does. Snakemake
itself (`--sdm conda --conda-create-envs-only`) copies the files, picks the folders and runs the post-deploy scripts.
The torch environment is built without its CUDA set (constraints/lock-gpu.txt and the `[cuda13]` extra, > 3 GB of
wheels; CI's dry runs check that it resolves, .ci/lock_dry_run) and takes torch's CPU wheel where pip finds one.

Slow (a few minutes on 2 cores) and needs the package index: `pytest -m slow tests/foundation/test_env_install.py`.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

pytestmark = pytest.mark.slow

#: a target whose jobs use each environment (with --conda-create-envs-only nothing runs)
TARGETS = {"workflow": "cost_plan", "jax": "p2_l2_state_evolution", "torch": "gpu_doctor"}
#: what each environment's rules import besides smattn
IMPORTS = {
    "workflow": ["numpy", "matplotlib", "yaml", "jsonschema"],
    "jax": ["jax", "numpyro", "optax", "scipy", "matplotlib", "yaml", "jsonschema", "tqdm"],
    "torch": ["torch", "tokenizers", "PIL", "scipy", "matplotlib", "jax", "numpyro", "arviz", "optax", "tqdm"],
}
#: what the library needs to build besides its source
LIBRARY_FILES = ("pyproject.toml", "README.md", "src")

FAKE_CONDA = r'''#!{python}
"""A stand-in for conda: the calls Snakemake makes (conda info --json, conda --version, conda config --get
channel_priority --json, conda env create --file F --prefix P, conda clean), logged to {log}."""
import json, os, platform, subprocess, sys, tempfile, venv
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

args = sys.argv[1:]
with open({log!r}, "a") as log:
    log.write(json.dumps({{"argv": args, "cwd": os.getcwd()}}) + "\n")
if args == ["info", "--json"]:
    print(json.dumps({{"conda_prefix": {base!r}, "platform": "linux-64"}}))
elif args == ["--version"]:
    print("conda 25.1.1")
elif args[:3] == ["config", "--get", "channel_priority"]:
    print(json.dumps({{"get": {{"channel_priority": "strict"}}}}))
elif args[0] == "clean":
    pass  # no package cache (Snakemake's --conda-cleanup-pkgs, default tarballs)
elif args[:2] == ["env", "create"]:
    file, prefix = args[args.index("--file") + 1], args[args.index("--prefix") + 1]
    deps = yaml.safe_load(open(file))["dependencies"]
    python = next(d for d in deps if isinstance(d, str) and d.startswith("python"))
    if platform.python_version() not in SpecifierSet(python.removeprefix("python")):
        sys.exit(f"fake conda: {{python}} does not admit this Python, {{platform.python_version()}}")
    venv.create(prefix, with_pip=True)
    leave_out = set(filter(None, os.environ.get("FAKE_CONDA_LEAVE_OUT", "").split(",")))
    drop_extras = set(filter(None, os.environ.get("FAKE_CONDA_DROP_EXTRAS", "").split(",")))
    specs = []
    for spec in next(d["pip"] for d in deps if isinstance(d, dict) and "pip" in d):
        try:
            req = Requirement(spec)
        except Exception:
            specs.append(spec)  # "-e ..", a path: as it stands
            continue
        if canonicalize_name(req.name) in leave_out:
            continue
        if req.extras & drop_extras:
            req.extras -= drop_extras
            spec = str(req)
        specs.append(spec)
    # conda/env/pip_util.py get_pip_workdir and conda/env/installers/pip.py _pip_install_via_requirements
    workdir = os.path.dirname(os.path.abspath(file))
    workdir = workdir if os.access(workdir, os.W_OK) else None
    with open({log!r}, "a") as log:
        log.write(json.dumps({{"pip_cwd": workdir, "file": file, "prefix": prefix}}) + "\n")
    req = tempfile.NamedTemporaryFile("w", prefix="condaenv.", suffix=".requirements.txt", dir=workdir, delete=False)
    req.write("\n".join(specs))
    req.close()
    cmd = [os.path.join(prefix, "bin", "python"), "-m", "pip", "install", "-U", "-r", req.name, "--exists-action=b"]
    proc = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True)
    os.remove(req.name)
    print("Ran pip subprocess with arguments:", cmd, "Pip subprocess output:", proc.stdout, sep="\n")
    if proc.returncode:
        print("Pip subprocess error:", proc.stderr, sep="\n", file=sys.stderr)
        sys.exit("CondaEnvException: Pip failed")
else:
    sys.exit(f"fake conda: unexpected call {{args}}")
'''
ACTIVATE = 'export VIRTUAL_ENV="$1"\nexport PATH="$1/bin:$PATH"\nhash -r 2>/dev/null || true\n'


def fake_conda(base: Path) -> Path:
    """Write the stand-in conda (bin/conda, bin/activate) under ``base``; its call log."""
    (base / "bin").mkdir(parents=True)
    log = base / "calls.jsonl"
    conda = base / "bin" / "conda"
    conda.write_text(FAKE_CONDA.format(python=sys.executable, log=str(log), base=str(base)))
    conda.chmod(0o755)
    (base / "bin" / "activate").write_text(ACTIVATE)
    return log


def workflow_with_library(dest: Path, copy_workflow, repo: Path) -> Path:
    """A copy of the workflow together with what the post-deploy script installs the library from."""
    copy_workflow(dest)
    for name in LIBRARY_FILES:
        src = repo / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(src, dest / name)
    return dest


def create_envs(wd: Path, base: Path, targets, run_snakemake, env_extra=None):
    path = f"{base / 'bin'}{os.pathsep}{os.environ['PATH']}"
    args = ["--sdm", "conda", "--conda-create-envs-only", "--cores", "1", *targets]
    return run_snakemake(wd, args, env_extra={"PATH": path, **(env_extra or {})}, timeout=3000)


def gpu_lock_names(repo: Path) -> list[str]:
    lines = (repo / "constraints/lock-gpu.txt").read_text().splitlines()
    return [canonicalize_name(Requirement(ln).name) for ln in lines if ln and not ln.startswith("#")]


@pytest.fixture(scope="module")
def built(tmp_path_factory, copy_workflow, run_snakemake, repo):
    """The three environments, created by Snakemake in a copy of the workflow: (working dir, conda's call log,
    {env: prefix})."""
    wd = workflow_with_library(tmp_path_factory.mktemp("wf"), copy_workflow, repo)
    base = tmp_path_factory.mktemp("conda")
    log = fake_conda(base)
    leave_out = {"FAKE_CONDA_LEAVE_OUT": ",".join(gpu_lock_names(repo)), "FAKE_CONDA_DROP_EXTRAS": "cuda13"}
    proc = create_envs(wd, base, TARGETS.values(), run_snakemake, leave_out)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    prefixes = {}
    for copy in sorted((wd / ".snakemake" / "conda").glob("*.yaml")):
        prefixes[yaml.safe_load(copy.read_text())["name"].removeprefix("smattn-")] = copy.with_suffix("")
    return wd, log, prefixes


def in_env(prefix: Path, code: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(
        [str(prefix / "bin" / "python"), "-c", code], capture_output=True, text=True, env=env, cwd=prefix.parent
    )


def test_snakemake_copies_the_env_files_and_runs_pip_beside_the_copy(built, repo):
    wd, log, prefixes = built
    assert sorted(prefixes) == sorted(TARGETS)
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    creates = [c for c in calls if c.get("argv", [])[:2] == ["env", "create"]]
    assert len(creates) == 3 and all(c["cwd"] == str(wd) for c in creates)  # conda runs in the working directory
    pips = [c for c in calls if "pip_cwd" in c]
    assert {c["pip_cwd"] for c in pips} == {str(wd / ".snakemake" / "conda")}  # pip runs beside the copies
    for name, prefix in prefixes.items():
        assert prefix.parent == wd / ".snakemake" / "conda"
        assert prefix.with_suffix(".yaml").read_text() == (repo / "envs" / f"{name}.yaml").read_text()
        deploy = (repo / "envs" / f"{name}.post-deploy.sh").read_text()
        assert Path(f"{prefix}.post-deploy.sh").read_text() == deploy
        assert prefix.with_suffix(".env_setup_done").exists()


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_env_holds_the_library_and_the_locked_packages(built, repo, name):
    wd, _, prefixes = built
    prefix = prefixes[name]
    proc = in_env(prefix, f"import smattn, {', '.join(IMPORTS[name])}; print(smattn.__file__)")
    assert proc.returncode == 0, proc.stderr[-3000:]
    # the editable install of the post-deploy script: the checkout's source (here the copy's), not a copy of it
    assert Path(proc.stdout.strip()).is_relative_to(wd / "src" / "smattn")
    code = "import importlib.metadata as m, json; print(json.dumps({d.name: d.version for d in m.distributions()}))"
    proc = in_env(prefix, code)
    installed = {canonicalize_name(n): Version(v) for n, v in json.loads(proc.stdout).items()}
    spec = yaml.safe_load((repo / "envs" / f"{name}.yaml").read_text())["dependencies"]
    listed = [Requirement(s) for s in next(d["pip"] for d in spec if isinstance(d, dict) and "pip" in d)]
    expected = {canonicalize_name(r.name): Version(next(iter(r.specifier)).version) for r in listed}
    for left_out in gpu_lock_names(repo):
        expected.pop(left_out, None)
    got = {n: Version(v.public) for n, v in installed.items() if n not in ("pip", "smattn")}
    assert got == expected  # the env file's pins, nothing more (pip, from the venv, aside)
    # the pinned set is consistent: pip check finds nothing but smattn's requirements, which --no-deps skipped
    check = subprocess.run(
        [str(prefix / "bin" / "python"), "-m", "pip", "check"], capture_output=True, text=True, cwd=wd
    )
    assert [ln for ln in check.stdout.splitlines() if not ln.startswith("smattn ")] == [], check.stdout


def test_a_relative_path_in_an_env_file_misses_the_repository(tmp_path, copy_workflow, run_snakemake, repo):
    """What the environments did before their post-deploy scripts: `-e ..` in the pip section. conda runs pip in
    .snakemake/conda/, so `..` is .snakemake, not the repository, and the environment fails to build."""
    wd = workflow_with_library(tmp_path / "wf", copy_workflow, repo)
    env = wd / "envs" / "workflow.yaml"
    env.write_text(env.read_text() + "      - -e ..  # the smattn library of this repository\n")
    base = tmp_path / "conda"
    fake_conda(base)
    proc = create_envs(wd, base, [TARGETS["workflow"]], run_snakemake)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-3000:]
    assert "does not appear to be a Python project" in out and str(wd / ".snakemake") in out, out[-3000:]
