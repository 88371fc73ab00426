"""The metrics ledger, the claims table and the atomic writers."""

import json

import pytest
import yaml

from smattn import io as sio
from smattn.ledger import K_SIGMA, claims_html, evaluate_claims, load_claims, merge_metrics, status_counts


def test_merge_and_duplicate_ids(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    sio.write_metrics(a, {"x[N=1]": 0.5, "y": 2})
    sio.write_metrics(b, {"z": 1e-3})
    assert merge_metrics([a, b]) == {"x[N=1]": 0.5, "y": 2.0, "z": 1e-3}
    sio.write_metrics(b, {"y": 3})
    with pytest.raises(ValueError, match="'y' is written by both"):
        merge_metrics([a, b])


def test_write_metrics_rejects_non_finite(tmp_path):
    with pytest.raises(ValueError, match="'bad'"):
        sio.write_metrics(tmp_path / "m.json", {"bad": float("nan")})
    assert not (tmp_path / "m.json").exists()


def _load(tmp_path, rows, name="grp.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(rows))
    return load_claims([path])


W = {"where": "P2 Fig. 1", "paper_says": "it is so"}


def test_match_tolerance_is_three_combined_standard_errors(tmp_path):
    # se 0.01 and paper se 0.0075 combine to 0.0125; 3 of them: 0.0375. 0.9 + 0.037 passes, 0.9 + 0.038 fails.
    row = {"id": "a", "claim": "a", "kind": "match", "paper": 0.9, "se": "a_se", "paper_se": 0.0075, **W}
    claims = _load(tmp_path, [row])
    assert K_SIGMA == 3
    assert evaluate_claims(claims, {"a": 0.937, "a_se": 0.01})[0]["status"] == "pass"
    assert evaluate_claims(claims, {"a": 0.862, "a_se": 0.01})[0]["status"] == "FAIL"
    r = evaluate_claims(claims, {"a": 0.938, "a_se": 0.01})[0]
    assert r["status"] == "FAIL" and r["tolerance"] == "± 0.0375" and "a_se = 0.01" in r["tolerance_source"]
    assert r["ours"] == "0.938 ± 0.01" and r["where"] == "P2 Fig. 1" and r["paper_says"] == "it is so"


def test_binomial_standard_error_and_fixed_part(tmp_path):
    # accuracy 0.8 on 400 items: se = sqrt(0.8 * 0.2 / 400) = 0.02, 3 se = 0.06; plus a fixed 0.01 -> 0.07
    rows = [
        {"id": "acc", "claim": "c", "kind": "match", "paper": 0.73, "se": {"binomial": 400}, **W},
        {
            "id": "acc",
            "claim": "c",
            "kind": "match",
            "paper": 0.731,
            "se": {"binomial": "n"},
            "tolerance": 0.01,
            "tolerance_reason": "grid",
            **W,
        },
    ]
    claims = _load(tmp_path, rows)
    r = evaluate_claims(claims, {"acc": 0.8, "n": 400})
    assert [x["status"] for x in r] == ["FAIL", "pass"]  # 0.07 > 0.06; 0.069 <= 0.07
    assert r[1]["tolerance"] == "± 0.07" and "binomial, n = 400" in r[1]["tolerance_source"]
    assert "fixed 0.01: grid" in r[1]["tolerance_source"]
    with pytest.raises(ValueError, match="tolerance_reason"):
        _load(tmp_path, [{"id": "a", "claim": "c", "kind": "match", "paper": 1, "tolerance": 0.1, **W}])
    with pytest.raises(ValueError, match="'se'"):
        _load(tmp_path, [{"id": "a", "claim": "c", "kind": "match", "paper": 1, **W}])


def test_deviation_checks_the_expected_value(tmp_path):
    row = {
        "id": "q",
        "claim": "c",
        "kind": "deviation",
        "paper": 0.55,
        "expected": 0.96,
        "se": 0.01,
        "explanation": "the published value is an artefact ({{q_auth}} by their estimator)",
        **W,
    }
    claims = _load(tmp_path, [row])
    ok = evaluate_claims(claims, {"q": 0.95, "q_auth": 0.5512345})[0]
    assert ok["status"] == "deviation explained" and "(0.5512 by their estimator)" in ok["explanation"]
    moved = evaluate_claims(claims, {"q": 0.92, "q_auth": 0.55})[0]  # 0.04 > 3 x 0.01
    assert moved["status"] == "FAIL" and "moved away" in moved["explanation"]
    with pytest.raises(ValueError, match="expected"):
        _load(tmp_path, [{k: v for k, v in row.items() if k != "expected"}])
    with pytest.raises(KeyError, match="cites metric 'q_auth'"):
        evaluate_claims(claims, {"q": 0.95})


def test_compare_tests(tmp_path):
    def cmp(test=None, **extra):
        chk = {"left": "gp", "op": "<", "right": "th", **extra}
        if test:
            chk.update(test=test, se_left=0.01, se_right=0.02)
        return {"claim": "gp below theory", "kind": "compare", "check": chk, **W}

    rows = [
        cmp(),
        cmp("significant"),
        cmp("consistent"),
        cmp("significant", min_effect=0.05, min_effect_reason="a wide margin"),
        cmp(margin=0.2, margin_reason="spread"),
    ]
    claims = _load(tmp_path, rows)
    # sigma = sqrt(0.01^2 + 0.02^2) = 0.02236, 3 sigma = 0.0671
    st = lambda m: [r["status"] for r in evaluate_claims(claims, m)]  # noqa: E731
    assert st({"gp": 0.70, "th": 0.80}) == ["pass", "pass", "pass", "FAIL", "pass"]  # d = 0.1: 0.033 < 0.05
    assert st({"gp": 0.70, "th": 0.75}) == ["pass", "FAIL", "pass", "FAIL", "pass"]  # d = 0.05 < 0.067
    assert st({"gp": 0.70, "th": 0.65}) == ["FAIL", "FAIL", "pass", "FAIL", "pass"]  # d = -0.05, -0.05 + 0.067 > 0
    assert st({"gp": 0.70, "th": 0.60}) == ["FAIL", "FAIL", "FAIL", "FAIL", "pass"]  # -0.1 + 0.2 margin > 0
    assert st({"gp": 0.70, "th": 0.88}) == ["pass", "pass", "pass", "pass", "pass"]  # 0.18 - 0.067 > 0.05
    r = evaluate_claims(claims, {"gp": 0.70, "th": 0.80})[3]
    assert r["id"] == "gp < th" and "d = 0.1" in r["ours"] and "min effect 0.05: a wide margin" in r["tolerance_source"]
    # a bare ">=" holds with equality; a bare ">" does not
    eq = _load(tmp_path, [{**cmp(), "check": {"left": "a", "op": op, "right": 1}} for op in (">=", ">")])
    assert [r["status"] for r in evaluate_claims(eq, {"a": 1.0})] == ["pass", "FAIL"]
    for bad, match in [
        ({"left": "a", "op": "<", "right": "b", "se_left": 0.1}, "test"),
        ({"left": "a", "op": "<", "right": "b", "test": "significant"}, "se_left"),
        ({"left": "a", "op": "<", "right": "b", "min_effect": 0.1}, "min_effect_reason"),
        ({"left": "a", "op": "<", "right": "b", "margin": 0.1}, "margin_reason"),
        ({"left": "a", "op": "<", "right": "b", "slack": 1}, "compare needs"),
        ({"left": "a", "op": "=", "right": "b"}, "op"),
    ]:
        with pytest.raises(ValueError, match=match):
            _load(tmp_path, [{**cmp(), "check": bad}])
    with pytest.raises(ValueError, match="negative margin"):
        evaluate_claims(_load(tmp_path, [cmp(margin="m", margin_reason="r")]), {"gp": 1, "th": 2, "m": -0.1})


def test_row_fields_and_kinds(tmp_path):
    with pytest.raises(ValueError, match="info row may not carry a paper value"):
        _load(tmp_path, [{"id": "a", "claim": "c", "kind": "info", "paper": 0.5}])
    with pytest.raises(ValueError, match="'where'"):
        _load(tmp_path, [{"id": "a", "claim": "c", "kind": "match", "paper": 1, "se": 0.1, "paper_says": "x"}])
    with pytest.raises(ValueError, match="paper_says"):
        _load(tmp_path, [{"id": "a", "claim": "c", "kind": "match", "paper": 1, "se": 0.1, "where": "x"}])
    with pytest.raises(ValueError, match="kind 'guess'"):
        _load(tmp_path, [{"id": "a", "claim": "c", "kind": "guess"}])
    claims = _load(
        tmp_path,
        [
            {"id": "a", "claim": "diagnostic", "kind": "info"},
            {"id": "b", "claim": "tuned", "kind": "calibration", "paper": 0.14, "where": "Fig. 3"},
        ],
    )
    assert [r["status"] for r in evaluate_claims(claims, {"a": 1, "b": 0.15})] == ["info", "calibration"]
    with pytest.raises(KeyError, match="'b', which no rule wrote"):
        evaluate_claims(claims, {"a": 1})


def test_groups_that_did_not_run(tmp_path):
    a = tmp_path / "p2_theory.yaml"
    a.write_text(yaml.safe_dump([{"id": "x", "claim": "c", "kind": "match", "paper": 1, "se": 0.1, **W}]))
    b = tmp_path / "p1_hmc.yaml"
    b.write_text(
        yaml.safe_dump([{"claim": "c", "kind": "compare", "check": {"left": "y", "op": "<", "right": 1}, **W}])
    )
    claims = load_claims([a, b])
    rows = evaluate_claims(claims, {"x": 1.0}, "paper", groups_run=["p2_theory"])
    assert [r["status"] for r in rows] == ["pass", "not run"] and rows[1]["ours"] == ""
    assert status_counts(rows) == {"not run": 1, "pass": 1}
    html = claims_html(rows, "paper", groups={"p2_theory": "paper", "p1_hmc": "not run"})
    assert "1 not run, 1 pass" in html and "p1_hmc: not run" in html


def test_atomic_path_leaves_nothing_on_error(tmp_path):
    target = tmp_path / "out.txt"
    with pytest.raises(RuntimeError):
        with sio.atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []
    sio.write_json(target, {"a": 1})
    assert json.loads(target.read_text()) == {"a": 1}


def test_save_figure_writes_png_and_pdf(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    sio.save_figure(fig, tmp_path / "f.png")
    assert (tmp_path / "f.png").read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / "f.pdf").read_bytes()[:4] == b"%PDF"
    with pytest.raises(ValueError):
        sio.save_figure(fig, tmp_path / "f.jpg")


def test_atomic_outputs_have_the_usual_permissions(tmp_path):
    import os

    umask = os.umask(0o022)
    try:
        sio.write_text(tmp_path / "a.txt", "x")
    finally:
        os.umask(umask)
    assert (tmp_path / "a.txt").stat().st_mode & 0o777 == 0o644


def test_judged_at_limits_the_verdict_to_its_scales(tmp_path):
    rows = [
        {"check": {"left": "a", "op": "<=", "right": 1.01}, "claim": "r-hat", "kind": "compare", **W},
        {"id": "a", "claim": "m", "kind": "match", "paper": 1.0, "se": 0.0003, **W},
    ]
    claims = _load(tmp_path, [{**rows[0], "judged_at": ["laptop", "paper"]}, {**rows[1], "judged_at": ["paper"]}])
    smoke = evaluate_claims(claims, {"a": 1.5}, "smoke")
    assert [r["status"] for r in smoke] == ["judged at laptop and paper scale", "judged at paper scale"]
    assert smoke[0]["ours"] == "1.5 <= 1.01"  # the numbers are still shown
    laptop = evaluate_claims(claims, {"a": 1.5}, "laptop")
    assert [r["status"] for r in laptop] == ["FAIL", "judged at paper scale"]
    assert [r["status"] for r in evaluate_claims(claims, {"a": 1.0}, "paper")] == ["pass", "pass"]
    assert [r["status"] for r in evaluate_claims(claims, {"a": 1.5})] == ["FAIL", "FAIL"]
    assert status_counts(smoke) == {"judged at another scale": 2}


def test_claim_of_another_scale_may_lack_its_metrics_here(tmp_path):
    """A claim judged only at paper scale whose metric this scale does not compute (a width sampled only there) gets
    its status without a number; where it is judged, a missing metric is an error naming it."""
    row = {"id": "b[N=30]", "claim": "m30", "kind": "match", "paper": 0.0, "se": "b_se[N=30]", "judged_at": ["paper"]}
    claims = _load(tmp_path, [{**row, **W}])
    [r] = evaluate_claims(claims, {"a": 1.0}, "laptop")
    assert r["status"] == "judged at paper scale" and r["ours"] == "" and r["id"] == "b[N=30]"
    with pytest.raises(KeyError, match=r"b\[N=30\]"):
        evaluate_claims(claims, {"a": 1.0}, "paper")


def test_judged_at_must_name_scales(tmp_path):
    path = tmp_path / "c.yaml"
    for judged in ("[huge]", "paper", "[]"):
        path.write_text(f"- id: a\n  claim: m\n  kind: info\n  judged_at: {judged}\n")
        with pytest.raises(ValueError, match="judged_at"):
            load_claims([path])


def test_every_claims_file_of_the_workflow_loads_and_cites_known_ids():
    """The repository's claims files satisfy the schema; no info row carries a paper value."""
    from pathlib import Path

    files = sorted((Path(__file__).parents[2] / "claims").glob("*.yaml"))
    claims = load_claims(files)
    assert claims and all(c["kind"] != "info" or c.get("paper") is None for c in claims)
