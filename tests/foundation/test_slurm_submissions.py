"""Job grouping of the SLURM profile: a paper-scale run submits at most 40 SLURM jobs, every bundle holds CPU jobs only,
on the cpu partition, and asks for no more than a common CPU node has (docs/cluster.md, "Fewer, larger
submissions"). The submissions are planned by tools/slurm_submissions.py from Snakemake's own dry run; the
count without grouping is checked against the dry run's job table and the workflow's `localrules:`."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
TOOL = REPO / "tools" / "slurm_submissions.py"
CLUSTER = "cluster={cpu_partition: c, gpu_partition: g, account: acc}"
MAX_SUBMISSIONS = 40
# what one bundle may ask for (docs/cluster.md): a common CPU node
MAX_CPUS, MAX_MEM_MB = 16, 48000


def submissions(workdir: Path, *extra) -> dict:
    out = workdir / f"plan{len(list(workdir.glob('plan*.json')))}.json"
    r = subprocess.run(
        [sys.executable, str(TOOL), "--directory", str(workdir), "--profile", str(workdir / "profiles" / "slurm")]
        + ["--json", str(out), "--config", "scale=paper", CLUSTER, *extra],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    return json.loads(out.read_text())


# the module's dry runs (4 s each) are built once, on one xdist worker
pytestmark = pytest.mark.xdist_group("slurm_submissions")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, copy_workflow):
    return copy_workflow(tmp_path_factory.mktemp("wf"))


@pytest.fixture(scope="module")
def grouped(workdir):
    return submissions(workdir)


@pytest.fixture(scope="module")
def ungrouped(workdir):
    return submissions(workdir, "--ungrouped")


@pytest.fixture(scope="module")
def profile():
    return yaml.safe_load((REPO / "profiles" / "slurm" / "config.yaml").read_text())


def job_stats(output: str) -> dict[str, int]:
    """{rule: count, "total": n} from the "Job stats" table of a dry run."""
    m = re.search(r"^Job stats:\njob +count\n[- ]+\n((?:\S+ +\d+\n)+)", output, re.M)
    assert m, output[-3000:]
    return {name: int(n) for name, n in (line.split() for line in m.group(1).splitlines())}


def local_rules() -> set[str]:
    """The rules named in the rule files' `localrules:` blocks, read from the source, and `all`."""
    names = {"all"}
    for smk in (REPO / "rules").glob("*.smk"):
        for block in re.findall(r"^localrules:\n((?:[ \t]+\w+,?\n)+)", smk.read_text(), re.M):
            names.update(re.findall(r"\w+", block))
    return names


def test_without_grouping_every_job_is_one_submission(workdir, ungrouped):
    """The count before grouping, against the dry run's own job table less the jobs of local rules."""
    r = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--forceall", "--config", "scale=paper"],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    stats = job_stats(r.stdout)
    local = local_rules()
    assert {"fetch_raw", "metrics_ledger", "cost_table"} < local
    remote_jobs = sum(n for rule, n in stats.items() if rule != "total" and rule not in local)
    assert ungrouped["submissions"] == ungrouped["jobs"] == remote_jobs
    assert all(u["kind"] == "job" for u in ungrouped["units"])
    assert ungrouped["submissions"] > MAX_SUBMISSIONS  # the limit below is not met without grouping


def test_paper_scale_run_submits_at_most_40_slurm_jobs(grouped, ungrouped):
    print(f"\npaper scale: {ungrouped['submissions']} SLURM submissions ungrouped, {grouped['submissions']} grouped")
    print(grouped["table"])
    assert grouped["jobs"] == ungrouped["jobs"]  # the same jobs, in fewer submissions
    assert grouped["submissions"] <= MAX_SUBMISSIONS, grouped["table"]


def test_every_group_of_the_profile_bundles_its_rules(grouped, profile):
    """Each group named in the profile is used, and every job of a grouped rule travels in its group."""
    rule_group = profile["groups"]
    assert set(rule_group.values()) == set(profile["group-components"])
    groups = [u for u in grouped["units"] if u["kind"] == "group"]
    assert {u["name"] for u in groups} == set(rule_group.values())
    for u in grouped["units"]:
        for m in u["members"]:
            if m["rule"] in rule_group:
                assert u["kind"] == "group" and u["name"] == rule_group[m["rule"]], (m, u["name"])
    largest: dict[str, int] = {}
    for u in groups:
        largest[u["name"]] = max(largest.get(u["name"], 0), u["jobs"])
    # a group whose bundles all hold one job saves nothing (one bundle of one beside chains is the chain's network
    # without its second job: L2H8's export, which has no theory grid)
    assert all(n > 1 for n in largest.values()), largest


def test_bundles_are_cpu_only_and_fit_a_cpu_node(grouped):
    """No GPU job in a bundle (they go to another partition); a bundle asks for the sum of its jobs' CPUs and memory
    at most, no less than its longest job's time limit, and stays within one common node and within an hour or the
    longest time limit a single job of the workflow already asks for (a chain's time limits add up)."""
    singles = [u for u in grouped["units"] if u["kind"] == "job"]
    assert any(u["gpu"] for u in singles)  # the GPU jobs are there, each on its own
    longest_single = max(u["runtime"] for u in singles)
    for u in grouped["units"]:
        if u["kind"] != "group":
            continue
        members = u["members"]
        assert u["gpu"] == 0 and all(m["gpu"] == 0 for m in members), u
        assert u["partition"] == "c" and {m["partition"] for m in members} == {"c"}, u
        assert max(m["threads"] for m in members) <= u["cpus"] <= sum(m["threads"] for m in members), u
        assert max(m["mem_mb"] for m in members) <= u["mem_mb"] <= sum(m["mem_mb"] for m in members), u
        assert max(m["runtime"] for m in members) <= u["runtime"] <= sum(m["runtime"] for m in members), u
        assert u["cpus"] <= MAX_CPUS and u["mem_mb"] <= MAX_MEM_MB, u
        assert u["runtime"] <= max(longest_single, 60), u  # no longer than an hour or the longest single job
