# Shared definitions for all rule files (resolved parameters of the active scale, raw-data paths) and the
# helper that declares a figure's outputs.
#
# Conventions of the rule files
# - Figure rules declare their outputs with figure(), which gives the PNG (in the report, with caption, category and
#   subcategory), the PDF beside it and the CSV of the plotted data; scripts write exactly the declared files.
# - Metrics: the rule that computes a number writes its ledger entries itself, as a declared output
#   `metrics` (results/metrics/<group>/<name>.json) next to its figure or result.
#   Reasons: the numbers of the ledger are then computed from the same arrays as the figure they describe (a
#   separate metrics rule re-reads the same files and repeats part of the analysis, e.g. P2's first-crossing
#   iterations and regimes, which exist only inside the figure scripts); a ledger entry cannot be older than its
#   figure; and there is one job per figure, not two.
# - Rules that compute have a log, logs/<group>/<rule>[_<wildcards>].log, and a benchmark,
#   results/benchmarks/<group>/<rule>[_<wildcards>].tsv; local rules and pure aggregation have no benchmark.
#   The cost table (rule cost_table in rules/report.smk) reads the benchmark of every job of the targets, so a
#   new computing rule (or new wildcard values) is added to its list COST_JOBS with benchmarks() below.

import itertools
import os
import re
from pathlib import Path

from smattn.config import ConfigError, load_schema, resolve_params
from smattn.data.registry import RAW_FILES

SCHEMA = load_schema(workflow.source_path("../schemas/config.schema.yaml"))
SCALE = config["scale"]
try:
    PARAMS = resolve_params(config, SCHEMA)
except ConfigError as _err:
    raise WorkflowError(f"Invalid configuration: {_err}")

DATA_DIR = config["data_dir"]


# group_params("p2_theory"): resolved parameters of a group at the active scale (a dict).
group_params = PARAMS.__getitem__
# raw("mnist/t10k-labels-idx1-ubyte.gz"): path of a verified raw data file (obtained by rule fetch_raw).
raw = lambda relpath: f"{DATA_DIR}/{relpath}"


def figure(stem, caption, category, subcategory, name=""):
    """Declared outputs of one figure at `stem` (a path without suffix): PNG in the report (caption
    report/<caption>.rst), PDF, CSV of the plotted data. Output names png, pdf, csv, or <name>_png, ... for a rule
    that draws several figures. Use as `output: **figure(...)`."""
    prefix = f"{name}_" if name else ""
    return {
        f"{prefix}png": report(
            f"{stem}.png", caption=f"../report/{caption}.rst", category=category, subcategory=subcategory
        ),
        f"{prefix}pdf": f"{stem}.pdf",
        f"{prefix}csv": f"{stem}.csv",
    }


def figure_pngs(*figure_rules):
    """PNG outputs (names png and *_png) of figure rules, in rule and declaration order."""
    return [f for r in figure_rules for key, f in r.output.items() if key == "png" or key.endswith("_png")]


def benchmarks(rule, **wildcard_values):
    """Benchmark files of the jobs of `rule` (rules.<name>) at every combination of the wildcard values (one list
    per wildcard of the rule, combined as by expand()), as {path: {"group", "rule", "wildcards"}} in that order;
    the group is the benchmark's folder (results/benchmarks/<group>/), the wildcards are "name=value ..." text."""
    name = rule.rule.name
    if not rule.rule.benchmark:
        raise WorkflowError(f"rule {name} has no benchmark")
    if set(wildcard_values) != set(rule.rule.wildcard_names):
        raise WorkflowError(
            f"benchmarks({name}): wildcard values given for {sorted(wildcard_values)}, "
            f"the rule has {sorted(rule.rule.wildcard_names)}"
        )
    group = Path(str(rule.benchmark)).parent.name
    jobs = {}
    for combo in itertools.product(*wildcard_values.values()):
        wc = dict(zip(wildcard_values, map(str, combo)))
        path = expand(str(rule.benchmark), **{k: [v] for k, v in wc.items()})[0]
        jobs[path] = {"group": group, "rule": name, "wildcards": " ".join(f"{k}={v}" for k, v in wc.items())}
    return jobs


def place_on_partitions(rules, cluster):
    """Give every rule the SLURM partition and account of its kind of job (config `cluster`, docs/cluster.md): rules
    with gpu=1 -> gpu_partition (gpu_account, else account), every other rule -> cpu_partition (account). A key that is
    null adds nothing (the cluster's default partition, the user's default account); a value the user set for a rule
    with --set-resources <rule>:slurm_partition=... is kept. Called once, after every rule is defined."""
    cluster = cluster or {}
    for r in rules:
        gpu = r.resources.get("gpu").value
        if callable(gpu):
            raise WorkflowError(f"rule {r.name}: declare gpu as a number, the partition of its jobs depends on it")
        kind = "gpu" if gpu else "cpu"
        partition = cluster.get(f"{kind}_partition")
        account = (cluster.get("gpu_account") if kind == "gpu" else None) or cluster.get("account")
        if partition:
            r.resources.setdefault("slurm_partition", partition)
        if account:
            r.resources.setdefault("slurm_account", account)
