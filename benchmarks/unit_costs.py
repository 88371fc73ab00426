"""Unit costs of the cost plan (benchmarks/unit_costs.csv, read by rule cost_plan; smattn.costplan), measured.

CPU rows come from a finished run's cost table: for every computing job of the run, its measured CPU time, wall time
and peak memory (results/costs/jobs.csv) against its work units under the run's own parameters (the workflow loaded at
the run's scale), less the start-up cost of its software environment (Python and the imports of a jax or torch job,
measured here in fresh processes). GPU rows for the gpu=1 rules come from ``benchmarks/gpu_check.py --unit-costs``
run on a GPU (basis measured), or, without one, are computed from a card's published peak with the stated assumptions
(basis computed). Each row records the machine, date and commit it was measured on; rows of other scales or rules
already in the table are kept, the ones recalibrated are replaced.

    PYTHONPATH=src .venv/bin/python benchmarks/unit_costs.py --jobs results/costs/jobs.csv --scale laptop \\
        --commit $(git rev-parse --short HEAD) [--gpu-rows gpu_units.csv] [--out benchmarks/unit_costs.csv]
"""

import argparse
import csv
import datetime as dt
import os
import platform
import resource
import subprocess
import sys
from pathlib import Path

from smattn.costplan import (
    UnitCost,
    memory_units,
    parse_wildcards,
    read_unit_costs,
    work,
    write_unit_costs,
)

ENV_IMPORTS = {
    "jax": "import numpy, scipy, jax, jax.numpy as jnp; jnp.zeros(1).block_until_ready(); import smattn.scriptio",
    "torch": "import numpy, scipy, torch, jax, jax.numpy as jnp; torch.zeros(1); import smattn.scriptio",
    "workflow": "import numpy, yaml; import smattn.scriptio",
}
# Computed GPU rows (no GPU measured): the training at 30 % of an H100 SXM's dense fp16 tensor-core peak (989 TFLOP/s,
# NVIDIA's datasheet) for its GEMM-bound step; NUTS at 0.5 ms of GPU per float64-equivalent chain gradient (a batched
# 600 x 600 Cholesky and inverse per vectorised step, latency-bound); 60 s of start-up (CUDA context, compilation).
H100_FP16_PEAK = 989e12
ASSUMED_GEMM_FRACTION = 0.30
ASSUMED_NUTS_S_PER_GRADIENT = 5e-4
GPU_STARTUP_S = 60.0


def machine() -> str:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model or platform.processor() or platform.machine()}, {os.cpu_count()} cores"


def env_startup(env: str, reps: int = 3) -> tuple[float, float]:
    """(CPU seconds, peak RSS MB) of a fresh Python process importing what a job of ``env`` imports (best of reps)."""
    best_cpu, rss = float("inf"), 0.0
    for _ in range(reps):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-c", ENV_IMPORTS[env]], check=True, env={**os.environ, "JAX_PLATFORMS": "cpu"})
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        best_cpu = min(best_cpu, cpu)
        rss = max(rss, after.ru_maxrss / 1024)
    return best_cpu, rss


def run_jobs(jobs_csv: str, scale: str):
    """The run's jobs with their work units: [{rule, env, work, mem_units, cpu_s, wall_s, max_rss_mb}], the run's
    last finish date."""
    from smattn.scriptio import loaded_workflow

    with open(jobs_csv, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    with loaded_workflow([f"scale={scale}"]) as wf:
        specs, params = wf.globals["JOB_SPECS"], wf.globals["PARAMS"]
    env = {(s["rule"], s["wildcards"]): s["env"] for s in specs.values()}
    out = []
    for r in rows:
        wc = parse_wildcards(r["wildcards"])
        key = (r["rule"], r["wildcards"])
        if key not in env:
            print(f"skipped: {key} of {jobs_csv} is no longer a job of the workflow at scale {scale}")
            continue
        out.append(
            {
                "rule": r["rule"],
                "env": env[key],
                "work": work(r["rule"], params, wc),
                "mem_units": memory_units(r["rule"], params, wc),
                "cpu_s": float(r["cpu_s"]) if r["cpu_s"] else None,
                "wall_s": float(r["wall_s"]),
                "max_rss_mb": float(r["max_rss_mb"]) if r["max_rss_mb"] else None,
            }
        )
    last = max(dt.datetime.fromisoformat(r["finished"]) for r in rows)
    return out, last.date().isoformat()


def computed_gpu_rows(date: str, commit: str) -> list[UnitCost]:
    src = "computed, not measured: {}; replace with benchmarks/gpu_check.py --unit-costs on a GPU"
    return [
        UnitCost(
            "p1_images_train",
            "gpu",
            GPU_STARTUP_S,
            1.0 / (ASSUMED_GEMM_FRACTION * H100_FP16_PEAK),
            1.0,
            4000.0,
            0.0,
            "paper",
            "computed",
            src.format(f"{ASSUMED_GEMM_FRACTION:.0%} of the H100 SXM dense fp16 peak"),
            "NVIDIA H100 SXM (datasheet)",
            date,
            commit,
        ),
        UnitCost(
            "p1_images_sample",
            "gpu",
            GPU_STARTUP_S,
            ASSUMED_NUTS_S_PER_GRADIENT,
            1.0,
            4000.0,
            0.0,
            "paper",
            "computed",
            src.format(f"{1e3 * ASSUMED_NUTS_S_PER_GRADIENT:g} ms per chain gradient"),
            "NVIDIA H100 SXM (datasheet)",
            date,
            commit,
        ),
    ]


def main():
    from smattn.costplan import calibrate

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", required=True, help="a finished run's results/costs/jobs.csv")
    ap.add_argument("--scale", required=True, choices=["smoke", "laptop", "paper"], help="the scale of that run")
    ap.add_argument("--commit", required=True, help="the commit the run was made with")
    ap.add_argument("--machine", default=None, help="the machine of the run (default: this one)")
    ap.add_argument("--gpu-rows", default=None, help="GPU rows measured by benchmarks/gpu_check.py --unit-costs")
    ap.add_argument("--out", default="benchmarks/unit_costs.csv")
    a = ap.parse_args()
    startup = {env: env_startup(env) for env in ENV_IMPORTS}
    for env, (cpu, rss) in startup.items():
        print(f"start-up of a {env} job: {cpu:.2f} CPU-s, {rss:.0f} MB")
    jobs, date = run_jobs(a.jobs, a.scale)
    source = f"workflow run at {a.scale} scale (results/costs/jobs.csv, {len(jobs)} jobs)"
    new = calibrate(
        jobs,
        {e: s[0] for e, s in startup.items()},
        {e: s[1] for e, s in startup.items()},
        scale=a.scale,
        source=source,
        machine=a.machine or machine(),
        date=date,
        commit=a.commit,
    )
    new += read_unit_costs(a.gpu_rows) if a.gpu_rows else computed_gpu_rows(date, a.commit)
    old = read_unit_costs(a.out) if Path(a.out).exists() else []
    replaced = {(u.rule, u.device, u.calib_scale) for u in new}
    kept = [u for u in old if (u.rule, u.device, u.calib_scale) not in replaced]
    write_unit_costs(a.out, sorted(kept + new, key=lambda u: (u.rule, u.device, u.calib_scale)))
    for u in new:
        print(f"{u.rule:26s} {u.device}  overhead {u.overhead_s:7.2f} s  {u.s_per_unit:.4g} s/unit  ({u.basis})")
    print(f"{len(new)} rows written to {a.out} ({len(kept)} kept)")


if __name__ == "__main__":
    main()
