"""The metrics ledger, the claims table and the atomic writers."""

import json
import re

import pytest
import yaml

from smattn import io as sio
from smattn.ledger import (
    K_SIGMA,
    P_LEVEL,
    claims_html,
    evaluate_claims,
    figure_status,
    headline_counts,
    holm_rejections,
    load_claims,
    merge_metrics,
    status_counts,
)


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


W = {"role": "claim", "figure": "P2 Fig. 1 left", "where": "P2 Fig. 1", "paper_says": "it is so"}
CHK = {"role": "check", "basis": "a bound derived here"}


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


def test_binomial_standard_error_is_that_of_the_reference_and_fixed_part(tmp_path):
    # accuracy 0.8 against the paper's 0.75 on 300 items: se at the paper's value sqrt(0.75 * 0.25 / 300) = 0.025,
    # 3 se = 0.075; plus a fixed 0.01 -> 0.085. At the estimate it would be sqrt(0.8 * 0.2 / 300) = 0.0231.
    rows = [
        {"id": "acc", "claim": "c", "kind": "match", "paper": 0.725, "se": {"binomial": 300}, **W},
        {
            "id": "acc",
            "claim": "c",
            "kind": "match",
            "paper": 0.716,
            "se": {"binomial": "n"},
            "tolerance": 0.01,
            "tolerance_reason": "grid",
            **W,
        },
    ]
    claims = _load(tmp_path, rows)
    r = evaluate_claims(claims, {"acc": 0.8, "n": 300})
    # |0.8 - 0.725| = 0.075 <= 3 sqrt(0.725 * 0.275 / 300) = 0.0773 (at the estimate: 0.0693, a FAIL)
    assert r[0]["status"] == "pass" and "binomial at p = 0.725, n = 300" in r[0]["tolerance_source"]
    # |0.8 - 0.716| = 0.084 <= 3 sqrt(0.716 * 0.284 / 300) + 0.01 = 0.0881
    assert r[1]["status"] == "pass" and "fixed 0.01: grid" in r[1]["tolerance_source"]
    # a fraction of runs against a paper's 1: its binomial error there is 0, so 6 of 10 cannot pass
    one = _load(tmp_path, [{"id": "f", "claim": "c", "kind": "match", "paper": 1.0, "se": {"binomial": 10}, **W}])
    assert evaluate_claims(one, {"f": 0.6})[0]["status"] == "FAIL"
    with pytest.raises(ValueError, match="tolerance_reason"):
        _load(tmp_path, [{"id": "a", "claim": "c", "kind": "match", "paper": 1, "tolerance": 0.1, **W}])
    with pytest.raises(ValueError, match="'se'"):
        _load(tmp_path, [{"id": "a", "claim": "c", "kind": "match", "paper": 1, **W}])


def test_deviation_is_explained_only_by_a_computation_about_the_published_value(tmp_path):
    recompute = {"shows": "reproduces the published value", "rule": "r_auth",
                 "check": {"id": "q_auth", "paper": 0.55, "se": "q_auth_se"}}  # fmt: skip
    row = {
        "id": "q",
        "claim": "c",
        "kind": "deviation",
        "paper": 0.55,
        "se": 0.01,
        "explained_by": recompute,
        "explanation": "their estimator floors Z_out ({{q_auth}})",
        **W,
    }
    claims = _load(tmp_path, [row])
    # ours disagrees (0.4 > 3 x 0.01); the authors' procedure recomputed gives their value: |0.5512 - 0.55| <= 0.03
    ok = evaluate_claims(claims, {"q": 0.95, "q_auth": 0.5512345, "q_auth_se": 0.01})[0]
    assert ok["status"] == "deviation explained"
    assert ok["explanation"].startswith("deviation explained: reproduces the published value (rule r_auth; q_auth")
    assert "(0.5512)" in ok["explanation"] and ok["tolerance"] == "± 0.03"
    # the recomputation misses the published value by 0.05 > 0.03: the deviation is not explained
    bad = evaluate_claims(claims, {"q": 0.95, "q_auth": 0.6, "q_auth_se": 0.01})[0]
    assert bad["status"] == "FAIL" and "explanation does not hold" in bad["explanation"]
    # ours agrees with the paper: no deviation left, a pass whatever the explanation gives
    assert evaluate_claims(claims, {"q": 0.56, "q_auth": 0.9, "q_auth_se": 0.01})[0]["status"] == "pass"
    # not a fixed point: the exact map moves the published value by 0.02 +- 0.005 (> 3 sigma) -- and by 0.01 it does not
    moved = {"shows": "the published value is not a fixed point", "rule": "r_map",
             "check": {"left": "step", "op": ">", "right": 0, "se_left": "step_se", "test": "significant"}}  # fmt: skip
    fp = _load(tmp_path, [{**row, "explained_by": moved, "explanation": "their SE has no convergence test"}])
    assert evaluate_claims(fp, {"q": 0.95, "step": 0.02, "step_se": 0.005})[0]["status"] == "deviation explained"
    assert evaluate_claims(fp, {"q": 0.95, "step": 0.01, "step_se": 0.005})[0]["status"] == "FAIL"
    with pytest.raises(ValueError, match="explained_by"):
        _load(tmp_path, [{k: v for k, v in row.items() if k != "explained_by"}])
    with pytest.raises(ValueError, match="match check"):
        _load(tmp_path, [{**row, "explained_by": {**recompute, "check": {"paper": 0.55}}}])
    with pytest.raises(ValueError, match="test: significant"):
        _load(tmp_path, [{**row, "explained_by": {**moved, "check": {**moved["check"], "test": "consistent"}}}])
    with pytest.raises(ValueError, match="shows must be one of"):
        _load(tmp_path, [{**row, "explained_by": {**recompute, "shows": "ours mapped once"}}])
    with pytest.raises(KeyError, match="cites metric 'q_auth'"):
        evaluate_claims(claims, {"q": 0.55})


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


