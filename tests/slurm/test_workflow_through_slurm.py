"""The project's own workflow through the SLURM profile: smoke targets of each paper (one with a gpu=1 training) are
built on the test cluster; every job (except the local raw-data fetch) runs in a SLURM job, alone with its rule's
resources or in its profile group's bundle with the bundle's summed resources, a GPU request and the gpu partition
exactly where the rule declares gpu=1 and the cpu partition everywhere else, and the outputs equal those of a local
run with the same seeds. At paper scale a gpu=1 job that sees no GPU stops at once."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from PIL import Image

from .conftest import (
    ACCOUNT,
    CLUSTER_CONFIG,
    PARTITIONS,
    REPO,
    RUN_TIMEOUT,
    SLURM_ARGS,
    TIMINGS,
    SnakemakeBeside,
    slurm_jobs,
    snakemake_run,
)

pytestmark = pytest.mark.slurm

# Quick smoke targets: P2 Fig. 2 right (SGD training, then the figure), P2 Fig. 2 left (two GAMP runs, then the
# figure), P1 Fig. 2d (theory, then the figure) and the L2H4 image-task network (image preparation, then a gpu=1
# training: on the CPU at smoke scale). The profile bundles the two GAMP runs into one SLURM job and the two P2
# figures into another (groups p2_gamp_runs and p2_dynamics_figures: 2 CPUs each, what the test node has).
TRAINING = "results/p1_images/L2H4/train.json"
TARGETS = ["figures/p2/fig2_right_sgd.png", "figures/p2/fig2_left_gamp.png", "figures/p1/fig2d.png", TRAINING]
# rule -> group of the SLURM profile's job grouping
PROFILE_GROUPS = yaml.safe_load((REPO / "profiles" / "slurm" / "config.yaml").read_text())["groups"]
LOCAL_RULES = {"fetch_raw"}
SMOKE = ["--config", "scale=smoke", CLUSTER_CONFIG]
TIMING_KEY = re.compile(r"(^|[_.])(time|times|second|seconds|ms|wall|elapsed|runtime|duration)(_|$)|_s$", re.I)
# the training's resumable state (not an output; it records each session's wall time)
UNCOMPARED = re.compile(r"train_state_[0-9a-f]+\.pt$")


def job_blocks(output: str) -> dict[str, dict]:
    """{rule: {"threads": .., <resource>: ..}} from the job descriptions Snakemake prints (dry or real run)."""
    jobs, rule = {}, None
    for line in output.splitlines():
        text = line.strip()
        m = re.match(r"^(?:local)?rule (\w+):$", text)
        if m:
            rule = m.group(1)
            jobs.setdefault(rule, {"threads": "1"})
        elif rule and text.startswith("threads:"):
            jobs[rule]["threads"] = text.split(":", 1)[1].strip()
        elif rule and text.startswith("resources:"):
            for item in text.split(":", 1)[1].split(","):
                key, _, value = item.strip().partition("=")
                jobs[rule][key] = value
            rule = None
    return jobs


def job_counts(output: str) -> dict[str, int]:
    """{rule: number of jobs} from the "Job stats" table of a (dry) run."""
    m = re.search(r"^Job stats:\njob +count\n[- ]+\n((?:\S+ +\d+\n)+)", output, re.M)
    assert m, output[-3000:]
    return {name: int(n) for name, n in (line.split() for line in m.group(1).splitlines()) if name != "total"}


def dry_run_jobs(workdir: Path) -> tuple[dict[str, dict], dict[str, int]]:
    """{rule: resources} and {rule: number of jobs} of the SLURM run, from Snakemake's dry run."""
    r = snakemake_run([*TARGETS, *SLURM_ARGS, *SMOKE, "-n"], workdir, timeout=180, log_name="dryrun")
    assert r.returncode == 0, r.tail()
    return job_blocks(r.output), job_counts(r.output)


def slurm_time(minutes: int) -> str:
    """A runtime in minutes as scontrol prints a TimeLimit ([D-]HH:MM:SS)."""
    days, rest = divmod(int(minutes), 24 * 60)
    text = f"{rest // 60:02d}:{rest % 60:02d}:00"
    return f"{days}-{text}" if days else text


def output_files(workdir: Path) -> set[str]:
    return {
        str(p.relative_to(workdir))
        for top in ("results", "figures")
        for p in (workdir / top).rglob("*")
        # PDFs embed their creation time (the PNG and CSV beside them count); benchmark TSVs are wall-clock timings
        if p.is_file()
        and p.suffix != ".pdf"
        and not p.relative_to(workdir).parts[:2] == ("results", "benchmarks")
        and not UNCOMPARED.search(p.name)
    }


def without_timings(obj):
    if isinstance(obj, dict):
        return {k: without_timings(v) for k, v in obj.items() if not TIMING_KEY.search(str(k))}
    if isinstance(obj, list):
        return [without_timings(v) for v in obj]
    return obj


