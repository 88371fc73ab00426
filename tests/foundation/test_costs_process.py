"""The whole run's CPU as the kernel counts it (smattn.costs.process) and its place in the README cell."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import textwrap

from smattn import costs
from smattn.costs.process import _runs_snakemake, snakemake_ancestor

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.6:\n    pass\n"


def test_process_tree_cpu_counts_the_process_and_the_children_it_waited_for():
    """In a fresh process that waits for a child burning 0.6 CPU-s: the count equals the kernel's other interface,
    getrusage(SELF) + getrusage(CHILDREN), and holds the child's seconds."""
    code = textwrap.dedent(
        f"""
        import os, resource, subprocess, sys
        from smattn.costs.process import process_tree_cpu_s
        subprocess.run([sys.executable, "-c", {BURN!r}], check=True)
        ours = process_tree_cpu_s(os.getpid())
        s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        print(ours, s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime, c.ru_utime + c.ru_stime)
        """
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    ours, rusage, child = map(float, r.stdout.split())
    assert child >= 0.55
    assert abs(ours - rusage) <= 0.05  # clock ticks of 10 ms, and the few instructions between the two reads
    assert ours >= child


def test_command_lines_that_run_snakemake():
    assert _runs_snakemake(["/x/.venv/bin/python3", ".venv/bin/snakemake", "--profile", "profiles/local"])
    assert _runs_snakemake(["snakemake", "-n"])
    assert _runs_snakemake(["python", "-m", "snakemake", "--target-jobs", "a"])
    assert not _runs_snakemake(["python", "-m", "pytest", "tests/snakemake_things.py"])
    assert not _runs_snakemake(["python", "scripts/snakemake_helper.py"])


def test_the_snakemake_ancestor_is_found_through_a_shell(tmp_path):
    """A program named snakemake starts, through sh, a Python that asks for its Snakemake ancestor: the program's
    PID. Outside such a tree (this test's own process) there is none."""
    fake = tmp_path / "snakemake"
    probe = "from smattn.costs.process import snakemake_ancestor; print(snakemake_ancestor())"
    fake.write_text(
        f"import os, subprocess, sys\nprint(os.getpid())\nsys.stdout.flush()\n"
        f"subprocess.run(['sh', '-c', {sys.executable!r} + ' -c \"' + {probe!r} + '\"; true'], check=True)\n"
    )
    r = subprocess.run([sys.executable, str(fake)], capture_output=True, text=True, check=True, timeout=120)
    own, found = r.stdout.split()
    assert found == own
    if not any(_runs_snakemake(p.cmdline()) for p in __import__("psutil").Process(os.getpid()).parents()):
        assert snakemake_ancestor() is None


def _job(cpu_s: float) -> costs.JobCost:
    finished = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    return costs.JobCost("g", "r", "", wall_s=60.0, cpu_s=cpu_s, max_rss_mb=100.0, finished=finished, benchmark="b")


def test_readme_cell_shows_the_whole_run_only_where_it_saw_the_jobs():
    jobs = [_job(600.0), _job(1200.0)]
    groups = costs.group_costs(jobs)
    cell = costs.readme_cell(jobs, groups, run_cpu_s=2100.0)
    assert "30.0 min CPU in the jobs (35.0 min with Snakemake and every process)" in cell, cell
    # less than the jobs' own: the jobs were not this process's children (a cluster, an earlier invocation)
    assert costs.readme_cell(jobs, groups, run_cpu_s=100.0) == costs.readme_cell(jobs, groups)
    assert "30.0 min CPU, peak" in costs.readme_cell(jobs, groups)
