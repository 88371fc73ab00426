"""Every script's --help names the rules that run it, with each rule's named inputs, outputs and params.

The help text of every script is built in-process from one loaded workflow (the same functions --help calls); a
handful of scripts run --help for real (a subprocess each: imports and a workflow load, a few seconds)."""

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from smattn.scriptio import loaded_workflow, rule_help, rules_of_script, script_help

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((REPO / "scripts").glob("*.py"))


@pytest.fixture(scope="module")
def workflow():
    with loaded_workflow(snakefile=REPO / "Snakefile") as wf:
        yield wf


def _paragraph(text: str, rule: str) -> str:
    """The paragraph of ``rule`` in a help text (rule_help writes no blank line inside one)."""
    m = re.search(rf"^rule {re.escape(rule)} \(.*?(?=\n\n|\Z)", text, re.M | re.S)
    assert m, f"rule {rule} is not named in:\n{text}"
    return m.group(0)


def _assert_names_every_entry(text: str, r) -> None:
    para = _paragraph(text, r.name)
    for kind in ("input", "output", "params"):
        assert re.search(rf"^  {kind}\b", para, re.M), f"{r.name}: no {kind} section in:\n{para}"
        for name in getattr(r, kind).keys():
            assert re.search(rf"^    {re.escape(name)}\s", para, re.M), f"{r.name}: {kind} {name!r} missing:\n{para}"


def test_every_script_is_run_by_a_rule_and_its_help_names_the_rule_inputs_outputs_and_params(workflow):
    missing, checked = [], 0
    for script in SCRIPTS:
        rules = rules_of_script(workflow, script)
        if not rules:
            missing.append(script.name)
        for r in rules:
            _assert_names_every_entry(rule_help(workflow, r, script=script), r)
            checked += 1
    assert not missing, f"scripts that no rule runs: {missing}"
    assert checked >= len(SCRIPTS)


def test_every_rule_script_is_a_script_of_the_workflow(workflow):
    scripts = {p.resolve() for p in SCRIPTS}
    ran = {r.name: (Path(str(r.basedir)) / r.script).resolve() for r in workflow.rules if r.script}
    outside = sorted(name for name, path in ran.items() if path not in scripts)
    assert not outside, f"rules whose script is not in scripts/: {outside}"


def test_every_script_runs_through_scriptio(workflow):
    """--help comes from smattn.scriptio.run: each script ends in `if __name__ == "__main__": run(main, ...)`."""
    wrong = []
    for script in SCRIPTS:
        tree = ast.parse(script.read_text(encoding="utf-8"))
        last = tree.body[-1]
        ok = (
            isinstance(last, ast.If)
            and ast.unparse(last.test) == "__name__ == '__main__'"
            and any(
                isinstance(n, ast.Call) and ast.unparse(n.func) == "run" and ast.unparse(n.args[0]) == "main"
                for n in ast.walk(last)
            )
            and re.search(r"^from smattn\.scriptio import [^\n]*\brun\b", script.read_text(encoding="utf-8"), re.M)
        )
        if not ok:
            wrong.append(script.name)
    assert not wrong, f"scripts that do not end in run(main, ...) of smattn.scriptio: {wrong}"


def test_help_of_a_job_shows_its_values(workflow):
    """With the wildcards given, the paragraph shows the job's paths and params; without, the patterns."""
    r = workflow.get_rule("p2_thresholds_c")
    patterns = rule_help(workflow, r)
    assert "results/p2_theory/thresholds/c{c}.json" in patterns and "--wildcards c=..." in patterns
    job = rule_help(workflow, r, {"c": "1"})
    assert "results/p2_theory/thresholds/c1.json" in job and "shown at c=1" in job
    _assert_names_every_entry(job, r)


@pytest.mark.parametrize(
    "script, args, rules",
    [
        ("p2_theory_fig5.py", [], ["p2_fig5"]),  # one rule, no wildcards
        ("p1_images_fig_accuracy.py", [], ["p1_fig3b", "p1_fig6"]),  # two rules
        (  # one of two rules, at one job of the smoke scale
            "p2_dynamics_trec_sweep_run.py",
            ["--rule", "p2_trec_lr_run", "--wildcards", "lr=0.001", "--config", "scale=smoke"],
            ["p2_trec_lr_run"],
        ),
    ],
)
def test_help_names_the_rules_with_their_inputs_outputs_and_params(workflow, tmp_path, script, args, rules):
    path = REPO / "scripts" / script
    out = subprocess.run(
        [sys.executable, str(path), "--help", *args], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))).split("\n")[0] in text  # what it does
    assert "--rule RULE" in text and "--wildcards" in text  # argparse's options
    named = re.findall(r"^rule (\w+) \(", text, re.M)
    assert named == rules
    for name in rules:
        _assert_names_every_entry(text, workflow.get_rule(name))
    if args:
        assert "scale smoke" in text and "results/p2_dynamics/trec_lr/lr0.001.npz" in text


def test_help_of_a_file_no_rule_runs_says_so(tmp_path):
    stray = tmp_path / "stray.py"
    stray.write_text("")
    assert "no rule of" in script_help(stray, snakefile=REPO / "Snakefile")
