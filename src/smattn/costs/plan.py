"""The cost plan: what every job of a run will cost at a scale, before it runs, and what it asks the scheduler for.

Each job (a mapping from the workflow: group, rule, wildcards text, threads, gpu, declared ``runtime`` in minutes and
``mem_mb``) is projected from its rule's unit cost (``units``) and its work and memory units (``work``): CPU, GPU and
wall seconds and its peak MB, on the device it runs on (a gpu=1 job on a GPU at paper scale). A plan row flags a job
whose declared runtime lies outside ``runtime_bounds`` of its projection, or whose mem_mb lies below its projected
peak. ``request`` sizes what a rule's job asks for (``runtime`` in minutes, ``mem_mb``) from the same projection;
``plan_summary`` totals a plan (hours, per group, critical path, ideal time) and ``plan_markdown`` writes it out.

Shapes and units: times in seconds (the plan's CSV in hours), memory in MB (2**20 bytes), declared runtimes in
minutes as Snakemake's ``runtime`` resource. This module knows nothing of Snakemake: the workflow passes each job as
a mapping and the resolved parameters ``{group: {name: value}}``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from .measured import parse_wildcards
from .schedule import critical_path, ideal_time
from .tables import human_duration
from .units import UnitCost, choose_unit
from .work import memory_units, work

#: a job's declared runtime must be at least this many times its projected wall time
RUNTIME_MARGIN = 2.0
#: ... and at most this many times, or RUNTIME_CEILING_MIN minutes where that is longer (a short job's request is
#: dominated by start-up and queue granularity, not by its projection)
RUNTIME_CEILING = 10.0
RUNTIME_CEILING_MIN = 60.0
#: the runtime a job requests: this many times its projection (more where the unit cost was computed, not measured),
#: at least REQUEST_MIN_RUNTIME minutes, within [RUNTIME_MARGIN, max(RUNTIME_CEILING x, RUNTIME_CEILING_MIN)]
REQUEST_MARGIN = {"measured": 3.0, "computed": 5.0}
REQUEST_MIN_RUNTIME = 10
#: each further attempt of a job (Snakemake's ``attempt``, after a failure) requests this factor more runtime, so a
#: job that ran out of time can finish on its retry
RETRY_GROWTH = 2.0
#: requested memory: the projected peak (host memory; for a GPU job at least its measured CPU peak) times this
#: margin, rounded up to REQUEST_MEM_STEP_MB, at least REQUEST_MIN_MEM_MB
REQUEST_MEM_MARGIN = 1.5
REQUEST_MEM_STEP_MB = 500
REQUEST_MIN_MEM_MB = 1000

#: columns of the plan's CSV (results/costs/plan_<scale>.csv; PlanRow.cells: hours, MB, minutes)
PLAN_COLUMNS = (
    "group",
    "rule",
    "wildcards",
    "device",
    "threads",
    "work",
    "cpu_h",
    "gpu_h",
    "wall_h",
    "peak_mem_mb",
    "runtime_min",
    "mem_mb",
    "runtime_over_projection",
    "flag",
    "unit_basis",
    "unit_source",
)


@dataclass(frozen=True)
class PlanRow:
    """One job of the plan: its projected CPU, GPU and wall seconds (None without a unit cost) and peak MB beside
    its declared ``runtime_min`` and ``mem_mb``; ``flag`` says what does not fit ("" when all does)."""

    group: str
    rule: str
    wildcards: str
    device: str
    threads: int
    work: float
    cpu_s: float | None
    gpu_s: float
    wall_s: float | None
    peak_mem_mb: float | None
    runtime_min: float
    mem_mb: float
    flag: str
    unit_basis: str
    unit_source: str

    @property
    def runtime_ratio(self) -> float | None:
        return None if not self.wall_s else 60.0 * self.runtime_min / self.wall_s

    def cells(self) -> list[str]:
        def h(s):
            return "" if s is None else f"{s / 3600:.4f}"

        ratio = self.runtime_ratio
        return [
            self.group,
            self.rule,
            self.wildcards,
            self.device,
            str(self.threads),
            f"{self.work:.6g}",
            h(self.cpu_s),
            h(self.gpu_s),
            h(self.wall_s),
            "" if self.peak_mem_mb is None else f"{self.peak_mem_mb:.0f}",
            f"{self.runtime_min:g}",
            f"{self.mem_mb:g}",
            "" if ratio is None else f"{ratio:.2f}",
            self.flag,
            self.unit_basis,
            self.unit_source,
        ]


def job_device(gpu: bool, on_gpu: bool) -> str:
    """The device a job's cost is projected on: ``gpu`` for a gpu=1 job of a run on GPUs, else ``cpu``."""
    return "gpu" if (on_gpu and gpu) else "cpu"


