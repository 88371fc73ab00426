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
# - Expensive rules whose outputs follow from their inputs and params alone are marked `cache: OUTPUT_CACHE` and take
#   `**LIBRARY_KEY` in their params: with --cache and $SNAKEMAKE_OUTPUT_CACHE their outputs are shared between
#   checkouts (docs/cluster.md#sharing-expensive-outputs-between-checkouts). Without --cache they are ordinary rules.

import itertools
import os
import re
from pathlib import Path

from smattn.compile_cache import cache_environment
from smattn.config import ConfigError, load_schema, resolve_params
from smattn.costs import read_unit_costs, request
from smattn.data.registry import RAW_FILES
from smattn.p1.images.networks import architecture, network_name, network_seed

# JAX's persistent compilation cache for every job, keyed by jaxlib, CPU kind and XLA flags, under
# .snakemake/jax-cache or $SMATTN_JAX_CACHE_ROOT (smattn.compile_cache)
os.environ.update(cache_environment())

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


# Between-workflow output cache (Snakemake's --cache, location $SNAKEMAKE_OUTPUT_CACHE). Snakemake hashes a cached
# job's script, params, raw inputs and upstream jobs, but not the library the script imports: LIBRARY_KEY adds a hash
# of src/smattn to the params of cached rules. It and the cache directive exist only in runs with --cache, so that a
# library edit never reruns these jobs in ordinary runs (Snakemake's params rerun trigger).
OUTPUT_CACHE = workflow.enable_cache and bool(os.environ.get("SNAKEMAKE_OUTPUT_CACHE"))