def test_row_fields_roles_and_kinds(tmp_path):
    with pytest.raises(ValueError, match="info row may not carry a paper value"):
        _load(tmp_path, [{"id": "a", "claim": "c", "kind": "info", "paper": 0.5, **CHK}])
    claim = {"id": "a", "claim": "c", "kind": "match", "paper": 1, "se": 0.1, **W}
    for drop, match in (("where", "'where'"), ("paper_says", "paper_says"), ("figure", "'figure'"), ("role", "role")):
        with pytest.raises(ValueError, match=match):
            _load(tmp_path, [{k: v for k, v in claim.items() if k != drop}])
    with pytest.raises(ValueError, match="'where'"):
        _load(tmp_path, [{**claim, "where": "Fig. 1"}])  # a claim's location names its paper
    with pytest.raises(ValueError, match="different papers"):
        _load(tmp_path, [{**claim, "figure": "P1 Fig. 3b"}])
    with pytest.raises(ValueError, match="a claim is judged"):
        _load(tmp_path, [{"id": "a", "claim": "c", "kind": "info", **W}])
    with pytest.raises(ValueError, match="never cites the paper"):
        _load(tmp_path, [{**claim, **CHK}])
    with pytest.raises(ValueError, match="'basis'"):
        _load(tmp_path, [{"id": "a", "claim": "c", "kind": "info", "role": "check"}])
    with pytest.raises(ValueError, match="kind 'guess'"):
        _load(tmp_path, [{"id": "a", "claim": "c", "kind": "guess", **CHK}])
    claims = _load(
        tmp_path,
        [
            {"id": "a", "claim": "diagnostic", "kind": "info", **CHK},
            {"id": "b", "claim": "tuned", "kind": "calibration", "paper": 0.14, **CHK},
        ],
    )
    rows = evaluate_claims(claims, {"a": 1, "b": 0.15})
    assert [r["status"] for r in rows] == ["info", "calibration"] and rows[0]["basis"] == "a bound derived here"
    with pytest.raises(KeyError, match="'b', which no rule wrote"):
        evaluate_claims(claims, {"a": 1})


def test_proportion_is_an_exact_binomial_test(tmp_path):
    """The p-value against a brute-force sum of binomial probabilities (math.comb), not scipy's own."""
    from math import comb

    def two_sided(k, n, p0):  # the likelihood-ordering two-sided p-value, summed by hand
        pmf = [comb(n, i) * p0**i * (1 - p0) ** (n - i) for i in range(n + 1)]
        return min(1.0, sum(q for q in pmf if q <= pmf[k] * (1 + 1e-7)))

    row = {"claim": "all runs learn", "kind": "proportion", "successes": "k", "trials": "n", "paper": 0.9, **W}
    claims = _load(tmp_path, [row, {**row, "paper": 1.0, "alternative": "less"}])
    for k in (3, 5, 6, 10):
        r = evaluate_claims(claims, {"k": k, "n": 10})
        expected = two_sided(k, 10, 0.9)
        assert r[0]["status"] == ("pass" if expected >= P_LEVEL else "FAIL"), (k, expected)
        assert f"p = {expected:.3g}" in r[0]["tolerance"]
        assert r[1]["status"] == ("pass" if k == 10 else "FAIL")  # p0 = 1: a single failure is impossible
    assert "95 % CI" in evaluate_claims(claims, {"k": 6, "n": 10})[0]["ours"]
    with pytest.raises(ValueError, match="not a count"):
        evaluate_claims(claims, {"k": 6.5, "n": 10})
    with pytest.raises(ValueError, match="successes"):
        _load(tmp_path, [{k: v for k, v in row.items() if k != "successes"}])


