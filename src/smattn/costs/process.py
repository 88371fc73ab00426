"""The CPU time of a whole local run, as the operating system counts it.

The jobs' benchmarks (``measured``) are Snakemake's samples of each job's process tree while it runs: they leave out
Snakemake's own process (the DAG, the scheduler, the file checks), the short-lived processes a job starts between two
samples (the C++ compiler TorchInductor calls, for one) and a job's last moments after the last sample. The kernel
keeps an exact count instead: a process's own CPU seconds plus those of every child it has waited for, which includes
each child's own waited-for children. Read from the Snakemake process that runs the jobs, that is the CPU of the run
so far: Snakemake and every job that has ended, with everything they started.

Where the jobs did not run as children of that process (a cluster executor; a run that resumed jobs another
invocation ran), the count says nothing about them, and :func:`run_cpu_s` is not reported
(``smattn.costs.tables.readme_cell`` takes it only where it is at least the jobs' own).
"""

from __future__ import annotations

import os

import psutil


def process_tree_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) of process ``pid`` and of every child it has waited for (with their own waited-for
    children), from the kernel's accounting (``psutil.Process.cpu_times``: /proc/<pid>/stat on Linux)."""
    t = psutil.Process(pid).cpu_times()
    return float(t.user + t.system + t.children_user + t.children_system)


def _runs_snakemake(cmdline: list[str]) -> bool:
    """Whether a command line starts Snakemake: its program or script is named snakemake, or ``python -m snakemake``."""
    if any(os.path.basename(a) == "snakemake" for a in cmdline[:2]):
        return True
    return any(a == "-m" and b == "snakemake" for a, b in zip(cmdline, cmdline[1:], strict=False))


def snakemake_ancestor(pid: int | None = None) -> int | None:
    """PID of the nearest ancestor of process ``pid`` (default: this process) that runs Snakemake, or None: the
    Snakemake process that started a job's script (through a shell)."""
    try:
        for parent in psutil.Process(os.getpid() if pid is None else pid).parents():
            try:
                if _runs_snakemake(parent.cmdline()):
                    return parent.pid
            except (psutil.AccessDenied, psutil.ZombieProcess):
                continue
    except psutil.NoSuchProcess:
        return None
    return None


def run_cpu_s() -> float | None:
    """CPU seconds of the Snakemake process running this job and of every process of its that has ended
    (:func:`process_tree_cpu_s`), or None outside a Snakemake run."""
    pid = snakemake_ancestor()
    if pid is None:
        return None
    try:
        return process_tree_cpu_s(pid)
    except psutil.Error:
        return None
