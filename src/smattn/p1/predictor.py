"""Mean predictor, predictor variance and accuracy of the Bayesian network at a given order parameter (spec §2.4).

``<f(x)> = k(x)^T (K + T 1)^-1 y`` and ``Var f(x) = K_U(x, x) - k(x)^T (K + T 1)^-1 k(x)`` with K the training
kernel [P, P] and ``k(x)`` the test vector, both built from attentioned inputs (``xi`` [P, H_tot, D],
see :mod:`smattn.p1.kernels`). Linear solves via Cholesky, never an explicit inverse.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from .kernels import kernel_diag, kernel_U


def predictor(
    U: np.ndarray,
    xi_train: np.ndarray,
    y: np.ndarray,
    xi_test: np.ndarray,
    temperature: float,
    variance: bool = False,
    chunk: int = 2048,
):
    """Mean predictor [P_test] (and variance [P_test] if ``variance``). U: [H, H]; xi_*: [P, H, D]; y: [P]."""
    y = np.asarray(y, dtype=np.float64)
    if y.shape != (xi_train.shape[0],):
        raise ValueError(f"y must have shape [{xi_train.shape[0]}], got {y.shape}")
    if not temperature > 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    K = kernel_U(U, xi_train)
    cf = cho_factor(K + temperature * np.eye(K.shape[0]), lower=True)
    alpha = cho_solve(cf, y)
    means, variances = [], []
    for i in range(0, xi_test.shape[0], chunk):
        k = kernel_U(U, xi_train, xi_test[i : i + chunk])  # [P, chunk]
        means.append(k.T @ alpha)
        if variance:
            variances.append(kernel_diag(U, xi_test[i : i + chunk]) - np.einsum("pc,pc->c", k, cho_solve(cf, k)))
    mean = np.concatenate(means)
    return (mean, np.concatenate(variances)) if variance else mean


def accuracy(mean: np.ndarray, y: np.ndarray) -> float:
    """Fraction of examples with sign(mean) == y. An exact zero prediction is an error (the reference gives NaN)."""
    mean = np.asarray(mean, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if mean.shape != y.shape:
        raise ValueError(f"predictions {mean.shape} and labels {y.shape} differ in shape")
    if np.any(mean == 0) or not np.all(np.isfinite(mean)):
        raise ValueError("predictor has exact zeros or non-finite values: accuracy undefined")
    return float(np.mean(np.sign(mean) == y))