def assert_same_output(a: Path, b: Path) -> None:
    """Equal content: arrays exactly, PNG pixels exactly, JSON apart from wall-clock timings, text byte for byte."""
    if a.suffix == ".npz":
        with np.load(a) as x, np.load(b) as y:
            keys = sorted(k for k in x.files if not TIMING_KEY.search(k))
            assert keys == sorted(k for k in y.files if not TIMING_KEY.search(k)), a.name
            for k in keys:
                u, v = x[k], y[k]
                nan_ok = np.issubdtype(u.dtype, np.inexact) and np.issubdtype(v.dtype, np.inexact)
                assert np.array_equal(u, v, equal_nan=nan_ok), f"{a.name}:{k} differs"
    elif a.suffix == ".pt":  # a trained model: its weights and step (its history records wall-clock times)
        import torch

        x, y = (torch.load(f, map_location="cpu", weights_only=False) for f in (a, b))
        assert x["step"] == y["step"] and x["best_step"] == y["best_step"], a.name
        assert x["best_model"].keys() == y["best_model"].keys(), a.name
        for k in x["best_model"]:
            assert torch.equal(x["best_model"][k], y["best_model"][k]), f"{a.name}:{k} differs"
    elif a.suffix == ".png":
        assert np.array_equal(np.asarray(Image.open(a)), np.asarray(Image.open(b))), f"{a.name}: pixels differ"
    elif a.suffix == ".json":
        assert without_timings(json.loads(a.read_text())) == without_timings(json.loads(b.read_text())), a.name
    else:
        assert a.read_bytes() == b.read_bytes(), f"{a.name} differs"


@pytest.fixture(scope="module")
def runs(slurm_cluster, tmp_path_factory, copy_workflow):
    """The smoke targets built twice from fresh copies of the workflow: locally, and through the SLURM profile."""
    local_dir = copy_workflow(tmp_path_factory.mktemp("local"))
    slurm_dir = copy_workflow(tmp_path_factory.mktemp("viaslurm"))
    planned, counts = dry_run_jobs(slurm_dir)
    # the local run goes beside the SLURM run: that one waits mostly on the scheduler's polling (about 3x the local
    # run's wall time for the same jobs), so the local jobs fill the cores it leaves idle
    local_run = SnakemakeBeside([*TARGETS, "--profile", "profiles/local", "--cores", "2", *SMOKE], local_dir, "local")
    try:
        via_slurm = snakemake_run(
            [*TARGETS, *SLURM_ARGS, *SMOKE], slurm_dir, timeout=RUN_TIMEOUT, cluster=slurm_cluster, log_name="slurm"
        )
    except BaseException:
        local_run.kill()
        raise
    local = local_run.finish(timeout=RUN_TIMEOUT)
    assert local.returncode == 0 and not local.timed_out, local.tail()
    assert via_slurm.returncode == 0 and not via_slurm.timed_out, via_slurm.tail()
    TIMINGS[f"smoke targets through SLURM ({len(TARGETS)} targets, snakemake wall time)"] = via_slurm.seconds
    TIMINGS["the same targets run locally (--cores 2), beside the SLURM run"] = local.seconds
    print(
        f"\n[slurm] smoke targets {TARGETS}: local run {local.seconds:.1f} s, through SLURM {via_slurm.seconds:.1f} s"
    )
    return dict(local_dir=local_dir, slurm_dir=slurm_dir, planned=planned, counts=counts, local=local, slurm=via_slurm)


