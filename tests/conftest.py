"""Shared fixtures: the repository root and the raw-data mirror (SMATTN_DATA_MIRROR, else ../shared/data)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def mirror_dir() -> Path | None:
    env = os.environ.get("SMATTN_DATA_MIRROR")
    for cand in ([Path(env)] if env else []) + [REPO.parent / "shared" / "data"]:
        if cand.is_dir():
            return cand
    return None


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def raw_data() -> Path:
    """The folder of raw files laid out like ../shared/data; tests needing it skip, loudly, without it."""
    path = mirror_dir()
    if path is None:
        pytest.skip("no raw-data mirror: set SMATTN_DATA_MIRROR or place the shared data folder beside the repo")
    return path


@pytest.fixture(scope="session")
def omniglot_zips(raw_data) -> dict[str, str]:
    return {
        "images_background": str(raw_data / "omniglot" / "images_background.zip"),
        "images_evaluation": str(raw_data / "omniglot" / "images_evaluation.zip"),
    }
