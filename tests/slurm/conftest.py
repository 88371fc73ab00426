"""Fixtures for the cluster-path tests (``pytest -m slurm``): a real single-node SLURM cluster on localhost.

The cluster (slurmctld + slurmd, one node with 2 CPUs and one fake GPU, partitions ``cpu`` and ``gpu``) is started
once per session by ``tests/slurm/slurm_cluster.py`` and stopped, by PID, when the session ends (also on failure).
Nothing is installed here: without the SLURM binaries or root, every test is skipped with a message saying what is
missing, and fails with it under CI (``CI=true``: the fixture ``requirement_missing``). Every Snakemake run goes
through ``snakemake_run``: its own process group, a hard timeout, the group killed on timeout, and any job it left in
the queue cancelled.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from .slurm_cluster import SlurmCluster, client_env, missing_requirements

REPO = Path(__file__).resolve().parents[2]
PROBE_WORKFLOW = Path(__file__).resolve().parent / "probe_workflow"
PARTITIONS = {"cpu": "cpu", "gpu": "gpu"}  # kind of job -> partition of the test cluster
ACCOUNT = "smattn"
#: hard timeout (s) of a run that trains or builds figures: a hang guard, not a time limit, below the SLURM tier's own
#: in .ci/run (such a run took up to 580 s on a 2-core machine busy with other tests)
RUN_TIMEOUT = 900
#: seconds slurmctld keeps a finished job's record (MinJobAge): past a whole run, so a test that checks the run's
#: jobs afterwards sees all of them (with 300 s, a run that took 533 s had lost its first jobs)
JOB_RECORD_AGE = 2 * RUN_TIMEOUT
# the workflow's config `cluster` for the test cluster (docs/cluster.md); goes into the run's one --config list
CLUSTER_CONFIG = (
    f"cluster={{cpu_partition: {PARTITIONS['cpu']}, gpu_partition: {PARTITIONS['gpu']}, account: {ACCOUNT}}}"
)

# The local cluster has no accounting daemon: job states come from squeue (MinJobAge keeps finished jobs
# visible), and the first status check comes 2 s after submission instead of the plugin's default 40 s.
SLURM_ARGS = [
    "--profile",
    str(REPO / "profiles" / "slurm"),
    "--slurm-status-command",
    "squeue",
    "--slurm-init-seconds-before-status-checks",
    "2",
    "--slurm-keep-successful-logs",
]


# Measured wall times (seconds), printed at the end of the session: pytest -m slurm shows them without -s.
TIMINGS: dict[str, float] = {}


def pytest_terminal_summary(terminalreporter):
    if TIMINGS:
        terminalreporter.write_sep("-", "SLURM test cluster timings")
        for name, seconds in TIMINGS.items():
            terminalreporter.write_line(f"{name}: {seconds:.1f} s")


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory, requirement_missing):
    """A running single-node SLURM cluster (skips, with the reason, when the machine cannot run one; fails under CI)."""
    problems = missing_requirements()
    if problems:
        requirement_missing("no SLURM test cluster: " + "; ".join(problems))
    # slurmctld must still know a run's first jobs when the test reads them after the run (up to RUN_TIMEOUT later)
    cluster = SlurmCluster(
        tmp_path_factory.mktemp("slurm"),
        partitions=tuple(PARTITIONS.values()),
        cpus=2,
        gpus=1,
        min_job_age=JOB_RECORD_AGE,
    )
    atexit.register(cluster.stop)  # also when the session dies without running fixture teardown
    previous = signal.getsignal(signal.SIGTERM)
    if previous is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _interrupt)  # `timeout` sends SIGTERM: end like Ctrl-C, with teardown
    try:
        cluster.start()
        TIMINGS["cluster start-up (daemons launched -> idle node)"] = cluster.startup_seconds
        print(f"\n[slurm] cluster up in {cluster.startup_seconds:.2f} s (pids {cluster.pids})")
        yield cluster
    finally:
        cluster.stop()
        atexit.unregister(cluster.stop)
        if previous is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, previous)


@dataclass
class SnakemakeRun:
    args: list
    returncode: int
    output: str
    seconds: float
    timed_out: bool

    def tail(self, n: int = 6000) -> str:
        return f"snakemake {' '.join(self.args)}\nexit {self.returncode}, {self.seconds:.1f} s\n{self.output[-n:]}"


def start_snakemake(args, cwd: Path, log: Path) -> subprocess.Popen:
    """Start `python -m snakemake ARGS` in its own process group, output to `log`."""
    env = client_env()
    env.setdefault("SMATTN_DATA_MIRROR", str(REPO.parent / "shared" / "data"))
    env.update(
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        OPENBLAS_NUM_THREADS="1",
        XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
    )
    with open(log, "wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "snakemake", *args],
            cwd=cwd,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )


def kill_snakemake(proc: subprocess.Popen, cluster=None) -> None:
    """Kill a run started by `start_snakemake` (its whole process group) and cancel the jobs it left queued."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    if cluster is not None:
        active = cluster.active_job_ids()
        if active:
            cluster.run(["scancel", *active], check=False)


