"""What each job of a run cost: Snakemake's benchmark files gathered into a per-job and per-group table.

A benchmark file is the tab-separated table Snakemake writes for a job with a ``benchmark:`` directive: a header
``s  h:m:s  max_rss  max_vms  max_uss  max_pss  io_in  io_out  mean_load  cpu_time`` (more columns in its extended
format) and one row per run of the job (more than one only with ``repeat(...)``). Units: ``s`` and ``cpu_time`` in
seconds, ``max_rss`` in MB (2**20 bytes); ``NA`` (or ``-``) where the value could not be measured, e.g. for a job
that ended before the first sample. The file is written when the job ends, so its modification time is the job's
end time.

This module reads those files and writes the tables; which files belong to a run is the workflow's business
(``rules/report.smk``).
"""

from __future__ import annotations

import csv
import datetime as dt
import html
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from . import io as sio

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


def _aggregate(group: str, jobs: Sequence[JobCost]) -> GroupCost:
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
    return [_aggregate(g, js) for g, js in groups.items()] + [_aggregate(TOTAL, list(jobs))]


def span_s(jobs: Sequence[JobCost]) -> float:
    """Seconds from the first job's start to the last job's end: the run's elapsed time when every job ran in the
    same run (jobs kept from an earlier run stretch it). 0 for no jobs."""
    if not jobs:
        return 0.0
    return (max(j.finished for j in jobs) - min(j.started for j in jobs)).total_seconds()


def critical_path(durations: Mapping[str, float], after: Mapping[str, Sequence[str]]) -> tuple[float, list[str]]:
    """Length (s) and jobs of the longest chain of ``durations`` ({job: s}) through ``after`` ({job: the jobs it
    waits for}; jobs without a duration count 0). ``(0.0, [])`` for no jobs."""
    best: dict[str, tuple[float, list[str]]] = {}

    def visit(j: str, stack: tuple = ()) -> tuple[float, list[str]]:
        if j in best:
            return best[j]
        if j in stack:
            raise ValueError(f"dependency cycle through {j}")
        prev = [visit(k, (*stack, j)) for k in after.get(j, ()) if k in durations]
        length, path = max(prev, key=lambda x: x[0], default=(0.0, []))
        best[j] = (length + durations[j], [*path, j])
        return best[j]

    return max((visit(j) for j in durations), key=lambda x: x[0], default=(0.0, []))


def ideal_time(
    durations: Mapping[str, float], threads: Mapping[str, int], after: Mapping[str, Sequence[str]], cores: int
) -> float:
    """Lower bound (s) of the elapsed time of the jobs on ``cores`` cores: the longer of the critical path and the
    core-seconds of all jobs (duration x threads, threads capped at the cores) spread evenly over the cores."""
    core_s = sum(d * min(int(threads.get(j, 1)), cores) for j, d in durations.items())
    return max(critical_path(durations, after)[0], core_s / max(int(cores), 1))


@dataclass(frozen=True)
class Schedule:
    """What bounds a run's elapsed time: its measured span, the critical path of its jobs' measured wall times
    through their dependencies, and the ideal (shortest possible) time on ``cores`` cores."""

    span_s: float
    critical_path_s: float
    critical_path: tuple[str, ...]
    ideal_s: float
    cores: int


def schedule(jobs: Sequence[JobCost], specs: Mapping[str, Mapping], cores: int) -> Schedule:
    """The Schedule of ``jobs`` (their benchmark paths are the keys of ``specs``, each with ``threads`` and ``after``,
    the benchmarks of the jobs it waits for)."""
    durations = {j.benchmark: j.wall_s for j in jobs}
    after = {b: list(specs[b].get("after", ())) for b in durations}
    threads = {b: int(specs[b].get("threads", 1)) for b in durations}
    length, path = critical_path(durations, after)
    names = {j.benchmark: f"{j.rule} {j.wildcards}".strip() for j in jobs}
    return Schedule(
        span_s(jobs), length, tuple(names[b] for b in path), ideal_time(durations, threads, after, cores), cores
    )


def _cell(x: float | None, digits: int = 2) -> str:
    return "" if x is None else f"{x:.{digits}f}"


def _stamp(t: dt.datetime) -> str:
    return t.isoformat(timespec="seconds")


def job_rows(jobs: Sequence[JobCost]) -> list[list[str]]:
    """Rows of ``jobs.csv`` (columns JOB_COLUMNS; times in s, memory in MB, empty where unmeasured)."""
    return [
        [
            j.group,
            j.rule,
            j.wildcards,
            _cell(j.wall_s),
            _cell(j.cpu_s),
            _cell(j.max_rss_mb),
            _stamp(j.started),
            _stamp(j.finished),
            j.benchmark,
        ]
        for j in jobs
    ]


def group_rows(groups: Sequence[GroupCost]) -> list[list[str]]:
    """Rows of ``groups.csv`` (columns GROUP_COLUMNS)."""
    return [[g.group, str(g.jobs), _cell(g.wall_s), _cell(g.cpu_s), _cell(g.max_rss_mb)] for g in groups]


def human_duration(seconds: float | None) -> str:
    """``987.4`` -> ``"16.5 min"``; under two minutes in seconds (``"42 s"``), from two hours in hours."""
    if seconds is None:
        return "n/a"
    if seconds < 120:
        return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def schedule_text(s: Schedule) -> str:
    """One sentence: measured span, critical path (its longest jobs named) and ideal time on the run's cores."""
    return (
        f"first start to last end {human_duration(s.span_s)}; critical path {human_duration(s.critical_path_s)} "
        f"({' -> '.join(s.critical_path)}); ideal time on {s.cores} cores {human_duration(s.ideal_s)}"
    )


