"""Unit costs and the cost plan (smattn.costs.units, smattn.costs.plan): calibration and projection of synthetic runs
with known costs, the unit-cost table, the runtime flag, the requests, the plan's summary."""

from __future__ import annotations

import pytest

from smattn import costs


def unit(rule="r", **kw):
    base = dict(
        rule=rule,
        device="cpu",
        overhead_s=2.0,
        s_per_unit=0.5,
        cpu_per_wall=1.0,
        rss_base_mb=100.0,
        mb_per_unit=0.0,
        calib_scale="laptop",
        basis="measured",
        source="s",
        machine="m",
        date="2026-11-26",
        commit="abc",
    )
    return costs.UnitCost(**{**base, **kw})


def test_calibration_recovers_a_linear_cost_and_projects_a_larger_job(monkeypatch):
    """Jobs costing 3 s of start-up + 0.25 s per unit (two sizes) calibrate to that rate; a job of 1000 units is then
    projected at 253 CPU-s, its wall from the CPU/wall ratio and its memory from the memory model."""
    monkeypatch.setitem(costs.WORK, "toy", lambda p, wc: float(wc["n"]))
    monkeypatch.setitem(costs.MEMORY, "toy", lambda p, wc: float(wc["n"]))
    measured = [
        {
            "rule": "toy",
            "env": "jax",
            "work": n,
            "mem_units": n,
            "cpu_s": 3 + 0.25 * n,
            "wall_s": (3 + 0.25 * n) / 2,
            "max_rss_mb": 50 + 2 * n,
        }
        for n in (10.0, 40.0)
    ]
    [u] = costs.calibrate(
        measured, {"jax": 3.0}, {"jax": 50.0}, scale="laptop", source="s", machine="m", date="d", commit="c"
    )
    # the peak: 2 copies (ARRAY_COPIES) of the arrays' MB on top of the 50 MB the jobs held besides them
    assert (u.overhead_s, u.s_per_unit, u.cpu_per_wall, u.rss_base_mb, u.mb_per_unit) == (3.0, 0.25, 2.0, 50.0, 2.0)
    job = {"group": "g", "rule": "toy", "wildcards": "n=1000", "threads": 2, "gpu": 0, "runtime": 10, "mem_mb": 3000}
    row = costs.project_job(job, {}, [u], "paper", on_gpu=True)
    assert (row.device, row.cpu_s, row.wall_s, row.gpu_s, row.peak_mem_mb) == ("cpu", 253.0, 126.5, 0.0, 2050.0)
    assert row.flag == ""  # 600 s declared >= 2 x 126.5 s
    tight = costs.project_job({**job, "runtime": 4, "mem_mb": 2000}, {}, [u], "paper", on_gpu=True)
    assert (
        "runtime 4 min < 2 x projected 2.1 min" in tight.flag and "mem_mb 2000 < projected peak 2050 MB" in tight.flag
    )


def test_gpu_jobs_use_the_gpu_row_at_paper_scale_only(monkeypatch):
    monkeypatch.setitem(costs.WORK, "toy", lambda p, wc: 100.0)
    units = [unit("toy"), unit("toy", device="gpu", s_per_unit=0.01, overhead_s=60.0, basis="computed")]
    job = {"group": "g", "rule": "toy", "wildcards": "", "threads": 1, "gpu": 1, "runtime": 10, "mem_mb": 3000}
    on_gpu = costs.project_job(job, {}, units, "paper", on_gpu=True)
    assert (on_gpu.device, on_gpu.gpu_s, on_gpu.unit_basis) == ("gpu", 61.0, "computed")
    on_cpu = costs.project_job(job, {}, units, "laptop", on_gpu=False)
    assert (on_cpu.device, on_cpu.gpu_s, on_cpu.cpu_s) == ("cpu", 0.0, 52.0)
    missing = costs.project_job({**job, "rule": "nothing"}, {}, units, "laptop", on_gpu=False)
    assert missing.cpu_s is None and "no unit cost for nothing on cpu" in missing.flag


