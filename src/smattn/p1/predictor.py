"""Mean predictor, predictor variance and accuracy of the Bayesian network at a given order parameter
(docs/p1_theory.md#predictor-and-alignment).

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


def paired_accuracy_gap(mean_a: np.ndarray, mean_b: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Accuracy of predictor a minus that of predictor b on the same test set, and its standard error.

    The two accuracies share the test items, so their test-set errors are correlated: the error of the difference
    comes from the per-item differences ``d_i = correct_a(i) - correct_b(i)`` in {-1, 0, 1} (only items where the
    predictors disagree contribute): ``se = std(d, ddof=1) / sqrt(n)``. mean_a, mean_b, y: [n]."""
    accuracy(mean_a, y), accuracy(mean_b, y)  # shape and finiteness checks
    y = np.asarray(y, dtype=np.float64)
    d = (np.sign(mean_a) == y).astype(np.float64) - (np.sign(mean_b) == y).astype(np.float64)
    return float(d.mean()), float(d.std(ddof=1) / np.sqrt(d.size))


def paired_cohen_h(mean_a: np.ndarray, mean_b: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Cohen's effect size h of two accuracies on the same test set, and its standard error.

    ``h = 2 asin sqrt(p_a) - 2 asin sqrt(p_b)`` (Cohen 1988, Sec. 6.2: 0.2 small, 0.5 medium, 0.8 large), the
    difference of two proportions on the scale where their sampling variance does not depend on p. Its error is the
    delta method applied to the paired items: with ``phi'(p) = 1 / sqrt(p (1 - p))``, ``h ~ mean(phi'(p_a) c_a -
    phi'(p_b) c_b)`` up to a constant, so ``se = std(phi'(p_a) c_a - phi'(p_b) c_b, ddof=1) / sqrt(n)`` with
    ``c`` the per-item correct indicators. An accuracy of exactly 0 or 1 has no finite error: ValueError.
    mean_a, mean_b, y: [n]."""
    pa, pb = accuracy(mean_a, y), accuracy(mean_b, y)
    if not (0 < pa < 1 and 0 < pb < 1):
        raise ValueError(f"Cohen's h needs accuracies strictly between 0 and 1, got {pa} and {pb}")
    y = np.asarray(y, dtype=np.float64)
    ca = (np.sign(mean_a) == y).astype(np.float64)
    cb = (np.sign(mean_b) == y).astype(np.float64)
    h = 2.0 * (np.arcsin(np.sqrt(pa)) - np.arcsin(np.sqrt(pb)))
    lin = ca / np.sqrt(pa * (1.0 - pa)) - cb / np.sqrt(pb * (1.0 - pb))
    return float(h), float(lin.std(ddof=1) / np.sqrt(y.size))


def accuracy_mcse(mean: np.ndarray, mcse: np.ndarray, y: np.ndarray) -> float:
    """Monte-Carlo standard error of the accuracy of a sampled mean predictor.

    Each item's sampled mean ``mean[i]`` estimates the posterior mean with Monte-Carlo standard error ``mcse[i]``
    (normal errors); its sign differs from that of the exact posterior mean with probability
    ``p_i = Phi(-|mean_i| / mcse_i)``, so the accuracy's Monte-Carlo variance is ``sum_i p_i (1 - p_i) / n^2``
    (items' errors treated as independent). mean, mcse, y: [n]."""
    from scipy.special import ndtr

    accuracy(mean, y)
    mcse = np.asarray(mcse, dtype=np.float64)
    if mcse.shape != np.shape(mean) or not np.all(mcse >= 0):
        raise ValueError(f"mcse must be >= 0 with the shape of the predictions {np.shape(mean)}, got {mcse.shape}")
    with np.errstate(divide="ignore"):
        p = ndtr(-np.abs(np.asarray(mean, dtype=np.float64)) / mcse)
    return float(np.sqrt(np.sum(p * (1 - p))) / mcse.size)
