"""The script harness, standalone (command line) and with a Snakemake-like object."""

import json
import os
import re
import subprocess
import sys
from types import SimpleNamespace

import pytest
import yaml

from smattn.scriptio import job_from_workflow, run


class Named(list):
    def __init__(self, **kw):
        super().__init__(kw.values())
        self._names = kw

    def items(self):
        return self._names.items()


def test_standalone(tmp_path):
    seen = {}

    def main(io):
        seen.update(inp=io.input.a, out=io.output.b, k=io.params.k, threads=io.threads)
        print("hello log")

    log = tmp_path / "x.log"
    run(main, None, ["--input", "a=in.txt", "--output", "b=out.txt", "--params", '{"k": [1, 2]}', "--log", str(log)])
    assert seen == {"inp": "in.txt", "out": "out.txt", "k": [1, 2], "threads": 1}
    text = log.read_text()
    assert "hello log" in text and "done in" in text


def test_snakemake_object_and_failure_logged(tmp_path):
    log = tmp_path / "y.log"
    smk = SimpleNamespace(
        input=Named(a="i"), output=Named(b="o"), params=Named(p=3), wildcards=Named(), threads=2, log=[str(log)]
    )

    def main(io):
        assert io.params.p == 3 and io.threads == 2
        raise ValueError("bad input x")

    with pytest.raises(ValueError):
        run(main, smk)
    assert "bad input x" in log.read_text() and "FAILED" in log.read_text()


@pytest.mark.parametrize("with_log", [True, False])
def test_a_job_without_its_gpu_exits_with_the_deterministic_status(tmp_path, capsys, with_log):
    """A job stopped by GPUUnavailableError exits with status 3 (a retry fails the same way) and says so in its log;
    any other failure keeps its exception (status 1 from Python)."""
    from smattn.device import GPUUnavailableError
    from smattn.scriptio import EXIT_DETERMINISTIC

    log = tmp_path / "g.log"
    args = ["--log", str(log)] if with_log else []

    def no_gpu(io):
        raise GPUUnavailableError("must run on a GPU")

    with pytest.raises(SystemExit) as ex:
        run(no_gpu, None, args)
    assert ex.value.code == EXIT_DETERMINISTIC == 3
    text = log.read_text() if with_log else capsys.readouterr().err
    assert "GPUUnavailableError: must run on a GPU" in text
    assert ("(deterministic: a retry fails the same way)" in text) == with_log


def test_bad_params_json():
    with pytest.raises(SystemExit, match="not valid JSON"):
        run(lambda io: None, None, ["--params", "{nope"])


# --- standalone runs built from the Snakefile (--rule) -------------------------------------------------------------

SMOKE = ["scale=smoke"]


def dry_run_job(repo, target):
    """Output, log, wildcards and threads of the job making ``target``, as `snakemake -n` prints them."""
    r = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--forceall", "--config", *SMOKE, "--", target],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    text = r.stdout + r.stderr
    fields = dict(re.findall(r"^\s+(output|log|wildcards|threads): (.+)$", text, flags=re.MULTILINE))
    return fields


def test_rule_job_matches_snakemake(repo):
    """The job built by --rule has the outputs, log, wildcards and threads Snakemake's dry run reports, and the
    params of the rule at the chosen scale."""
    from smattn.config import load_schema, resolve_params

    io = job_from_workflow("p2_thresholds_c", {"c": "0.5"}, SMOKE, repo / "Snakefile")
    dry = dry_run_job(repo, "results/p2_theory/thresholds/c0.5.json")
    assert dry["output"] == os.path.relpath(io.output.json, repo)
    assert dry["log"].split(" ")[0] == os.path.relpath(io.log, repo)
    assert dry["wildcards"] == "c=0.5" and vars(io.wildcards) == {"c": "0.5"}
    assert int(dry.get("threads", 1)) == io.threads
    config = yaml.safe_load((repo / "config.yaml").read_text()) | {"scale": "smoke"}
    p2t = resolve_params(config, load_schema(repo / "schemas/config.schema.yaml"))["p2_theory"]
    expected = {
        k: p2t[f"pd_{k}"]
        for k in ("n_k", "n_first", "qmc_sets", "q_points", "literal_samples", "v_reg", "q_max", "last_se_target")
    }
    expected |= {"n1d": p2t["n1d"], "seed": p2t["seed"]}
    assert vars(io.params) == expected
    assert io.config["scale"] == "smoke"


def test_rule_job_lambdas_and_lists(repo):
    """Params given by lambdas of the wildcards are evaluated; list inputs stay lists."""
    io = job_from_workflow("p1_pruning_theory_U", {"model": "L2H8"}, SMOKE, repo / "Snakefile")
    assert io.params.P == 60 and io.output.U.endswith("results/p1_pruning/L2H8/theory_U.npz")
    io = job_from_workflow("p2_fig1_right", {}, SMOKE, repo / "Snakefile")
    assert isinstance(io.input.thresholds, list) and len(io.input.thresholds) == 16
    with pytest.raises(SystemExit, match="missing"):
        job_from_workflow("p2_thresholds_c", {}, SMOKE, repo / "Snakefile")
    with pytest.raises(SystemExit, match="no rule"):
        job_from_workflow("no_such_rule", {}, SMOKE, repo / "Snakefile")


def test_rule_standalone_run_into_tmp(repo, tmp_path):
    """A cheap script run standalone from its rule, its output and log redirected into a temporary folder."""
    out, log = tmp_path / "c1.json", tmp_path / "c1.log"
    env = dict(os.environ, OMP_NUM_THREADS="1", XLA_FLAGS="--xla_cpu_multi_thread_eigen=false")
    r = subprocess.run(
        [
            sys.executable,
            "scripts/p2_theory_thresholds.py",
            "--rule",
            "p2_thresholds_c",
            "--wildcards",
            "c=1",
            "--config",
            *SMOKE,
            "--output",
            f"json={out}",
            "--log",
            str(log),
        ],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        check=False,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    rec = json.loads(out.read_text())
    assert rec["c"] == 1.0 and rec["alpha_last"] > 1 / 6 - 3 * rec["alpha_last_se"]
    assert "done in" in log.read_text()
    with pytest.raises(SystemExit, match="no such entry"):
        run(
            lambda io: None,
            None,
            ["--rule", "p2_thresholds_c", "--wildcards", "c=1", "--config", *SMOKE, "--output", "nope=x"],
        )
