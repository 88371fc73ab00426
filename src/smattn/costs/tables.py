"""The cost tables of a run, written: per-job and per-group CSV, a standalone HTML page and the Markdown snippet of
the scales table's timing cell (docs/scales.md), and the measured CPU time of every job against the cost plan's
projection.

Columns: ``JOB_COLUMNS`` and ``GROUP_COLUMNS`` (``measured``), ``CHECK_COLUMNS`` for the plan check. Times in
seconds with two decimals, memory in MB, an empty cell where Snakemake could not measure a value; in the HTML and
Markdown, durations in human units (``human_duration``: s, min, h).
"""

from __future__ import annotations

import csv
import datetime as dt
import html
import os
from collections.abc import Iterable, Sequence

from .. import io as sio
from .measured import GROUP_COLUMNS, JOB_COLUMNS, TOTAL, GroupCost, JobCost, aggregate, group_costs, span_s
from .schedule import Schedule


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


def costs_html(
    jobs: Sequence[JobCost],
    groups: Sequence[GroupCost],
    scale: str,
    sched: Schedule | None = None,
    machine: str | None = None,
) -> str:
    """A standalone HTML page: the per-group table (with the total) and the per-job table; the machine, when given."""

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
        "Wall and CPU time and peak resident memory as measured by Snakemake's benchmark of each job"
        + (f", on {html.escape(machine)}" if machine else "")
        + ".</p>"
        "<h3>Per figure group</h3>"
        + table(group_header, group_rows(groups), {1, 2, 3, 4}, bold_last=True)
        + "<h3>Per job</h3>"
        + table(job_header, [r[:8] for r in job_rows(jobs)], {3, 4, 5})
        + "</body></html>\n"
    )


def readme_cell(
    jobs: Sequence[JobCost],
    groups: Sequence[GroupCost],
    sched: Schedule | None = None,
    machine: str | None = None,
    run_cpu_s: float | None = None,
) -> str:
    """The timing cell of the scales table (docs/scales.md), one short line: jobs, elapsed time (with the critical
    path and the ideal time on the run's cores), CPU time, peak memory, and the machine
    (:func:`smattn.costs.machine.describe_machine`) when given. ``run_cpu_s``: the whole run's CPU as the kernel counts
    it (:func:`smattn.costs.process.run_cpu_s`), shown beside the jobs' own where it is at least theirs (a smaller
    count did not see the jobs: a cluster, or jobs of an earlier invocation)."""
    total = groups[-1] if groups else aggregate(TOTAL, [])
    wall = human_duration(span_s(jobs))
    if sched is not None:
        wall += (
            f" wall (critical path {human_duration(sched.critical_path_s)}, ideal on {sched.cores} cores "
            f"{human_duration(sched.ideal_s)})"
        )
    rss = "n/a" if total.max_rss_mb is None else f"{total.max_rss_mb / 1024:.1f} GB"
    on = f", on {machine}" if machine else ""
    cpu = f"{human_duration(total.cpu_s)} CPU"
    if run_cpu_s is not None and total.cpu_s is not None and run_cpu_s >= total.cpu_s:
        whole = human_duration(run_cpu_s)
        cpu = f"{human_duration(total.cpu_s)} CPU in the jobs ({whole} with Snakemake and every process)"
    return f"{len(jobs)} jobs: {wall}, {cpu}, peak {rss}{on}"


def readme_table(
    jobs: Sequence[JobCost],
    groups: Sequence[GroupCost],
    scale: str,
    sched: Schedule | None = None,
    machine: str | None = None,
    run_cpu_s: float | None = None,
) -> str:
    """Markdown for docs/scales.md: the scales table's timing cell for ``scale`` (``readme_cell``) and a per-group
    table."""
    per_group = [g for g in groups if g.group != TOTAL]
    total = groups[-1] if groups else aggregate(TOTAL, [])
    by_wall = sorted(per_group, key=lambda g: g.wall_s, reverse=True)
    detail = (
        f"{len(jobs)} jobs, {human_duration(span_s(jobs))} ({span_s(jobs):.0f} s) from the first start to the last "
        "end. "
        "Job time summed per group: " + ", ".join(f"{g.group} {human_duration(g.wall_s)}" for g in by_wall) + "."
    )
    if sched is not None:
        detail += f" Critical path: {' -> '.join(sched.critical_path)}."
        if sched.longest_on_path is not None:
            name, sec = sched.longest_on_path
            share = sec / sched.critical_path_s if sched.critical_path_s > 0 else float("nan")
            detail += f" The job that held it longest: {name}, {human_duration(sec)} ({100 * share:.0f} % of the path)."
    lines = [
        f"Timing cell of the scales table (scale `{scale}`):",
        "",
        readme_cell(jobs, groups, sched, machine, run_cpu_s),
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
    machine: str | None = None,
    run_cpu_s: float | None = None,
) -> list[GroupCost]:
    """Write jobs.csv, groups.csv, the HTML page and the scales-table snippet (each atomically); return the group rows.
    ``machine``: the line that names the machine the jobs ran on (:func:`smattn.costs.machine.describe_machine`);
    ``run_cpu_s``: the whole run's CPU (``readme_cell``)."""
    groups = group_costs(jobs)
    sio.write_csv(jobs_csv, JOB_COLUMNS, job_rows(jobs))
    sio.write_csv(groups_csv, GROUP_COLUMNS, group_rows(groups))
    sio.write_text(html_path, costs_html(jobs, groups, scale, sched, machine))
    sio.write_text(markdown_path, readme_table(jobs, groups, scale, sched, machine, run_cpu_s))
    return groups


CHECK_COLUMNS = ("group", "rule", "wildcards", "measured_cpu_s", "projected_cpu_s", "ratio", "measured_wall_s")


def plan_check(jobs: Sequence[JobCost], plan_path: str | os.PathLike) -> list[list[str]]:
    """Rows (CHECK_COLUMNS) of the measured CPU time of every job against the plan's projection (ratio measured /
    projected; empty where either is unknown or the job ran on a GPU)."""
    with open(plan_path, newline="", encoding="utf-8") as fh:
        plan = {(r["rule"], r["wildcards"]): r for r in csv.DictReader(fh)}
    rows = []
    for j in jobs:
        p = plan.get((j.rule, j.wildcards), {})
        proj = 3600 * float(p["cpu_h"]) if p.get("cpu_h") and p.get("device") == "cpu" else None
        ratio = f"{j.cpu_s / proj:.3f}" if proj and j.cpu_s is not None else ""
        cells = [j.group, j.rule, j.wildcards, "" if j.cpu_s is None else f"{j.cpu_s:.2f}"]
        rows.append(cells + ["" if proj is None else f"{proj:.2f}", ratio, f"{j.wall_s:.2f}"])
    return rows
