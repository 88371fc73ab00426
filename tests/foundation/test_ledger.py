"""The metrics ledger, the claims table and the atomic writers."""

import json

import pytest
import yaml

from smattn import io as sio
from smattn.ledger import claims_html, evaluate_claims, load_claims, merge_metrics


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


def test_claims(tmp_path):
    claims = [
        {"id": "acc", "claim": "accuracy is 0.9", "kind": "match", "paper": 0.9, "tolerance": 0.02},
        {"id": "acc2", "claim": "accuracy2 is 0.9", "kind": "match", "paper": 0.9, "tolerance": 0.02},
        {"claim": "layer 2 first", "kind": "compare", "check": {"left": "t2", "op": "<", "right": "t1"}},
        {"id": "thr", "claim": "threshold", "kind": "deviation", "paper": 0.3, "explanation": "different reading"},
        {"id": "acc", "claim": "info", "kind": "info"},
        {"claim": "below a target", "kind": "compare", "check": {"left": "t2", "op": "<=", "right": 3}},
        {"claim": "above a target", "kind": "compare", "check": {"left": "t1", "op": "<=", "right": 4.5}},
    ]
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(claims))
    rows = evaluate_claims(load_claims([path]), {"acc": 0.91, "acc2": 0.8, "t1": 5, "t2": 3, "thr": 0.4})
    assert [r["status"] for r in rows] == ["pass", "FAIL", "pass", "deviation explained", "info", "pass", "FAIL"]
    assert "layer 2 first" in claims_html(rows, "smoke")
    with pytest.raises(KeyError, match="'thr', which no rule wrote"):
        evaluate_claims(load_claims([path]), {"acc": 1, "acc2": 1, "t1": 1, "t2": 0})
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump([{"id": "a", "claim": "c", "kind": "deviation"}]))
    with pytest.raises(ValueError, match="explanation"):
        load_claims([bad])


def test_compare_with_a_number_a_margin_and_scales(tmp_path):
    claims = [
        {"claim": "below a target", "kind": "compare", "check": {"left": "t2", "op": "<=", "right": 3}},
        {"claim": "above a target", "kind": "compare", "check": {"left": "t1", "op": "<=", "right": 4.5}},
        # theory 0.60 against a baseline 0.63 +- 0.04: within one spread -> pass; 0.60 vs 0.63 +- 0.02 -> FAIL
        {"claim": "within sd", "kind": "compare", "check": {"left": "a", "op": ">=", "right": "b", "margin": "sd"}},
        {"claim": "beyond sd", "kind": "compare", "check": {"left": "a", "op": ">=", "right": "b", "margin": 0.02}},
        {"claim": "upper", "kind": "compare", "check": {"left": "b", "op": "<", "right": "a", "margin": "sd"}},
        {
            "claim": "paper only",
            "kind": "compare",
            "check": {"left": "a", "op": ">", "right": "b"},
            "judged_at": ["paper"],
        },
        {"id": "a", "claim": "paper only info", "kind": "info", "judged_at": ["paper"]},
    ]
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(claims))
    metrics = {"t1": 5, "t2": 3, "a": 0.60, "b": 0.63, "sd": 0.04}
    rows = evaluate_claims(load_claims([path]), metrics)
    assert [r["status"] for r in rows] == ["pass", "FAIL", "pass", "FAIL", "pass", "FAIL", "info"]
    assert rows[2]["ours"] == "0.6 >= 0.63 - 0.04" and rows[2]["id"] == "a >= b - sd"
    assert rows[4]["ours"] == "0.63 < 0.6 + 0.04"
    at_laptop = evaluate_claims(load_claims([path]), metrics, scale="laptop")
    assert [r["status"] for r in at_laptop][5:] == ["info", "info"] and at_laptop[5]["ours"] == rows[5]["ours"]
    assert evaluate_claims(load_claims([path]), metrics, scale="paper")[5]["status"] == "FAIL"
    with pytest.raises(ValueError, match="negative margin"):
        evaluate_claims(load_claims([path]), {**metrics, "sd": -0.1})
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        yaml.safe_dump([{"claim": "c", "kind": "compare", "check": {"left": "a", "op": ">", "right": "b", "slack": 1}}])
    )
    with pytest.raises(ValueError, match="margin"):
        load_claims([bad])
    bad.write_text(yaml.safe_dump([{"id": "a", "claim": "c", "kind": "info", "judged_at": "paper"}]))
    with pytest.raises(ValueError, match="judged_at"):
        load_claims([bad])


def test_claims_undecided_at_a_scale_are_info(tmp_path):
    claims = [
        {"id": "a", "claim": "A", "kind": "match", "paper": 1.0, "tolerance": 0.1, "judged_at": ["laptop", "paper"]},
        {
            "check": {"left": "a", "op": ">", "right": "b"},
            "claim": "A > B",
            "kind": "compare",
            "judged_at": ["laptop", "paper"],
        },
        {"id": "b", "claim": "B", "kind": "match", "paper": 5.0, "tolerance": 0.1},
    ]
    f = tmp_path / "c.yaml"
    f.write_text(yaml.safe_dump(claims))
    loaded = load_claims([f])
    metrics = {"a": 3.0, "b": 2.0}
    assert [r["status"] for r in evaluate_claims(loaded, metrics, scale="smoke")] == ["info", "info", "FAIL"]
    assert [r["status"] for r in evaluate_claims(loaded, metrics, scale="paper")] == ["FAIL", "pass", "FAIL"]
    assert [r["status"] for r in evaluate_claims(loaded, metrics)] == ["FAIL", "pass", "FAIL"]
    f.write_text(yaml.safe_dump([{**claims[0], "judged_at": "smoke"}]))
    with pytest.raises(ValueError, match="judged_at"):
        load_claims([f])


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
    path = tmp_path / "c.yaml"
    path.write_text(
        "- check: {left: a, op: '<=', right: 1.01}\n  claim: r-hat\n  kind: compare\n  judged_at: [laptop, paper]\n"
        "- id: a\n  claim: m\n  kind: match\n  paper: 1.0\n  tolerance: 0.001\n  judged_at: [paper]\n"
    )
    claims = load_claims([path])
    smoke = evaluate_claims(claims, {"a": 1.5}, "smoke")
    assert [r["status"] for r in smoke] == ["info", "info"]
    assert "not judged at smoke scale" in smoke[0]["explanation"]
    laptop = evaluate_claims(claims, {"a": 1.5}, "laptop")
    assert [r["status"] for r in laptop] == ["FAIL", "info"]
    assert [r["status"] for r in evaluate_claims(claims, {"a": 1.0}, "paper")] == ["pass", "pass"]


def test_judged_at_must_name_scales(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("- id: a\n  claim: m\n  kind: info\n  judged_at: [huge]\n")
    with pytest.raises(ValueError, match="judged_at"):
        load_claims([path])