def test_holm_controls_a_family_of_p_value_checks(tmp_path):
    # sorted 0.005 <= 0.05/4, 0.01 <= 0.05/3, 0.03 > 0.05/2: the first two are rejected, the rest not
    assert holm_rejections({"a": 0.01, "b": 0.04, "c": 0.03, "d": 0.005}, 0.05) == {"a", "d"}
    assert holm_rejections({"a": 0.2, "b": 0.001}, 0.05) == {"b"}
    rows = [{"claim": f"mix {i}", "kind": "pvalue", "p": f"p{i}", "family": "rhat", **CHK} for i in range(4)]
    rows.append({"claim": "other", "kind": "pvalue", "p": "q", "family": "solo", **CHK})
    claims = _load(tmp_path, rows)
    metrics = {"p0": 0.01, "p1": 0.04, "p2": 0.03, "p3": 0.005, "q": 0.04}
    r = evaluate_claims(claims, metrics)
    # 0.04 alone in its family fails at 0.05; in the four-row family 0.04 and 0.03 pass (each tested at 5 % they fail)
    assert [x["status"] for x in r] == ["FAIL", "pass", "pass", "FAIL", "FAIL"]
    assert "rank 1 of 4" in r[3]["tolerance"]
    with pytest.raises(ValueError, match="a claim is judged"):
        _load(tmp_path, [{**rows[0], **W, "role": "claim"}])


def test_too_wide_a_tolerance_is_not_informative(tmp_path):
    row = {"id": "q", "claim": "c", "kind": "match", "paper": 0.6, "se": "q_se", "range": [0, 1], **W}
    claims = _load(tmp_path, [row])
    # tolerance 3 x 0.09 = 0.27 spans more than a quarter of [0, 1]: the row could not have failed at 0.55
    assert evaluate_claims(claims, {"q": 0.55, "q_se": 0.09})[0]["status"] == "not informative"
    assert evaluate_claims(claims, {"q": 0.55, "q_se": 0.08})[0]["status"] == "pass"  # 0.24 <= 0.25
    assert evaluate_claims(claims, {"q": 0.1, "q_se": 0.09})[0]["status"] == "FAIL"  # 0.5 > 0.27: still a FAIL
    with pytest.raises(ValueError, match="range"):
        _load(tmp_path, [{**row, "range": [1, 0]}])


def test_figure_status_counts_claims_only(tmp_path):
    def claim(figure, cid):
        return {"id": cid, "claim": cid, "kind": "match", "paper": 1.0, "se": 0.01, **W, "figure": figure}

    rows = [
        claim("P2 Fig. 1 left", "a"),
        claim("P2 Fig. 1 left", "b"),
        claim("P2 Fig. 1 right", "a"),
        {**claim("P2 Fig. 5", "a"), "judged_at": ["paper"]},
        {"id": "b", "claim": "check", "kind": "match", "paper": 1.0, "se": 0.01, **CHK, "figure": "P2 Fig. 1 right"},
    ]
    r = evaluate_claims(_load(tmp_path, rows), {"a": 1.0, "b": 2.0}, "laptop")
    panels = {e["figure"]: e for e in figure_status(r)}
    assert panels["P2 Fig. 1 left"]["status"] == "not reproduced" and panels["P2 Fig. 1 left"]["counts"] == {
        "FAIL": 1,
        "pass": 1,
    }
    assert panels["P2 Fig. 1 right"]["status"] == "reproduced"  # the failing check does not decide the panel
    assert panels["P2 Fig. 5"]["status"] == "not run at this scale"
    assert panels["P1 Fig. 3b"]["status"] == "no claim rows"
    assert headline_counts(r) == {"P1": {}, "P2": {"FAIL": 1, "judged at another scale": 1, "pass": 2}, "checks": {
        "FAIL": 1}}  # fmt: skip
    html = claims_html(r, "laptop")
    assert "P2 claims (4): 1 FAIL, 1 judged at another scale, 2 pass; our checks (1): 1 FAIL." in html
    assert html.index("Claims of the papers (4 rows)") < html.index("Checks of this project (1 rows)")


