"""Shared fixtures: the repository root, the raw-data mirror (SMATTN_DATA_MIRROR, else ../shared/data), and
``requirement_missing`` (``missing_requirement``): how a test that needs something the machine lacks (the mirror,
SLURM and root, Chromium) ends: skipped with the reason on a developer's machine, failed under CI (``CI=true``), where
nothing may pass by being skipped."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: what a copy of the workflow needs to run (the library comes from the installed package; no results are copied)
WORKFLOW_FILES = (
    "Snakefile",
    "config.yaml",
    "rules",
    "scripts",
    "schemas",
    "report",
    "claims",
    "envs",
    "profiles",
)


def copy_workflow_to(dest: Path) -> Path:
    """A copy of the repository's workflow in ``dest`` (created if missing), so that test runs never touch the
    developer's outputs. Returns ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in WORKFLOW_FILES:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif src.exists():
            shutil.copy2(src, dest / name)
    return dest


def snakemake_in(cwd: Path, args: list[str], env_extra: dict | None = None, timeout: float = 600):
    """``python -m snakemake ARGS`` in ``cwd`` with the environment plus ``env_extra``; the CompletedProcess (text
    output captured, no exception on failure)."""
    env = {**os.environ, **(env_extra or {})}
    return subprocess.run(
        [sys.executable, "-m", "snakemake", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def under_ci(environ=None) -> bool:
    """Whether this is a CI run (``CI`` set to true, 1 or yes, as CI services and ``.ci/run`` set it)."""
    return (os.environ if environ is None else environ).get("CI", "").strip().lower() in ("true", "1", "yes")


def missing_requirement(reason: str):
    """End the calling test (or fixture) because the machine lacks what ``reason`` names: ``pytest.fail`` under CI
    (``under_ci``), ``pytest.skip`` elsewhere. Never returns."""
    if under_ci():
        pytest.fail(f"CI=true and this machine lacks a test's requirement: {reason}", pytrace=False)
    pytest.skip(reason)


def mirror_dir() -> Path | None:
    env = os.environ.get("SMATTN_DATA_MIRROR")
    for cand in ([Path(env)] if env else []) + [REPO.parent / "shared" / "data"]:
        if cand.is_dir():
            return cand
    return None


@pytest.fixture(scope="session")
def requirement_missing():
    """``requirement_missing(reason)``: ``missing_requirement`` for tests and fixtures in other folders."""
    return missing_requirement


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def copy_workflow():
    """``copy_workflow(dest) -> dest``: a copy of the workflow (its files, no results) in the folder ``dest``."""
    return copy_workflow_to


@pytest.fixture(scope="session")
def run_snakemake():
    """``run_snakemake(cwd, args, env_extra=None, timeout=600)``: Snakemake run in a folder (``snakemake_in``)."""
    return snakemake_in


@pytest.fixture(scope="session")
def raw_data() -> Path:
    """The folder of raw files laid out like ../shared/data; tests needing it skip, loudly, without it (fail under
    CI: ``missing_requirement``)."""
    path = mirror_dir()
    if path is None:
        missing_requirement(
            "no raw-data mirror: set SMATTN_DATA_MIRROR or place the shared data folder beside the repo"
        )
    return path


@pytest.fixture(scope="session")
def omniglot_zips(raw_data) -> dict[str, str]:
    return {
        "images_background": str(raw_data / "omniglot" / "images_background.zip"),
        "images_evaluation": str(raw_data / "omniglot" / "images_evaluation.zip"),
    }
