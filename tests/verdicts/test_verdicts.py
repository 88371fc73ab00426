"""The verdicts tier: groups run at laptop scale through their group targets, and every row's status is the one recorded
in ``expected_laptop.yaml``. The tier runs the P2 theory, P1 HMC-task and P2 dynamics groups;
``SMATTN_VERDICTS_GROUPS=all`` (or a comma-separated list) runs others, and
``record_expected.py --check --metrics results/metrics.json`` checks a whole run of the main job against the file.

The file lists every row of every group (``group``, ``claim``, ``id``) with its expected status; a FAIL or a
``not informative`` carries the ``reason`` it is expected. Any change of status — a FAIL that appears, a FAIL that
turns into a pass, a row added or removed — fails the test, so the table of record changes only with the file, in a
commit that says why. Regenerate the file from a run with ``python tests/verdicts/record_expected.py <claims.csv>...``
and review the diff. Select with ``pytest -m verdicts`` (about 17 minutes on 2 cores); the default run leaves it out.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest
import yaml

#: every claims group (claims/<group>.yaml): all are recorded
ALL_GROUPS = tuple(sorted(p.stem for p in (Path(__file__).parents[2] / "claims").glob("*.yaml")))
_ASKED = os.environ.get("SMATTN_VERDICTS_GROUPS", "p2_theory,p1_hmc,p2_dynamics")
#: the groups this tier runs
GROUPS = ALL_GROUPS if _ASKED == "all" else tuple(g for g in _ASKED.split(",") if g)
EXPECTED = Path(__file__).with_name("expected_laptop.yaml")
#: statuses that must say why they are expected
NEED_REASON = ("FAIL", "not informative")


def row_key(group: str, r: dict) -> str:
    return f"{group} | {r['id']} | {r['claim']}"


def load_expected() -> dict[str, dict]:
    items = yaml.safe_load(EXPECTED.read_text(encoding="utf-8")) or []
    out = {}
    for e in items:
        key = f"{e['group']} | {e['id']} | {e['claim']}"
        if key in out:
            raise ValueError(f"{EXPECTED.name}: {key!r} is listed twice")
        if e["status"] in NEED_REASON and e.get("reason", "TODO") == "TODO":
            raise ValueError(f"{EXPECTED.name}: {key!r} is expected to be {e['status']!r} but gives no reason")
        out[key] = e
    return out


def test_expected_statuses_are_well_formed():
    """Every expected FAIL / not informative says why; no row is listed twice; every group is recorded (runs in the
    default suite)."""
    expected = load_expected()
    assert {e["group"] for e in expected.values()} == set(ALL_GROUPS)
    assert set(GROUPS) <= set(ALL_GROUPS), f"SMATTN_VERDICTS_GROUPS names unknown groups: {GROUPS}"


@pytest.fixture(scope="module")
def laptop_tables(tmp_path_factory, copy_workflow, raw_data, run_snakemake):
    """The groups' claims tables of one laptop-scale run of their targets in a copy of the workflow."""
    wd = copy_workflow(tmp_path_factory.mktemp("verdicts"))
    # as the README's main job runs them (the local profile: the depth-3 state evolution on one thread, beside the
    # other jobs from the start, with the same fixed points as on two); targets before --config: --config takes every
    # following word as a name=value pair
    args = [*GROUPS, "--profile", "profiles/local", "--cores", "2", "--config", "scale=laptop"]
    # the timeout is a hang guard, below the verdicts tier's own in .ci/run
    r = run_snakemake(wd, args, {"SMATTN_DATA_MIRROR": str(raw_data)}, timeout=1500)
    assert r.returncode == 0, (r.stdout[-4000:], r.stderr[-4000:])
    tables = {}
    for group in GROUPS:
        with open(wd / "results" / "groups" / group / "claims.csv", newline="", encoding="utf-8") as fh:
            tables[group] = list(csv.DictReader(fh))
    return {"workdir": wd, "args": args, "tables": tables}


@pytest.mark.verdicts
@pytest.mark.parametrize("group", GROUPS)
def test_every_status_is_the_recorded_one(laptop_tables, group):
    own = [r for r in laptop_tables["tables"][group] if r["status"] != "not run"]
    assert own, f"the {group} target judged none of its rows"
    expected = {k: e for k, e in load_expected().items() if e["group"] == group}
    got = {row_key(group, r): r for r in own}
    changed = [
        f"{k}: expected {expected[k]['status']!r}, got {got[k]['status']!r} ({got[k]['ours']}; {got[k]['tolerance']})"
        for k in sorted(set(got) & set(expected))
        if got[k]["status"] != expected[k]["status"]
    ]
    assert not changed, f"{group}: statuses changed at laptop scale:\n" + "\n".join(changed)
    extra, missing = sorted(set(got) - set(expected)), sorted(set(expected) - set(got))
    assert not extra, f"{group}: rows not in {EXPECTED.name}: {extra}"
    assert not missing, f"{group}: listed rows not in the table: {missing}"
    # every verdict the group's table gives comes with its tolerance and where that tolerance comes from
    for r in own:
        if r["status"] in ("pass", "FAIL", "deviation explained", "not informative"):
            assert r["tolerance"] and r["tolerance_source"], r["claim"]


@pytest.mark.verdicts
def test_the_run_is_complete_and_costed(laptop_tables, raw_data, run_snakemake):
    """After the run, a second one of the same targets has nothing to do, and each group's cost table has one row per
    computing job the group needs, each with a measured wall time."""
    wd, args = laptop_tables["workdir"], laptop_tables["args"]
    r = run_snakemake(wd, ["-n", *args], {"SMATTN_DATA_MIRROR": str(raw_data)}, timeout=300)
    assert r.returncode == 0 and "Nothing to be done" in r.stdout + r.stderr, (r.stdout[-3000:], r.stderr[-3000:])
    for group in GROUPS:
        with open(wd / "results" / "groups" / group / "costs" / "jobs.csv", newline="") as fh:
            costs = list(csv.DictReader(fh))
        assert group in {row["group"] for row in costs}, (group, costs[:3])
        assert all(float(row["wall_s"]) > 0 and float(row["cpu_s"]) >= 0 for row in costs), group
