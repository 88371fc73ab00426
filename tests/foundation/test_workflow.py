"""The workflow as a user drives it: dry runs at every scale and profile, lint, rule graph, bad configs, and
(marked e2e) the smoke-scale run end to end."""

from __future__ import annotations

import csv
import json
import math
import os
import re
import subprocess
import sys

import pytest

SNAKEMAKE = [sys.executable, "-m", "snakemake"]


def snakemake(args, cwd, env_extra=None, timeout=600):
    env = dict(os.environ)
    env.update(env_extra or {})
    return subprocess.run(
        SNAKEMAKE + list(args), cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, copy_workflow):
    """A copy of the workflow (no results) in which runs cannot touch the developer's own outputs."""
    return copy_workflow(tmp_path_factory.mktemp("wf"))


def job_stats(output: str) -> dict[str, int]:
    """{rule: count, "total": n} from the first "Job stats" table a (dry) run prints."""
    m = re.search(r"^Job stats:\njob +count\n[- ]+\n((?:\S+ +\d+\n)+)", output, re.M)
    assert m, output[-3000:]
    return {name: int(n) for name, n in (line.split() for line in m.group(1).splitlines())}


@pytest.mark.parametrize("scale", ["smoke", "laptop", "paper"])
def test_dry_run_every_scale(workdir, scale):
    """The default target plans every figure's chain, the ledger and the cost table. Mutation caught: rule all with
    only the data summary as input (33 jobs planned) passed the former check (`"all" in stdout`), fails here."""
    r = snakemake(["-n", "--config", f"scale={scale}"], workdir)
    assert r.returncode == 0, r.stderr[-3000:]
    stats = job_stats(r.stdout)
    assert stats["all"] == 1 and stats["metrics_ledger"] == 1 and stats["cost_table"] == 1, stats
    assert stats["p2_thresholds_c"] == 16 and stats["total"] > 60, stats


CLUSTER = "cluster={cpu_partition: c, gpu_partition: g, account: acc, gpu_account: gacc}"


def test_dry_run_slurm_profile_without_slurm(workdir):
    r = snakemake(["-n", "--profile", "profiles/slurm", "--config", "scale=smoke", CLUSTER], workdir)
    assert r.returncode == 0, r.stderr[-3000:]


def dry_run_resources(output: str) -> list[tuple[str, dict]]:
    """[(rule, {resource: value})] of every job block a dry run prints (also the indented jobs of a group job)."""
    jobs = []
    for block in re.split(r"^\s*\[[^\]]+\]$", output, flags=re.M):
        rule = re.search(r"^\s*(?:local)?rule (\w+):$", block, re.M)
        res = re.search(r"^\s+resources: (.*)$", block, re.M)
        if rule and res:
            jobs.append((rule.group(1), dict(item.split("=", 1) for item in res.group(1).split(", "))))
    return jobs


def test_paper_scale_gpu_only_where_it_pays_and_partitions_by_kind(workdir):
    """A dry run at paper scale through the SLURM profile: gpu=1 exactly on the image-task trainings and NUTS (the
    jobs whose cost a GPU cuts: docs/cluster.md), each on the gpu partition and account, every other job on the cpu
    partition and account."""
    r = snakemake(["-n", "--forceall", "--profile", "profiles/slurm", "--config", "scale=paper", CLUSTER], workdir)
    assert r.returncode == 0, r.stderr[-3000:]
    jobs = dry_run_resources(r.stdout + r.stderr)
    assert len(jobs) > 100, len(jobs)
    gpu = {rule for rule, res in jobs if res.get("gpu", "0") != "0"}
    assert gpu == {"p1_images_train", "p1_images_sample"}, gpu
    for rule, res in jobs:
        want = ("g", "gacc") if rule in gpu else ("c", "acc")
        assert (res.get("slurm_partition"), res.get("slurm_account")) == want, (rule, res)


def test_dry_run_local_profile(workdir):
    r = snakemake(["-n", "--profile", "profiles/local"], workdir)
    assert r.returncode == 0, r.stderr[-3000:]


def test_lint_is_clean(workdir):
    r = snakemake(["--lint"], workdir)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "good condition" in r.stdout + r.stderr


def test_rulegraph(workdir):
    r = snakemake(["--rulegraph", "--config", "scale=smoke"], workdir)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.lstrip().startswith("digraph") and "metrics_ledger" in r.stdout and "fetch_raw" in r.stdout


