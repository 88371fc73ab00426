"""Device choice for the compute scripts: a GPU when the framework sees one, else the CPU.

No rule fails for lack of a GPU: every function falls back to the CPU silently and says which it chose.
"""

from __future__ import annotations

import os


def torch_device(prefer_gpu: bool = True):
    """Return ``torch.device('cuda')`` when a CUDA GPU is visible and wanted, else ``torch.device('cpu')``."""
    import torch

    if prefer_gpu and torch.cuda.is_available():
        return torch.device("cuda")
    return torch.device("cpu")


def jax_setup(x64: bool = True) -> str:
    """Configure JAX before any array is created; return the platform name in use ('gpu' or 'cpu').

    ``x64=True`` enables float64 (the theory's precision). JAX picks a GPU by itself when jaxlib has CUDA
    support and a device is visible; otherwise it runs on the CPU.
    """
    import jax

    jax.config.update("jax_enable_x64", bool(x64))
    try:
        return jax.default_backend()
    except RuntimeError:  # pragma: no cover - no backend at all
        os.environ["JAX_PLATFORMS"] = "cpu"
        return "cpu"


def set_threads(n: int | None) -> None:
    """Limit torch's intra-op threads to the rule's ``threads`` (None leaves the default)."""
    if not n:
        return
    try:
        import torch

        torch.set_num_threads(int(n))
    except ImportError:  # pragma: no cover
        pass
