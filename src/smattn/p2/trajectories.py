"""Per-layer metrics along a trajectory (last axis = time), shared by the SGD, GAMP and TREC figures of P2.

* :func:`layer_cosines` -- the authors' layer metric ``C_k = m_k / sqrt(q_k)`` (optionally the true cosine);
* :func:`sign_corrected` -- each trajectory multiplied by the sign of its last value;
* :func:`first_crossing` -- first index reaching a fraction of the final value (or of the rise from the start);
* :func:`log_spaced_indices` -- indices of a long trajectory, log-spaced, for the figures' CSVs.
"""

from __future__ import annotations

import numpy as np

__all__ = ["layer_cosines", "sign_corrected", "first_crossing", "log_spaced_indices"]


def layer_cosines(m, q, teacher_sq_norm=None):
    """The authors' layer metric ``C_k = m_k / sqrt(q_k)`` (shapes broadcast; q > 0 required).

    With ``teacher_sq_norm`` (= |w_k|^2 / d, broadcastable) it returns the true cosine ``C_k / sqrt(|w_k|^2/d)``.
    """
    m = np.asarray(m, np.float64)
    q = np.asarray(q, np.float64)
    if np.any(q <= 0):
        raise ValueError("layer_cosines: self-overlap q must be > 0")
    C = m / np.sqrt(q)
    if teacher_sq_norm is not None:
        C = C / np.sqrt(np.asarray(teacher_sq_norm, np.float64))
    return C


def sign_corrected(C):
    """Multiply each trajectory (last axis = time) by the sign of its last value, as in the paper's figure."""
    C = np.asarray(C, np.float64)
    s = np.sign(C[..., -1:])
    s[s == 0] = 1.0
    return C * s


def first_crossing(y, fraction: float = 0.5, from_start: bool = False):
    """Index of the first entry of ``y`` (last axis = time) reaching ``fraction`` of its final value.

    ``from_start=False``: threshold ``fraction * y_final`` (for metrics starting near 0).
    ``from_start=True``: threshold ``y_0 + fraction * (y_final - y_0)``, i.e. ``fraction`` of the rise from the
    first value (for metrics, like the TREC Gram similarity, that start well above 0).
    Returns an integer array over the leading axes. A trajectory whose final value is not positive (or, with
    ``from_start``, does not exceed its first value) has no meaningful crossing and raises ValueError.
    """
    y = np.asarray(y, np.float64)
    final = y[..., -1:]
    if np.any(final <= 0):
        raise ValueError("first_crossing: final value must be positive (sign-correct the trajectory first)")
    if from_start:
        start = y[..., :1]
        if np.any(final <= start):
            raise ValueError("first_crossing: with from_start the final value must exceed the first value")
        threshold = start + fraction * (final - start)
    else:
        threshold = fraction * final
    hit = y >= threshold
    return np.argmax(hit, axis=-1)


def log_spaced_indices(n: int, points: int = 1500) -> np.ndarray:
    """Sorted unique 0-based indices ``round(geomspace(1, n, points)) - 1`` of a trajectory of length ``n``."""
    if n < 1 or points < 1:
        raise ValueError(f"log_spaced_indices: need n >= 1 and points >= 1, got n={n}, points={points}")
    return np.unique(np.round(np.geomspace(1, n, points)).astype(int) - 1)
