"""Rule cost_table: the jobs' benchmark files gathered into per-job and per-group cost tables (CSV, HTML, Markdown)."""

from smattn.costs import job_cost, write_cost_tables
from smattn.scriptio import run


def main(io):
    paths = [io.input.benchmarks] if isinstance(io.input.benchmarks, str) else [str(p) for p in io.input.benchmarks]
    described = dict(io.params.jobs)  # {benchmark path: {"group", "rule", "wildcards"}}
    if set(paths) != set(described):
        raise ValueError(
            f"benchmark files without a job description: {sorted(set(paths) - set(described))}; "
            f"job descriptions without a benchmark file: {sorted(set(described) - set(paths))}"
        )
    jobs = [job_cost(p, described[p]["group"], described[p]["rule"], described[p]["wildcards"]) for p in paths]
    o = io.output
    groups = write_cost_tables(jobs, io.params.scale, o.jobs, o.groups, o.html, o.readme)
    total = groups[-1]
    cpu = "n/a" if total.cpu_s is None else f"{total.cpu_s:.1f} s"
    print(f"{total.jobs} jobs in {len(groups) - 1} groups, summed: wall {total.wall_s:.1f} s, CPU {cpu}")


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
