"""Order parameters, entropy, energy and the action of P1's theory for general L (spec §2.2).

Order parameters: ``U^(l)`` for l = 1..L, a symmetric matrix over partial paths ``(h_l, ..., h_L)`` of size
``n_l = H_l * ... * H_L`` (lowest head slowest), and the readout scalar ``u = U^(L+1)``, eliminated in closed form
(:func:`readout_scalar`). ``U = U^(1)`` ``[H_tot, H_tot]`` is the matrix that enters the kernel.

With widths ``N_0..N_L`` (``N_0``: input projection, ``N_L``: readout), prior variances ``sigma_0^2..sigma_L^2``
and ``sigma_a^2``:

* entropy ``S_ent = N_L (u/sigma_a^2 - ln u) + sum_l N_{l-1} [ Tr((U^(l+1))^-1 Tr_{h_l} U^(l)) / sigma_l^2
  - ln det U^(l) + H_l ln det U^(l+1) ]`` with ``U^(L+1) = u``;
* energy ``E = ln det(K_U + T 1) + y^T (K_U + T 1)^-1 y`` (T = Gibbs temperature, K_U from the path-pair Gram);
* action ``S = (S_ent + E) / N_max``, ``N_max = max_l N_l``; its gradient norm ``g_max`` is measured w.r.t. the
  unconstrained matrices ``M_l`` with ``U^(l) = (M_l + M_l^T)/2`` (the reference's parametrisation).

All functions are pure JAX (float64 when ``jax_enable_x64`` is set) and differentiable.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np
from jax.scipy.linalg import solve_triangular


@dataclass(frozen=True)
class Architecture:
    """Sizes and prior variances of the Bayesian network.

    heads: (H_1, ..., H_L); widths: (N_0, ..., N_L); sigma2: (sigma_0^2, ..., sigma_L^2) (default all 1);
    sigma2_a: readout prior variance.
    """

    heads: tuple
    widths: tuple
    sigma2: tuple = None
    sigma2_a: float = 1.0

    def __post_init__(self):
        heads = tuple(int(h) for h in self.heads)
        if not heads or min(heads) < 1:
            raise ValueError(f"heads must be a non-empty tuple of positive integers, got {self.heads}")
        L = len(heads)
        widths = tuple(float(n) for n in self.widths)
        if len(widths) != L + 1 or min(widths) <= 0:
            raise ValueError(f"widths must hold L+1={L + 1} positive numbers (N_0..N_L), got {self.widths}")
        sigma2 = (1.0,) * (L + 1) if self.sigma2 is None else tuple(float(s) for s in self.sigma2)
        if len(sigma2) != L + 1 or min(sigma2) <= 0:
            raise ValueError(
                f"sigma2 must hold L+1={L + 1} positive variances (sigma_0^2..sigma_L^2), got {self.sigma2}"
            )
        if not self.sigma2_a > 0:
            raise ValueError(f"sigma2_a must be positive, got {self.sigma2_a}")
        object.__setattr__(self, "heads", heads)
        object.__setattr__(self, "widths", widths)
        object.__setattr__(self, "sigma2", sigma2)
        object.__setattr__(self, "sigma2_a", float(self.sigma2_a))

    @property
    def L(self) -> int:
        return len(self.heads)

    @property
    def n_paths(self) -> int:
        return int(np.prod(self.heads))

    def partial_sizes(self) -> tuple:
        """(n_1, ..., n_L) with n_l = H_l * ... * H_L, the sizes of U^(1)..U^(L)."""
        return tuple(int(np.prod(self.heads[l:])) for l in range(self.L))

    @staticmethod
    def equal_width(heads, N: float, sigma2=None, sigma2_a: float = 1.0) -> Architecture:
        return Architecture(tuple(heads), (float(N),) * (len(heads) + 1), sigma2, sigma2_a)


def partial_trace_lowest(U, H_l: int):
    """Tr_{h_l} of U^(l) [H_l*n, H_l*n] (h_l the slow index) -> [n, n]."""
    n = U.shape[0] // H_l
    return jnp.einsum("aiaj->ij", U.reshape(H_l, n, H_l, n))


def readout_scalar(trace_UL, arch: Architecture):
    """Closed-form stationary readout scalar u(U^(L)) from Tr U^(L) (numerically stable root of u^2 + b u - c = 0)."""
    HL, NLm1, NL = arch.heads[-1], arch.widths[-2], arch.widths[-1]
    b = arch.sigma2_a * (HL * NLm1 / NL - 1.0)
    c = arch.sigma2_a * NLm1 * trace_UL / (arch.sigma2[-1] * NL)
    disc = jnp.sqrt(b * b + 4.0 * c)
    return jnp.where(b >= 0, 2.0 * c / (b + disc), (-b + disc) / 2.0)


def _logdet_pd(A):
    """ln det of a symmetric PD matrix via Cholesky (NaN if A is not PD)."""
    C = jnp.linalg.cholesky(A)
    return 2.0 * jnp.sum(jnp.log(jnp.diag(C)))


def entropy(Us, arch: Architecture, u=None):
    """S_ent(U^(1), ..., U^(L)); ``u`` defaults to the closed-form stationary value. Us: list of [n_l, n_l]."""
    L = arch.L
    if len(Us) != L:
        raise ValueError(f"need {L} order parameters U^(1)..U^(L), got {len(Us)}")
    if u is None:
        u = readout_scalar(jnp.trace(Us[-1]), arch)
    N = arch.widths
    s = N[L] * (u / arch.sigma2_a - jnp.log(u))
    for l in range(L):  # python index l = layer l+1
        Hl = arch.heads[l]
        tr_part = partial_trace_lowest(Us[l], Hl)
        if l == L - 1:
            quad = jnp.trace(tr_part) / u
            ld_next = jnp.log(u)
        else:
            quad = jnp.trace(jnp.linalg.solve(Us[l + 1], tr_part))
            ld_next = _logdet_pd(Us[l + 1])
        s = s + N[l] * (quad / arch.sigma2[l + 1] - _logdet_pd(Us[l]) + Hl * ld_next)
    return s


def kernel_from_gram(U1, G, iu):
    """K_U [P, P] from U^(1) [H_tot, H_tot], symmetrised pair Grams G [n_pairs, P, P] and upper indices iu."""
    return jnp.einsum("k,kab->ab", U1[iu[0], iu[1]], G)


def energy(U1, G, iu, y, temperature):
    """E(U) = ln det(K_U + T 1) + y^T (K_U + T 1)^-1 y. G: [n_pairs, P, P]; y: [P]."""
    K = kernel_from_gram(U1, G, iu)
    A = K + temperature * jnp.eye(K.shape[0])
    C = jnp.linalg.cholesky(A)
    z = solve_triangular(C, y, lower=True)
    return 2.0 * jnp.sum(jnp.log(jnp.diag(C))) + jnp.dot(z, z)


def action(Us, arch: Architecture, G, iu, y, temperature):
    """S = (S_ent + E) / N_max."""
    return (entropy(Us, arch) + energy(Us[0], G, iu, y, temperature)) / jnp.max(jnp.asarray(arch.widths))


def gp_point(arch: Architecture) -> list[np.ndarray]:
    """Entropy-only minimiser: U^(l) = sigma_a^2 prod_{m>=l} sigma_m^2 * 1 (list of [n_l, n_l] NumPy arrays)."""
    out = []
    for l, n in enumerate(arch.partial_sizes()):
        scale = arch.sigma2_a * float(np.prod(arch.sigma2[l + 1 :]))
        out.append(scale * np.eye(n))
    return out


def gp_entropy_per_width(heads) -> float:
    """S_ent / N at the GP point for equal widths and unit variances: 1 + sum_l prod_{m>=l} H_m."""
    heads = tuple(heads)
    return 1.0 + float(sum(np.prod(heads[l:]) for l in range(len(heads))))
