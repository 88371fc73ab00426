"""Fixed Gauss–Hermite tensor grids (probabilists' weight N(0, 1)), shared by all samples of a call."""
from __future__ import annotations

from functools import lru_cache

import numpy as np

__all__ = ["gauss_hermite_grid"]


@lru_cache(maxsize=32)
def _grid(n1d: int, dim: int):
    x, w = np.polynomial.hermite_e.hermegauss(n1d)
    w = w / np.sqrt(2.0 * np.pi)
    mesh = np.meshgrid(*([x] * dim), indexing="ij")
    nodes = np.stack([m.ravel() for m in mesh], axis=-1)
    wmesh = np.meshgrid(*([np.log(w)] * dim), indexing="ij")
    logw = np.sum([m.ravel() for m in wmesh], axis=0)
    nodes.setflags(write=False)
    logw.setflags(write=False)
    return nodes, logw


def gauss_hermite_grid(n1d: int, dim: int):
    """Tensor Gauss–Hermite grid for E_{u ~ N(0, I_dim)}[f(u)] ~= sum_k exp(logw_k) f(u_k).

    Returns nodes (n1d**dim, dim) and logw (n1d**dim,), read-only (cached).
    """
    if int(n1d) != n1d or n1d < 2:
        raise ValueError(f"n1d must be an integer >= 2, got {n1d!r}")
    if int(dim) != dim or dim < 1:
        raise ValueError(f"dim must be an integer >= 1, got {dim!r}")
    return _grid(int(n1d), int(dim))
