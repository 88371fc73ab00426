"""Rule cost_plan: every computing job of the run projected from measured unit costs before anything runs
(smattn.costplan): results/costs/plan_<scale>.csv, one row per job, and a Markdown summary with the totals per group,
the critical path, the ideal time on the run's cores and every flagged job."""

import os

from smattn.costplan import (
    PLAN_COLUMNS,
    RUNTIME_CEILING,
    RUNTIME_CEILING_MIN,
    RUNTIME_MARGIN,
    plan_summary,
    project_job,
    read_unit_costs,
)
from smattn.costs import human_duration
from smattn.io import write_csv, write_text
from smattn.scriptio import run


def summary_markdown(s: dict, scale: str, units) -> str:
    lines = [
        f"# Cost plan, scale `{scale}`",
        "",
        f"{s['jobs']} computing jobs: projected {s['cpu_h']:.2f} CPU-hours and {s['gpu_h']:.2f} GPU-hours; critical "
        f"path {human_duration(3600 * s['critical_path_h'])}, ideal time on {s['cores']} cores "
        f"{human_duration(3600 * s['ideal_h'])} (GPU jobs on a GPU at paper scale, on the CPU otherwise).",
        "",
        f"Requested from the scheduler (threads x runtime; first attempts): {s['requested_cpu_h']:.2f} CPU-hours and "
        f"{s['requested_gpu_h']:.2f} GPU-hours (smattn.costplan.request sizes each job's runtime and mem_mb).",
        "",
        "| group | jobs | CPU-hours | GPU-hours |",
        "| --- | ---: | ---: | ---: |",
        *(f"| `{g}` | {v['jobs']} | {v['cpu_h']:.3f} | {v['gpu_h']:.3f} |" for g, v in s["groups"].items()),
        f"| **total** | {s['jobs']} | {s['cpu_h']:.3f} | {s['gpu_h']:.3f} |",
        "",
        "Critical path: " + " -> ".join(s["critical_path"]) + ".",
        "",
        f"Flagged jobs (declared runtime below {RUNTIME_MARGIN:g}x the projection or above max({RUNTIME_CEILING:g}x, "
        f"{RUNTIME_CEILING_MIN:g} min), or mem_mb below the projected peak): "
        f"{len(s['flagged'])}",
        *(f"- `{r.rule}` {r.wildcards}: {r.flag}" for r in s["flagged"]),
        "",
        "Unit costs (benchmarks/unit_costs.csv):",
        *sorted(
            {
                f"- {u.basis} at {u.calib_scale} scale: {u.source}; {u.machine}; {u.date}; commit {u.commit}"
                for u in units
            }
        ),
    ]
    return "\n".join(lines) + "\n"


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
    write_text(io.output.summary, summary_markdown(s, scale, units))
    print(
        f"plan {scale}: {s['jobs']} jobs, {s['cpu_h']:.2f} CPU-h, {s['gpu_h']:.2f} GPU-h, "
        f"{len(s['flagged'])} flagged; critical path {s['critical_path_h']:.2f} h; requested "
        f"{s['requested_cpu_h']:.2f} CPU-h, {s['requested_gpu_h']:.2f} GPU-h"
    )
    for r in s["flagged"]:
        print(f"FLAGGED {r.rule} {r.wildcards}: {r.flag}")


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
