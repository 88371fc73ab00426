"""Rule cost_plan: every computing job of the run projected from measured unit costs before anything runs
(smattn.costs.plan): results/costs/plan_<scale>.csv, one row per job, and a Markdown summary with the totals per group,
the critical path, the ideal time on the run's cores and every flagged job."""

import os

from smattn.costs import PLAN_COLUMNS, plan_markdown, plan_summary, project_job, read_unit_costs
from smattn.io import write_csv, write_text
from smattn.scriptio import run


def main(io):
    units = read_unit_costs(io.input.units)
    specs = dict(io.params.jobs)
    scale = io.params.scale
    keys = list(specs)
    # at paper scale a gpu=1 job must run on a GPU (smattn.device, gpu_policy auto under SLURM)
    rows = [project_job(specs[k], io.params.config_params, units, scale, on_gpu=scale == "paper") for k in keys]
    cores = int(io.params.cores or os.cpu_count() or 1)
    s = plan_summary(rows, {k: specs[k]["after"] for k in keys}, keys, cores)
    write_csv(io.output.plan, PLAN_COLUMNS, (r.cells() for r in rows))
    write_text(io.output.summary, plan_markdown(s, scale, units))
    print(
        f"plan {scale}: {s['jobs']} jobs, {s['cpu_h']:.2f} CPU-h, {s['gpu_h']:.2f} GPU-h, "
        f"{len(s['flagged'])} flagged; critical path {s['critical_path_h']:.2f} h; requested "
        f"{s['requested_cpu_h']:.2f} CPU-h, {s['requested_gpu_h']:.2f} GPU-h"
    )
    for r in s["flagged"]:
        print(f"FLAGGED {r.rule} {r.wildcards}: {r.flag}")


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
