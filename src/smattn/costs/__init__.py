"""What a run costs: measured after it ran, projected before it runs, and what each job asks the scheduler for.

* ``measured`` — Snakemake's benchmark file of each job (seconds, MB) read into a per-job and per-group table
  (``JobCost``, ``GroupCost``).
* ``schedule`` — what bounds a run's elapsed time: the critical path of its jobs through their dependencies and the
  ideal time on its cores.
* ``tables`` — the cost tables written (CSV, HTML, the scales table's Markdown) and the measured CPU time of each job
  against the plan's projection (``plan_check``).
* ``machine`` — the machine a run was measured on, in one line (``describe_machine``).
* ``process`` — the whole local run's CPU as the kernel counts it, Snakemake and every process it waited for
  (``run_cpu_s``), which the jobs' benchmarks undercount.
* ``work`` — the work and memory models: the size of a job of each rule (FLOPs, draws x nodes x iterations, ...; MB
  of its dominant arrays) from the run's resolved parameters.
* ``units`` — unit costs (``UnitCost``): seconds per unit of work and MB per memory unit of each rule on a CPU or a
  GPU, calibrated from a recorded run's measured jobs (``calibrate``) or computed from a card's peak, kept in
  ``rules/unit_costs.csv``.
* ``plan`` — the cost plan: every job projected as ``overhead_s + s_per_unit x work`` seconds and
  ``rss_base_mb + mb_per_unit x memory units`` MB (``project_job``), flagged where its declared runtime or memory
  does not fit, and totalled (``plan_summary``). ``request`` sizes what a rule's job asks for from the same
  projection: its runtime 3 x the projected wall time (5 x for a computed unit cost), at least 10 min, within
  [2 x, max(10 x, 60 min)], doubled on each retry, and its memory the projected peak x 1.5.

The names re-exported here are the ones the workflow, scripts and benchmarks use; ``work`` and ``schedule`` are the
functions (their modules are read with ``from smattn.costs.work import ...``).
"""

from .machine import describe_machine
from .measured import (
    BENCHMARK_COLUMNS,
    GROUP_COLUMNS,
    JOB_COLUMNS,
    TOTAL,
    GroupCost,
    JobCost,
    aggregate,
    format_wildcards,
    group_costs,
    job_cost,
    parse_wildcards,
    read_benchmark,
    span_s,
)
from .plan import (
    PLAN_COLUMNS,
    REQUEST_MARGIN,
    RUNTIME_CEILING,
    RUNTIME_CEILING_MIN,
    RUNTIME_MARGIN,
    PlanRow,
    Request,
    job_device,
    plan_markdown,
    plan_summary,
    project_job,
    request,
    runtime_bounds,
)
from .process import run_cpu_s
from .schedule import Schedule, critical_path, ideal_time, schedule
from .tables import (
    CHECK_COLUMNS,
    costs_html,
    group_rows,
    human_duration,
    job_rows,
    plan_check,
    readme_cell,
    readme_table,
    schedule_text,
    write_cost_tables,
)
from .units import (
    ENV_IMPORTS,
    UNIT_COLUMNS,
    UnitCost,
    benchmark_rows,
    calibrate,
    choose_unit,
    computed_gpu_rows,
    env_startup,
    machine,
    read_unit_costs,
    run_jobs,
    write_unit_costs,
)
from .work import (
    ARRAY_COPIES,
    MEMORY,
    NUTS_STEPS,
    PAPER_TOKENS,
    TOKEN_DIM,
    UNIT_FROM,
    WORK,
    forward_flops,
    gd_model,
    memory_units,
    train_steps,
    work,
)

__all__ = [
    "ARRAY_COPIES",
    "BENCHMARK_COLUMNS",
    "CHECK_COLUMNS",
    "ENV_IMPORTS",
    "GROUP_COLUMNS",
    "JOB_COLUMNS",
    "MEMORY",
    "NUTS_STEPS",
    "PAPER_TOKENS",
    "PLAN_COLUMNS",
    "REQUEST_MARGIN",
    "RUNTIME_CEILING",
    "RUNTIME_CEILING_MIN",
    "RUNTIME_MARGIN",
    "TOKEN_DIM",
    "TOTAL",
    "UNIT_COLUMNS",
    "UNIT_FROM",
    "WORK",
    "GroupCost",
    "JobCost",
    "PlanRow",
    "Request",
    "Schedule",
    "UnitCost",
    "aggregate",
    "benchmark_rows",
    "calibrate",
    "choose_unit",
    "computed_gpu_rows",
    "costs_html",
    "critical_path",
    "describe_machine",
    "env_startup",
    "format_wildcards",
    "forward_flops",
    "gd_model",
    "group_costs",
    "group_rows",
    "human_duration",
    "ideal_time",
    "job_cost",
    "job_device",
    "job_rows",
    "machine",
    "memory_units",
    "parse_wildcards",
    "plan_check",
    "plan_markdown",
    "plan_summary",
    "project_job",
    "read_benchmark",
    "read_unit_costs",
    "readme_cell",
    "readme_table",
    "request",
    "run_jobs",
    "run_cpu_s",
    "runtime_bounds",
    "schedule",
    "schedule_text",
    "span_s",
    "train_steps",
    "work",
    "write_cost_tables",
    "write_unit_costs",
]