def _project(u: UnitCost, rule: str, params: Mapping, wc: Mapping, device: str, threads: int):
    """(work, cpu_s, gpu_s, wall_s, peak MB) of one job under unit cost ``u``."""
    w = work(rule, params, wc)
    seconds = u.overhead_s + u.s_per_unit * w
    mu = memory_units(rule, params, wc)
    mem = u.rss_base_mb + (u.mb_per_unit * mu if mu is not None else 0.0)
    if device == "gpu":
        return w, seconds, seconds, seconds, mem  # a host thread drives the card for the whole job
    # the job's own cores: as parallel as measured, within [1, threads] (a measured ratio below 1 is other processes
    # sharing the cores, not the job)
    return w, seconds, 0.0, seconds / min(max(u.cpu_per_wall, 1.0), float(threads)), mem


def runtime_bounds(wall_s: float) -> tuple[float, float]:
    """[lowest, highest] declared runtime (min) the plan accepts for a job projected to take ``wall_s`` seconds."""
    wall_min = wall_s / 60.0
    return RUNTIME_MARGIN * wall_min, max(RUNTIME_CEILING * wall_min, RUNTIME_CEILING_MIN)


@dataclass(frozen=True)
class Request:
    """What a job asks the scheduler for: ``runtime_min`` (Snakemake ``runtime``) and ``mem_mb``, with the
    projection they were sized from."""

    runtime_min: int
    mem_mb: int
    wall_s: float
    peak_mem_mb: float
    device: str
    basis: str


def request(
    rule: str,
    params: Mapping,
    wildcards: Mapping,
    scale: str,
    attempt: int = 1,
    *,
    units: Sequence[UnitCost],
    threads: int = 1,
    gpu: bool = False,
) -> Request:
    """The runtime and memory a job of ``rule`` requests at ``scale`` on its ``attempt`` (1 the first), sized from its
    projection (the same as the plan's: a gpu=1 job on a GPU at paper scale). Runtime: ``REQUEST_MARGIN`` x the
    projected wall time (by the unit cost's basis), at least ``REQUEST_MIN_RUNTIME`` min, within
    :func:`runtime_bounds`, times ``RETRY_GROWTH ** (attempt - 1)``; memory: the projected peak x
    ``REQUEST_MEM_MARGIN`` rounded up. Raises ValueError for a rule without a unit cost."""
    device = job_device(gpu, scale == "paper")
    u = choose_unit(units, rule, device, scale)
    if u is None:
        raise ValueError(f"no unit cost for {rule} on {device}: measure it (tools/unit_costs.py)")
    _, _, _, wall_s, peak = _project(u, rule, params, wildcards, device, threads)
    if device == "gpu":  # the host side of a GPU job holds at least what the same job held on the CPU
        cpu = choose_unit(units, rule, "cpu", scale)
        if cpu is not None:
            peak = max(peak, _project(cpu, rule, params, wildcards, "cpu", threads)[4])
    lo, hi = runtime_bounds(wall_s)
    minutes = max(REQUEST_MARGIN.get(u.basis, max(REQUEST_MARGIN.values())) * wall_s / 60.0, REQUEST_MIN_RUNTIME)
    minutes = max(min(math.ceil(minutes), math.floor(hi)), math.ceil(lo))
    minutes = math.ceil(minutes * RETRY_GROWTH ** (max(int(attempt), 1) - 1))
    mem = max(REQUEST_MIN_MEM_MB, math.ceil(peak * REQUEST_MEM_MARGIN / REQUEST_MEM_STEP_MB) * REQUEST_MEM_STEP_MB)
    return Request(int(minutes), int(mem), wall_s, peak, device, u.basis)


