"""Device choice, GPU policy and GPU numerics for the compute scripts.

GPU policy (config key ``gpu_policy``; docs/cluster.md). A job whose rule declares ``gpu=1`` calls
``gpu_job(io, framework)`` on its first line. Whether it *must* have a GPU:

- ``auto`` (default): required at paper scale inside a SLURM job (``SLURM_JOB_ID`` set, as under
  ``profiles/slurm``), where a CPU fallback cannot finish within the job's time limit; elsewhere a GPU is used when
  the framework sees one and the job runs on the CPU otherwise, saying so in its log.
- ``require``: required at every scale and under every profile.
- ``allow_cpu``: never required (a deliberate CPU run of a GPU job, e.g. a small paper-scale check).

A required GPU that the framework does not see stops the job before any work with ``GPUUnavailableError``, whose
message says what was seen (``CUDA_VISIBLE_DEVICES``, the framework's devices and build) and how to fix or override it.

Numerics (``matmul_precision``): float32 matrix products on an NVIDIA GPU default to TF32 in JAX (10-bit mantissa);
the collapsed NUTS potential factors a P x P Gram matrix (P = 600) and SGD's overlaps are differences of O(1)
products, so float32 paths here use full float32 products (``"highest"``) unless a script asks otherwise; the GD
training's own ``precision`` setting (fp32 | tf32 | bf16 | fp16) governs torch during training. On a CPU the setting
changes nothing.

Memory: JAX preallocates 75 % of a GPU's memory at its first array. ``jax_setup`` turns preallocation off unless the
user set ``XLA_PYTHON_CLIENT_PREALLOCATE`` / ``XLA_PYTHON_CLIENT_MEM_FRACTION`` themselves, so that several jobs of
the local profile can share one workstation card (each NUTS job of the image task needs well under 1 GB).
"""

from __future__ import annotations

import getpass
import os
import sys
import tempfile
from collections.abc import Mapping

GPU_POLICIES = ("auto", "require", "allow_cpu")
MATMUL_PRECISIONS = ("highest", "high", "default")
#: the float32 matmul precision of the workflow's JAX and torch float32 paths (see the module docstring)
DEFAULT_MATMUL_PRECISION = "highest"


class GPUUnavailableError(RuntimeError):
    """A job that must run on a GPU sees none."""


def gpu_required(policy: str, scale: str, environ: Mapping[str, str] | None = None) -> bool:
    """Whether a gpu=1 job must have a GPU under ``policy`` at ``scale`` (see the module docstring)."""
    if policy not in GPU_POLICIES:
        raise ValueError(f"gpu_policy {policy!r}: choose one of {', '.join(GPU_POLICIES)}")
    environ = os.environ if environ is None else environ
    if policy == "require":
        return True
    if policy == "allow_cpu":
        return False
    return scale == "paper" and bool(environ.get("SLURM_JOB_ID"))


def torch_gpu() -> tuple[bool, str]:
    """(a CUDA GPU is usable by torch, a one-line description of what torch sees)."""
    import torch

    built = torch.version.cuda or "none (CPU build)"
    if torch.cuda.is_available():
        names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        return True, f"torch {torch.__version__}, CUDA build {built}: {', '.join(names)}"
    return False, f"torch {torch.__version__}, CUDA build {built}: no CUDA device"


def jax_gpu() -> tuple[bool, str]:
    """(a GPU is usable by JAX, a one-line description of JAX's default backend and devices)."""
    import jax

    try:
        gpus = jax.devices("gpu")
    except RuntimeError:
        gpus = []
    try:
        default = jax.default_backend()
    except RuntimeError:  # pragma: no cover - no backend at all
        default = "none"
    plugin = "CUDA plugin installed" if _jax_cuda_plugin() else "no CUDA plugin (pip extra 'gpu')"
    seen = ", ".join(str(d) for d in gpus) if gpus else "no GPU device"
    return bool(gpus), f"jax {jax.__version__} ({plugin}), default backend {default}: {seen}"


def _jax_cuda_plugin() -> bool:
    from importlib.metadata import PackageNotFoundError, version

    for name in ("jax-cuda13-plugin", "jax-cuda12-plugin"):
        try:
            version(name)
            return True
        except PackageNotFoundError:
            continue
    return False


