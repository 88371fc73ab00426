"""Kernels, predictor, alignment and head scores (docs/p1_theory.md#order-parameter-and-kernels,
#predictor-and-alignment)."""

import numpy as np
import pytest

from smattn.p1.alignment import pc_overlaps
from smattn.p1.head_score import head_scores
from smattn.p1.kernels import PathGram, kernel_diag, kernel_U, path_path_kernels, same_path_kernels
from smattn.p1.predictor import accuracy, predictor


def _setup(seed=0, P=12, H=3, D=4):
    rng = np.random.default_rng(seed)
    xi = rng.standard_normal((P, H, D))
    A = rng.standard_normal((H, H))
    U = A @ A.T + np.eye(H)
    return rng, xi, U


def test_path_gram_and_kernel_definitions():
    rng, xi, U = _setup()
    H = xi.shape[1]
    direct = sum(U[p, q] * xi[:, p] @ xi[:, q].T for p in range(H) for q in range(H))
    np.testing.assert_allclose(kernel_U(U, xi), direct, rtol=1e-12)
    np.testing.assert_allclose(PathGram(xi).kernel(U), direct, rtol=1e-12)
    C = path_path_kernels(xi)
    np.testing.assert_allclose(np.einsum("pq,pqab->ab", U, C) / H, direct, rtol=1e-12)
    np.testing.assert_allclose(kernel_diag(U, xi), np.diag(direct), rtol=1e-12)
    same = np.stack([H * xi[:, p] @ xi[:, p].T for p in range(H)])
    np.testing.assert_allclose(same_path_kernels(xi), same, rtol=1e-12)
    np.testing.assert_allclose(same_path_kernels(xi), np.stack([C[p, p] for p in range(H)]), rtol=1e-12)
    with pytest.raises(ValueError, match="U must"):
        kernel_U(np.eye(2), xi)


def test_predictor_mean_and_variance_match_gaussian_process_formulas():
    rng, xi, U = _setup(1)
    xt = rng.standard_normal((5, 3, 4))
    y = np.sign(rng.standard_normal(12))
    T = 0.3
    mean, var = predictor(U, xi, y, xt, T, variance=True)
    K = kernel_U(U, xi)
    k = kernel_U(U, xi, xt)
    Ainv = np.linalg.inv(K + T * np.eye(12))
    np.testing.assert_allclose(mean, k.T @ Ainv @ y, rtol=1e-10)
    np.testing.assert_allclose(var, kernel_diag(U, xt) - np.einsum("pc,pq,qc->c", k, Ainv, k), rtol=1e-9)
    assert (var > 0).all()
    assert accuracy(np.array([0.5, -2.0, 1.0]), np.array([1.0, -1.0, -1.0])) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="zero"):
        accuracy(np.array([0.0, 1.0]), np.array([1.0, 1.0]))


def test_pc_overlaps():
    rng = np.random.default_rng(2)
    y = np.sign(rng.standard_normal(20))
    K = 5 * np.outer(y, y) / 20 + 0.01 * np.eye(20)
    ov = pc_overlaps(K, y, 3)
    assert ov[0] == pytest.approx(1.0, abs=1e-12) and np.all(ov[1:] < 1e-10)
    full = pc_overlaps(rng.standard_normal((20, 20)) + 20 * np.eye(20), y, 20)
    assert np.sum(full**2) == pytest.approx(1.0, rel=1e-10)  # complete orthonormal basis


def test_head_scores_union_rule():
    heads = (2, 2)
    U = np.zeros((4, 4))
    U[0, 0] = 4.0  # path (0, 0)
    U[1, 2] = U[2, 1] = 1.0  # paths (0, 1) and (1, 0)
    s = head_scores(U, heads)
    # layer-1 head 0 touches paths 0, 1: entries (0,0), (1,2), (2,1) -> 6; layer-1 head 1 touches paths 2, 3 -> 2
    # layer-2 head 0 touches paths 0, 2 -> 6; layer-2 head 1 touches paths 1, 3 -> 2
    assert s == {(1, 0): 1.0, (1, 1): pytest.approx(2 / 6), (2, 0): 1.0, (2, 1): pytest.approx(2 / 6)}
