"""tools/device_run.py: the prepared device run in its tiny CPU mode, on an interpreter that cannot import what a
bare PyTorch + JAX + NumPyro machine may lack (ArviZ, Pillow, PyYAML, jsonschema, Snakemake, Matplotlib, pandas)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from smattn import costs

BLOCKED = ("arviz", "PIL", "yaml", "jsonschema", "snakemake", "matplotlib", "pandas", "xarray", "requests")
SITE = f"""
import sys
class _Hide:  # a blocked package is absent, as to every finder (find_spec gives None)
    def __init__(self, inner):
        self.inner = inner
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {BLOCKED!r}:
            return None
        return self.inner.find_spec(name, path, target)
    def __getattr__(self, attr):
        return getattr(self.inner, attr)
sys.meta_path[:] = [_Hide(f) if hasattr(f, "find_spec") else f for f in sys.meta_path]
"""


def _run(repo, tmp_path, *args, timeout=600, blocked=True):
    """device_run.py with ``args``; ``blocked``: as on the bare machine (prepare runs here, with every package)."""
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(SITE)
    path = [str(site), str(repo / "src")] if blocked else [str(repo / "src")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    return subprocess.run(
        [sys.executable, "tools/device_run.py", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_blocker_blocks(repo, tmp_path):
    """The test's premise: under the site hook ArviZ (present in the development environment) cannot be imported."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITE)
    env = {**os.environ, "PYTHONPATH": str(site)}
    r = subprocess.run([sys.executable, "-c", "import arviz"], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "No module named 'arviz'" in r.stderr


def test_tiny_check_trains_with_validation_and_checkpoints_without_optional_packages(repo, tmp_path):
    out, bundle = tmp_path / "out", tmp_path / "bundle"
    r = _run(repo, tmp_path, "prepare", "--results-root", str(tmp_path), "--out", str(bundle), blocked=False)
    assert r.returncode == 0, r.stderr[-3000:]
    # a budget no loaded test machine reaches: the test checks what is written, not how fast
    r = _run(
        repo,
        tmp_path,
        "check",
        "--tiny",
        "--skip",
        "nuts",
        "--budget",
        "600",
        "--bundle",
        str(bundle),
        "--out",
        str(out),
    )
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
    files = sorted(p.name for p in out.iterdir())
    assert files == ["doctor.txt", "log.txt", "results.json", "unit_costs.csv"], files
    assert "torch" in (out / "doctor.txt").read_text()
    res = json.loads((out / "results.json").read_text())
    assert res["arviz"] is False and not res["skipped"]
    g = res["phases"]["gemm"]
    assert g["peak_fp32_tflops"] > 0 and g["torch workflow relative error"] < 1e-5
    t = res["phases"]["train fp32"]
    # validation at step 0, every val_every steps and at the end; a checkpoint file was written in the loop
    assert t["validations"] == t["steps"] // t["val_every"] + 1 and t["checkpoint_mb"] > 0
    assert t["steps_per_s"] > 0 and t["gflop_per_step"] > 0 and t["projected_paper_h"] > 0
    assert res["memory"]["host_rss_peak_mb"] > 100
    rows = costs.read_unit_costs(out / "unit_costs.csv")
    assert [(u.rule, u.device, u.basis, u.calib_scale) for u in rows] == [
        ("p1_images_train", "cpu", "measured", "smoke")
    ]
    # the row's unit is a FLOP: s_per_unit x FLOPs per step = seconds per step
    assert rows[0].s_per_unit * t["gflop_per_step"] * 1e9 == pytest.approx(1 / t["steps_per_s"], rel=1e-9)


def test_a_spent_budget_skips_every_phase_and_still_writes_results(repo, tmp_path):
    out = tmp_path / "out"
    r = _run(repo, tmp_path, "check", "--tiny", "--budget", "1", "--out", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads((out / "results.json").read_text())
    assert res["skipped"] == ["doctor", "gemm", "train fp32", "nuts N=4"] and res["phases"] == {}
    assert not (out / "unit_costs.csv").exists()


def test_prepare_copies_the_bundle(repo, tmp_path):
    root = tmp_path / "root"
    (root / "results/p1_images/L2H4").mkdir(parents=True)
    img = np.zeros((2, 20, 32, 32), np.uint8)
    np.savez(root / "results/p1_images/images32.npz", train_images=img, val_images=img + 1, test_images=img)
    r = _run(repo, tmp_path, "prepare", "--results-root", str(root), "--out", str(tmp_path / "b"), blocked=False)
    assert r.returncode == 0, r.stderr[-3000:]
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == ["images32.npz", "params.json"]
    assert json.loads((tmp_path / "b/params.json").read_text())["gd_width"] == 512  # the paper scale
    assert "export.npz: not found" in r.stdout and "bundle" in r.stdout
    with np.load(tmp_path / "b/images32.npz") as z:  # only what training reads, unchanged
        assert sorted(z.files) == ["train_images", "val_images"] and (z["val_images"] == 1).all()


def test_numpyro_ess_fallback_is_the_number_of_independent_draws():
    """Independent draws: the ESS is the number of draws (4 chains x 1000), within the estimator's spread."""
    sys.path.insert(0, "tools")
    from device_run import ess_u

    rng = np.random.default_rng(3)
    U = rng.standard_normal((4, 1000, 3, 3))
    r = ess_u(U, np.full((3, 3), np.nan))
    assert r["ess_method"].startswith("numpyro")
    assert 3000 < r["ess_U_min"] < 5000
    # AR(1) chains with rho = 0.9: ESS = n (1 - rho) / (1 + rho) ~ 210
    x = np.zeros((4, 1000, 3, 3))
    for t in range(1, 1000):
        x[:, t] = 0.9 * x[:, t - 1] + np.sqrt(1 - 0.81) * rng.standard_normal((4, 3, 3))
    r = ess_u(x, np.full((3, 3), np.nan))
    assert 100 < r["ess_U_min"] < 211


@pytest.mark.slow
def test_tiny_check_with_nuts_without_arviz(repo, tmp_path):
    out, bundle = tmp_path / "out", tmp_path / "bundle"
    r = _run(repo, tmp_path, "prepare", "--results-root", str(tmp_path), "--out", str(bundle), blocked=False)
    assert r.returncode == 0, r.stderr[-3000:]
    r = _run(
        repo, tmp_path, "check", "--tiny", "--budget", "600", "--bundle", str(bundle), "--out", str(out), timeout=900
    )
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
    res = json.loads((out / "results.json").read_text())
    n = res["phases"]["nuts N=4"]
    assert n["ess_method"].startswith("numpyro") and n["s_per_vectorised_step"] > 0
    rows = costs.read_unit_costs(out / "unit_costs.csv")
    assert [u.rule for u in rows] == ["p1_images_train", "p1_images_sample"]


def _synthetic_store(path):
    """An image store of the workflow's keys with random images (enough for the smoke-scale export)."""
    rng = np.random.default_rng(0)
    d = {
        k: rng.integers(0, 256, (n, 20, 32, 32), dtype=np.uint8) for k, n in (("train", 30), ("val", 10), ("test", 20))
    }
    d = {f"{k}_images": v for k, v in d.items()}
    for name in ("mnist", "fashion"):
        for split, n in (("train", 600), ("test", 200)):
            for c in (0, 1):
                d[f"{name}_{split}_{c}"] = rng.integers(0, 256, (n, 32, 32), dtype=np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **d)


def test_prepare_writes_the_chain_jobs_as_the_snakefile_builds_them(repo, tmp_path):
    from smattn.scriptio import job_from_workflow

    _synthetic_store(tmp_path / "root/results/p1_images/images32.npz")
    r = _run(repo, tmp_path, "prepare", "--results-root", str(tmp_path / "root"), "--chain-scale", "paper",
             "--out", str(tmp_path / "b"), blocked=False)  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    spec = json.loads((tmp_path / "b/chain.json").read_text())
    assert spec["scale"] == "paper"
    assert [j["rule"] for j in spec["jobs"]] == [
        "p1_images_train", "p1_images_export", "p1_images_theory", "p1_images_sample"
    ]  # fmt: skip
    train = spec["jobs"][0]
    assert (
        train["params"]["width"] == 512
        and train["params"]["precision"] == "fp16"
        and train["params"]["max_steps"] is None
    )
    assert train["output"]["model"] == "results/p1_images/L2H4/model.pt"
    assert spec["jobs"][3]["output"]["samples"] == "results/p1_images/L2H4/samples_N10.json"
    # the sampling job's params are the workflow's (an independent build of the same job)
    io = job_from_workflow("p1_images_sample", {"model": "L2H4", "N": "10"}, ["scale=paper"], repo / "Snakefile")
    assert spec["jobs"][3]["params"] == json.loads(json.dumps(vars(io.params)))
    with np.load(tmp_path / "b/images32.npz") as z:  # the chain's export needs the whole store
        assert "mnist_train_0" in z.files


@pytest.mark.slow
def test_tiny_chain_runs_train_export_theory_without_optional_packages(repo, tmp_path):
    _synthetic_store(tmp_path / "root/results/p1_images/images32.npz")
    r = _run(repo, tmp_path, "prepare", "--results-root", str(tmp_path / "root"), "--chain-scale", "smoke",
             "--out", str(tmp_path / "b"), blocked=False)  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    out = tmp_path / "out"
    r = _run(
        repo, tmp_path, "chain", "--bundle", str(tmp_path / "b"), "--out", str(out), "--workdir", str(tmp_path / "wd")
    )
    assert r.returncode == 0, (r.stdout[-3000:], (out / "chain_log.txt").read_text()[-3000:])
    rep = json.loads((out / "chain.json").read_text())
    assert [j.get("rc") for j in rep["jobs"]] == [0, 0, 0, None] and "ArviZ" in rep["jobs"][3]["skipped"]
    import tarfile

    with tarfile.open(out / "chain_results.tar.gz") as t:
        names = set(t.getnames())
    assert {"results/p1_images/L2H4/export.npz", "results/p1_images/L2H4/theory.npz"} <= names
