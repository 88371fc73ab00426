"""The image task's NUTS job keeps its chains on one XLA host device on a CPU, whatever its threads: chains spread
over two host devices hung at the laptop size (scripts/p1_images_sample.py). XLA reads its host-device count once,
when JAX starts its backends, and a flag left over from the environment would decide it: the script is run as a job
with two threads, under an environment that asks XLA for two host devices, on random inputs of an export's layout, in
its own process, and the record must say that its two chains ran one after another on one device."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from smattn.p1.images.theory_grid import TEST_SETS, random_export, sampling_inputs


def _write_inputs(folder, N: int, T: float = 0.5) -> dict:
    ex = random_export(P=12, n_test=6)
    np.savez(folder / "export.npz", **ex)
    np.savez(folder / "theory.npz", widths=np.array([2, N]), T_selected=np.array([9.0, T]))
    return ex


def test_image_sampling_job_runs_its_chains_on_one_host_device(repo, tmp_path):
    from smattn.device import jax_gpu

    if jax_gpu()[0]:
        pytest.skip("JAX sees a GPU here: the chains are vectorised on it")
    ex = _write_inputs(tmp_path, N=4)
    nuts = {"default": {"chains": 2, "warmup": 4, "samples": 4, "seed": 1, "dtype": "float64"}}
    out = tmp_path / "samples.json"
    cmd = [sys.executable, "scripts/p1_images_sample.py", "--threads", "2", "--wildcards", "model=L2H4", "N=4"]
    cmd += ["--input", f"export={tmp_path / 'export.npz'}", f"theory={tmp_path / 'theory.npz'}"]
    cmd += ["--output", f"samples={out}", "--params", json.dumps({"sampler": "collapsed", "nuts": nuts})]
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_PLATFORMS")}
    env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
    env["PYTHONPATH"] = os.pathsep.join([str(repo / "src"), env.get("PYTHONPATH", "")])
    r = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    rec = json.loads(out.read_text())
    assert (rec["threads"], rec["host_devices"]) == (2, 1)
    assert (rec["devices"], rec["chain_method"], rec["chains"]) == (1, "sequential", 2), rec
    assert rec["T"] == 0.5 and rec["platform"] == "cpu"
    for s in TEST_SETS:
        assert len(rec["f_mean"][s]) == len(ex[f"y_{s}"]) == 6


def test_sampling_inputs_scale_concatenate_and_pick_the_selected_temperature():
    """A sequence whose tokens are all one vector v has path-attended input v on every path (each path's attention
    weights sum to one), and the sampler sees that un-normalised sum; the test sets follow, each computed as the
    training set is, in TEST_SETS order; T is the theory's selection at N."""
    ex = random_export(heads=(2, 2), P=4, n_test=2, seed=3)
    v = np.random.default_rng(1).standard_normal(192)
    ex["x_train"] = np.broadcast_to(v, (4, 48, 192)).astype(np.float32).copy()
    xb, y, xt, arch, T = sampling_inputs(ex, [10, 20], [0.1, 0.7], 20)
    assert T == 0.7 and arch.n_paths == 4 and [int(w) for w in arch.widths] == [20, 20, 20]
    assert xb.shape == (4, 4, 192) and xt.shape == (6, 4, 192) and list(y) == [1, 1, -1, -1]
    np.testing.assert_allclose(xb, np.broadcast_to(v.astype(np.float32), xb.shape), rtol=1e-5, atol=1e-6)
    for k, s in enumerate(TEST_SETS):  # each test set in its place: the training computation on that set's sequences
        as_train = {**ex, "x_train": ex[f"x_{s}"], "y_train": ex[f"y_{s}"]}
        np.testing.assert_allclose(xt[2 * k : 2 * k + 2], sampling_inputs(as_train, [20], [0.7], 20)[0], rtol=1e-12)
    with pytest.raises(ValueError, match="not among the theory widths"):
        sampling_inputs(ex, [10, 20], [0.1, 0.7], 30)