@pytest.mark.parametrize(
    "config_args, fragment",
    [
        (["scale=huge"], "scale"),
        (["scale=5"], "scale"),
        (["colour=red"], "colour"),
        (["data_dir="], "data_dir"),
    ],
)
def test_bad_top_level_config_fails_before_any_job(workdir, config_args, fragment):
    r = snakemake(["-n", "--config", *config_args], workdir)
    assert r.returncode != 0
    assert fragment in r.stderr + r.stdout


def _integer_parameter(schema):
    """(group, key) of the first integer group parameter with a minimum, or None."""
    for group, gschema in schema["$defs"].items():
        for key, spec in gschema["properties"].items():
            if spec.get("type") == "integer" and "minimum" in spec:
                return group, key
    return None


def test_bad_group_parameter_is_named(workdir):
    import yaml

    found = _integer_parameter(yaml.safe_load((workdir / "schemas/config.schema.yaml").read_text()))
    if found is None:
        pytest.skip("no integer group parameter with a minimum is defined yet")
    group, key = found
    for bad in ("-3", "abc"):
        r = snakemake(["-n", "--config", f"{group}={{{key}: {bad}}}"], workdir)
        assert r.returncode != 0
        assert f"{group}.{key}" in r.stderr + r.stdout, r.stderr[-2000:]
    r = snakemake(["-n", "--config", f"{group}={{no_such_key: 1}}"], workdir)
    assert r.returncode != 0 and f"{group}.no_such_key" in r.stderr + r.stdout


@pytest.mark.parametrize(
    "config_args, fragment",
    [
        (["p2_dynamics={sgd_lr: nan}"], "p2_dynamics.sgd_lr"),
        (["p1_images={gd_lr: inf}"], "p1_images.gd_lr"),
        (["p2_theory={v_reg: 1e999}"], "p2_theory.v_reg"),
        (["p2_dynamics={trec_repetitions: 2.5}"], "p2_dynamics.trec_repetitions"),
        (["p2_dynamics={sgd_d: 1e10}"], "p2_dynamics.sgd_d"),
        (["p2_dynamics={sgd_test_every: 100000}"], "p2_dynamics.sgd_epochs"),
        (["p1_hmc={sampled_widths: [20]}"], "p1_hmc.sampled_widths"),
    ],
)
def test_non_finite_fractional_absurd_or_inconsistent_values_fail_before_any_job(workdir, config_args, fragment):
    r = snakemake(["-n", "--config", *config_args], workdir)
    out = r.stdout + r.stderr
    assert r.returncode != 0
    assert "Invalid configuration" in out and fragment in out, out[-2000:]


def test_whole_float_integer_is_accepted(workdir):
    r = snakemake(["-n", "--config", "scale=smoke", "p2_dynamics={trec_repetitions: 2.0}"], workdir)
    assert r.returncode == 0, r.stderr[-2000:]


def test_changed_raw_file_is_caught_before_any_job(tmp_path, copy_workflow, raw_data):
    """A raw file corrupted after it was fetched and verified stops the next run before a consumer job starts."""
    from smattn.data.registry import lookup

    wd = copy_workflow(tmp_path / "wf")
    data = tmp_path / "data"
    rel = "reference/spoc/AMP_BO_2w_d1000_alpha1.2_samples1_seed1.npy"  # read by rule p2_fig2_left
    cfg = ["--config", "scale=smoke", f"data_dir={data}"]
    env = {"SMATTN_DATA_MIRROR": str(raw_data)}
    r = snakemake(["--cores", "1", *cfg, "--", str(data / rel)], wd, env)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    target = data / rel
    st = target.stat()
    raw = bytearray(target.read_bytes())
    raw[200] ^= 0x01  # one bit of the array's data; size and modification time unchanged
    target.write_bytes(bytes(raw))
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    for args in (
        ["--cores", "1", *cfg, "--", str(data / rel)],  # was: "Nothing to be done"
        ["--cores", "1", *cfg, "--", "figures/p2/fig2_left_gamp.png"],
    ):  # a consumer of the file
        r = snakemake(args, wd, env, timeout=300)
        out = r.stdout + r.stderr
        assert r.returncode != 0, out[-3000:]
        assert "Raw data check failed" in out and str(target) in out, out[-3000:]
        assert lookup(rel).digests[0].hexdigest in out  # the expected checksum
    assert not (wd / "results").exists() and not (wd / "figures").exists()  # no job ran
    target.unlink()  # the documented remedy: delete it, the next run fetches it again
    r = snakemake(["--cores", "1", *cfg, "--", str(data / rel)], wd, env)
    assert r.returncode == 0 and target.read_bytes() == (raw_data / rel).read_bytes()


