"""benchmarks/p1_images_train_speed.py at its smallest: one model, one round: both forms timed, their FLOPs and the
GEMM rate printed, and the two forms' float64 function equal."""

from __future__ import annotations

import os
import re
import subprocess
import sys


def test_one_round_prints_both_forms_the_ratio_and_an_exact_function_match(repo):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(repo / "src"), env.get("PYTHONPATH", "")])
    cmd = [sys.executable, "benchmarks/p1_images_train_speed.py", "--models", "L2H4", "--steps", "1", "--repeats", "1"]
    r = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
    out = r.stdout
    m = re.search(
        r"^L2H4: float64 outputs and gradients of the two forms: largest relative difference ([0-9.e+-]+)$", out, re.M
    )
    assert m and float(m.group(1)) < 1e-12, out
    flops = {}
    for label in ("before", "after"):
        pattern = rf"^  {label} +([0-9.]+) ms/step, +([0-9.]+) GFLOP/step, +([0-9.]+) GFLOP/s = (\d+)% "
        row = re.search(pattern, out, re.M)
        assert row, out
        flops[label] = float(row.group(2))
    assert flops["after"] < flops["before"]  # the path form on the factored input does less work
    assert re.search(
        r"GEMM rates here: .* GFLOP/s; paired after/before per round [0-9.]+ \(median [0-9.]+, speed-up", out
    ), out