def test_groups_that_did_not_run(tmp_path):
    a = tmp_path / "p2_theory.yaml"
    a.write_text(yaml.safe_dump([{"id": "x", "claim": "c", "kind": "match", "paper": 1, "se": 0.1, **W}]))
    b = tmp_path / "p1_hmc.yaml"
    b.write_text(
        yaml.safe_dump([{"claim": "c", "kind": "compare", "check": {"left": "y", "op": "<", "right": 1}, **CHK}])
    )
    claims = load_claims([a, b])
    rows = evaluate_claims(claims, {"x": 1.0}, "paper", groups_run=["p2_theory"])
    assert [r["status"] for r in rows] == ["pass", "not run"] and rows[1]["ours"] == ""
    assert status_counts(rows) == {"not run": 1, "pass": 1}
    html = claims_html(rows, "paper", groups={"p2_theory": "paper", "p1_hmc": "not run"})
    assert "P2 claims (1): 1 pass; our checks (1): 1 not run." in html and "p1_hmc: not run" in html


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
        {"check": {"left": "a", "op": "<=", "right": 1.01}, "claim": "r-hat", "kind": "compare", **CHK},
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
        path.write_text(f"- id: a\n  claim: m\n  kind: info\n  role: check\n  basis: b\n  judged_at: {judged}\n")
        with pytest.raises(ValueError, match="judged_at"):
            load_claims([path])


def test_every_claims_file_of_the_workflow_loads_and_cites_known_ids():
    """The repository's claims files satisfy the schema; no info row carries a paper value."""
    from pathlib import Path

    files = sorted((Path(__file__).parents[2] / "claims").glob("*.yaml"))
    claims = load_claims(files)
    assert claims and all(c["kind"] != "info" or c.get("paper") is None for c in claims)


#: row fields whose strings are words, names or settings, never metric ids
_WORD_FIELDS = {"claim", "paper_says", "where", "basis", "figure", "role", "kind", "source", "group", "explanation"}
_WORD_FIELDS |= {"hypothesis", "rule", "shows", "op", "test", "alternative", "family", "judged_at"}


def _string_leaves(x, key=""):
    if isinstance(x, dict):
        for k, v in x.items():
            if k not in _WORD_FIELDS and not k.endswith("_reason"):
                yield from _string_leaves(v, k)
    elif isinstance(x, list):
        for v in x:
            yield from _string_leaves(v, key)
    elif isinstance(x, str):
        yield x


def test_metric_refs_names_every_metric_a_row_reads():
    """For every row of the repository's claims files, the ids ``metric_refs`` lists are all the evaluator needs,
    also for a deviation's explanation and a failing claim's cause (evaluated with only those ids in the ledger), and
    they are every string of the row that is not a word field (a walk of the row) plus its ``{{id}}`` citations."""
    from pathlib import Path

    from smattn.ledger import metric_refs
    from smattn.ledger.verdicts import cause_text, explained_text

    claims = load_claims(sorted((Path(__file__).parents[2] / "claims").glob("*.yaml")))
    for c in claims:
        refs = metric_refs(c)
        cited = {m.strip() for t in (c.get("explanation", ""), c.get("cause", {}).get("hypothesis", ""))
                 for m in re.findall(r"\{\{([^{}]+)\}\}", t)}  # fmt: skip
        assert set(refs) == set(_string_leaves(c)) | cited, c["claim"]
        metrics = dict.fromkeys(refs, 1.0)  # a valid value for every kind: counts 1 of 1, p = 1, errors 1
        evaluate_claims([c], metrics)
        if "explained_by" in c:
            explained_text(c, metrics)
        if "cause" in c:
            cause_text(c, metrics)
    with pytest.raises(KeyError):  # and the evaluator does need them: one missing id is an error
        c = next(c for c in claims if c["kind"] == "deviation")
        explained_text(c, dict.fromkeys(metric_refs(c)[:-1], 1.0))