def planned_figures(wd, scale="smoke"):
    """The figure PNGs of the default target, as the workflow's own DAG lists them (``snakemake --summary``)."""
    r = snakemake(["--summary", "--config", f"scale={scale}"], wd)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = [line.split("\t") for line in r.stdout.splitlines()]
    assert rows and rows[0][0] == "output_file", r.stdout[:500]
    return sorted(row[0] for row in rows[1:] if row[0].startswith("figures/") and row[0].endswith(".png"))


def test_every_planned_figure_has_a_caption(workdir):
    """The target list the end-to-end test checks against is not empty: one PNG per figure caption of the report."""
    figures = planned_figures(workdir)
    captions = [p for p in (workdir / "report").glob("*.rst") if p.name not in ("claims.rst", "costs.rst")]
    assert len(figures) == len(set(figures)) == len(captions) > 0, (figures, captions)


@pytest.mark.e2e
def test_smoke_run_end_to_end(workdir, raw_data):
    """The whole smoke-scale workflow: every figure, the ledger, the claims table, and the report."""
    from smattn.ledger import CLAIM_COLUMNS, load_claims, metric_refs

    env = {"SMATTN_DATA_MIRROR": str(raw_data)}
    expected = planned_figures(workdir)
    assert expected
    # the timeout is a hang guard, below the slow + e2e tier's own in .ci/run (the run takes about 7 min alone)
    r = snakemake(["--cores", "2", "--config", "scale=smoke"], workdir, env, timeout=900)
    assert r.returncode == 0, (r.stdout[-4000:], r.stderr[-4000:])
    ledger = json.loads((workdir / "results/metrics.json").read_text())
    assert ledger and all(isinstance(v, float) and math.isfinite(v) for v in ledger.values())
    from smattn.scriptio import loaded_workflow

    with loaded_workflow(["scale=smoke"], workdir / "Snakefile") as wf:
        claim_files = list(wf.globals["CLAIM_FILES"])
    claims = load_claims([workdir / f for f in claim_files])  # in the claims table's order
    assert claims
    for c in claims:  # every metric a row judged here names was written by some rule (numbers are targets, not ids)
        if c["kind"] not in ("info", "calibration") and "smoke" not in (c.get("judged_at") or ["smoke"]):
            continue  # judged at another scale: its numbers may exist only there (e.g. widths sampled only there)
        for key in metric_refs(c):  # also a deviation's explanation and a cause, read only when the row fails
            assert key in ledger, f"{c['source']}: {c['claim']!r} names {key!r}, missing from the ledger"
    figures = sorted(str(p.relative_to(workdir)) for p in (workdir / "figures").rglob("*.png"))
    assert figures == expected  # exactly the workflow's own figure list, nothing missing, nothing extra
    for png in (workdir / f for f in figures):
        assert png.with_suffix(".pdf").exists(), png
        assert_drawn(png)
        assert_plotted_data(png.with_suffix(".csv"))
    assert_ledger_values_in_range(ledger)
    summary = json.loads((workdir / "results/data/summary.json").read_text())
    assert summary["omniglot"]["classes"] == {"train": 1028, "val": 172, "test": 423}
    # verdicts are findings shown in the report, not test failures; the table itself must be complete
    with open(workdir / "results/claims.csv", newline="", encoding="utf-8") as fh:
        table = list(csv.DictReader(fh))
    assert tuple(table[0]) == CLAIM_COLUMNS
    assert len(table) == len(claims)
    assert all(row["ours"] for row in table if not row["status"].startswith("judged at")), table
    for row, c in zip(table, claims, strict=True):  # each row's status is the one its kind and scales allow
        judged = "smoke" in (c.get("judged_at") or ["smoke"])
        verdict = {"pass", "FAIL"} | ({"not informative"} if "range" in c else set())
        allowed = {
            "info": {"info"},
            "calibration": {"calibration"},
            "match": verdict,
            "compare": verdict,
            "proportion": {"pass", "FAIL"},
            "pvalue": {"pass", "FAIL"},
            "deviation": verdict | {"deviation explained"},  # judged as a match first: it may agree with the paper
        }[c["kind"]]
        if c["kind"] not in ("info", "calibration") and not judged:
            allowed = {f"judged at {' and '.join(c['judged_at'])} scale"}
        assert row["status"] in allowed, (c["claim"], row["status"])
        assert row["role"] == c["role"] and (row["role"] == "check" or row["figure"] == c["figure"]), row
        assert "{{" not in row["explanation"], row["explanation"]  # every cited metric was filled in
    r = snakemake(["--report", "report.html", "--config", "scale=smoke"], workdir, env)
    assert r.returncode == 0, r.stderr[-3000:]
    html = (workdir / "report.html").read_text(errors="replace")
    assert "Claims" in html
    # the cost table: one row per computing job, each with a measured wall time
    with open(workdir / "results/costs/jobs.csv", newline="") as fh:
        costs = list(csv.DictReader(fh))
    assert len(costs) > 50 and all(float(row["wall_s"]) > 0 for row in costs)
    assert "Costs" in html
    # a second run has nothing left to do
    r = snakemake(["-n", "--cores", "2", "--config", "scale=smoke"], workdir, env)
    assert r.returncode == 0 and "Nothing to be done" in r.stdout + r.stderr
    # the cost plan of the run's scale was made, and set against what each job cost
    with open(workdir / "results/costs/plan_vs_measured.csv", newline="") as fh:
        check = list(csv.DictReader(fh))
    assert len(check) == len(costs) and all(row["projected_cpu_s"] for row in check)
    # a group target after the full run only tables what is there: P2's claims judged, the others "not run"
    r = snakemake(["p2", "--cores", "2", "--config", "scale=smoke"], workdir, env)
    assert r.returncode == 0, r.stderr[-3000:]
    ran = json.loads((workdir / "results/groups/p2/groups.json").read_text())
    assert ran["scale"] == "smoke" and ran["groups"]["p2_theory"] == "smoke" and ran["groups"]["p1_hmc"] == "not run"
    with open(workdir / "results/groups/p2/claims.csv", newline="", encoding="utf-8") as fh:
        group_table = list(csv.DictReader(fh))
    assert len(group_table) == len(claims)
    for row, c in zip(group_table, claims, strict=True):
        assert (row["status"] == "not run") == (c["group"] not in ("p2_theory", "p2_dynamics")), (c["claim"], row)
    with open(workdir / "results/groups/p2/costs/jobs.csv", newline="") as fh:
        assert {row["group"] for row in csv.DictReader(fh)} == {"p2_theory", "p2_dynamics"}


