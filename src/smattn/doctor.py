"""What this installation computes on: ``python -m smattn.doctor [--require-gpu]`` (console script ``smattn-doctor``).

Prints, from one process, the machine (CPU model and vector extensions, CPUs, memory) and what torch and JAX see:
versions, CUDA builds and devices, the NVIDIA driver, the float32
matmul precision each will use in the workflow (``smattn.device``), JAX's memory preallocation, and the result of a
small float32 product on each framework's device against a float64 reference (so TF32 shows up as an error of ~1e-3
instead of ~1e-7), and whether torch's device multiplies bfloat16 in hardware (which decides the image task's training
precision ``auto``). Exit status 0, or 1 with ``--require-gpu`` when either framework sees no GPU (run it on a GPU
node, or as the workflow's ``gpu_doctor`` rule under the SLURM profile, before a paper-scale run).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys

from .costs import describe_machine
from .device import DEFAULT_MATMUL_PRECISION, configure_jax_memory, jax_gpu, torch_gpu


def nvidia_driver() -> str:
    """The NVIDIA driver version and GPU names from nvidia-smi, or why they are unknown."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return "nvidia-smi not found (no NVIDIA driver on this machine)"
    try:
        r = subprocess.run(
            [smi, "--query-gpu=driver_version,name,memory.total", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"nvidia-smi failed: {exc}"
    return r.stdout.strip().replace("\n", "; ") if r.returncode == 0 else f"nvidia-smi failed: {r.stderr.strip()}"


def relative_matmul_error(a, b, product) -> float:
    """max |product - a @ b (float64)| / max |a @ b| for float32 arrays a, b (NumPy) and the device's product."""
    import numpy as np

    ref = a.astype(np.float64) @ b.astype(np.float64)
    return float(np.max(np.abs(np.asarray(product, np.float64) - ref)) / np.max(np.abs(ref)))


def torch_report(n: int = 256) -> tuple[bool, list[str]]:
    import numpy as np
    import torch

    from .device import torch_device
    from .p1.images.training import native_bf16, resolve_precision

    ok, seen = torch_gpu()
    dev = torch_device(prefer_gpu=True)
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
    prod = (torch.from_numpy(a).to(dev) @ torch.from_numpy(b).to(dev)).cpu().numpy()
    lines = [
        f"torch: {seen}",
        f"torch: device used by the workflow {dev}; float32 matmul precision "
        f"{torch.get_float32_matmul_precision()} (cuda.matmul.allow_tf32={torch.backends.cuda.matmul.allow_tf32})",
        f"torch: float32 {n}x{n} product on {dev}: relative error {relative_matmul_error(a, b, prod):.1e} vs float64",
        f"torch: bfloat16 in hardware on {dev}: {'yes' if native_bf16(dev) else 'no'}; the image task's training "
        f"precision 'auto' (an option; the presets fix the precision) trains in {resolve_precision('auto', dev)} here",
    ]
    return ok, lines


def jax_report(n: int = 256) -> tuple[bool, list[str]]:
    import numpy as np

    from .device import jax_setup

    platform = jax_setup(x64=False)
    import jax
    import jax.numpy as jnp

    ok, seen = jax_gpu()
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
    prod = np.asarray(jnp.asarray(a) @ jnp.asarray(b))
    prealloc = os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE", "(unset)")
    fraction = os.environ.get("XLA_PYTHON_CLIENT_MEM_FRACTION", "(unset)")
    lines = [
        f"jax: {seen}",
        f"jax: platform used by the workflow {platform}; jax_default_matmul_precision="
        f"{jax.config.jax_default_matmul_precision}; XLA_PYTHON_CLIENT_PREALLOCATE={prealloc}, "
        f"XLA_PYTHON_CLIENT_MEM_FRACTION={fraction}",
        f"jax: float32 {n}x{n} product on {platform}: relative error {relative_matmul_error(a, b, prod):.1e} "
        "vs float64",
    ]
    return ok, lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="smattn-doctor", description=__doc__.split("\n\n")[0])
    ap.add_argument("--require-gpu", action="store_true", help="exit 1 unless both torch and JAX see a GPU")
    ns = ap.parse_args(argv)
    configure_jax_memory()
    print(f"python {sys.version.split()[0]}; NVIDIA driver: {nvidia_driver()}")
    print(f"machine: {describe_machine()}")
    print(
        f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')!r}; "
        f"SLURM_JOB_ID={os.environ.get('SLURM_JOB_ID')!r}"
    )
    print(f"workflow float32 matmul precision: {DEFAULT_MATMUL_PRECISION} (smattn.device)")
    torch_ok, lines = torch_report()
    print("\n".join(lines))
    jax_ok, lines = jax_report()
    print("\n".join(lines))
    missing = [name for name, ok in (("torch", torch_ok), ("jax", jax_ok)) if not ok]
    if ns.require_gpu and missing:
        print(
            f"FAIL: a GPU is required but {' and '.join(missing)} see(s) none. The GPU install is "
            "pip install -c constraints/lock.txt -e '.[gpu]' (JAX's CUDA 13 plugin; NVIDIA driver R580 or newer); "
            "see docs/install.md, GPU.",
            file=sys.stderr,
        )
        return 1
    print("GPU: " + ("torch and jax both see one" if not missing else f"none seen by {', '.join(missing)}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
