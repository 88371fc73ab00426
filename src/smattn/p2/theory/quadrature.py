"""Fixed Gauss–Hermite tensor grids (probabilists' weight N(0, 1)), shared by all samples of a call, and the
settings of the channel denoiser's quadrature (:class:`QuadratureSettings`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

__all__ = ["DEFAULT_N1D", "DEFAULT_QUADRATURE", "QuadratureSettings", "gauss_hermite_grid", "relative_weights"]

DEFAULT_N1D = {2: 48, 3: 12}  # nodes per dimension of parametrisation "A" by depth L
_LOG_WEIGHT_FLOOR = -600.0  # relative_weights: relative weights below e^-563 are set to (at most) e^-600
_WEIGHT_FLOOR = float(np.exp(_LOG_WEIGHT_FLOOR))


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


def relative_weights(t):
    """exp(t) of an array of log-weights t <= 0 relative to the largest one (NaN and -inf give 0), computed as
    exp(max(t, -600)) - e^-600.

    Equal to exp(t) to the last bit for t > -563; below that the weight is under 1e-244 (against a largest weight 1),
    where the two differ by less than e^-600.  Why: NumPy's exp is about ten times slower on arguments whose result
    underflows (most nodes of a peaked posterior), and a denormal weight slows every product it enters.
    """
    w = np.fmax(t, _LOG_WEIGHT_FLOOR)
    np.exp(w, out=w)
    w -= _WEIGHT_FLOOR
    return w


PARAMETRISATIONS = ("auto", "A", "A*")
BACKENDS = ("auto", "numpy", "jax")


@dataclass(frozen=True)
class QuadratureSettings:
    """How the channel denoiser integrates the posterior of Z (passed explicitly to every denoiser call).

    n1d: Gauss–Hermite nodes per dimension of the main grid; None picks the default of the parametrisation and depth
        (:meth:`nodes_per_dim`: 48 for "A" at L = 2, 32 for "A*", 12 for L = 3).
    method: "A" (integrate the first L-1 layers), "A*" (L = 2, "A" on a mixture of prior- and mode-centred grids)
        or "auto" (:func:`~.channel_denoiser.choose_parametrisation`).
    v_switch: "auto" uses "A*" when the last layer's conditional variance V_{L|rest} is below it.
    spread: proposal scale factor, nodes at omega_k + spread sqrt(V_kk) u.
    inflate: "A*": factor on the Laplace standard deviation of each mode-centred grid.
    n_local: "A*": nodes per dimension of each mode-centred grid.
    chunk_elems: samples are processed in chunks of about this many array elements (memory only, not the result).
    ridge_c: L = 2, parametrisation "A": below this skip strength the first-layer grid resolves the ridge of
        1/det A_c on z11 = z12 (:func:`~.channel_denoiser.ridge_grid`, n1d x 2 n1d nodes); 0 switches it off.
    backend: how the moments are evaluated (the same numbers to rounding): "numpy" everywhere (cache-sized
        blocks), "jax" (compiled, float64: :mod:`~.l2_grid` for L = 2, :mod:`~.depth3_grid` for the L = 3 grid of
        parametrisation "A"), or "auto" (default), the faster on a CPU for each case: the compiled L = 2 kernels for
        calls of at least one compiled block of (sample, node) pairs (``studies/p2_thresholds_speed.py``),
        NumPy for smaller calls (no compilation) and for L = 3 (``benchmarks/p2_theory_bench.py depth3_grid``).
    workers: processes sharing the samples of one L = 3 call (the rule's threads; same result for any number).
    """

    n1d: int | None = None
    method: str = "auto"
    v_switch: float = 0.05
    spread: float = 1.0
    inflate: float = 2.0
    n_local: int = 16
    chunk_elems: int = 1_500_000
    ridge_c: float = 0.05
    backend: str = "auto"
    workers: int = 1

    def __post_init__(self):
        if self.n1d is not None and (not _is_int(self.n1d) or self.n1d < 2):
            raise ValueError(f"QuadratureSettings.n1d must be None or an integer >= 2, got {self.n1d!r}")
        if self.method not in PARAMETRISATIONS:
            raise ValueError(f"QuadratureSettings.method must be one of {PARAMETRISATIONS}, got {self.method!r}")
        for name in ("v_switch", "spread", "inflate"):
            v = getattr(self, name)
            if (
                isinstance(v, bool)
                or not isinstance(v, (int, float, np.integer, np.floating))
                or not (np.isfinite(v) and v > 0)
            ):
                raise ValueError(f"QuadratureSettings.{name} must be a finite number > 0, got {v!r}")
        if not _is_int(self.n_local) or self.n_local < 2:
            raise ValueError(f"QuadratureSettings.n_local must be an integer >= 2, got {self.n_local!r}")
        if isinstance(self.ridge_c, bool) or not (np.isfinite(self.ridge_c) and self.ridge_c >= 0):
            raise ValueError(f"QuadratureSettings.ridge_c must be a finite number >= 0, got {self.ridge_c!r}")
        if not _is_int(self.chunk_elems) or self.chunk_elems < 1:
            raise ValueError(f"QuadratureSettings.chunk_elems must be an integer >= 1, got {self.chunk_elems!r}")
        if not _is_int(self.workers) or self.workers < 1:
            raise ValueError(f"QuadratureSettings.workers must be an integer >= 1, got {self.workers!r}")
        if self.backend not in BACKENDS:
            raise ValueError(f"QuadratureSettings.backend must be one of {BACKENDS}, got {self.backend!r}")

    def nodes_per_dim(self, method: str, L: int) -> int:
        """Nodes per dimension of the main grid for a resolved parametrisation ("A" or "A*") and depth L."""
        if self.n1d is not None:
            return int(self.n1d)
        return 32 if method == "A*" else DEFAULT_N1D[L]

    def with_method(self, method: str) -> QuadratureSettings:
        """The same settings with another parametrisation."""
        return replace(self, method=method)


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


#: The default settings (frozen, so one shared instance serves as every function's default argument).
DEFAULT_QUADRATURE = QuadratureSettings()
