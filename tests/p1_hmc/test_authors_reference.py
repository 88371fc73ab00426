"""tools/p1_hmc_authors_reference.py without the authors' code: it refuses any checkout but the pinned commit
before running anything, and it builds the training arguments as the authors' LOOP_RUN shell script does."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "p1_hmc_authors_reference.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("p1_hmc_authors_reference", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _git(repo, *args):
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


@pytest.fixture
def other_repo(tmp_path):
    repo = tmp_path / "api"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "README.md").write_text("not the authors' repository\n")
    _git(repo, "add", "README.md")
    _git(repo, "commit", "-q", "-m", "one commit")
    return repo


def _run(checkout):
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--authors-checkout", str(checkout)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


def test_refuses_a_checkout_at_another_commit(other_repo, bench):
    head = _git(other_repo, "rev-parse", "HEAD")
    r = _run(other_repo)
    assert r.returncode == 2, r.stderr
    assert head in r.stderr and bench.PINNED_COMMIT in r.stderr and "not the pinned commit" in r.stderr
    assert "trained" not in r.stdout  # nothing was run


def test_refuses_a_folder_that_is_not_a_checkout(tmp_path):
    r = _run(tmp_path)
    assert r.returncode == 2 and "not a git checkout" in r.stderr


def test_accepts_the_pinned_commit(other_repo, bench, monkeypatch):
    assert bench.checkout_error(other_repo) is not None
    monkeypatch.setattr(bench, "PINNED_COMMIT", _git(other_repo, "rev-parse", "HEAD"))
    assert bench.checkout_error(other_repo) is None


LOOP_RUN = r"""#!/bin/bash

seed=7
perturbation=1.0
beta=10.0

for T in 0.01;
do
for mult in 1;
do
for width in 10 1000;
do
script_string="TRAIN_conv_sum_heads_binary_regression_MARKOV_OPTION_E_TWO_LAYERS.py \\
#
# COMMENT
--force_cpu \\
-N $width $width \\
--temperature $temp \\
#--epochs 1 \\
--epochs 50000 \\
--main_head_first_layer_seed $((120+seed)) \\
--features_perturbation_blank_attention_first_layer $perturbation \\
--betas_blank_attention_second_layer $beta \\
#--results_id TEST_ \\"

eval "python $filtered_script"
done
done
done
"""


def test_loop_run_arguments_as_the_shell_builds_them(tmp_path, bench):
    f = tmp_path / "LOOP_RUN.sh"
    f.write_text(LOOP_RUN)
    expected = "--force_cpu -N 30 30 --temperature 0.01 --epochs 50000 --main_head_first_layer_seed 127"
    assert bench.loop_run_arguments(f, 30, {}) == [
        *expected.split(),
        *"--features_perturbation_blank_attention_first_layer 1.0 --betas_blank_attention_second_layer 10.0".split(),
    ]
    assert bench.loop_run_arguments(f, 30, {"perturbation": "0.0"})[-3] == "0.0"
