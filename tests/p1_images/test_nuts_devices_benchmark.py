"""benchmarks/p1_images_nuts_devices.py in its tiny mode: random inputs of an export's layout, one round of both
configurations, each in its own process."""

from __future__ import annotations

import os
import re
import subprocess
import sys


def test_tiny_run_prints_both_configurations_the_ratios_and_the_draws_comparison(repo):
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_PLATFORMS")}
    env["PYTHONPATH"] = os.pathsep.join([str(repo / "src"), env.get("PYTHONPATH", "")])
    cmd = [sys.executable, "benchmarks/p1_images_nuts_devices.py", "--tiny", "--repeats", "1"]
    r = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
    out = r.stdout
    # each configuration ran as asked: chains one after another on one device, in parallel on two
    assert re.search(r"^1 host device\(s\), sequential chains on 1 device\(s\) \(1 visible, cpu\)", out, re.M), out
    assert re.search(r"^2 host device\(s\), parallel chains on 2 device\(s\) \(2 visible, cpu\)", out, re.M), out
    for what in ("run_nuts wall", "run_nuts CPU", "process wall", "process CPU"):
        m = re.search(rf"^ratio 2 devices / 1 device, {what}: median ([0-9.]+) \(rounds: ([0-9.]+)\)$", out, re.M)
        assert m and float(m.group(1)) == float(m.group(2)) > 0, out
    assert re.search(r"^draws 1 vs 2 devices: (identical|different); max \|mean predictor difference\| ", out, re.M)