def ensure_gpu(framework: str, policy: str, scale: str, job: str = "", environ=None) -> str:
    """The device kind a gpu=1 job runs on ('gpu' or 'cpu'), or GPUUnavailableError when it must have a GPU and
    ``framework`` ('torch' or 'jax') sees none. Call before any heavy import or work."""
    probes = {"torch": torch_gpu, "jax": jax_gpu}
    if framework not in probes:
        raise ValueError(f"framework {framework!r}: choose torch or jax")
    environ = os.environ if environ is None else environ
    required = gpu_required(policy, scale, environ)
    if framework == "jax":
        configure_jax_memory(environ)
    ok, seen = probes[framework]()
    if ok:
        return "gpu"
    if required:
        why = (
            "gpu_policy=require" if policy == "require" else f"scale={scale} inside SLURM job {environ['SLURM_JOB_ID']}"
        )
        raise GPUUnavailableError(
            f"{job or 'this job'} must run on a GPU ({why}) but {framework} sees none: {seen}; "
            f"CUDA_VISIBLE_DEVICES={environ.get('CUDA_VISIBLE_DEVICES')!r}. On a CPU this job cannot finish within "
            "its time limit (docs/cluster.md). Check the install with `python -m smattn.doctor --require-gpu` on a "
            "GPU node (the GPU extra: pip install -c constraints/lock.txt -e '.[gpu]'), or run it on the CPU on "
            "purpose with --config gpu_policy=allow_cpu."
        )
    return "cpu"


def gpu_job(io, framework: str) -> str:
    """First line of a gpu=1 script: apply the workflow's ``gpu_policy`` (``io.config``; default auto) at its scale,
    print the decision to the job's log and return 'gpu' or 'cpu' (or raise GPUUnavailableError)."""
    cfg = io.config or {}
    policy, scale = cfg.get("gpu_policy", "auto"), cfg.get("scale", "laptop")
    kind = ensure_gpu(framework, policy, scale, job=_job_name(io))
    note = "" if kind == "gpu" else " (no GPU seen: running on the CPU, allowed by gpu_policy at this scale)"
    print(f"[smattn] device: {kind} for {framework}{note}; gpu_policy={policy}, scale={scale}", flush=True)
    return kind


def _job_name(io) -> str:
    log = getattr(io, "log", None)
    return f"job {os.path.splitext(os.path.basename(log))[0]}" if log else ""


def torch_device(prefer_gpu: bool = True, matmul_precision: str = DEFAULT_MATMUL_PRECISION):
    """``torch.device('cuda')`` when a CUDA GPU is visible and wanted, else ``torch.device('cpu')``; sets torch's
    float32 matmul precision (``highest``: no TF32) for the process."""
    import torch

    if matmul_precision not in MATMUL_PRECISIONS:
        raise ValueError(f"matmul_precision {matmul_precision!r}: choose one of {', '.join(MATMUL_PRECISIONS)}")
    torch.set_float32_matmul_precision("highest" if matmul_precision == "default" else matmul_precision)
    if prefer_gpu and torch.cuda.is_available():
        return torch.device("cuda")
    return torch.device("cpu")


def configure_jax_memory(environ=None) -> None:
    """No GPU memory preallocation for JAX unless the user chose a setting (call before JAX creates an array)."""
    environ = os.environ if environ is None else environ
    if "XLA_PYTHON_CLIENT_PREALLOCATE" not in environ and "XLA_PYTHON_CLIENT_MEM_FRACTION" not in environ:
        environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"


def jax_setup(x64: bool = True, matmul_precision: str = DEFAULT_MATMUL_PRECISION) -> str:
    """Configure JAX before any array is created; return the platform name in use ('gpu' or 'cpu').

    ``x64=True`` enables float64 (the theory's precision). ``matmul_precision`` sets
    ``jax_default_matmul_precision`` for float32 products (``highest``: full float32, no TF32 on a GPU; ``default``:
    JAX's own default, TF32 on recent NVIDIA GPUs). GPU memory is allocated on demand (``configure_jax_memory``).
    JAX picks a GPU by itself when its CUDA plugin is installed and a device is visible; otherwise the CPU.
    """
    if matmul_precision not in MATMUL_PRECISIONS:
        raise ValueError(f"matmul_precision {matmul_precision!r}: choose one of {', '.join(MATMUL_PRECISIONS)}")
    configure_jax_memory()
    import jax

    jax.config.update("jax_enable_x64", bool(x64))
    jax.config.update("jax_default_matmul_precision", None if matmul_precision == "default" else matmul_precision)
    try:
        return jax.default_backend()
    except RuntimeError:  # pragma: no cover - no backend at all
        os.environ["JAX_PLATFORMS"] = "cpu"
        return "cpu"