def assert_drawn(png, min_ink=0.01, min_colours=3):
    """A figure is not blank: at least ``min_ink`` of its pixels differ from the background, in several colours.
    (An empty axes frame has well under 1 % ink.)"""
    import numpy as np
    from matplotlib.image import imread

    img = imread(png)[..., :3]
    background = img[0, 0]
    ink = np.any(np.abs(img - background) > 0.05, axis=-1)
    colours = np.unique((img[ink] * 15).round().astype(int), axis=0)
    assert ink.mean() > min_ink and len(colours) >= min_colours, (png, ink.mean(), len(colours))


def assert_plotted_data(csv_path):
    """The data CSV beside a figure has a header and rows, and at least one finite number per row."""
    with open(csv_path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    assert len(rows) >= 2, csv_path

    def number(x):
        try:
            return float(x)
        except ValueError:
            return math.nan

    assert all(any(math.isfinite(number(x)) for x in row) for row in rows[1:]), csv_path


def assert_ledger_values_in_range(ledger):
    """Quantities with a known range stay in it: accuracies and fractions in [0, 1], standard errors, times and
    counts non-negative."""
    for key, value in ledger.items():
        name = key.split("[", 1)[0].rsplit(".", 1)[-1]
        standard_error = name.endswith(("_se", "_stderr", "_mcse")) and not name.endswith("_minus_se")
        difference = any(part in name for part in ("_minus_", "_gain", "_gap"))  # e.g. sampled minus theory
        if standard_error or name.endswith(("_s", "_points")):
            assert value >= 0.0, (key, value)
        elif name.startswith("acc") and difference:
            assert -1.0 <= value <= 1.0, (key, value)
        elif name.startswith("acc") or name.endswith(("_fraction", "_agreement")):
            assert 0.0 <= value <= 1.0, (key, value)


# --- the target list and the rule conventions (rules/common.smk) ---------------------------------------------------

EXPECTED_FIGURES = [
    f"figures/p2/{n}.png"
    for n in (
        "fig1_left_overlaps",
        "fig1_right_phase_diagram",
        "fig3_left_depth3",
        "fig5_clamped",
        "fig2_left_gamp",
        "fig2_right_sgd",
        "fig3_right_trec",
    )
] + [
    f"figures/p1/{n}.png"
    for n in (
        "fig2c_top",
        "fig2c_bottom",
        "fig2d",
        "fig2e",
        "fig5b",
        "fig5c",
        "fig3b",
        "fig3c",
        "fig3d",
        "fig6",
        "fig3e",
        "fig3f",
        "fig7",
    )
]
# local rules and pure aggregation
NO_BENCHMARK = {
    "all",
    "fetch_raw",
    "raw_data",
    "metrics_ledger",
    "cost_table",
    "cost_plan",
    "group_claims",
    "group_costs",
    "paper_scale_doc",
    "gpu_doctor",
}
# group targets (`snakemake p2`, ...): like `all`, a list of inputs
GROUP_TARGETS = ("p1", "p2", "p1_hmc", "p1_images", "p1_pruning", "p2_theory", "p2_dynamics")


@pytest.fixture(scope="module")
def workflow_rules(repo):
    from smattn.scriptio import loaded_workflow

    with loaded_workflow(["scale=smoke"], repo / "Snakefile") as wf:
        yield {r.name: r for r in wf.rules}


def test_target_list_is_every_figure(workflow_rules):
    targets = [str(f) for f in workflow_rules["all"].input]
    assert [f for f in targets if f.startswith("figures/")] == EXPECTED_FIGURES
    assert {"results/metrics.json", "results/claims.csv", "results/data/summary.json"} <= set(targets)
    pngs = [str(f) for r in workflow_rules.values() for f in r.output if str(f).endswith(".png")]
    assert sorted(pngs) == sorted(EXPECTED_FIGURES)  # no figure is drawn that the target list misses


def test_figure_rules_declare_pdf_csv_and_report(workflow_rules):
    for r in workflow_rules.values():
        out = {str(f) for f in r.output}
        for f in r.output:
            if str(f).endswith(".png"):
                stem = str(f)[: -len(".png")]
                assert {stem + ".pdf", stem + ".csv"} <= out, r.name
                assert f.flags.get("report") is not None, r.name


def test_every_computing_rule_has_log_benchmark_and_resources(workflow_rules):
    for name, r in workflow_rules.items():
        if name in ("all", "raw_data", *GROUP_TARGETS):
            continue
        assert len(r.log) == 1, name
        assert {"mem_mb", "runtime"} <= set(r.resources.keys()), name
        if name in NO_BENCHMARK:
            assert not r.benchmark, name
            continue
        group = str(r.log[0]).split("/")[1]
        wildcards = "".join(f"_{{{w}}}" for w in sorted(r.wildcard_names, key=str(r.output[0]).find))
        bench = re.sub(r"\{(\w+),[^}]*\}", r"{\1}", str(r.benchmark))  # without wildcard constraints
        assert bench == f"results/benchmarks/{group}/{name}{wildcards}.tsv", name


def test_metrics_inputs_of_the_ledger(workflow_rules):
    """Each metrics file is the `metrics` output of the rule that computes its numbers."""
    metrics = {str(f) for f in workflow_rules["metrics_ledger"].input if str(f).startswith("results/metrics/")}
    declared = {
        str(f) for r in workflow_rules.values() for k, f in r.output.items() if k == "metrics" and "{" not in str(f)
    }
    assert declared <= metrics
    # the rest are the per-network outputs: gd_{network} of the seeded architectures' networks, pruning_{model} x2
    extra = metrics - declared
    assert all(
        re.fullmatch(r"results/metrics/p1_(images/gd_L\dH\d(-seed\d+)?|pruning/pruning_L2H[48])\.json", f)
        for f in extra
    )
    assert sum(f.startswith("results/metrics/p1_pruning/") for f in extra) == 2 and len(extra) >= 2 + 2 * 2, extra


def _dry_run_jobs(workdir, scale, targets=()):
    """{rule: [(input, benchmark), ...]} of every job a forced dry run at ``scale`` plans for ``targets`` (each
    field as the dry run prints it, "" where absent)."""
    r = snakemake([*targets, "-n", "--forceall", "--config", f"scale={scale}"], workdir)
    assert r.returncode == 0, r.stderr[-3000:]

    def field(block, name):
        return (re.findall(rf"^\s+{name}: (.*)$", block, re.M) or [""])[0]

    jobs: dict[str, list[tuple[str, str]]] = {}
    for block in re.split(r"^\[[^\]]+\]$", r.stdout + r.stderr, flags=re.M):
        m = re.search(r"^(?:local)?rule (\w+):$", block, re.M)
        if m:
            jobs.setdefault(m.group(1), []).append((field(block, "input"), field(block, "benchmark")))
    return jobs


@pytest.mark.parametrize("scale", ["smoke", "laptop", "paper"])
def test_cost_table_reads_the_benchmark_of_every_computing_job(workdir, workflow_rules, scale):
    """The cost table's inputs are exactly the benchmark files of the jobs that the other targets of `all` run."""
    [(read, _)] = _dry_run_jobs(workdir, scale)["cost_table"]
    read = {f for f in read.split(", ") if f.startswith("results/benchmarks/")}
    costs = {str(f) for f in workflow_rules["cost_table"].output}
    targets = [str(f) for f in workflow_rules["all"].input]
    assert costs <= set(targets)
    jobs = _dry_run_jobs(workdir, scale, [t for t in targets if t not in costs])
    planned = {bench for rule_jobs in jobs.values() for _, bench in rule_jobs if bench}
    computing = [j for rule in jobs if workflow_rules[rule].benchmark for j in jobs[rule]]
    assert len(planned) == len(computing) > 50
    assert sorted(read - planned) == [], "read by the cost table, but no job of the targets writes it"
    assert sorted(planned - read) == [], "jobs of the targets whose cost the table misses"


@pytest.mark.parametrize("target", ["p2", "p1_hmc", "p1_pruning"])
def test_group_target_builds_its_figures_claims_and_exactly_its_jobs_costs(workdir, workflow_rules, target):
    """`snakemake <target>` plans its figures, its claims table and a cost table whose benchmarks are exactly those of
    the computing jobs the target runs (p1_pruning: the image-task trainings and exports it needs included)."""
    jobs = _dry_run_jobs(workdir, "smoke", [target])
    assert {"group_claims", "group_costs", target} <= set(jobs), sorted(jobs)
    assert "metrics_ledger" not in jobs and "cost_table" not in jobs
    [(read, _)] = jobs["group_costs"]
    read = set(read.split(", "))
    planned = {bench for rule_jobs in jobs.values() for _, bench in rule_jobs if bench}
    assert read == planned and len(planned) > 5
    groups = {"p2": ("p2_theory", "p2_dynamics"), "p1_hmc": ("p1_hmc",), "p1_pruning": ("p1_pruning", "p1_images")}
    assert {b.split("/")[2] for b in planned} == set(groups[target]), planned
    [(claims_in, _)] = jobs["group_claims"]
    assert all(f"claims/{g}.yaml" in claims_in for g in ("p2_theory", "p2_dynamics", "p1_hmc", "p1_images"))


@pytest.mark.parametrize("scale", ["smoke", "laptop", "paper"])
def test_cost_plan_flags_no_job(workdir, scale):
    """`snakemake cost_plan` projects every computing job of `all` from rules/unit_costs.csv without running
    one, and no job's declared runtime is below twice its projection or above max(10x, 60 min), nor its mem_mb below
    its projected peak; the GPU jobs ask for at most 2 GPU-hours in all, and at paper scale they are exactly the gpu=1
    rules'."""
    r = snakemake(["cost_plan", "--cores", "1", "--config", f"scale={scale}"], workdir)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Finished jobid: 0 (Rule: cost_plan)" in r.stderr and "1 of 1 steps" in r.stderr, r.stderr[-2000:]
    with open(workdir / f"results/costs/plan_{scale}.csv", newline="") as fh:
        plan = list(csv.DictReader(fh))
    assert len(plan) > 60
    assert [(p["rule"], p["wildcards"], p["flag"]) for p in plan if p["flag"]] == []
    assert all(float(p["runtime_over_projection"]) >= 2.0 for p in plan)
    # no job asks for more than max(10x its projection, 60 min)
    over = [
        (p["rule"], p["wildcards"], p["runtime_min"])
        for p in plan
        if float(p["runtime_min"]) > max(10 * 60 * float(p["wall_h"]), 60)
    ]
    assert over == []
    gpu_h = sum(float(p["runtime_min"]) for p in plan if p["device"] == "gpu") / 60
    assert gpu_h <= 2.0
    gpu = {p["rule"] for p in plan if p["device"] == "gpu"}
    assert gpu == ({"p1_images_train", "p1_images_sample"} if scale == "paper" else set())
