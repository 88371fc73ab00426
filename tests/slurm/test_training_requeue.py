"""A training job requeued by SLURM mid-run (what preemption or a node failure does under the profile's
`slurm-requeue: true`) resumes from its checkpoint inside the same SLURM job and ends with exactly the model, step and
loss history of an uninterrupted run of the same settings."""

from __future__ import annotations

import re
import time

import pytest
import torch

from .conftest import (
    CLUSTER_CONFIG,
    RUN_TIMEOUT,
    SLURM_ARGS,
    TIMINGS,
    SnakemakeBeside,
    finish_snakemake,
    kill_snakemake,
    slurm_jobs,
    start_snakemake,
)
from .test_workflow_through_slurm import assert_same_output

pytestmark = pytest.mark.slurm

MODEL = "results/p1_images/L2H4/model.pt"
STATE_DIR = "results/p1_images/L2H4"
TOTAL_STEPS = 3000
SYNC_EVERY = 50
# smoke scale, longer: enough steps that the job is caught mid-run; a checkpoint at every sync point (ckpt 0 minutes)
CONFIG = [
    "--config",
    "scale=smoke",
    CLUSTER_CONFIG,
    f"p1_images={{gd_max_steps: {TOTAL_STEPS}, gd_sync_every: {SYNC_EVERY}, gd_ckpt_minutes: 0, gd_val_every: 500}}",
]
# history entries that are wall-clock times or per-session bookkeeping, not the training's trajectory
SESSION_KEYS = re.compile(r"^(wall_s|session_\w+)$")


def checkpoint_step(workdir) -> int | None:
    """The step of the training's resumable state in `workdir` (None while there is none)."""
    states = list((workdir / STATE_DIR).glob("train_state_*.pt"))
    if not states:
        return None
    try:
        return int(torch.load(states[0], map_location="cpu", weights_only=True)["step"])
    except (OSError, RuntimeError, EOFError, KeyError):  # replaced while read: try again
        return None


def training_jobs(cluster) -> list[dict]:
    return [j for j in slurm_jobs(cluster) if j.get("Comment", "").startswith("rule_p1_images_train")]


def test_requeued_training_resumes_and_equals_an_uninterrupted_run(slurm_cluster, copy_workflow, tmp_path_factory):
    ref_dir = copy_workflow(tmp_path_factory.mktemp("uninterrupted"))
    req_dir = copy_workflow(tmp_path_factory.mktemp("requeued"))

    # the uninterrupted reference runs locally beside the requeued run: each is one single-threaded job at a time
    # (image preparation, then the training), so together they fill the two cores instead of taking turns
    reference = SnakemakeBeside(
        [MODEL, "--profile", "profiles/local", "--cores", "1", *CONFIG], ref_dir, "uninterrupted"
    )
    args = [MODEL, *SLURM_ARGS, *CONFIG]
    log = req_dir / ".requeued.out"
    t0 = time.monotonic()
    proc = start_snakemake(args, req_dir, log)
    requeued_at, job_id = None, None
    try:
        # requeue the training's SLURM job once it has written a checkpoint and before it is half-way
        while proc.poll() is None and time.monotonic() - t0 < 400 and requeued_at is None:
            running = [j for j in training_jobs(slurm_cluster) if j["JobState"] == "RUNNING"]
            step = checkpoint_step(req_dir) if running else None
            if step is not None and SYNC_EVERY <= step < TOTAL_STEPS // 2:
                job_id = running[0]["JobId"]
                slurm_cluster.run(["scontrol", "requeue", job_id])
                requeued_at = step
            time.sleep(0.2)
    except BaseException:
        kill_snakemake(proc, slurm_cluster)
        reference.kill()
        raise
    ref = reference.finish(timeout=RUN_TIMEOUT)
    run = finish_snakemake(proc, args, log, t0, timeout=RUN_TIMEOUT, cluster=slurm_cluster)
    TIMINGS["uninterrupted training, local, beside the requeued one (snakemake wall time)"] = ref.seconds
    TIMINGS["training requeued mid-run through SLURM (snakemake wall time)"] = run.seconds
    assert ref.returncode == 0 and not ref.timed_out, ref.tail()
    assert requeued_at is not None, f"the training job was never caught mid-run\n{run.tail()}"
    assert run.returncode == 0 and not run.timed_out, run.tail()
    print(f"\n[slurm] training job {job_id} requeued at checkpoint step {requeued_at}; run {run.seconds:.1f} s")

    # one SLURM job, started twice by SLURM itself (not a second submission by Snakemake)
    (job,) = [j for j in training_jobs(slurm_cluster) if j["JobId"] == job_id]
    assert job["JobState"] == "COMPLETED" and job["Restarts"] == "1", job
    submitted = re.findall(r"has been submitted with SLURM jobid (\d+) \(log: \S+/rule_p1_images_train/", run.output)
    assert submitted == [job_id], (submitted, run.tail())

    # the second start found the state and went on from it (the killed session's steps after its last checkpoint
    # are redone; those before it are not)
    rule_log = (req_dir / "logs/p1_images/p1_images_train_L2H4.log").read_text()
    assert "(found;" in rule_log, rule_log[-3000:]
    resumed = torch.load(req_dir / MODEL, map_location="cpu", weights_only=False)
    whole = torch.load(ref_dir / MODEL, map_location="cpu", weights_only=False)
    assert whole["history"]["session_steps"] == [TOTAL_STEPS], whole["history"]["session_steps"]
    (last_session,) = resumed["history"]["session_steps"]
    assert requeued_at <= TOTAL_STEPS - last_session < TOTAL_STEPS, (requeued_at, last_session)

    # ... and ended where the uninterrupted run ended: weights, steps, and the whole loss and validation history
    assert_same_output(ref_dir / MODEL, req_dir / MODEL)
    for key, values in whole["history"].items():
        if not SESSION_KEYS.match(key):
            assert resumed["history"][key] == values, key
    assert resumed["best_val_acc"] == whole["best_val_acc"]