def project_job(job: Mapping, params: Mapping, units: Sequence[UnitCost], scale: str, on_gpu: bool) -> PlanRow:
    """The plan row of one job (``job``: group, rule, wildcards text, threads, gpu, runtime (min), mem_mb)."""
    rule, wc = job["rule"], parse_wildcards(job["wildcards"])
    device = job_device(bool(job.get("gpu")), on_gpu)
    u = choose_unit(units, rule, device, scale)
    flags = []
    if u is None:
        w = work(rule, params, wc)
        cpu_s = gpu_s = wall_s = mem = None
        flags.append(f"no unit cost for {rule} on {device}")
        basis = source = ""
    else:
        w, cpu_s, gpu_s, wall_s, mem = _project(u, rule, params, wc, device, int(job["threads"]))
        basis, source = u.basis, u.source
    gpu_s = gpu_s or 0.0
    row = PlanRow(
        job["group"],
        rule,
        job["wildcards"],
        device,
        int(job["threads"]),
        w,
        cpu_s,
        gpu_s,
        wall_s,
        mem,
        float(job["runtime"]),
        float(job["mem_mb"]),
        "",
        basis,
        source,
    )
    ratio = row.runtime_ratio
    if ratio is not None:
        lo, hi = runtime_bounds(row.wall_s)
        if row.runtime_min < lo:
            flags.append(f"runtime {row.runtime_min:g} min < {RUNTIME_MARGIN:g} x projected {row.wall_s / 60:.1f} min")
        elif row.runtime_min > hi:
            flags.append(
                f"runtime {row.runtime_min:g} min > max({RUNTIME_CEILING:g} x projected {row.wall_s / 60:.1f} min, "
                f"{RUNTIME_CEILING_MIN:g} min)"
            )
    if mem is not None and mem > row.mem_mb:
        flags.append(f"mem_mb {row.mem_mb:g} < projected peak {mem:.0f} MB")
    return PlanRow(**{**asdict(row), "flag": "; ".join(flags)})


def plan_summary(rows: Sequence[PlanRow], after: Mapping[str, Sequence[str]], keys: Sequence[str], cores: int) -> dict:
    """Totals of a plan: CPU and GPU hours (all, per group), flagged jobs, critical path and ideal time on ``cores``."""
    durations = {k: (r.wall_s or 0.0) for k, r in zip(keys, rows, strict=True)}
    threads = {k: r.threads for k, r in zip(keys, rows, strict=True)}
    length, path = critical_path(durations, after)
    groups: dict[str, dict] = {}
    for r in rows:
        g = groups.setdefault(r.group, {"jobs": 0, "cpu_h": 0.0, "gpu_h": 0.0})
        g["jobs"] += 1
        g["cpu_h"] += (r.cpu_s or 0.0) / 3600
        g["gpu_h"] += r.gpu_s / 3600
    return {
        "jobs": len(rows),
        "cpu_h": sum((r.cpu_s or 0.0) for r in rows) / 3600,
        "gpu_h": sum(r.gpu_s for r in rows) / 3600,
        # what the jobs ask the scheduler for: threads x runtime, and the runtime of the jobs on a GPU
        "requested_cpu_h": sum(r.threads * r.runtime_min for r in rows) / 60,
        "requested_gpu_h": sum(r.runtime_min for r in rows if r.device == "gpu") / 60,
        "groups": groups,
        "flagged": [r for r in rows if r.flag],
        "critical_path_h": length / 3600,
        "critical_path": [f"{rows[keys.index(k)].rule} {rows[keys.index(k)].wildcards}".strip() for k in path],
        "ideal_h": ideal_time(durations, threads, after, cores) / 3600,
        "cores": cores,
    }


def plan_markdown(s: dict, scale: str, units: Sequence[UnitCost]) -> str:
    """The plan's summary in Markdown: ``s`` (``plan_summary``) at ``scale``, the unit costs it was projected from."""
    lines = [
        f"# Cost plan, scale `{scale}`",
        "",
        f"{s['jobs']} computing jobs: projected {s['cpu_h']:.2f} CPU-hours and {s['gpu_h']:.2f} GPU-hours; critical "
        f"path {human_duration(3600 * s['critical_path_h'])}, ideal time on {s['cores']} cores "
        f"{human_duration(3600 * s['ideal_h'])} (GPU jobs on a GPU at paper scale, on the CPU otherwise).",
        "",
        f"Requested from the scheduler (threads x runtime; first attempts): {s['requested_cpu_h']:.2f} CPU-hours and "
        f"{s['requested_gpu_h']:.2f} GPU-hours (smattn.costs.request sizes each job's runtime and mem_mb).",
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
        "Unit costs (rules/unit_costs.csv):",
        *sorted(
            {
                f"- {u.basis} at {u.calib_scale} scale: {u.source}; {u.machine}; {u.date}; commit {u.commit}"
                for u in units
            }
        ),
    ]
    return "\n".join(lines) + "\n"
