"""Rule cost_table (and group_costs): the jobs' benchmark files gathered into per-job and per-group cost tables (CSV,
HTML, Markdown), with the run's critical path and ideal time beside its measured span; with the run's cost plan as
input (rule cost_table), the plan's projections against the measured costs."""

import os
from dataclasses import replace

from smattn.costs import (
    CHECK_COLUMNS,
    describe_machine,
    human_duration,
    job_cost,
    plan_check,
    run_cpu_s,
    schedule,
    write_cost_tables,
)
from smattn.io import write_csv
from smattn.scriptio import run


def main(io):
    paths = [io.input.benchmarks] if isinstance(io.input.benchmarks, str) else [str(p) for p in io.input.benchmarks]
    # {benchmark path: {"group", "rule", "wildcards"[, "threads", "after"]}}, the paths relative to the workflow's
    # directory (a job built standalone with --rule has absolute input paths: compared as absolute paths)
    described = dict(io.params.jobs)
    named = {os.path.abspath(k): k for k in described}
    given = {os.path.abspath(p): p for p in paths}
    if set(given) != set(named):
        raise ValueError(
            f"benchmark files without a job description: {sorted(given[p] for p in set(given) - set(named))}; "
            f"job descriptions without a benchmark file: {sorted(named[p] for p in set(named) - set(given))}"
        )
    jobs = []
    for p, path in given.items():
        d = described[named[p]]
        jobs.append(replace(job_cost(path, d["group"], d["rule"], d["wildcards"]), benchmark=named[p]))
    cores = int(getattr(io.params, "cores", None) or os.cpu_count() or 1)
    sched = schedule(jobs, described, cores)
    o = io.output
    # the machine this job runs on: the run's machine under the local profile (on a cluster, the node of this job)
    machine = describe_machine()
    # the whole run's CPU as the kernel counts it: Snakemake's process and every job of this invocation that ended
    run_cpu = run_cpu_s()
    groups = write_cost_tables(jobs, io.params.scale, o.jobs, o.groups, o.html, o.readme, sched, machine, run_cpu)
    print(f"machine: {machine}")
    print(
        "CPU of the Snakemake process and every process it waited for: "
        + ("n/a" if run_cpu is None else f"{run_cpu:.1f} s")
    )
    total = groups[-1]
    cpu = "n/a" if total.cpu_s is None else f"{total.cpu_s:.1f} s"
    print(f"{total.jobs} jobs in {len(groups) - 1} groups, summed: wall {total.wall_s:.1f} s, CPU {cpu}")
    print(
        f"span {human_duration(sched.span_s)}, critical path {human_duration(sched.critical_path_s)}, "
        f"ideal on {cores} cores {human_duration(sched.ideal_s)}"
    )
    if getattr(io.input, "plan", None) and getattr(o, "check", None):
        rows = plan_check(jobs, io.input.plan)
        write_csv(o.check, CHECK_COLUMNS, rows)
        long = [float(r[5]) for r in rows if r[5] and float(r[3]) > 60]
        if long:
            print(f"plan check, jobs over 1 CPU-min: measured / projected from {min(long):.2f} to {max(long):.2f}")


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