def test_unit_table_roundtrip_and_choice(tmp_path):
    rows = [unit(), unit(calib_scale="paper", s_per_unit=0.7), unit(device="gpu", basis="computed")]
    costs.write_unit_costs(tmp_path / "u.csv", rows)
    back = costs.read_unit_costs(tmp_path / "u.csv")
    assert back == rows
    assert costs.choose_unit(back, "r", "cpu", "paper").s_per_unit == 0.7  # measured at the scale itself
    assert costs.choose_unit(back, "r", "cpu", "smoke").calib_scale == "paper"  # else the largest measured
    assert costs.choose_unit(back, "r", "gpu", "paper").basis == "computed"
    assert costs.choose_unit(back, "other", "cpu", "paper") is None
    # a rule running the same code as another borrows its unit costs until it has its own
    trec = [unit("p2_trec_run", s_per_unit=0.3)]
    assert costs.choose_unit(trec, "p2_trec_sweep_run", "cpu", "paper").s_per_unit == 0.3


@pytest.mark.parametrize(
    "seconds, runtime",
    [
        (600.0, 30),  # 10 min projected: 3 x (measured unit cost), inside [20, 100]
        (6.0, 10),  # 0.1 min: the 10-minute floor, inside [0.2, 60]
        (36000.0, 1800),  # 10 h: 3 x, inside [1200, 6000]
    ],
)
def test_request_is_three_times_a_measured_projection_within_the_plans_bounds(monkeypatch, seconds, runtime):
    """A job projected at `seconds` (1 s per unit, no overhead, one core) requests the runtime worked out by hand,
    between 2x its projection and max(10x, 60 min), doubled on each retry; memory: its 1000 MB peak + 50%."""
    monkeypatch.setitem(costs.WORK, "toy", lambda p, wc: float(wc["n"]))
    u = unit("toy", overhead_s=0.0, s_per_unit=1.0, rss_base_mb=1000.0)
    r = costs.request("toy", {}, {"n": str(seconds)}, "paper", units=[u])
    minutes = seconds / 60
    assert r.runtime_min == runtime and 2 * minutes <= r.runtime_min <= max(10 * minutes, 60)
    assert (r.mem_mb, r.device, r.wall_s) == (1500, "cpu", seconds)
    retries = [costs.request("toy", {}, {"n": str(seconds)}, "paper", a, units=[u]).runtime_min for a in (2, 3)]
    assert retries == [2 * runtime, 4 * runtime]


def test_request_of_a_gpu_job_uses_the_card_at_paper_scale_and_the_cpu_peak_for_memory(monkeypatch):
    """At paper scale a gpu=1 job is sized from the GPU row (computed: 5x its 120 s, 10 min), its memory from the
    larger of the GPU row's 4000 MB and the 5000 MB it held on a CPU (x 1.5 = 7500); elsewhere from the CPU row (30 x
    0.5 s = 15 s on two of its threads: 7.5 s, the 10-minute floor)."""
    monkeypatch.setitem(costs.WORK, "toy", lambda p, wc: 30.0)
    units = [
        unit("toy", s_per_unit=0.5, overhead_s=0.0, cpu_per_wall=4.0, rss_base_mb=5000.0),
        unit("toy", device="gpu", s_per_unit=2.0, overhead_s=60.0, rss_base_mb=4000.0, basis="computed"),
    ]
    g = costs.request("toy", {}, {}, "paper", units=units, threads=4, gpu=True)
    assert (g.device, g.basis, g.wall_s, g.runtime_min, g.mem_mb) == ("gpu", "computed", 120.0, 10, 7500)
    u = unit("toy", device="gpu", s_per_unit=20.0, overhead_s=0.0, basis="computed")  # 600 s: 5 x 10 min
    assert costs.request("toy", {}, {}, "paper", units=[u], gpu=True).runtime_min == 50
    c = costs.request("toy", {}, {}, "laptop", units=units, threads=2, gpu=True)
    assert (c.device, c.wall_s, c.runtime_min, c.mem_mb) == ("cpu", 7.5, 10, 7500)
    with pytest.raises(ValueError, match="no unit cost for other on cpu"):
        costs.request("other", {}, {}, "paper", units=units)


