"""Brute-force reference for the L = 2 channel posterior: adaptive scipy ``dblquad`` in parametrisation A.

Slow (seconds per sample); it exists to check the fixed-grid denoiser (tests) and to time it against the
authors' adaptive-quadrature approach (benchmarks).  Not used by any rule.
"""

from __future__ import annotations

import numpy as np
from scipy import integrate

from .attention_link import (
    preimage,
    skip_matrix_det,
    skip_matrix_inverse,
    softmax_entries,
)

__all__ = ["adaptive_posterior_mean"]


def adaptive_posterior_mean(
    ell, omega, V, c: float, *, half_width: float = 7.0, epsabs: float = 1.49e-8, epsrel: float = 1.49e-8
):
    """Posterior mean <Z> (2, 2) of one sample by adaptive dblquad over z1 in omega_1 ± half_width sqrt(V11).

    ell: (2,) observation logits; omega: (2, 2) (layers x tokens); V: (2, 2) SPD.  Integrates the normaliser and
    the four first moments separately, each as the sum over the sign s = ±1 of z2 = s A_c(z1)^{-1} x(y), with the
    weight 1/det A_c(z1) (spec §2.2).  epsabs, epsrel default to scipy's own.
    """
    omega = np.asarray(omega, dtype=np.float64)
    x = preimage(np.asarray(ell, dtype=np.float64)[None])[0]
    P = np.linalg.inv(V)

    def weighted(z11, z12, s):
        z1 = np.array([z11, z12])
        p, q = softmax_entries(z1)
        i00, i01, i10, i11 = skip_matrix_inverse(p, q, c)
        Z = np.stack([z1, s * np.array([i00 * x[0] + i01 * x[1], i10 * x[0] + i11 * x[1]])])
        D = Z - omega
        return np.exp(-0.5 * np.einsum("at,ab,bt->", D, P, D)) / skip_matrix_det(p, q, c), Z

    sd = np.sqrt(V[0, 0])
    lo, hi = omega[0] - half_width * sd, omega[0] + half_width * sd

    def integral(f):
        return sum(
            integrate.dblquad(
                lambda b, a: f(*weighted(a, b, s)), lo[0], hi[0], lo[1], hi[1], epsabs=epsabs, epsrel=epsrel
            )[0]
            for s in (1.0, -1.0)
        )

    norm = integral(lambda w, Z: w)
    return np.array([[integral(lambda w, Z, a=a, t=t: w * Z[a, t]) for t in range(2)] for a in range(2)]) / norm
