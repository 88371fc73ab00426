"""Deep tied-attention link of P2 (T = 2 tokens, rank r = 1, skip strength c > 0).

Conventions (docs/CONVENTIONS.md): Z has shape (..., p, T) with rows = layers, columns = tokens, p = L.
For a vector a in R^2 the row softmax of a a^T has the two free entries
    y01 = 1 / (1 + exp(a1 (a1 - a2))),   y10 = 1 / (1 + exp(a2 (a2 - a1))).
Internally an observation is stored losslessly as its two *logits*
    ell = (ell1, ell2) = (a1 (a1 - a2), a2 (a2 - a1)) = (ln(1/y01 - 1), ln(1/y10 - 1)),
which avoids the loss of precision of y01 -> 0 or 1 (the map y <-> ell is a bijection).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "check_skip",
    "softmax_entries",
    "skip_matrix",
    "skip_matrix_det",
    "skip_matrix_inverse",
    "last_preactivation",
    "link_logits",
    "logits_to_y",
    "y_to_logits",
    "preimage",
    "attention_output",
    "apply_skip_matrix",
    "solve_softmax_layer",
]


def check_skip(c: float) -> float:
    """Validate the skip strength c (must be finite and > 0: A_c is then invertible)."""
    c = float(c)
    if not np.isfinite(c) or c <= 0.0:
        raise ValueError(f"skip strength c must be a finite number > 0, got {c!r}")
    return c


def _sigmoid_neg(u):
    """1/(1+exp(u)) computed stably, elementwise."""
    return 0.5 * (1.0 - np.tanh(0.5 * np.asarray(u, dtype=np.float64)))


def softmax_entries(a):
    """Row-softmax free entries of a a^T.  a: (..., 2) -> (p, q) each (...,): p = y01, q = y10."""
    a = np.asarray(a, dtype=np.float64)
    d = a[..., 0] - a[..., 1]
    return _sigmoid_neg(a[..., 0] * d), _sigmoid_neg(-a[..., 1] * d)


def skip_matrix(z, c):
    """A_c(z) = sigma(z z^T) + c I_2.  z: (..., 2) -> (..., 2, 2)."""
    p, q = softmax_entries(z)
    out = np.empty(np.shape(p) + (2, 2))
    out[..., 0, 0] = 1.0 - p + c
    out[..., 0, 1] = p
    out[..., 1, 0] = q
    out[..., 1, 1] = 1.0 - q + c
    return out


def skip_matrix_det(p, q, c):
    """det A_c = (1 + c)(1 + c - p - q) from the softmax entries (p, q) (any shape)."""
    return (1.0 + c) * (1.0 + c - p - q)


def skip_matrix_inverse(p, q, c):
    """Entries (i00, i01, i10, i11) of A_c^{-1} from the softmax entries (p, q); each has the shape of p."""
    det = skip_matrix_det(p, q, c)
    return (1.0 - q + c) / det, -p / det, -q / det, (1.0 - p + c) / det


def last_preactivation(Z, c):
    """Pre-softmax vector of the last layer.  Z: (..., L, 2) with L in {2, 3} -> (..., 2).

    L = 2: a = A_c(z1) z2.   L = 3: a2 = A_c(z1) z2, b = A_c(a2) A_c(z1) z3.
    """
    Z = np.asarray(Z, dtype=np.float64)
    L = Z.shape[-2]
    if Z.shape[-1] != 2 or L not in (2, 3):
        raise ValueError(f"Z must have shape (..., L, 2) with L in (2, 3); got {Z.shape}")
    A1 = skip_matrix(Z[..., 0, :], c)
    if L == 2:
        return np.einsum("...ij,...j->...i", A1, Z[..., 1, :])
    a2 = np.einsum("...ij,...j->...i", A1, Z[..., 1, :])
    A2 = skip_matrix(a2, c)
    return np.einsum("...ij,...jk,...k->...i", A2, A1, Z[..., 2, :])


def link_logits(Z, c):
    """Observation of the deep attention target as logits ell = (ell1, ell2).  Z: (..., L, 2) -> (..., 2)."""
    a = last_preactivation(Z, c)
    d = a[..., 0] - a[..., 1]
    return np.stack([a[..., 0] * d, -a[..., 1] * d], axis=-1)


def logits_to_y(ell):
    """Logits (..., 2) -> (y01, y10) (..., 2)."""
    ell = np.asarray(ell, dtype=np.float64)
    return _sigmoid_neg(ell)


def y_to_logits(y):
    """(y01, y10) (..., 2) -> logits (..., 2).  Raises if the pair is not a softmax output (0<y<1, y01+y10<=1)."""
    y = np.asarray(y, dtype=np.float64)
    if np.any((y <= 0.0) | (y >= 1.0)):
        raise ValueError("attention entries y01, y10 must lie strictly in (0, 1)")
    if np.any(y[..., 0] + y[..., 1] > 1.0 + 1e-12):
        raise ValueError("y01 + y10 must be <= 1 for a row softmax of a a^T")
    return np.log1p(-y) - np.log(y)


def preimage(ell, eps: float = 1e-300):
    """x(y) = -sgn(a1 - a2) a, the canonical pre-image of the softmax.  ell: (..., 2) -> (..., 2).

    The two pre-images of the observation are a = +x and a = -x.  Raises if ell1 + ell2 < 0 (not an output).
    """
    ell = np.asarray(ell, dtype=np.float64)
    s = ell[..., 0] + ell[..., 1]
    if np.any(s < -1e-9 * (1.0 + np.abs(ell).sum(-1))):
        raise ValueError("logits must satisfy ell1 + ell2 >= 0 (y01 + y10 <= 1)")
    r = np.sqrt(np.maximum(s, eps))
    return np.stack([-ell[..., 0] / r, ell[..., 1] / r], axis=-1)


def attention_output(Z, c):
    """The full last-layer 2x2 attention matrix.  Z: (..., L, 2) -> (..., 2, 2) (row-stochastic)."""
    p, q = softmax_entries(last_preactivation(Z, c))
    out = np.empty(np.shape(p) + (2, 2))
    out[..., 0, 0] = 1.0 - p
    out[..., 0, 1] = p
    out[..., 1, 0] = q
    out[..., 1, 1] = 1.0 - q
    return out


def apply_skip_matrix(z, v, c):
    """A_c(z) v for z, v (..., 2) -> (..., 2), without forming the matrix."""
    p, q = softmax_entries(z)
    return np.stack([(1.0 - p + c) * v[..., 0] + p * v[..., 1], q * v[..., 0] + (1.0 - q + c) * v[..., 1]], axis=-1)


def solve_softmax_layer(v, t, c):
    """Solve A_c(w) v = t for w in R^2 (the layer whose softmax multiplies v).

    v, t: (..., 2).  The softmax entries (p, q) of w w^T enter linearly:
        p = (t1 - (1+c) v1) / (v2 - v1),  q = (t2 - (1+c) v2) / (v1 - v2);
    admissible iff 0 < p, q < 1 and p + q < 1; then w = ±u(p, q) (u as the softmax pre-image).
    Returns w_plus (..., 2) (w_minus = -w_plus), log|det d(A_c(w) v)/dw| (...,) and the admissibility mask (...,).
    """
    dv = v[..., 1] - v[..., 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        p = (t[..., 0] - (1.0 + c) * v[..., 0]) / dv
        q = (t[..., 1] - (1.0 + c) * v[..., 1]) / (-dv)
        ok = (p > 0.0) & (p < 1.0) & (q > 0.0) & (q < 1.0) & (p + q < 1.0) & np.isfinite(p) & np.isfinite(q)
        ps = np.where(ok, p, 0.25)
        qs = np.where(ok, q, 0.25)
        la = np.log1p(-ps) - np.log(ps)
        lb = np.log1p(-qs) - np.log(qs)
        s = la + lb
        ok &= s > 0.0
        s = np.where(ok, s, 1.0)
        r = np.sqrt(s)
        w = np.stack([-la / r, lb / r], axis=-1)
        logj = (
            np.log(2.0)
            + 2.0 * np.log(np.abs(np.where(ok, dv, 1.0)))
            + np.log(ps * (1.0 - ps))
            + np.log(qs * (1.0 - qs))
            + np.log(s)
        )
    return w, logj, ok