def test_plan_flags_requests_above_ten_times_the_projection_or_an_hour(monkeypatch):
    """A job projected at 1 min (60 units of 1 s) may ask up to 60 min; one projected at 12 min up to 120 min."""
    monkeypatch.setitem(costs.WORK, "toy", lambda p, wc: float(wc.get("n", 60)))
    units = [unit("toy", overhead_s=0.0, s_per_unit=1.0)]
    job = {"group": "g", "rule": "toy", "wildcards": "", "threads": 1, "gpu": 0, "mem_mb": 3000}
    assert costs.project_job({**job, "runtime": 60}, {}, units, "paper", False).flag == ""
    over = costs.project_job({**job, "runtime": 61}, {}, units, "paper", False).flag
    assert over == "runtime 61 min > max(10 x projected 1.0 min, 60 min)"
    long = {**job, "wildcards": "n=720"}
    assert costs.project_job({**long, "runtime": 120}, {}, units, "paper", False).flag == ""
    assert costs.project_job({**long, "runtime": 121}, {}, units, "paper", False).flag.startswith("runtime 121")


def test_plan_summary_and_its_markdown(monkeypatch):
    """Two jobs of 60 and 120 units of 1 s, the second waiting for the first and declared 1 min (flagged): 0.05
    CPU-hours, a 3-minute critical path through both (also the ideal time on 2 cores), 61 requested CPU-minutes."""
    monkeypatch.setitem(costs.WORK, "toy", lambda p, wc: float(wc["n"]))
    units = [unit("toy", overhead_s=0.0, s_per_unit=1.0)]
    job = {"group": "g", "rule": "toy", "threads": 1, "gpu": 0, "mem_mb": 3000}
    specs = {"a": {**job, "wildcards": "n=60", "runtime": 60}, "b": {**job, "wildcards": "n=120", "runtime": 1}}
    rows = [costs.project_job(specs[k], {}, units, "paper", on_gpu=True) for k in specs]
    s = costs.plan_summary(rows, {"a": [], "b": ["a"]}, list(specs), cores=2)
    assert (s["jobs"], s["cpu_h"], s["gpu_h"], s["critical_path_h"], s["ideal_h"]) == (2, 0.05, 0.0, 0.05, 0.05)
    assert s["critical_path"] == ["toy n=60", "toy n=120"] and [r.wildcards for r in s["flagged"]] == ["n=120"]
    md = costs.plan_markdown(s, "paper", units)
    assert md.startswith("# Cost plan, scale `paper`\n\n2 computing jobs: projected 0.05 CPU-hours and 0.00 GPU-hours")
    assert "critical path 3.0 min, ideal time on 2 cores 3.0 min" in md
    assert "first attempts): 1.02 CPU-hours and 0.00 GPU-hours" in md
    assert "| `g` | 2 | 0.050 | 0.000 |\n| **total** | 2 | 0.050 | 0.000 |" in md
    assert "Critical path: toy n=60 -> toy n=120." in md
    assert "- `toy` n=120: runtime 1 min < 2 x projected 2.0 min" in md
    assert md.endswith("- measured at laptop scale: s; m; 2026-11-26; commit abc\n")


def test_computed_gpu_rows_say_they_are_computed():
    rows = costs.computed_gpu_rows("2026-11-27", "abc")
    assert [(u.rule, u.device, u.basis, u.calib_scale) for u in rows] == [
        ("p1_images_train", "gpu", "computed", "paper"),
        ("p1_images_sample", "gpu", "computed", "paper"),
    ]
    assert all(u.source.startswith("computed, not measured") and u.commit == "abc" for u in rows)
