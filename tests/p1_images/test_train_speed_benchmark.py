"""benchmarks/p1_images_train_speed.py at its smallest: one model, one round, the same library as before and after,
each measurement in its own process."""

from __future__ import annotations

import os
import re
import subprocess
import sys


def test_one_round_prints_both_libraries_the_ratio_and_an_exact_function_match(repo):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(repo / "src"), env.get("PYTHONPATH", "")])
    cmd = [
        sys.executable,
        "benchmarks/p1_images_train_speed.py",
        "--before-src",
        str(repo / "src"),
        "--models",
        "L2H4",
        "--steps",
        "1",
        "--repeats",
        "1",
    ]
    r = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
    out = r.stdout
    import torch

    from smattn.p1.images.training import resolve_precision

    # the laptop job's precision is "auto": what it resolves to on this CPU
    want = resolve_precision("auto", torch.device("cpu"))
    for label in ("before", "after"):
        assert re.search(rf"^  L2H4 round 0 {label}: [0-9.]+ ms/step \({want}\)$", out, re.M), out
    m = re.search(
        r"^L2H4: before ([0-9.]+) ms/step, after ([0-9.]+) ms/step; paired after/before per round ([0-9.]+) "
        r"\(median ([0-9.]+)\); float64 output and gradients at the initial weights: largest relative difference "
        r"(\S+)$",
        out,
        re.M,
    )
    assert m, out
    before, after, ratio = float(m.group(1)), float(m.group(2)), float(m.group(3))
    assert ratio == float(m.group(4)) and abs(ratio - after / before) < 2e-3 * ratio + 1e-3, out
    # the same library on both sides: the float64 function is the same to the bit
    assert float(m.group(5)) == 0.0, out