def costs_html(jobs: Sequence[JobCost], groups: Sequence[GroupCost], scale: str, sched: Schedule | None = None) -> str:
    """A standalone HTML page: the per-group table (with the total) and the per-job table."""

    def table(header: Sequence[str], rows: Iterable[Sequence[str]], numeric: set[int], bold_last=False) -> str:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
        rows = list(rows)
        body = []
        for i, row in enumerate(rows):
            style = ' style="font-weight:bold"' if bold_last and i == len(rows) - 1 else ""
            cells = "".join(
                f"<td{' class=num' if k in numeric else ''}>{html.escape(c)}</td>" for k, c in enumerate(row)
            )
            body.append(f"<tr{style}>{cells}</tr>")
        return f"<table><tr>{head}</tr>{''.join(body)}</table>"

    job_header = ["group", "rule", "wildcards", "wall (s)", "CPU (s)", "max RSS (MB)", "started", "finished"]
    group_header = ["group", "jobs", "wall, summed (s)", "CPU, summed (s)", "max RSS (MB)"]
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>Cost of each job</title>"
        "<style>body{font-family:sans-serif;font-size:13px}table{border-collapse:collapse;margin-bottom:1em}"
        "td,th{border:1px solid #999;padding:3px 6px;vertical-align:top;white-space:nowrap}td.num{text-align:right}"
        "</style>"
        "</head><body>"
        f"<h2>What each job cost (scale: {html.escape(scale)})</h2>"
        f"<p>{len(jobs)} jobs; "
        + html.escape(schedule_text(sched) if sched else f"first start to last end {human_duration(span_s(jobs))}")
        + ". "
        "Wall and CPU time and peak resident memory as measured by Snakemake's benchmark of each job.</p>"
        "<h3>Per figure group</h3>"
        + table(group_header, group_rows(groups), {1, 2, 3, 4}, bold_last=True)
        + "<h3>Per job</h3>"
        + table(job_header, [r[:8] for r in job_rows(jobs)], {3, 4, 5})
        + "</body></html>\n"
    )


def readme_cell(jobs: Sequence[JobCost], groups: Sequence[GroupCost], sched: Schedule | None = None) -> str:
    """The README scales table's timing cell, one short line: jobs, elapsed time (with the critical path and the
    ideal time on the run's cores), CPU time, peak memory."""
    total = groups[-1] if groups else _aggregate(TOTAL, [])
    wall = human_duration(span_s(jobs))
    if sched is not None:
        wall += (
            f" wall (critical path {human_duration(sched.critical_path_s)}, ideal on {sched.cores} cores "
            f"{human_duration(sched.ideal_s)})"
        )
    rss = "n/a" if total.max_rss_mb is None else f"{total.max_rss_mb / 1024:.1f} GB"
    return f"{len(jobs)} jobs: {wall}, {human_duration(total.cpu_s)} CPU, peak {rss}"


def readme_table(
    jobs: Sequence[JobCost], groups: Sequence[GroupCost], scale: str, sched: Schedule | None = None
) -> str:
    """Markdown for the README: the scales table's timing cell for ``scale`` and a per-group table."""
    per_group = [g for g in groups if g.group != TOTAL]
    total = groups[-1] if groups else _aggregate(TOTAL, [])
    by_wall = sorted(per_group, key=lambda g: g.wall_s, reverse=True)
    detail = (
        f"{len(jobs)} jobs, {human_duration(span_s(jobs))} ({span_s(jobs):.0f} s) from the first start to the last "
        "end. "
        "Job time summed per group: " + ", ".join(f"{g.group} {human_duration(g.wall_s)}" for g in by_wall) + "."
    )
    if sched is not None:
        detail += f" Critical path: {' -> '.join(sched.critical_path)}."
    lines = [
        f"Timing cell of the scales table (scale `{scale}`):",
        "",
        readme_cell(jobs, groups, sched),
        "",
        detail,
        "",
        "| group | jobs | wall, summed | CPU, summed | max RSS (MB) |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for g in [*per_group, total]:
        name = f"**{g.group}**" if g.group == TOTAL else f"`{g.group}`"
        lines.append(
            f"| {name} | {g.jobs} | {human_duration(g.wall_s)} | {human_duration(g.cpu_s)} | "
            f"{_cell(g.max_rss_mb, 0) or 'n/a'} |"
        )
    return "\n".join(lines) + "\n"


def write_cost_tables(
    jobs: Sequence[JobCost],
    scale: str,
    jobs_csv: str | os.PathLike,
    groups_csv: str | os.PathLike,
    html_path: str | os.PathLike,
    markdown_path: str | os.PathLike,
    sched: Schedule | None = None,
) -> list[GroupCost]:
    """Write jobs.csv, groups.csv, the HTML page and the README snippet (each atomically); return the group rows."""
    groups = group_costs(jobs)
    sio.write_csv(jobs_csv, JOB_COLUMNS, job_rows(jobs))
    sio.write_csv(groups_csv, GROUP_COLUMNS, group_rows(groups))
    sio.write_text(html_path, costs_html(jobs, groups, scale, sched))
    sio.write_text(markdown_path, readme_table(jobs, groups, scale, sched))
    return groups