def test_every_job_is_a_slurm_job_with_its_rules_resources(runs, slurm_cluster):
    planned, counts, out = runs["planned"], runs["counts"], runs["slurm"].output
    executed = job_blocks(out)
    assert set(executed) == set(planned), (executed.keys(), planned.keys())
    remote = {rule: res for rule, res in executed.items() if rule not in LOCAL_RULES}
    assert {"p2_sgd_train", "p2_fig2_right", "p1_fig2d", "p1_images_train"} <= set(remote), planned

    # what the profile's job grouping should submit: one SLURM job per group (each group's jobs here fit one bundle)
    # and one per job of an ungrouped rule; a group's SLURM job is named <group>_<its rules, sorted>
    members = {}
    for rule in remote:
        if rule in PROFILE_GROUPS:
            members.setdefault(PROFILE_GROUPS[rule], []).append(rule)
    units = {f"{group}_{'_'.join(sorted(rules))}": sorted(rules) for group, rules in members.items()}
    units.update({rule: [rule] for rule in remote if rule not in PROFILE_GROUPS})
    assert all(counts[rule] == 1 for rule in remote if rule not in PROFILE_GROUPS), counts  # one SLURM job each
    submitted = re.findall(r"has been submitted with SLURM jobid (\d+)", out)
    assert len(submitted) == len(units), (units, runs["slurm"].tail())
    # the grouped submission: the 2 GAMP runs in one SLURM job, the 2 P2 figures in another; fewer SLURM jobs than
    # rules, and fewer than jobs
    assert units["p2_gamp_runs_p2_gamp_run"] == ["p2_gamp_run"] and counts["p2_gamp_run"] == 2, (units, counts)
    assert units["p2_dynamics_figures_p2_fig2_left_p2_fig2_right"] == ["p2_fig2_left", "p2_fig2_right"], units
    assert len(submitted) < len(remote) < sum(counts[rule] for rule in remote), (submitted, remote, counts)
    print(f"\n[slurm] {sum(counts[r] for r in remote)} jobs of {len(remote)} rules in {len(submitted)} SLURM jobs")

    jobs = {j["JobId"]: j for j in slurm_jobs(slurm_cluster)}
    by_unit = {}
    for jid in submitted:
        job = jobs[jid]
        assert job["JobState"] == "COMPLETED" and job["ExitCode"] == "0:0", job
        assert job["Account"] == ACCOUNT, job
        by_unit[job["Comment"].removeprefix("rule_").split("_wildcards_")[0]] = job  # rule_<name>[_wildcards_..]
    assert set(by_unit) == set(units), (by_unit.keys(), units)

    gpu_rules = {rule for rule, res in remote.items() if res.get("gpu", "0") not in ("0", "")}
    assert gpu_rules == {"p1_images_train"}  # the check below is not vacuous; SGD runs on the CPU
    for unit, job in by_unit.items():
        rules = units[unit]
        gpu = bool(gpu_rules & set(rules))
        assert not gpu or rules == [unit], unit  # a GPU job is never bundled
        tres = " ".join(job.get(k, "") for k in ("TresPerJob", "TresPerNode", "TRES"))
        assert ("gpu" in tres) == gpu, (unit, tres)
        # every GPU job on the gpu partition, every other on the cpu partition
        assert job["Partition"] == PARTITIONS["gpu" if gpu else "cpu"], (unit, job["Partition"])
        # the rules' own resources reach sbatch (the command-line --default-resources replaced the profile's); a
        # bundle of jobs that do not depend on each other asks for their summed CPUs and memory and the longest
        # time limit (threads -> --cpus-per-task, mem_mb -> --mem, runtime -> --time)
        res = [(remote[r], counts[r]) for r in rules]
        threads = sum(int(r["threads"]) * n for r, n in res)
        mem_mb = sum(int(r["mem_mb"]) * n for r, n in res)
        runtime = max(int(r["runtime"]) for r, _ in res)
        assert job["CPUs/Task"] == str(threads), (unit, job["CPUs/Task"], res)
        assert job["TimeLimit"] == slurm_time(runtime), (unit, job["TimeLimit"], res)
        assert job["MinMemoryNode"] == f"{mem_mb}M", (unit, job["MinMemoryNode"], res)
        # SLURM's own log of the job, kept by --slurm-keep-successful-logs, and the rule's log under logs/
        kind = "rule" if rules == [unit] else "group"
        assert list((runs["slurm_dir"] / ".snakemake/slurm_logs" / f"{kind}_{unit}").rglob(f"{job['JobId']}.log"))
    assert any((runs["slurm_dir"] / "logs").rglob("*.log"))


def test_outputs_equal_a_local_run(runs):
    local_dir, slurm_dir = runs["local_dir"], runs["slurm_dir"]
    files = output_files(local_dir)
    assert set(TARGETS) <= files
    assert files == output_files(slurm_dir)
    for rel in sorted(files):
        assert_same_output(local_dir / rel, slurm_dir / rel)


def test_paper_scale_gpu_job_without_a_gpu_stops_at_once(runs, slurm_cluster):
    """The default gpu_policy (auto) under the SLURM profile at paper scale: the L2H4 training (hours on a GPU, days on
    a CPU) lands on the gpu partition, sees no GPU (the test node's GPU is /dev/null) and stops in its first seconds
    with the reason in its log; the run reports the failure. Runs last: it replaces the smoke training's outputs."""
    slurm_dir = runs["slurm_dir"]
    run = snakemake_run(
        # the GPU jobs take 4 CPUs at paper scale (docs/cluster.md, Requests); the test node has 2
        [TRAINING, *SLURM_ARGS, "--set-threads", "p1_images_train=2", "--config", "scale=paper", CLUSTER_CONFIG],
        slurm_dir,
        timeout=300,
        cluster=slurm_cluster,
        log_name="paper_gpu",
    )
    assert run.returncode != 0 and not run.timed_out, run.tail()
    assert "Error in rule p1_images_train" in run.output, run.tail()
    log = (slurm_dir / "logs/p1_images/p1_images_train_L2H4.log").read_text()
    assert "GPUUnavailableError" in log and "must run on a GPU (scale=paper inside SLURM job" in log, log[-3000:]
    assert "resumable state" not in log  # nothing of the training ran
    jobs = [j for j in slurm_jobs(slurm_cluster) if j["Comment"].startswith("rule_p1_images_train")]
    failed = [j for j in jobs if j["JobState"] == "FAILED"]
    assert failed and all(j["Partition"] == PARTITIONS["gpu"] for j in failed), jobs
    print(
        f"\n[slurm] paper-scale training without a GPU: {len(failed)} attempt(s), run failed after {run.seconds:.1f} s"
    )
