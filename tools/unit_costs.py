"""Unit costs of the cost plan (rules/unit_costs.csv, read by rule cost_plan; smattn.costs), measured.

CPU rows come from a finished run's cost table: for every computing job of the run, its measured CPU time, wall time
and peak memory (results/costs/jobs.csv) against its work units under the run's own parameters (the workflow loaded at
the run's scale), less the start-up cost of its software environment (Python and the imports of a jax or torch job,
measured here in fresh processes). GPU rows for the gpu=1 rules come from ``tools/gpu_check.py --unit-costs``
run on a GPU (basis measured), or, without one, are computed from a card's published peak with the stated assumptions
(basis computed). Each row records the machine, date and commit it was measured on; rows of other scales or rules
already in the table are kept, the ones recalibrated are replaced. The measuring and the calibration are
smattn.costs.units; this is their command line.

    PYTHONPATH=src .venv/bin/python tools/unit_costs.py --jobs results/costs/jobs.csv --scale laptop \\
        --commit $(git rev-parse --short HEAD) [--gpu-rows gpu_units.csv] [--out rules/unit_costs.csv]
    (or --run-dir <workflow directory> instead of --jobs: the benchmark files of the jobs a run has finished)
"""

import argparse
from pathlib import Path

from smattn.costs import units


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--jobs", help="a finished run's results/costs/jobs.csv")
    src.add_argument("--run-dir", help="a run's workflow directory: the benchmark files of the jobs it has finished")
    ap.add_argument("--scale", required=True, choices=["smoke", "laptop", "paper"], help="the scale of that run")
    ap.add_argument("--commit", required=True, help="the commit the run was made with")
    ap.add_argument("--machine", default=None, help="the machine of the run (default: this one)")
    ap.add_argument("--gpu-rows", default=None, help="GPU rows measured by tools/gpu_check.py --unit-costs")
    ap.add_argument("--out", default="rules/unit_costs.csv")
    a = ap.parse_args()
    startup = {env: units.env_startup(env) for env in units.ENV_IMPORTS}
    for env, (cpu, rss) in startup.items():
        print(f"start-up of a {env} job: {cpu:.2f} CPU-s, {rss:.0f} MB")
    jobs, date = units.run_jobs(a.jobs, a.scale, a.run_dir)
    what = "results/costs/jobs.csv" if a.jobs else "benchmark files"
    source = f"workflow run at {a.scale} scale ({what}, {len(jobs)} jobs)"
    new = units.calibrate(
        jobs,
        {e: s[0] for e, s in startup.items()},
        {e: s[1] for e, s in startup.items()},
        scale=a.scale,
        source=source,
        machine=a.machine or units.machine(),
        date=date,
        commit=a.commit,
    )
    new += units.read_unit_costs(a.gpu_rows) if a.gpu_rows else units.computed_gpu_rows(date, a.commit)
    old = units.read_unit_costs(a.out) if Path(a.out).exists() else []
    replaced = {(u.rule, u.device, u.calib_scale) for u in new}
    kept = [u for u in old if (u.rule, u.device, u.calib_scale) not in replaced]
    units.write_unit_costs(a.out, sorted(kept + new, key=lambda u: (u.rule, u.device, u.calib_scale)))
    for u in new:
        print(f"{u.rule:26s} {u.device}  overhead {u.overhead_s:7.2f} s  {u.s_per_unit:.4g} s/unit  ({u.basis})")
    print(f"{len(new)} rows written to {a.out} ({len(kept)} kept)")


if __name__ == "__main__":
    main()
