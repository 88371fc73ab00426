"""What each job of a run cost: Snakemake's benchmark files read into per-job and per-group rows.

A benchmark file is the tab-separated table Snakemake writes for a job with a ``benchmark:`` directive: a header
``s  h:m:s  max_rss  max_vms  max_uss  max_pss  io_in  io_out  mean_load  cpu_time`` (more columns in its extended
format) and one row per run of the job (more than one only with ``repeat(...)``). Units: ``s`` and ``cpu_time`` in
seconds, ``max_rss`` in MB (2**20 bytes); ``NA`` (or ``-``) where the value could not be measured, e.g. for a job
that ended before the first sample. The file is written when the job ends, so its modification time is the job's
end time.

A job's wildcards are kept as text, ``"name=value name=value"`` in declaration order (``format_wildcards``, read
back by ``parse_wildcards``). Which files belong to a run is the workflow's business (``rules/report.smk``).
"""

from __future__ import annotations

import csv
import datetime as dt
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

#: columns every benchmark file has (Snakemake's plain format)
BENCHMARK_COLUMNS = (
    "s",
    "h:m:s",
    "max_rss",
    "max_vms",
    "max_uss",
    "max_pss",
    "io_in",
    "io_out",
    "mean_load",
    "cpu_time",
)
JOB_COLUMNS = ("group", "rule", "wildcards", "wall_s", "cpu_s", "max_rss_mb", "started", "finished", "benchmark")
GROUP_COLUMNS = ("group", "jobs", "wall_s", "cpu_s", "max_rss_mb")
TOTAL = "total"
_MISSING = {"NA", "-", ""}


@dataclass(frozen=True)
class JobCost:
    """Cost of one job. Times in seconds, memory in MB; None where Snakemake could not measure it. ``finished`` is
    the end of the job (the benchmark file's modification time), ``wall_s`` summed over repeats."""

    group: str
    rule: str
    wildcards: str
    wall_s: float
    cpu_s: float | None
    max_rss_mb: float | None
    finished: dt.datetime
    benchmark: str

    @property
    def started(self) -> dt.datetime:
        return self.finished - dt.timedelta(seconds=self.wall_s)


@dataclass(frozen=True)
class GroupCost:
    """Summed wall and CPU time (s) and the largest max RSS (MB) of the jobs of one group (or of all: ``total``).
    A sum over jobs with an unmeasured CPU time counts only the measured ones; None if none was measured."""

    group: str
    jobs: int
    wall_s: float
    cpu_s: float | None
    max_rss_mb: float | None


def _number(text: str, column: str, path) -> float | None:
    text = text.strip()
    if text in _MISSING:
        return None
    try:
        return float(text)
    except ValueError as exc:
        raise ValueError(f"{path}: column {column!r} holds {text!r}, not a number") from exc


def read_benchmark(path: str | os.PathLike) -> dict:
    """Wall time, CPU time and max RSS of the job that wrote benchmark file ``path``.

    Returns ``{"wall_s": float, "cpu_s": float | None, "max_rss_mb": float | None, "runs": int}``: times summed
    over the rows (repeats), memory the largest; an unmeasured value (``NA``) is left out of the sum and the
    maximum, and is None if no row has it. Raises ValueError naming the file for a missing column, an empty table
    or a field that is not a number."""
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
        header = rows[0].keys() if rows else []
    if not rows:
        raise ValueError(f"{path}: no benchmark rows (an empty or header-only file)")
    missing = [c for c in ("s", "max_rss", "cpu_time") if c not in header]
    if missing:
        raise ValueError(f"{path}: not a Snakemake benchmark file (no column {', '.join(map(repr, missing))})")
    wall = [_number(r["s"], "s", path) for r in rows]
    if any(w is None for w in wall):
        raise ValueError(f"{path}: a row has no wall time 's'")
    cpu = [v for r in rows if (v := _number(r["cpu_time"], "cpu_time", path)) is not None]
    rss = [v for r in rows if (v := _number(r["max_rss"], "max_rss", path)) is not None]
    return {
        "wall_s": float(sum(wall)),
        "cpu_s": float(sum(cpu)) if cpu else None,
        "max_rss_mb": max(rss) if rss else None,
        "runs": len(rows),
    }


def format_wildcards(wildcards: Mapping[str, object]) -> str:
    """``{"variant": "all", "N": 10}`` -> ``"variant=all N=10"`` (declaration order; "" for none)."""
    return " ".join(f"{k}={v}" for k, v in wildcards.items())


def parse_wildcards(text: str) -> dict[str, str]:
    """``"model=L2H4 N=10"`` -> ``{"model": "L2H4", "N": "10"}`` (the cost table's wildcards column)."""
    return dict(item.split("=", 1) for item in text.split()) if text else {}


def job_cost(path: str | os.PathLike, group: str, rule: str, wildcards: str = "") -> JobCost:
    """The cost of the job of ``rule`` (in figure group ``group``, with wildcards as text) from its benchmark file."""
    b = read_benchmark(path)
    finished = dt.datetime.fromtimestamp(Path(path).stat().st_mtime).astimezone()
    return JobCost(group, rule, wildcards, b["wall_s"], b["cpu_s"], b["max_rss_mb"], finished, str(path))


def _sum(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return float(sum(known)) if known else None


def _max(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


def aggregate(group: str, jobs: Sequence[JobCost]) -> GroupCost:
    """The GroupCost row named ``group`` of ``jobs`` (all of them, whatever their own group)."""
    return GroupCost(
        group,
        len(jobs),
        float(sum(j.wall_s for j in jobs)),
        _sum(j.cpu_s for j in jobs),
        _max(j.max_rss_mb for j in jobs),
    )


def group_costs(jobs: Sequence[JobCost]) -> list[GroupCost]:
    """One row per group (in the order the groups first appear in ``jobs``), then the ``total`` row."""
    groups: dict[str, list[JobCost]] = {}
    for j in jobs:
        if j.group == TOTAL:
            raise ValueError(f"{TOTAL!r} is reserved for the total row and cannot name a group")
        groups.setdefault(j.group, []).append(j)
    return [aggregate(g, js) for g, js in groups.items()] + [aggregate(TOTAL, list(jobs))]


def span_s(jobs: Sequence[JobCost]) -> float:
    """Seconds from the first job's start to the last job's end: the run's elapsed time when every job ran in the
    same run (jobs kept from an earlier run stretch it). 0 for no jobs."""
    if not jobs:
        return 0.0
    return (max(j.finished for j in jobs) - min(j.started for j in jobs)).total_seconds()