def test_cause_of_a_failing_claim_is_confirmed_or_refuted_by_its_check(tmp_path):
    """A failing claim row with a cause opens its explanation with the cause, confirmed when the cause's check holds
    and refuted when it does not, naming the rule and the check's numbers; a passing row shows no cause; a run that
    lacks a metric of the cause raises, as for the row's own; the panel line counts the failing rows by cause."""
    cause = {
        "hypothesis": "the file is off by {{gap}}",
        "rule": "some_rule",
        "check": {"left": "gap", "op": ">", "right": 0.0, "se_left": "gap_se", "test": "significant"},
    }
    rows = [
        {
            "id": "a",
            "claim": "a",
            "kind": "match",
            "paper": 1.0,
            "se": 0.01,
            **W,
            "cause": cause,
            "explanation": "Ours is exact.",
        },  # fmt: skip
        {"id": "b", "claim": "b", "kind": "match", "paper": 1.0, "se": 0.01, **W},
    ]
    claims = _load(tmp_path, rows)
    confirmed = evaluate_claims(claims, {"a": 1.5, "b": 1.5, "gap": 0.5, "gap_se": 0.1})
    e = confirmed[0]["explanation"]
    assert e.startswith("not reproduced — cause: the file is off by 0.5 (rule some_rule;") and e.endswith(
        "Ours is exact."
    )
    assert "significant: d − 3σ = 0.2 vs 0" in e
    assert confirmed[0]["cause"] == {"verdict": "cause", "rule": "some_rule"} and confirmed[1]["cause"] is None
    refuted = evaluate_claims(claims, {"a": 1.5, "b": 1.5, "gap": 0.2, "gap_se": 0.1})
    assert refuted[0]["explanation"].startswith("not reproduced — hypothesis refuted: the file is off by 0.2")
    passing = evaluate_claims(claims, {"a": 1.0, "b": 1.0, "gap": 0.5, "gap_se": 0.1})
    assert passing[0]["explanation"] == "Ours is exact." and passing[0]["cause"] is None
    with pytest.raises(KeyError, match="gap"):  # a cause's metric that no rule wrote is an error, as a row's own
        evaluate_claims(claims, {"a": 1.5, "b": 1.0})
    from smattn.ledger import panel_line

    line = panel_line(figure_status(confirmed)[PANEL_INDEX["P2 Fig. 1 left"]])
    assert line == (
        "P2 Fig. 1 left: not reproduced (2 FAIL) — cause: rule some_rule (1 FAIL); no computed cause (1 FAIL)"
    )


PANEL_INDEX = {e["figure"]: i for i, e in enumerate(figure_status([]))}


def test_cause_fields_are_checked(tmp_path):
    good = {"hypothesis": "h", "rule": "r", "check": {"left": "x", "op": "<", "right": 0.0}}
    base = {"id": "a", "claim": "a", "kind": "match", "paper": 1.0, "se": 0.01}
    for bad, match in [
        ({**base, **CHK, "cause": good}, "only a claim row"),
        ({**base, **W, "cause": {"hypothesis": "h", "rule": "r"}}, "cause needs exactly"),
        ({**base, **W, "cause": {**good, "rule": " "}}, "cause.rule"),
        ({**base, **W, "cause": {**good, "check": {"left": "x", "op": "=", "right": 0}}}, "op '='"),
    ]:
        with pytest.raises(ValueError, match=match):
            _load(tmp_path, [bad])


def test_every_cause_names_a_rule_of_the_workflow():
    """A cause is computed by a rule of the same run: each claims file's cause names a rule the rule files define."""
    import re
    from pathlib import Path

    root = Path(__file__).parents[2]
    defined = {m for f in (root / "rules").glob("*.smk") for m in re.findall(r"^rule (\w+):", f.read_text(), re.M)}
    causes = [c["cause"]["rule"] for c in load_claims(sorted((root / "claims").glob("*.yaml"))) if "cause" in c]
    assert causes and set(causes) <= defined, sorted(set(causes) - defined)


def test_save_figure_writes_the_same_bytes_at_every_rerun(tmp_path, monkeypatch):
    """Rerunning a figure rewrites its PNG and PDF byte for byte: no creation date from the clock (three saves at
    different times, SOURCE_DATE_EPOCH unset) nor from SOURCE_DATE_EPOCH (two values) enters either file."""
    import time

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1, 2], [0, 1, 4], label=r"$\alpha$")
    ax.legend()
    saved = []
    for i, epoch in enumerate((None, None, "0", "1700000000")):
        if epoch is None:
            monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
        else:
            monkeypatch.setenv("SOURCE_DATE_EPOCH", epoch)
        if i == 1:
            time.sleep(1.1)  # PDF dates have a resolution of one second
        sio.save_figure(fig, tmp_path / f"f{i}.png")
        saved.append(((tmp_path / f"f{i}.png").read_bytes(), (tmp_path / f"f{i}.pdf").read_bytes()))
    plt.close(fig)
    assert all(png == saved[0][0] for png, _ in saved)
    assert all(pdf == saved[0][1] for _, pdf in saved)
    assert b"/CreationDate" not in saved[0][1] and b"/ModDate" not in saved[0][1]
