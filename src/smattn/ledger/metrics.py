"""The metrics ledger: flat ``{id: number}`` files of the analysis rules joined into one."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ..io import read_json


def merge_metrics(paths: Iterable[str | Path]) -> dict[str, float]:
    """Join metrics files into one ``{id: number}`` dict, sorted by id; duplicate ids raise ValueError."""
    merged: dict[str, float] = {}
    origin: dict[str, str] = {}
    for path in paths:
        data = read_json(path)
        if not isinstance(data, dict):
            raise ValueError(f"{path}: a metrics file must hold a JSON object {{id: number}}")
        for key, value in data.items():
            if key in merged:
                raise ValueError(f"metric {key!r} is written by both {origin[key]} and {path}")
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise ValueError(f"{path}: metric {key!r} has non-numeric value {value!r}")
            merged[key] = float(value)
            origin[key] = str(path)
    return dict(sorted(merged.items()))
