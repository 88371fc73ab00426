"""Path-path kernels, the renormalised kernel K_U and the precomputed path-pair Gram tensor
(docs/p1_theory.md#order-parameter-and-kernels).

With attentioned inputs ``xi`` of shape ``[P, H_tot, D]`` (see :mod:`smattn.p1.attention`):

* path-path ("pre-") kernel ``C_{pi pi'}(x, x') = H_tot * xi_pi(x) . xi_pi'(x')``;
* renormalised kernel ``K_U(x, x') = sum_{pi pi'} U_{pi pi'} xi_pi(x) . xi_pi'(x')`` for a symmetric U
  ``[H_tot, H_tot]``; the GP kernel is ``K_U`` at ``U = 1``.

:class:`PathGram` stores, once per data set, the symmetrised Gram matrices of all path pairs ``pi <= pi'``
(``G_k = Xi_pi Xi_pi'^T + Xi_pi' Xi_pi^T`` off the diagonal, ``Xi_pi Xi_pi^T`` on it), shape ``[n_pairs, P, P]``,
so that ``K_U = sum_k U_k G_k`` (``U_k`` the upper-triangle entries) costs one contraction per action evaluation.
"""

from __future__ import annotations

import numpy as np


def _check_xi(xi: np.ndarray, name: str = "xi") -> np.ndarray:
    xi = np.asarray(xi, dtype=np.float64)
    if xi.ndim != 3:
        raise ValueError(f"{name} must have shape [P, H_tot, D], got {xi.shape}")
    return xi


def _check_U(U: np.ndarray, Htot: int) -> np.ndarray:
    U = np.asarray(U, dtype=np.float64)
    if U.shape != (Htot, Htot):
        raise ValueError(f"U must have shape [{Htot}, {Htot}] (H_tot x H_tot), got {U.shape}")
    return U


def path_path_kernels(xi_a: np.ndarray, xi_b: np.ndarray | None = None) -> np.ndarray:
    """C[pi, pi', mu, nu] = H_tot xi_pi(x_mu) . xi_pi'(x_nu). xi_a: [Pa, H, D], xi_b: [Pb, H, D] -> [H, H, Pa, Pb]."""
    xi_a = _check_xi(xi_a, "xi_a")
    xi_b = xi_a if xi_b is None else _check_xi(xi_b, "xi_b")
    H = xi_a.shape[1]
    return H * np.einsum("apd,bqd->pqab", xi_a, xi_b)


def same_path_kernels(xi: np.ndarray) -> np.ndarray:
    """C[pi, pi] of ``path_path_kernels`` only: xi [P, H, D] -> [H, P, P] (the same-path kernels of P1 Fig. 5b)."""
    xi = _check_xi(xi, "xi")
    return xi.shape[1] * np.einsum("aph,bph->pab", xi, xi, optimize=True)


def kernel_U(U: np.ndarray, xi_a: np.ndarray, xi_b: np.ndarray | None = None) -> np.ndarray:
    """K_U between two sets of inputs. U: [H, H]; xi_a: [Pa, H, D]; xi_b: [Pb, H, D] (default xi_a) -> [Pa, Pb]."""
    xi_a = _check_xi(xi_a, "xi_a")
    xi_b = xi_a if xi_b is None else _check_xi(xi_b, "xi_b")
    U = _check_U(U, xi_a.shape[1])
    return np.einsum("apd,pq,bqd->ab", xi_a, U, xi_b, optimize=True)


def kernel_diag(U: np.ndarray, xi: np.ndarray) -> np.ndarray:
    """K_U(x, x) for every input. U: [H, H]; xi: [P, H, D] -> [P]."""
    xi = _check_xi(xi)
    U = _check_U(U, xi.shape[1])
    return np.einsum("apd,pq,aqd->a", xi, U, xi, optimize=True)


class PathGram:
    """Symmetrised path-pair Gram tensor of one data set, for cheap K_U evaluations.

    Attributes: ``G`` [n_pairs, P, P]; ``iu`` (row, col) index arrays of the upper triangle of an
    [H_tot, H_tot] matrix (row-major order), so that ``K_U = einsum('k,kab->ab', U[iu], G)``.
    """

    def __init__(self, xi: np.ndarray):
        xi = _check_xi(xi)
        self.P, self.Htot, self.D = xi.shape
        self.iu = np.triu_indices(self.Htot)
        r, c = self.iu
        G = np.empty((len(r), self.P, self.P))
        for k in range(len(r)):  # one pair at a time keeps the peak memory at the size of G
            g = xi[:, r[k], :] @ xi[:, c[k], :].T
            G[k] = g if r[k] == c[k] else g + g.T
        self.G = G

    @property
    def n_pairs(self) -> int:
        return self.G.shape[0]

    def upper(self, U: np.ndarray) -> np.ndarray:
        """Upper-triangle entries of a symmetric U [H_tot, H_tot] -> [n_pairs]."""
        return np.asarray(U)[self.iu]

    def kernel(self, U: np.ndarray) -> np.ndarray:
        """K_U on the training set, [P, P]."""
        U = _check_U(U, self.Htot)
        return np.einsum("k,kab->ab", U[self.iu], self.G)