def set_threads(n: int | None) -> None:
    """Limit torch's intra-op threads to the rule's ``threads`` (None leaves the default).

    torch is not imported for this (1.4 s of a job that never uses it): before its import, ``OMP_NUM_THREADS`` is
    set, which torch reads when it starts; after it, ``torch.set_num_threads``."""
    if not n:
        return
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(int(n))
    else:
        os.environ["OMP_NUM_THREADS"] = str(int(n))


#: CPU numerics of a torch job (config ``p1_images.gd_cpu_numerics``): ``native`` leaves torch's and MKL's kernel
#: choice to the CPU; ``avx2`` makes them the same on every x86-64 CPU with AVX2 (``pin_cpu_numerics``)
CPU_NUMERICS = ("native", "avx2")
#: environment that fixes the float32 kernels: torch's vectorised operators and TorchInductor's generated code
#: (ATEN_CPU_CAPABILITY) and MKL's matrix products (MKL_CBWR, Intel's conditional numerical reproducibility branch)
CPU_NUMERICS_ENV = {"avx2": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2"}}


def cpu_has_avx2(cpuinfo: str | None = None) -> bool:
    """Whether this CPU (``cpuinfo``: a /proc/cpuinfo text, for tests; the system's when None) has AVX2 and FMA."""
    from .costs.machine import cpu_flags

    return {"avx2", "fma"} <= cpu_flags(cpuinfo)


def pin_cpu_numerics(mode: str, environ=None, cpuinfo: str | None = None) -> dict[str, str]:
    """Fix the CPU's float32 kernels before torch starts, so that one configuration trains one network on every
    x86-64 CPU with AVX2: on an AVX-512 CPU torch's default kernels round differently (a laptop training after 200
    steps: weights 3e-5 apart), and MKL picks its code path by CPU. Returns the variables set ({} for ``native`` or
    a CPU without AVX2, which then says so: its network differs from the reference by float32 rounding).

    TorchInductor's cache directory gets a subdirectory of its own for the pinned numerics (``TORCHINDUCTOR_CACHE_DIR``:
    its key misses the capability). Raises RuntimeError if torch is already imported (the variables are read when it
    starts) with other numerics, and ValueError for an unknown mode."""
    if mode not in CPU_NUMERICS:
        raise ValueError(f"cpu numerics must be one of {CPU_NUMERICS}, got {mode!r}")
    environ = os.environ if environ is None else environ
    if mode == "native":
        return {}
    if not cpu_has_avx2(cpuinfo):
        print(
            f"warning: cpu numerics {mode!r} need an x86-64 CPU with AVX2 and FMA; this one has none, so its network "
            "differs from that of other machines by float32 rounding",
            flush=True,
        )
        return {}
    want = CPU_NUMERICS_ENV[mode]
    if "torch" in sys.modules and environ is os.environ:
        have = sys.modules["torch"].backends.cpu.get_cpu_capability().lower()
        if have != want["ATEN_CPU_CAPABILITY"] or environ.get("MKL_CBWR") != want["MKL_CBWR"]:
            raise RuntimeError(
                f"cpu numerics {mode!r}: torch was imported before they were set (capability {have}); set "
                + " ".join(f"{k}={v}" for k, v in want.items())
                + " in the environment or pin them before importing torch"
            )
    set_ = dict(want)
    # TorchInductor's on-disk cache does not key its kernels by ATEN_CPU_CAPABILITY: a kernel compiled under the
    # CPU's own vector width and loaded under avx2 gave NaN losses at the first step. Pinned numerics get a cache
    # of their own (beside the user's, if one is set).
    root = environ.get("TORCHINDUCTOR_CACHE_DIR")
    user = getpass.getuser() if root is None else ""
    set_["TORCHINDUCTOR_CACHE_DIR"] = (
        os.path.join(tempfile.gettempdir(), f"torchinductor_{user}_cpu-{mode}")
        if root is None
        else os.path.join(root, f"cpu-{mode}")
    )
    for k, v in set_.items():
        environ[k] = v
    return set_
