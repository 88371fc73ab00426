"""tools/gpu_check.py in its tiny CPU mode: the GPU check's code paths (doctor, precision check, training steps
with FLOP count and GEMM peak, collapsed gradient, vectorised NUTS, unit-cost rows) run, so the check cannot rot."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata

import pytest

from smattn import costs


@pytest.mark.slow
def test_gpu_check_tiny_mode_runs_every_part_and_writes_unit_costs(repo, tmp_path):
    out = tmp_path / "units.csv"
    env = {**os.environ, "PYTHONPATH": str(repo / "src")}
    r = subprocess.run(
        [sys.executable, "tools/gpu_check.py", "--tiny", "--unit-costs", str(out)],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    text = r.stdout
    for part in (
        f"torch: torch {metadata.version('torch')}",
        f"jax: jax {metadata.version('jax')}",
        "float32 matmul, relative error vs float64: torch workflow",
        "GFLOP/step",
        "of the GEMM peak measured here",
        "41240 steps with validation",
        "collapsed NUTS gradient, P = 40",
        "vectorised, float32",
        "projected faithful preset N = 500",
    ):
        assert part in text, (part, text[-3000:])
    # the workflow's float32 products are full float32 (on a CPU TF32 does not exist: both agree to ~1e-7)
    errs = dict(
        item.rsplit(" ", 1) for item in text.split("relative error vs float64: ")[1].splitlines()[0].split(", ")
    )
    assert float(errs["torch workflow"]) < 1e-5 and float(errs["jax workflow"]) < 1e-5
    rows = costs.read_unit_costs(out)
    assert [(u.rule, u.basis, u.calib_scale) for u in rows] == [
        ("p1_images_train", "measured", "smoke"),
        ("p1_images_sample", "measured", "smoke"),
    ]
    assert all(u.s_per_unit > 0 for u in rows)
