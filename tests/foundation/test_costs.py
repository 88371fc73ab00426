"""What a run cost (smattn.costs.measured, schedule, tables): Snakemake benchmark files (synthetic, in Snakemake's own
format) read, aggregated and written, the critical path and ideal time, the measured costs against the plan."""

from __future__ import annotations

import csv
import datetime as dt
import json
import os
import subprocess
import sys

import pytest

from smattn import costs

HEADER = "\t".join(costs.BENCHMARK_COLUMNS)
EXTENDED = HEADER + "\tjobid\trule_name\twildcards\tparams\tthreads\tcpu_usage\tresources\tinput_size_mb"
T0 = dt.datetime(2026, 5, 1, 12, 0, 0).timestamp()


def bench(path, rows, end=T0, header=HEADER):
    """Write a benchmark file with rows (s, max_rss, cpu_time) as Snakemake does; its mtime is the job's end."""
    lines = [header]
    for s, rss, cpu in rows:
        hms = str(dt.timedelta(seconds=int(s)))
        extra = "\t3\tr\t{}\t{}\t1\t1.0\t{}\t{}" if header == EXTENDED else ""
        lines.append(f"{s:.4f}\t{hms}\t{rss}\t{rss}\t{rss}\t{rss}\t0.00\t0.00\t95.00\t{cpu}{extra}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    os.utime(path, (end, end))
    return path


def test_read_benchmark_one_row(tmp_path):
    p = bench(tmp_path / "a.tsv", [(12.5, "310.25", "11.75")])
    assert costs.read_benchmark(p) == {"wall_s": 12.5, "cpu_s": 11.75, "max_rss_mb": 310.25, "runs": 1}


def test_read_benchmark_extended_format_and_repeats(tmp_path):
    p = bench(tmp_path / "a.tsv", [(2.0, "100.00", "1.50"), (3.0, "250.00", "2.50")], header=EXTENDED)
    assert costs.read_benchmark(p) == {"wall_s": 5.0, "cpu_s": 4.0, "max_rss_mb": 250.0, "runs": 2}


def test_read_benchmark_unmeasured_values(tmp_path):
    """A job that ended before the first sample has NA for memory and CPU: kept as None, not as 0."""
    p = bench(tmp_path / "fast.tsv", [(0.2, "NA", "NA")])
    assert costs.read_benchmark(p) == {"wall_s": 0.2, "cpu_s": None, "max_rss_mb": None, "runs": 1}
    p = bench(tmp_path / "mixed.tsv", [(0.2, "NA", "NA"), (4.0, "80.00", "3.00")])
    assert costs.read_benchmark(p) == {"wall_s": 4.2, "cpu_s": 3.0, "max_rss_mb": 80.0, "runs": 2}


@pytest.mark.parametrize(
    "text, match",
    [
        ("", "no benchmark rows"),
        (HEADER + "\n", "no benchmark rows"),
        ("s\th:m:s\n1.0\t0:00:01\n", "not a Snakemake benchmark file"),
        (HEADER + "\n1.0\t0:00:01\tlots\t1\t1\t1\t0\t0\t1\t1\n", "'max_rss' holds 'lots'"),
    ],
)
def test_read_benchmark_rejects_what_is_not_a_benchmark(tmp_path, text, match):
    p = tmp_path / "bad.tsv"
    p.write_text(text)
    with pytest.raises(ValueError, match=match) as err:
        costs.read_benchmark(p)
    assert "bad.tsv" in str(err.value)


def _jobs(tmp_path):
    specs = [
        ("p2_theory", "p2_gamp_alpha", "alpha=0.6", 10.0, "200.00", "9.00", T0 + 10),
        ("p2_theory", "p2_gamp_alpha", "alpha=1.2", 20.0, "300.00", "19.00", T0 + 20),
        ("p1_hmc", "p1_hmc_sample", "variant=all N=10", 30.0, "NA", "NA", T0 + 40),
        ("p1_hmc", "p1_fig2c", "", 5.0, "150.00", "4.00", T0 + 45),
    ]
    out = []
    for group, rule, wc, s, rss, cpu, end in specs:
        p = bench(tmp_path / "results/benchmarks" / group / f"{rule}_{wc.replace(' ', '_')}.tsv", [(s, rss, cpu)], end)
        out.append(costs.job_cost(p, group, rule, wc))
    return out


def test_job_cost_times(tmp_path):
    job = _jobs(tmp_path)[1]
    assert (job.group, job.rule, job.wildcards, job.wall_s, job.cpu_s, job.max_rss_mb) == (
        "p2_theory",
        "p2_gamp_alpha",
        "alpha=1.2",
        20.0,
        19.0,
        300.0,
    )
    assert job.finished.timestamp() == T0 + 20 and job.started.timestamp() == T0
    assert job.finished.tzinfo is not None


def test_group_costs_and_total(tmp_path):
    jobs = _jobs(tmp_path)
    groups = costs.group_costs(jobs)
    assert [(g.group, g.jobs, g.wall_s, g.cpu_s, g.max_rss_mb) for g in groups] == [
        ("p2_theory", 2, 30.0, 28.0, 300.0),
        ("p1_hmc", 2, 35.0, 4.0, 150.0),  # the unmeasured sampling job adds its wall time only
        ("total", 4, 65.0, 32.0, 300.0),
    ]
    # first start (T0 + 0, the alpha = 0.6 job) to last end (T0 + 45)
    assert costs.span_s(jobs) == 45.0
    assert costs.span_s([]) == 0.0
    with pytest.raises(ValueError, match="reserved"):
        costs.group_costs([costs.JobCost("total", "r", "", 1.0, None, None, jobs[0].finished, "x")])


def test_group_costs_all_unmeasured(tmp_path):
    p = bench(tmp_path / "a.tsv", [(0.1, "NA", "NA")])
    [group, total] = costs.group_costs([costs.job_cost(p, "data", "data_summary")])
    assert (group.cpu_s, group.max_rss_mb, total.cpu_s) == (None, None, None)


def test_written_tables(tmp_path):
    jobs = _jobs(tmp_path)
    out = tmp_path / "results/costs"
    costs.write_cost_tables(
        jobs, "smoke", out / "jobs.csv", out / "groups.csv", out / "costs.html", out / "README_table.md"
    )
    with open(out / "jobs.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == list(costs.JOB_COLUMNS)
    assert [(r["rule"], r["wildcards"], r["wall_s"], r["cpu_s"], r["max_rss_mb"]) for r in rows] == [
        ("p2_gamp_alpha", "alpha=0.6", "10.00", "9.00", "200.00"),
        ("p2_gamp_alpha", "alpha=1.2", "20.00", "19.00", "300.00"),
        ("p1_hmc_sample", "variant=all N=10", "30.00", "", ""),
        ("p1_fig2c", "", "5.00", "4.00", "150.00"),
    ]
    assert dt.datetime.fromisoformat(rows[2]["finished"]).timestamp() == T0 + 40
    assert dt.datetime.fromisoformat(rows[2]["started"]).timestamp() == T0 + 10
    with open(out / "groups.csv", newline="") as fh:
        groups = list(csv.reader(fh))
    assert groups == [
        list(costs.GROUP_COLUMNS),
        ["p2_theory", "2", "30.00", "28.00", "300.00"],
        ["p1_hmc", "2", "35.00", "4.00", "150.00"],
        ["total", "4", "65.00", "32.00", "300.00"],
    ]
    html = (out / "costs.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "scale: smoke" in html and "variant=all N=10" in html
    assert html.count("<tr") == 1 + 3 + 1 + 4  # header + groups with total, header + jobs
    md = (out / "README_table.md").read_text()
    assert "4 jobs: 45 s, 32 s CPU, peak 0.3 GB\n" in md  # the README cell
    assert "4 jobs, 45 s (45 s) from the first start to the last end" in md
    assert "Job time summed per group: p1_hmc 35 s, p2_theory 30 s." in md  # largest first
    assert "| **total** | 4 | 65 s | 32 s | 300 |" in md
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")]  # no temporary files left behind


def test_html_escapes_names(tmp_path):
    p = bench(tmp_path / "a.tsv", [(1.0, "1.00", "1.00")])
    jobs = [costs.job_cost(p, "g", "r", "x=<b>")]
    html = costs.costs_html(jobs, costs.group_costs(jobs), "<smoke>")
    assert "<b>" not in html and "x=&lt;b&gt;" in html and "&lt;smoke&gt;" in html


@pytest.mark.parametrize(
    "seconds, text", [(None, "n/a"), (4.25, "4.2 s"), (42.4, "42 s"), (987.0, "16.4 min"), (9000.0, "2.5 h")]
)
def test_human_duration(seconds, text):
    assert costs.human_duration(seconds) == text


def test_script_standalone(tmp_path, repo):
    """scripts/cost_table.py run by hand: a benchmark file and its job description in, the four tables out; a job
    description without its benchmark file (or the reverse) is an error."""
    job = _jobs(tmp_path)[3]
    out = tmp_path / "out"
    outputs = {"jobs": "jobs.csv", "groups": "groups.csv", "html": "costs.html", "readme": "README_table.md"}

    def script(described):
        args = [sys.executable, str(repo / "scripts/cost_table.py"), "--input", f"benchmarks={job.benchmark}"]
        args += ["--output", *(f"{k}={out / v}" for k, v in outputs.items())]
        args += ["--params", json.dumps({"jobs": described, "scale": "smoke"})]
        env = {**os.environ, "PYTHONPATH": str(repo / "src")}
        return subprocess.run(args, capture_output=True, text=True, env=env)

    described = {job.benchmark: {"group": job.group, "rule": job.rule, "wildcards": job.wildcards}}
    r = script(described)
    assert r.returncode == 0, r.stderr[-2000:]
    assert sorted(p.name for p in out.iterdir()) == sorted(outputs.values())
    assert "1 jobs in 1 groups" in r.stdout
    # the cell names the machine it was measured on: this one
    cell = (out / "README_table.md").read_text().splitlines()[2]
    assert cell.endswith(f", on {costs.describe_machine()}") and "CPUs" in cell, cell
    r = script({**described, "results/benchmarks/g/other.tsv": {"group": "g", "rule": "other", "wildcards": ""}})
    assert r.returncode != 0 and "without a benchmark file: ['results/benchmarks/g/other.tsv']" in r.stderr


# --- what bounds a run: critical path and ideal time ---------------------------------------------------------------


def test_critical_path_and_ideal_time_against_hand_computed_dag():
    """a(3) -> b(5) -> d(1); a -> c(10) -> d; e(4) alone. Longest chain a, c, d = 14; on 2 cores the 23 core-seconds
    (c with 2 threads counts 20) give (3 + 5 + 20 + 1 + 4) / 2 = 16.5 > 14; on 8 cores the chain bounds it."""
    durations = {"a": 3.0, "b": 5.0, "c": 10.0, "d": 1.0, "e": 4.0}
    after = {"b": ["a"], "c": ["a"], "d": ["b", "c"], "e": []}
    assert costs.critical_path(durations, after) == (14.0, ["a", "c", "d"])
    threads = {"c": 2}
    assert costs.ideal_time(durations, threads, after, cores=2) == 16.5
    assert costs.ideal_time(durations, threads, after, cores=8) == 14.0
    assert costs.critical_path({}, {}) == (0.0, [])
    with pytest.raises(ValueError, match="cycle"):
        costs.critical_path({"x": 1.0, "y": 1.0}, {"x": ["y"], "y": ["x"]})


def test_schedule_in_the_written_tables(tmp_path):
    jobs = _jobs(tmp_path)
    specs = {j.benchmark: {"threads": 1, "after": []} for j in jobs}
    specs[jobs[3].benchmark]["after"] = [jobs[2].benchmark]  # fig2c waits for the sampling job: 30 + 5 s
    sched = costs.schedule(jobs, specs, cores=2)
    assert (sched.critical_path_s, sched.critical_path) == (35.0, ("p1_hmc_sample variant=all N=10", "p1_fig2c"))
    assert sched.ideal_s == 35.0 and sched.span_s == 45.0  # 65 core-s / 2 = 32.5 < 35
    out = tmp_path / "c"
    costs.write_cost_tables(jobs, "laptop", out / "j.csv", out / "g.csv", out / "c.html", out / "r.md", sched)
    md = (out / "r.md").read_text()
    assert "4 jobs: 45 s wall (critical path 35 s, ideal on 2 cores 35 s), 32 s CPU, peak 0.3 GB" in md
    assert "Critical path: p1_hmc_sample variant=all N=10 -> p1_fig2c." in md
    # the 30 s sampling job of the 35 s path holds it longest
    assert sched.longest_on_path == ("p1_hmc_sample variant=all N=10", 30.0)
    assert "The job that held it longest: p1_hmc_sample variant=all N=10, 30 s (86 % of the path)." in md
    assert "critical path 35 s (p1_hmc_sample variant=all N=10 -&gt; p1_fig2c)" in (out / "c.html").read_text()


def test_wildcards_text_roundtrip():
    assert costs.format_wildcards({"variant": "all", "N": 10}) == "variant=all N=10"
    assert costs.parse_wildcards("variant=all N=10") == {"variant": "all", "N": "10"}
    assert costs.format_wildcards({}) == "" and costs.parse_wildcards("") == {}


def test_plan_check_sets_measured_cpu_time_against_the_cpu_projection(tmp_path):
    """A job projected on the CPU gets its ratio; one projected on a GPU, one not measured, one not in the plan get
    none."""
    jobs = _jobs(tmp_path)
    plan = tmp_path / "plan.csv"
    with open(plan, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["rule", "wildcards", "device", "cpu_h"])
        w.writerow(["p2_gamp_alpha", "alpha=0.6", "cpu", "0.0025"])  # 9 s
        w.writerow(["p2_gamp_alpha", "alpha=1.2", "gpu", "0.0025"])
        w.writerow(["p1_hmc_sample", "variant=all N=10", "cpu", "0.01"])  # 36 s, CPU time unmeasured
    assert costs.plan_check(jobs, plan) == [
        ["p2_theory", "p2_gamp_alpha", "alpha=0.6", "9.00", "9.00", "1.000", "10.00"],
        ["p2_theory", "p2_gamp_alpha", "alpha=1.2", "19.00", "", "", "20.00"],
        ["p1_hmc", "p1_hmc_sample", "variant=all N=10", "", "36.00", "", "30.00"],
        ["p1_hmc", "p1_fig2c", "", "4.00", "", "", "5.00"],
    ]
    assert len(costs.CHECK_COLUMNS) == 7


def test_benchmark_rows_of_a_run_read_the_jobs_that_finished(tmp_path):
    """The unit-cost rows of a run still going: the jobs whose benchmark file exists, as jobs.csv writes them."""
    bench(tmp_path / "results/benchmarks/a.tsv", [(12.5, "310.25", "11.75")], T0 + 30)
    specs = {
        "results/benchmarks/a.tsv": {"group": "g", "rule": "a", "wildcards": "n=1"},
        "results/benchmarks/b.tsv": {"group": "g", "rule": "b", "wildcards": ""},  # not finished
    }
    [row] = costs.benchmark_rows(tmp_path, specs)
    assert {k: v for k, v in row.items() if k != "finished"} == {
        "rule": "a",
        "wildcards": "n=1",
        "cpu_s": "11.75",
        "wall_s": "12.5",
        "max_rss_mb": "310.25",
    }
    assert dt.datetime.fromisoformat(row["finished"]).timestamp() == T0 + 30


# --- the machine a run was measured on -----------------------------------------------------------------------------

_CPUINFO = """processor	: 0
vendor_id	: {vendor}
model name	: {model}
flags		: {flags}

processor	: 1
model name	: another CPU
flags		: fpu
"""


@pytest.mark.parametrize(
    "model, flags, words",
    [
        ("AMD EPYC 9654", "fpu sse2 avx2 avx512f avx512bw avx512_bf16", "AVX-512, bfloat16 in hardware"),
        ("Intel Xeon Platinum 8480+", "avx2 avx512f amx_tile amx_bf16", "AVX-512, bfloat16 in hardware"),
        ("Intel Xeon Gold 6148", "sse2 avx2 avx512f avx512bw", "AVX-512, no bfloat16 instructions"),
        ("AMD EPYC", "fpu sse2 avx avx2 fma", "AVX2, no AVX-512, no bfloat16 instructions"),
        ("Intel Core 2", "fpu sse2", "no AVX2"),
    ],
)
def test_machine_line_names_the_cpu_its_vector_extensions_cpus_and_memory(model, flags, words):
    """The first processor's model and flags (the second processor's lines are ignored), CPUs and memory as given."""
    text = _CPUINFO.format(vendor="x", model=model, flags=flags)
    line = costs.describe_machine(text, cpus=2, memory_bytes=24 * 2**30)
    assert line == f"{model} ({words}), 2 CPUs, 24 GiB"


def test_machine_line_without_flags_and_in_the_cell(tmp_path):
    """No flags line (not x86): the model alone; unknown memory: left out. The README cell and the HTML page end
    with the machine."""
    line = costs.describe_machine("model name\t: Neoverse-V1\n", cpus=4, memory_bytes=0)
    assert line == "Neoverse-V1, 4 CPUs"
    jobs = _jobs(tmp_path)
    out = tmp_path / "m"
    costs.write_cost_tables(
        jobs, "laptop", out / "j.csv", out / "g.csv", out / "c.html", out / "r.md", None, "CPU X, 2 CPUs"
    )
    assert "4 jobs: 45 s, 32 s CPU, peak 0.3 GB, on CPU X, 2 CPUs\n" in (out / "r.md").read_text()
    assert "job, on CPU X, 2 CPUs.</p>" in (out / "c.html").read_text()
