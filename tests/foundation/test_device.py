"""GPU policy, fail-fast and GPU numerics settings (smattn.device) and the doctor command, on a machine without a GPU
(the CPU paths of the GPU code: the checks a GPU node passes are in tools/gpu_check.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata

import pytest

from smattn import device


def test_gpu_required_by_policy_scale_and_slurm():
    slurm = {"SLURM_JOB_ID": "17"}
    assert device.gpu_required("auto", "paper", slurm)
    assert not device.gpu_required("auto", "paper", {})  # paper scale on a workstation: CPU fallback allowed
    assert not device.gpu_required("auto", "laptop", slurm)
    assert not device.gpu_required("auto", "smoke", slurm)
    assert device.gpu_required("require", "smoke", {})
    assert not device.gpu_required("allow_cpu", "paper", slurm)
    with pytest.raises(ValueError, match="gpu_policy 'sometimes'"):
        device.gpu_required("sometimes", "paper", {})


@pytest.mark.parametrize("framework", ["torch", "jax"])
def test_required_gpu_absent_stops_with_the_reason_and_the_override(framework):
    if (device.torch_gpu if framework == "torch" else device.jax_gpu)()[0]:
        pytest.skip(f"{framework} sees a GPU here")
    env = {"SLURM_JOB_ID": "42", "CUDA_VISIBLE_DEVICES": "0"}
    with pytest.raises(device.GPUUnavailableError) as err:
        device.ensure_gpu(framework, "auto", "paper", job="job p1_images_train_L2H4", environ=env)
    msg = str(err.value)
    for part in ("job p1_images_train_L2H4", "scale=paper inside SLURM job 42", f"{framework} sees none", "'0'"):
        assert part in msg, msg
    assert "gpu_policy=allow_cpu" in msg and "smattn.doctor --require-gpu" in msg
    # the same job where a CPU run is allowed: it says it runs on the CPU
    assert device.ensure_gpu(framework, "auto", "laptop", environ=dict(env)) == "cpu"
    assert device.ensure_gpu(framework, "allow_cpu", "paper", environ=dict(env)) == "cpu"


def test_gpu_job_fails_at_its_first_line_under_the_workflow_config(repo, tmp_path):
    """The image-task NUTS script, built as the workflow's paper-scale job with gpu_policy=require, stops before
    reading its inputs (which do not exist here) with the GPU message, not a missing-file error."""
    if device.jax_gpu()[0]:
        pytest.skip("JAX sees a GPU here")
    r = subprocess.run(
        [
            sys.executable,
            "scripts/p1_images_sample.py",
            "--rule",
            "p1_images_sample",
            "--wildcards",
            "model=L2H4",
            "N=10",
            "--config",
            "scale=paper",
            "gpu_policy=require",
            "--output",
            f"samples={tmp_path / 'samples.json'}",
        ],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 3  # smattn.scriptio.EXIT_DETERMINISTIC: a retry fails the same way
    assert "GPUUnavailableError" in r.stderr and "must run on a GPU (gpu_policy=require)" in r.stderr, r.stderr[-3000:]
    assert "No such file" not in r.stderr and not (tmp_path / "samples.json").exists()


def test_jax_setup_sets_full_float32_matmuls_and_no_preallocation():
    code = (
        "import os, jax; from smattn.device import jax_setup; jax_setup(x64=False); "
        "print(jax.config.jax_default_matmul_precision, os.environ['XLA_PYTHON_CLIENT_PREALLOCATE'], "
        "jax.config.jax_enable_x64)"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("XLA_PYTHON_CLIENT")}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["highest", "false", "False"]
    # a user's own memory setting is kept
    env["XLA_PYTHON_CLIENT_MEM_FRACTION"] = "0.3"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode != 0 and "KeyError" in r.stderr  # PREALLOCATE was not forced on top of it


def test_torch_device_precision_switch():
    import torch

    try:
        device.torch_device(matmul_precision="high")
        assert torch.get_float32_matmul_precision() == "high"
        device.torch_device()
        assert torch.get_float32_matmul_precision() == "highest"
    finally:
        torch.set_float32_matmul_precision("highest")
    with pytest.raises(ValueError, match="matmul_precision"):
        device.torch_device(matmul_precision="tf32")


def test_doctor_reports_both_frameworks_and_fails_when_a_gpu_is_required(repo):
    r = subprocess.run([sys.executable, "-m", "smattn.doctor"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    # the versions installed (the lock's with its install; others within pyproject's ranges, e.g. a GPU image's)
    versions = (f"torch {metadata.version('torch')}", f"jax {metadata.version('jax')}")
    for part in (*versions, "jax_default_matmul_precision=highest", "relative error"):
        assert part in r.stdout, r.stdout
    # the machine, and the training precision "auto" as the training job resolves it on this machine's CPU
    from smattn.costs import describe_machine
    from smattn.p1.images.training import resolve_precision

    assert f"machine: {describe_machine()}" in r.stdout, r.stdout
    want = resolve_precision("auto", device.torch_device())
    assert f"precision 'auto' (an option; the presets fix the precision) trains in {want} here" in r.stdout, r.stdout
    if device.torch_gpu()[0] and device.jax_gpu()[0]:
        pytest.skip("a GPU is visible: the failing branch cannot be shown here")
    r = subprocess.run(
        [sys.executable, "-m", "smattn.doctor", "--require-gpu"], capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 1 and "FAIL: a GPU is required" in r.stderr, r.stdout + r.stderr


def test_gpu_extra_matches_the_locked_jax_and_torch_cuda(repo):
    """The `gpu` extra is JAX's CUDA 13 plugin over jax's own range (jax's extra pins the plugin to the installed
    jaxlib; the lock pins jax and jaxlib alike, and torch at 2.13.0, whose PyPI build is CUDA 13.0), and the doctor is
    a console script."""
    import tomllib

    from packaging.requirements import Requirement

    project = tomllib.loads((repo / "pyproject.toml").read_text())["project"]
    ranges = {Requirement(d).name: Requirement(d).specifier for d in project["dependencies"]}
    (gpu,) = (Requirement(d) for d in project["optional-dependencies"]["gpu"])
    assert (gpu.name, gpu.extras, gpu.specifier) == ("jax", {"cuda13"}, ranges["jax"])
    assert ranges["jaxlib"] == ranges["jax"]
    lines = (repo / "constraints/lock.txt").read_text().splitlines()
    lock = dict(line.split("==") for line in lines if line and not line.startswith("#"))
    assert lock["torch"] == "2.13.0" and lock["jaxlib"] == lock["jax"]
    assert project["scripts"]["smattn-doctor"] == "smattn.doctor:main"


@pytest.mark.parametrize("torch_first", [False, True])
def test_set_threads_limits_torch_without_importing_it(torch_first):
    # a fresh process, without the thread variables Snakemake or a shell may have set: torch's own default is every
    # core, so a limit of 1 shows whichever way set_threads took
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    first = "import torch\n" if torch_first else ""
    code = (
        f"import sys\n{first}from smattn.device import set_threads\n"
        "set_threads(1)\nimported = 'torch' in sys.modules\nimport torch\n"
        "print(imported, torch.get_num_threads(), torch.get_num_interop_threads() >= 1)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    assert out.split() == [str(torch_first), "1", "True"]


def test_pin_cpu_numerics_sets_the_kernels_torch_reads():
    """avx2: the variables are set on an AVX2 CPU and not on one without; native sets nothing; an unknown mode is
    refused. In a fresh process, torch imported after the pin reports the AVX2 capability (torch's own answer)."""
    import subprocess
    import sys

    from smattn.device import CPU_NUMERICS_ENV, pin_cpu_numerics

    avx2 = "processor\t: 0\nflags\t\t: fpu sse2 avx fma avx2 bmi2\n"
    old = "processor\t: 0\nflags\t\t: fpu sse2 avx\n"
    env = {"TORCHINDUCTOR_CACHE_DIR": "/x/ind"}
    got = pin_cpu_numerics("avx2", env, cpuinfo=avx2)
    assert got == env == {**CPU_NUMERICS_ENV["avx2"], "TORCHINDUCTOR_CACHE_DIR": "/x/ind/cpu-avx2"}
    env = {}
    assert pin_cpu_numerics("avx2", env, cpuinfo=avx2)["TORCHINDUCTOR_CACHE_DIR"].endswith("_cpu-avx2")
    env = {}
    assert pin_cpu_numerics("avx2", env, cpuinfo=old) == {} and env == {}
    assert pin_cpu_numerics("native", env) == {} and env == {}
    with pytest.raises(ValueError, match="cpu numerics"):
        pin_cpu_numerics("avx512", {})
    from smattn.device import cpu_has_avx2

    if not cpu_has_avx2():
        pytest.skip("this CPU has no AVX2")
    code = (
        "import os; from smattn.device import pin_cpu_numerics; pin_cpu_numerics('avx2'); import torch; "
        "print(torch.backends.cpu.get_cpu_capability(), os.environ['MKL_CBWR'])"
    )
    clean = {k: v for k, v in os.environ.items() if k not in ("ATEN_CPU_CAPABILITY", "MKL_CBWR")}
    out = subprocess.run([sys.executable, "-c", code], env=clean, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["AVX2", "AVX2"]
    late = "import torch; from smattn.device import pin_cpu_numerics; pin_cpu_numerics('avx2')"
    r = subprocess.run([sys.executable, "-c", late], env=clean, capture_output=True, text=True)
    if "AVX512" in subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.backends.cpu.get_cpu_capability())"],
        env=clean, capture_output=True, text=True,
    ).stdout:  # fmt: skip
        assert r.returncode != 0 and "imported before" in r.stderr