def finish_snakemake(proc: subprocess.Popen, args, log: Path, t0: float, timeout: float, cluster=None):
    """Wait for a run started by `start_snakemake`; on timeout (or interruption) kill its process group."""
    timed_out = False
    try:
        proc.wait(timeout=max(1.0, timeout - (time.monotonic() - t0)))
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_snakemake(proc, cluster)
    except BaseException:
        kill_snakemake(proc, cluster)
        raise
    seconds = time.monotonic() - t0
    return SnakemakeRun(list(args), proc.returncode, log.read_text(errors="replace"), seconds, timed_out)


class SnakemakeBeside:
    """A run started by ``start_snakemake`` that goes on beside other work: ``finish`` waits for it (killing it past
    ``timeout`` s from its start) and gives its own wall time, from its start to its exit, however late it is called;
    ``kill`` ends it (and cancels what it left queued on ``cluster``)."""

    def __init__(self, args, cwd: Path, log_name: str, cluster=None):
        self.args, self.log, self.cluster = list(args), cwd / f".{log_name}.out", cluster
        self.t0, self.ended = time.monotonic(), None
        self.proc = start_snakemake(self.args, cwd, self.log)
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self):
        self.proc.wait()
        self.ended = time.monotonic()

    def kill(self):
        kill_snakemake(self.proc, self.cluster)

    def finish(self, timeout: float) -> SnakemakeRun:
        run = finish_snakemake(self.proc, self.args, self.log, self.t0, timeout, self.cluster)
        if not run.timed_out and self.ended is not None:
            run.seconds = self.ended - self.t0
        return run


def snakemake_run(args, cwd: Path, timeout: float, cluster=None, log_name: str = "snakemake") -> SnakemakeRun:
    """Run Snakemake to the end under a hard timeout (the process group is killed when it runs over)."""
    log = cwd / f".{log_name}.{time.monotonic_ns()}.out"
    t0 = time.monotonic()
    proc = start_snakemake(args, cwd, log)
    return finish_snakemake(proc, args, log, t0, timeout, cluster)


@pytest.fixture()
def probe_workdir(tmp_path) -> Path:
    """A fresh copy of the test-only probe workflow."""
    shutil.copy2(PROBE_WORKFLOW / "Snakefile", tmp_path / "Snakefile")
    return tmp_path


def slurm_jobs(cluster: SlurmCluster) -> list[dict]:
    """Every job slurmctld still knows (finished ones within MinJobAge), as dicts of `scontrol show job` fields."""
    r = cluster.run(["scontrol", "show", "job", "-o"], check=False)
    jobs = []
    for line in r.stdout.splitlines():
        fields = {}
        for token in line.split():
            key, sep, value = token.partition("=")
            if sep:
                fields[key] = value
        if "JobId" in fields:
            jobs.append(fields)
    return jobs
