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
    (or --run-dir <workflow directory> instead of --jobs: the benchmark files of the jobs a run has finished)
"""

import argparse
import csv
import datetime as dt
import os
import platform
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
# Computed GPU rows (no GPU measured): the training at an effective 5 % of an H100 SXM's dense fp16 tensor-core peak
# (989 TFLOP/s, NVIDIA's datasheet): a 10^11-FLOP step is ~10^2 kernels, so launches and small element-wise kernels,
# not the GEMMs, bound it (~1.6 ms per step); NUTS at 0.5 ms of GPU per float64-equivalent chain gradient (a batched
# 600 x 600 Cholesky and inverse per vectorised step, latency-bound); 60 s of start-up (CUDA context, compilation).
H100_FP16_PEAK = 989e12
ASSUMED_GEMM_FRACTION = 0.05
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
    report = "; import resource as r; u = r.getrusage(r.RUSAGE_SELF); print(u.ru_utime + u.ru_stime, u.ru_maxrss)"
    best_cpu, rss = float("inf"), float("inf")
    for _ in range(reps):
        out = subprocess.run(
            [sys.executable, "-c", ENV_IMPORTS[env] + report],
            check=True,
            capture_output=True,
            text=True,
            env={**os.environ, "JAX_PLATFORMS": "cpu"},
        ).stdout.split()
        best_cpu, rss = min(best_cpu, float(out[-2])), min(rss, float(out[-1]) / 1024)
    return best_cpu, rss


def benchmark_rows(run_dir: str, specs) -> list[dict]:
    """jobs.csv-like rows from the benchmark files under ``run_dir`` (a workflow directory) of the jobs in ``specs``
    that have one (a run still going, or one whose cost table was not made)."""
    from smattn.costs import job_cost

    rows = []
    for bench, s in specs.items():
        path = Path(run_dir) / bench
        if path.exists():
            j = job_cost(path, s["group"], s["rule"], s["wildcards"])
            rows.append(
                {
                    "rule": j.rule,
                    "wildcards": j.wildcards,
                    "cpu_s": "" if j.cpu_s is None else str(j.cpu_s),
                    "wall_s": str(j.wall_s),
                    "max_rss_mb": "" if j.max_rss_mb is None else str(j.max_rss_mb),
                    "finished": j.finished.isoformat(),
                }
            )
    return rows


def run_jobs(jobs_csv: str | None, scale: str, run_dir: str | None = None):
    """The run's jobs with their work units: [{rule, env, work, mem_units, cpu_s, wall_s, max_rss_mb}], the run's
    last finish date. From its cost table ``jobs_csv``, or from the benchmark files under ``run_dir``."""
    from smattn.scriptio import loaded_workflow

    with loaded_workflow([f"scale={scale}"]) as wf:
        specs, params = wf.globals["JOB_SPECS"], wf.globals["PARAMS"]
    if jobs_csv:
        with open(jobs_csv, newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
    else:
        rows = benchmark_rows(run_dir, specs)
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
            src.format(f"an effective {ASSUMED_GEMM_FRACTION:.0%} of the H100 SXM dense fp16 peak"),
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
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--jobs", help="a finished run's results/costs/jobs.csv")
    src.add_argument("--run-dir", help="a run's workflow directory: the benchmark files of the jobs it has finished")
    ap.add_argument("--scale", required=True, choices=["smoke", "laptop", "paper"], help="the scale of that run")
    ap.add_argument("--commit", required=True, help="the commit the run was made with")
    ap.add_argument("--machine", default=None, help="the machine of the run (default: this one)")
    ap.add_argument("--gpu-rows", default=None, help="GPU rows measured by benchmarks/gpu_check.py --unit-costs")
    ap.add_argument("--out", default="benchmarks/unit_costs.csv")
    a = ap.parse_args()
    startup = {env: env_startup(env) for env in ENV_IMPORTS}
    for env, (cpu, rss) in startup.items():
        print(f"start-up of a {env} job: {cpu:.2f} CPU-s, {rss:.0f} MB")
    jobs, date = run_jobs(a.jobs, a.scale, a.run_dir)
    what = "results/costs/jobs.csv" if a.jobs else "benchmark files"
    source = f"workflow run at {a.scale} scale ({what}, {len(jobs)} jobs)"
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
