"""How many SLURM jobs a run through a cluster profile submits, and what each one asks for.

    PYTHONPATH=src python tools/slurm_submissions.py --config scale=paper            # with the profile's groups
    PYTHONPATH=src python tools/slurm_submissions.py --config scale=paper --ungrouped  # every job on its own
    PYTHONPATH=src python tools/slurm_submissions.py --config scale=paper --json out.json [TARGET ...]

Nothing runs and nothing is submitted: the run is planned by Snakemake's own dry run (`snakemake -n --forceall`,
every job of the targets, default `all`) through the profile (default profiles/slurm), and every unit the dry run
hands to its executor is recorded. A unit is one SLURM submission unless it is a single job of a local rule (raw-data
fetch, ledger, cost tables: they run on the submit host) or of a rule with nothing to run (`all`). A group job is
one submission whatever its size; its resources are Snakemake's sum over the jobs that run side by side and maximum
over the steps that run one after the other (runtime: the other way round), computed as for a remote run (no
--cores or --resources limit). `--ungrouped` drops the profile's `groups` and `group-components` (the count without
job grouping). The table lists each submission: kind, name, jobs, rules, partition, GPUs, CPUs, memory, time limit;
`--json` writes the same as {"submissions", "jobs", "local_jobs", "units": [...], "table"}.

The numbers come from Snakemake's DAG, not from this script: the record hooks into the dry-run executor (its
`run_job`), an internal of Snakemake 9; if a Snakemake version changes it, the script stops with that message rather
than counting nothing.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections import Counter
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
GROUP_KEYS = ("groups", "group-components")


def ungrouped_profile(profile: Path, into: Path) -> Path:
    """A copy of `profile` (a folder with config.yaml) without job grouping, written under `into`."""
    settings = yaml.safe_load((profile / "config.yaml").read_text()) or {}
    for key in GROUP_KEYS:
        settings.pop(key, None)
    (into / "config.yaml").write_text(yaml.safe_dump(settings, sort_keys=False))
    return into


def _number(value):
    return value if isinstance(value, (int, float)) else 0


def describe(unit, localrules: set[str]) -> dict:
    """One unit the dry-run executor received: a group job or a single job, with what SLURM would be asked for."""
    from snakemake.resources import GroupResources, Resources

    if unit.is_group():
        # as for a remote run: no global limit on cores or memory (the dry run itself runs with --cores 1)
        res = GroupResources.basic_layered(
            toposorted_jobs=unit.toposorted,
            constraints=Resources.from_mapping({}),
            run_local=False,
            additive_resources=["runtime"],
            sortby=["runtime"],
        )
        jobs = list(unit.jobs)
        kind, name, submitted = "group", unit.groupid, True
        cpus = int(res.get("_cores", 1))
    else:
        res = dict(unit.resources.items())
        jobs = [unit]
        rule = unit.rule
        kind, name = "job", rule.name
        submitted = not (rule.group is None and (rule.name in localrules or rule.norun))
        cpus = int(unit.threads)
    members = []
    for job in jobs:
        own = dict(job.resources.items())
        members.append(
            {
                "rule": job.rule.name,
                "wildcards": dict(job.wildcards_dict),
                "gpu": int(_number(own.get("gpu", 0))),
                "partition": own.get("slurm_partition"),
                "threads": int(job.threads),
                "mem_mb": int(_number(own.get("mem_mb", 0))),
                "runtime": int(_number(own.get("runtime", 0))),
            }
        )
    return {
        "kind": kind,
        "name": name,
        "submitted": submitted,
        "jobs": len(jobs),
        "rules": dict(sorted(Counter(m["rule"] for m in members).items())),
        "partition": res.get("slurm_partition"),
        "gpu": int(_number(res.get("gpu", 0))),
        "cpus": cpus,
        "mem_mb": int(_number(res.get("mem_mb", 0))),
        "runtime": int(_number(res.get("runtime", 0))),
        "members": members,
    }


def plan(snakemake_args: list[str]) -> list[dict]:
    """Every unit of a dry run with `snakemake_args` (run in this process), described by `describe`."""
    from snakemake import cli
    from snakemake.executors import dryrun

    units = []
    original = dryrun.Executor.run_job

    def run_job(self, job):
        localrules = set(self.workflow._localrules)  # the rules named in `localrules:`
        units.append(describe(job, localrules))
        return original(self, job)

    dryrun.Executor.run_job = run_job
    try:
        cli.main(snakemake_args)
    except SystemExit as stop:
        if stop.code not in (0, None):
            raise SystemExit(f"the dry run failed (exit {stop.code}); its messages are above") from None
    finally:
        dryrun.Executor.run_job = original
    if not units:
        raise SystemExit("the dry run handed no job to its executor: Snakemake's dry-run executor changed?")
    return units


def summary(units: list[dict]) -> dict:
    submitted = [u for u in units if u["submitted"]]
    return {
        "submissions": len(submitted),
        "jobs": sum(u["jobs"] for u in submitted),
        "local_jobs": sum(u["jobs"] for u in units if not u["submitted"]),
        "units": submitted,
    }


def table(result: dict) -> str:
    """The submissions, one line per kind of submission (identical ones counted in `n`)."""
    rows = Counter()
    for u in result["units"]:
        rules = ", ".join(f"{r} x{n}" if n > 1 else r for r, n in u["rules"].items())
        key = ("jobs", "partition", "gpu", "cpus", "mem_mb", "runtime")
        rows[(u["kind"], u["name"], *(str(u[k]) if k == "partition" else u[k] for k in key), rules)] += 1
    lines = [
        f"{result['submissions']} SLURM submissions for {result['jobs']} jobs "
        f"({result['local_jobs']} more run on the submit host)",
        f"{'n':>3s} {'kind':5s} {'name':26s} {'jobs':>4s} {'partition':>9s} {'gpu':>3s} {'cpus':>4s} {'mem_mb':>7s} "
        f"{'runtime':>7s}  rules",
    ]
    for (kind, name, jobs, partition, gpu, cpus, mem, runtime, rules), n in sorted(
        rows.items(), key=lambda item: (item[0][0] != "group", item[0][1])
    ):
        lines.append(
            f"{n:3d} {kind:5s} {name:26s} {jobs:4d} {partition:>9s} {gpu:3d} {cpus:4d} {mem:7d} {runtime:7d}  {rules}"
        )
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("targets", nargs="*", help="targets of the run (default: the workflow's default target)")
    ap.add_argument("--profile", type=Path, default=REPO / "profiles" / "slurm")
    ap.add_argument("--config", nargs="*", default=[], help="as snakemake --config (e.g. scale=paper)")
    ap.add_argument("--ungrouped", action="store_true", help="without the profile's job grouping")
    ap.add_argument("--json", type=Path, help="write the result here")
    ap.add_argument("--directory", type=Path, default=REPO, help="the workflow's folder")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        profile = ungrouped_profile(args.profile, Path(tmp)) if args.ungrouped else args.profile
        snakemake_args = [
            *args.targets,
            "--directory",
            str(args.directory),
            "--snakefile",
            str(args.directory / "Snakefile"),
            "--profile",
            str(profile),
            "--dry-run",
            "--forceall",
            # no thread scaling in the plan (a remote run has no --cores limit); group resources are recomputed
            "--cores",
            "100000",
            "--quiet",
            "rules",
            *(["--config", *args.config] if args.config else []),
        ]
        result = summary(plan(snakemake_args))
    text = result["table"] = table(result)
    print(text)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    main()
