"""Unit costs: what a unit of work of each rule costs on a device, measured (or, for a GPU, computed) and kept in
a table (``rules/unit_costs.csv``, written by ``tools/unit_costs.py``).

A job's cost is ``overhead_s + s_per_unit * work`` CPU seconds (or GPU seconds for a gpu=1 job run on a GPU), its
peak memory ``rss_base_mb + mb_per_unit * memory units`` MB (2**20 bytes), work and memory units as ``work``
counts them. CPU rows are calibrated from a recorded run: its jobs' measured CPU time, wall time and peak memory (its
cost table ``results/costs/jobs.csv``, or the benchmark files of the jobs it has finished) against their work, less
the start-up of their software environment (Python and the imports of a jax or torch job, measured in fresh
processes). GPU rows come from ``tools/gpu_check.py --unit-costs`` run on a GPU (basis measured) or are
computed from a card's published peak with the stated assumptions (basis computed). Each row records the machine,
date and commit it was measured on.
"""

from __future__ import annotations

import csv
import datetime as dt
import os
import platform
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from .. import io as sio
from .measured import job_cost, parse_wildcards
from .work import ARRAY_COPIES, UNIT_FROM, memory_units, work


@dataclass(frozen=True)
class UnitCost:
    """Measured (or, for a GPU, computed) unit cost of one rule on one kind of device.

    ``overhead_s`` + ``s_per_unit`` x work = CPU seconds (device cpu) or GPU seconds (device gpu) of a job;
    ``cpu_per_wall`` = CPU seconds per wall second measured (threads actually used); memory
    ``rss_base_mb`` + ``mb_per_unit`` x memory units (``mb_per_unit`` 0: the measured peak, ``rss_base_mb``).
    ``calib_scale``: the scale of the run it was measured at; ``basis``: measured | computed."""

    rule: str
    device: str
    overhead_s: float
    s_per_unit: float
    cpu_per_wall: float
    rss_base_mb: float
    mb_per_unit: float
    calib_scale: str
    basis: str
    source: str
    machine: str
    date: str
    commit: str


UNIT_COLUMNS = tuple(f.name for f in fields(UnitCost))


def read_unit_costs(path: str | os.PathLike) -> list[UnitCost]:
    """The rows of a unit-cost table (columns UNIT_COLUMNS); ValueError naming the file for a missing column."""
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    missing = set(UNIT_COLUMNS) - set(rows[0] if rows else UNIT_COLUMNS)
    if missing:
        raise ValueError(f"{path}: unit-cost table without columns {sorted(missing)}")
    out = []
    for r in rows:
        num = {k: float(r[k]) for k in ("overhead_s", "s_per_unit", "cpu_per_wall", "rss_base_mb", "mb_per_unit")}
        out.append(UnitCost(**{**r, **num}))
    return out


def write_unit_costs(path: str | os.PathLike, units: Iterable[UnitCost]) -> None:
    """Write ``units`` as a unit-cost table (columns UNIT_COLUMNS, atomically)."""
    sio.write_csv(path, UNIT_COLUMNS, ([str(v) for v in asdict(u).values()] for u in units))


def choose_unit(units: Sequence[UnitCost], rule: str, device: str, scale: str) -> UnitCost | None:
    """The unit cost of ``rule`` on ``device``: the one measured at ``scale`` if any, else a measured one (the
    largest calibration scale), else a computed one; a rule without any takes those of its ``UNIT_FROM`` rule."""
    cand = [u for u in units if u.rule == rule and u.device == device]
    if not cand and rule in UNIT_FROM:
        return choose_unit(units, UNIT_FROM[rule], device, scale)
    if not cand:
        return None
    order = {"smoke": 0, "laptop": 1, "paper": 2}
    return max(cand, key=lambda u: (u.calib_scale == scale, u.basis == "measured", order.get(u.calib_scale, -1)))


def calibrate(
    measured: Sequence[Mapping],
    env_overhead_s: Mapping[str, float],
    env_rss_mb: Mapping[str, float],
    *,
    scale: str,
    source: str,
    machine: str,
    date: str,
    commit: str,
) -> list[UnitCost]:
    """CPU unit costs per rule from a run's jobs (each a mapping with rule, env, work, mem_units, cpu_s, wall_s,
    max_rss_mb as numbers). The overhead is the environment's measured start-up (Python and its imports, ``env``
    torch or jax) capped at the job's CPU time; ``s_per_unit`` is the rule's CPU time beyond the overheads over its
    work, summed over its jobs (the ratio estimator: large jobs weigh most); ``cpu_per_wall`` the median CPU/wall.
    Memory: for a rule with a memory model (MB of its dominant arrays) the peak is ``ARRAY_COPIES`` x those MB on
    top of what the job held besides them (the median of max_rss - ARRAY_COPIES x units); for the others, the
    largest measured peak."""

    def median(xs):
        xs = sorted(xs)
        k = len(xs) // 2
        return xs[k] if len(xs) % 2 else 0.5 * (xs[k - 1] + xs[k])

    by_rule: dict[str, list[Mapping]] = {}
    for j in measured:
        if j.get("cpu_s") is None or not j.get("wall_s"):
            continue
        by_rule.setdefault(j["rule"], []).append(j)
    out = []
    for rule, jobs in by_rule.items():
        env = jobs[0]["env"]
        overhead = min(env_overhead_s[env], min(j["cpu_s"] for j in jobs))
        rate = sum(max(j["cpu_s"] - overhead, 0.0) for j in jobs) / sum(j["work"] for j in jobs)
        cpu_per_wall = median([max(j["cpu_s"], 1e-3) / j["wall_s"] for j in jobs])
        rss = [j for j in jobs if j.get("max_rss_mb") is not None]
        if not rss:
            base, per = env_rss_mb[env], 0.0
        elif jobs[0].get("mem_units") is None:
            base, per = max(j["max_rss_mb"] for j in rss), 0.0
        else:
            per = ARRAY_COPIES
            base = max(env_rss_mb[env], median([j["max_rss_mb"] - per * j["mem_units"] for j in rss]))
        out.append(
            UnitCost(
                rule, "cpu", overhead, rate, cpu_per_wall, base, per, scale, "measured", source, machine, date, commit
            )
        )
    return out


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
    """This machine as a unit-cost row names it: ``"<CPU model>, <n> cores"``."""
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


def benchmark_rows(run_dir: str | os.PathLike, specs: Mapping[str, Mapping]) -> list[dict]:
    """jobs.csv-like rows from the benchmark files under ``run_dir`` (a workflow directory) of the jobs in ``specs``
    that have one (a run still going, or one whose cost table was not made)."""
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
    from ..scriptio import loaded_workflow

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
    """The GPU rows of the gpu=1 rules computed from an H100's peak under the assumptions above (basis computed), for
    a table without measured ones."""
    src = "computed, not measured: {}; replace with tools/gpu_check.py --unit-costs on a GPU"
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