def library_hash():
    """SHA-256 over the relative paths and contents of the imported smattn package's Python files."""
    import hashlib
    import smattn

    root = Path(smattn.__file__).resolve().parent
    h = hashlib.sha256()
    for f in sorted(root.rglob("*.py")):
        h.update(f"{f.relative_to(root).as_posix()}\0".encode())
        h.update(f.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


LIBRARY_KEY = {"library": library_hash()} if OUTPUT_CACHE else {}


def drop_cached_benchmarks(rules):
    """Snakemake refuses a benchmark where the output cache is on (an output taken from the cache has no run to
    measure); with --cache, the rules marked `cache: OUTPUT_CACHE` lose theirs, and benchmarks() leaves them out of
    the cost table.
    Called once, after every computing rule is defined and before the cost table's job list."""
    for r in rules:
        if r.cache is not None and r.cache.output:
            r._benchmark = None


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
    if not rule.rule.benchmark and rule.rule.cache is not None and rule.rule.cache.output:
        return {}  # outputs from the between-workflow cache (drop_cached_benchmarks): no cost to measure
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
    """SLURM partition and account of every job by its kind (config `cluster`, docs/cluster.md): jobs of gpu=1 rules go
    to gpu_partition (gpu_account, else account), all others to cpu_partition (account). A key that is null adds
    nothing (the cluster's default partition, the user's default account); a partition set on the command line with
    --set-resources is kept. Called once, after every rule is defined."""
    cluster = cluster or {}
    for r in rules:
        gpu = r.resources.get("gpu").value
        if callable(gpu):
            raise WorkflowError(f"{r.name}: declare gpu as a number, the partition of its jobs depends on it")
        kind = "gpu" if gpu else "cpu"
        partition = cluster.get(f"{kind}_partition")
        account = (cluster.get("gpu_account") if kind == "gpu" else None) or cluster.get("account")
        if partition:
            r.resources.setdefault("slurm_partition", partition)
        if account:
            r.resources.setdefault("slurm_account", account)


def job_specs(cost_jobs):
    """Every computing job of `cost_jobs` ({benchmark: {group, rule, wildcards}}) with what the cost plan and the
    cost table need: its threads, declared gpu, runtime (min) and mem_mb, software environment (envs/<env>.yaml),
    and `after`, the benchmarks of the jobs whose outputs it reads (the DAG among computing jobs). Returns
    (specs {benchmark: {...}}, producer {output path: benchmark})."""
    specs, producer, inputs = {}, {}, {}
    for bench, d in cost_jobs.items():
        r = workflow.get_rule(d["rule"])
        wc = dict(item.split("=", 1) for item in d["wildcards"].split()) if d["wildcards"] else {}
        out, _ = r.expand_output(wc)
        inp, *_ = r.expand_input(wc)
        # only the resources the plan needs: others (e.g. an executor's default disk from input sizes) are not known
        # before the DAG exists
        skip = set(r.resources.keys()) - {"_cores", "gpu", "runtime", "mem", "mem_mb"}
        res = r.expand_resources(wc, inp, attempt=1, skip_evaluation=skip)
        for f in out:
            producer[str(f)] = bench
        inputs[bench] = [str(f) for f in inp]
        specs[bench] = {
            **d,
            "threads": int(res["_cores"]),
            "gpu": int(res.get("gpu", 0) or 0),
            "runtime": int(res["runtime"]),
            "mem_mb": int(res["mem_mb"]),
            "env": Path(str(r.conda_env)).stem if r.conda_env else "workflow",
        }
    for bench, files in inputs.items():
        specs[bench]["after"] = sorted({producer[f] for f in files if f in producer})
    return specs, producer


def jobs_upstream(files, specs, producer):
    """Benchmarks of the computing jobs that `files` need: their producers and everything those wait for."""
    todo = [producer[str(f)] for f in files if str(f) in producer]
    seen = set()
    while todo:
        b = todo.pop()
        if b not in seen:
            seen.add(b)
            todo.extend(specs[b]["after"])
    return {b: specs[b] for b in specs if b in seen}


def by_scale(smoke, laptop, paper):
    """The value of the active scale, e.g. `threads: by_scale(1, 1, 4)`."""
    return {"smoke": smoke, "laptop": laptop, "paper": paper}[SCALE]


# measured unit costs (tools/unit_costs.py) from which planned_runtime/planned_mem_mb size a rule's requests
UNIT_COSTS = "rules/unit_costs.csv"
_UNITS = read_unit_costs(workflow.source_path(f"../{UNIT_COSTS}"))


def _request(rule, gpu, wildcards, threads, attempt):
    wc = {k: str(v) for k, v in wildcards.items()}
    return request(rule, PARAMS, wc, SCALE, attempt, units=_UNITS, threads=int(threads), gpu=gpu)


def planned_runtime(rule, gpu=False):
    """`runtime=planned_runtime("p1_images_train", gpu=True)`: the job's runtime (min) sized from the cost plan at the
    active scale (smattn.costs.request: 3-5x its projection, at least 10 min, within [2x, max(10x, 60 min)]),
    doubled on each retry (Snakemake's attempt) so that a job that ran out of time can finish."""
    return lambda wildcards, threads, attempt: _request(rule, gpu, wildcards, threads, attempt).runtime_min


def planned_mem_mb(rule, gpu=False):
    """`mem_mb=planned_mem_mb("p1_images_train", gpu=True)`: the projected peak memory plus a 50% margin."""
    return lambda wildcards, threads: _request(rule, gpu, wildcards, threads, 1).mem_mb


def gpu_threads():
    """Threads of a gpu=1 job: 4 at paper scale (on a GPU: data loading, compilation, the host side), 1 otherwise
    (on the CPU of a laptop, where one thread was not slower)."""
    return by_scale(1, 1, 4)


def p2d_sweep_main_runs(wildcards):
    """The main TREC runs a sweep configuration takes its runs from: the first trec_sweep_reps repetitions when the
    configuration is the main runs' (the same init std and AdamW rule; the same seeds), else none. The script uses
    them only when its runs are whole trainings (trec_sweep_steps at least trec_epochs epochs), which are then the
    same trainings, and trains otherwise."""
    p = group_params("p2_dynamics")
    same = wildcards.opt == p["trec_optimizer"] and float(wildcards.init) == float(p["trec_attn_init_std"])
    if not same or p["trec_sweep_reps"] > p["trec_repetitions"]:
        return []
    return expand("results/p2_dynamics/trec/rep{rep}.npz", rep=range(p["trec_sweep_reps"]))


def p1i_priority(wildcards):
    """Priority of an image-task job of one model: the sampled model's chain train -> export -> theory -> NUTS is the
    run's critical path, so its jobs go before the other models', and the seed study's networks go last (a priority
    does not pass to a job's inputs)."""
    if wildcards.model == P1I_SAMPLED_MODEL:
        return 60
    return 50 if wildcards.model == architecture(wildcards.model) else 40
