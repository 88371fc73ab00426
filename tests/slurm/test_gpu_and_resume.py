"""The SLURM executor on the test cluster, with a test-only workflow (tests/slurm/probe_workflow):
GPU requests follow the rules' `gpu` resource, and a job killed mid-run fails the workflow clearly and is the only
thing redone on the rerun."""

from __future__ import annotations

import json
import time

import pytest

from .conftest import ACCOUNT, SLURM_ARGS, finish_snakemake, kill_snakemake, slurm_jobs, snakemake_run, start_snakemake

pytestmark = pytest.mark.slurm
PROBE_ARGS = [*SLURM_ARGS, "--default-resources", f"slurm_account={ACCOUNT}"]  # partitions: in the probe's rules


def jobs_of_rule(cluster, rule: str) -> list[dict]:
    return [j for j in slurm_jobs(cluster) if j.get("Comment") == f"rule_{rule}"]


def requests_gpu(job: dict) -> bool:
    return "gpu" in " ".join(job.get(k, "") for k in ("TresPerJob", "TresPerNode", "TRES"))


def test_gpu_rule_gets_the_gpu_and_cpu_rule_requests_none(slurm_cluster, probe_workdir):
    run = snakemake_run(["probes", *PROBE_ARGS], probe_workdir, timeout=240, cluster=slurm_cluster)
    assert run.returncode == 0 and not run.timed_out, run.tail()
    print(f"\n[slurm] probe run (2 jobs): {run.seconds:.1f} s")

    gpu_env = json.loads((probe_workdir / "probe/gpu.json").read_text())
    cpu_env = json.loads((probe_workdir / "probe/cpu.json").read_text())
    # both probes ran inside SLURM jobs
    assert gpu_env["SLURM_JOB_ID"] and cpu_env["SLURM_JOB_ID"], (gpu_env, cpu_env)
    # the gpu=1 job sees its allocation (the fake GRES is /dev/null, so the device index is 0)
    assert gpu_env["SLURM_GPUS_ON_NODE"] == "1", gpu_env
    assert gpu_env["CUDA_VISIBLE_DEVICES"] == "0", gpu_env
    # the CPU job has no GPU allocation
    assert cpu_env["SLURM_GPUS_ON_NODE"] is None, cpu_env
    assert cpu_env["CUDA_VISIBLE_DEVICES"] in (None, ""), cpu_env

    # and so did the submissions: slurmctld's record of each job (kept MinJobAge seconds after it ended)
    (gpu_job,) = [j for j in jobs_of_rule(slurm_cluster, "gpu_probe") if j["JobId"] == gpu_env["SLURM_JOB_ID"]]
    (cpu_job,) = [j for j in jobs_of_rule(slurm_cluster, "cpu_probe") if j["JobId"] == cpu_env["SLURM_JOB_ID"]]
    assert requests_gpu(gpu_job), gpu_job
    assert not requests_gpu(cpu_job), cpu_job
    for job, partition in ((gpu_job, "gpu"), (cpu_job, "cpu")):
        assert job["JobState"] == "COMPLETED", job
        assert job["Partition"] == partition and job["Account"] == ACCOUNT, job


def test_scancel_fails_the_workflow_and_rerun_resumes(slurm_cluster, probe_workdir):
    args = ["chain", *PROBE_ARGS, "--config", "sleep=600"]
    log = probe_workdir / ".killed.out"
    t0 = time.monotonic()
    proc = start_snakemake(args, probe_workdir, log)
    # scancel every attempt of `slow` once it runs (the profile retries a failed job once)
    cancelled = []
    deadline = t0 + 240
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            for job in jobs_of_rule(slurm_cluster, "slow"):
                if job["JobState"] == "RUNNING" and job["JobId"] not in cancelled:
                    slurm_cluster.run(["scancel", job["JobId"]])
                    cancelled.append(job["JobId"])
            time.sleep(0.5)
    except BaseException:
        kill_snakemake(proc, slurm_cluster)
        raise
    run = finish_snakemake(proc, args, log, t0, timeout=250, cluster=slurm_cluster)
    print(f"\n[slurm] killed run: {run.seconds:.1f} s, cancelled jobs {cancelled}, exit {run.returncode}")

    assert not run.timed_out, run.tail()
    assert cancelled, run.tail()
    assert run.returncode != 0, run.tail()
    assert "Error in rule slow" in run.output and "CANCELLED" in run.output, run.tail()
    assert not (probe_workdir / "chain/slow.txt").exists()
    first = probe_workdir / "chain/first.txt"
    before = (first.read_text(), first.stat().st_mtime_ns)
    assert before[0].startswith("job=") and "job= " not in before[0], before  # written inside a SLURM job

    rerun = snakemake_run(
        ["chain", *PROBE_ARGS, "--config", "sleep=1"], probe_workdir, timeout=240, cluster=slurm_cluster
    )
    assert rerun.returncode == 0 and not rerun.timed_out, rerun.tail()
    print(f"[slurm] rerun: {rerun.seconds:.1f} s")
    assert (probe_workdir / "chain/slow.txt").read_text().startswith("job=")
    assert (first.read_text(), first.stat().st_mtime_ns) == before  # the finished job was not redone
    assert len(jobs_of_rule(slurm_cluster, "first")) == 1  # ... nor resubmitted
    assert "rule first:" not in rerun.output and "rule slow:" in rerun.output, rerun.tail()
