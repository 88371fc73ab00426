"""Channel denoiser of the deep attention target: adaptive-quadrature reference, analytic Jacobian, validation."""

import numpy as np
import pytest

from smattn.p2.theory.adaptive_reference import adaptive_posterior_mean
from smattn.p2.theory.attention_link import (
    apply_skip_matrix,
    attention_output,
    link_logits,
    logits_to_y,
    preimage,
    solve_softmax_layer,
    y_to_logits,
)
from smattn.p2.theory.channel_denoiser import g_out, posterior_moments
from smattn.p2.theory.quadrature import QuadratureSettings

C = 1.0


def _case(seed, q):
    rng = np.random.default_rng(seed)
    Q = np.diag(q)
    V = np.eye(2) - Q
    Zt = rng.standard_normal((2, 2))
    om = np.sqrt(Q) @ (np.sqrt(Q) @ Zt + np.sqrt(V) @ rng.standard_normal((2, 2)))
    return link_logits(Zt, C), om, V


@pytest.mark.parametrize(
    "seed,q,method,tol", [(3, (0.3, 0.4), "A", 1e-6), (4, (0.0, 0.6), "A", 1e-6), (5, (0.5, 0.9), "A*", 2e-3)]
)
def test_denoiser_matches_adaptive_quadrature(seed, q, method, tol):
    ell, om, V = _case(seed, q)
    ref = adaptive_posterior_mean(ell, om, V, C, epsabs=1e-11, epsrel=1e-7)
    mom = posterior_moments(ell[None], om[None], V, C, QuadratureSettings(n1d=48, method=method))
    assert mom.method == method
    np.testing.assert_allclose(mom.mean[0], ref, atol=tol)


def test_first_layer_solve_branches_and_jacobian_are_exact():
    """The closed-form first-layer solve: a branch reproduces the true z1 and its log|det d a / d z1| matches FD."""
    rng = np.random.default_rng(11)
    Z = rng.standard_normal((200, 2, 2))
    x = preimage(link_logits(Z, C))
    z1, z2 = Z[:, 0], Z[:, 1]
    a = apply_skip_matrix(z1, z2, C)
    s = np.sign(np.sum(a * x, axis=1))  # a = s x
    w, logj, ok = solve_softmax_layer(z2, s[:, None] * x, C)
    keep = ok & (np.abs(z1[:, 0] - z1[:, 1]) > 1e-3)  # z11 = z12 is the measure-zero fold of the map
    assert keep.mean() > 0.95
    err = np.minimum(np.abs(w - z1).max(1), np.abs(w + z1).max(1))
    assert err[keep].max() < 1e-8
    h = 1e-6
    J = np.empty((len(Z), 2, 2))
    for k in range(2):
        e = np.zeros(2)
        e[k] = h
        J[:, :, k] = (apply_skip_matrix(z1 + e, z2, C) - apply_skip_matrix(z1 - e, z2, C)) / (2 * h)
    fd = np.log(np.abs(np.linalg.det(J)))
    np.testing.assert_allclose(logj[keep], fd[keep], atol=1e-5)


@pytest.mark.parametrize("method", ["A", "A*"])
def test_analytic_jacobian_matches_finite_differences(method):
    rng = np.random.default_rng(2)
    n = 4
    V = np.array([[0.6, 0.1], [0.1, 0.3]]) if method == "A" else np.diag([0.5, 0.04])
    Z = rng.standard_normal((n, 2, 2))
    ell = link_logits(Z, C)
    om = 0.7 * Z + 0.2 * rng.standard_normal((n, 2, 2))
    quad = (
        QuadratureSettings(method=method, n1d=64)
        if method == "A"
        else QuadratureSettings(method=method, n1d=64, n_local=64)
    )
    rel = 2e-5 if method == "A" else 2e-4  # A* grids move with omega: the rule itself varies at O(rule error)
    _, dg, _ = g_out(ell, om, V, C, quad)
    h = 1e-5
    for b in range(2):
        for s in range(2):
            e = np.zeros_like(om)
            e[:, b, s] = h
            gp, _, _ = g_out(ell, om + e, V, C, quad, jacobian=False)
            gm, _, _ = g_out(ell, om - e, V, C, quad, jacobian=False)
            np.testing.assert_allclose(dg[:, :, :, b, s], (gp - gm) / (2 * h), atol=rel * (1 + np.abs(dg).max()))


def test_link_roundtrip_and_symmetries():
    rng = np.random.default_rng(0)
    Z = rng.standard_normal((100, 2, 2))
    ell = link_logits(Z, C)
    np.testing.assert_allclose(y_to_logits(logits_to_y(ell)), ell, atol=1e-8)
    Y = attention_output(Z, C)
    np.testing.assert_allclose(Y.sum(-1), 1.0)
    for flip in (np.array([-1, 1]), np.array([1, -1])):
        np.testing.assert_allclose(attention_output(Z * flip[None, :, None], C), Y, atol=1e-12)


def test_bad_inputs_raise_clear_errors():
    ell, om, V = _case(0, (0.2, 0.2))
    with pytest.raises(ValueError, match="skip strength"):
        posterior_moments(ell[None], om[None], V, 0.0)
    with pytest.raises(ValueError, match="positive definite"):
        posterior_moments(ell[None], om[None], -V, C)
    with pytest.raises(ValueError, match="omega must have shape"):
        posterior_moments(ell[None], om, V, C)
    with pytest.raises(ValueError, match="method must be"):
        QuadratureSettings(method="B")
    with pytest.raises(ValueError, match="n1d must be"):
        QuadratureSettings(n1d=1)
    with pytest.raises(ValueError, match="y01 \\+ y10"):
        y_to_logits(np.array([0.7, 0.6]))


def test_ridge_grid_matches_gauss_hermite_where_both_converge_and_converges_at_small_skip():
    from smattn.p2.theory.attention_link import link_logits
    from smattn.p2.theory.channel_denoiser import posterior_moments
    from smattn.p2.theory.quadrature import QuadratureSettings

    rng = np.random.default_rng(3)
    Z = rng.standard_normal((40, 2, 2))
    om = 0.5 * Z + 0.2 * rng.standard_normal((40, 2, 2))
    V = np.array([[0.75, 0.0], [0.0, 0.6]])

    def moments(c, n1d, ridge_c):
        m = posterior_moments(link_logits(Z, c), om, V, c, QuadratureSettings(n1d=n1d, method="A", ridge_c=ridge_c))
        return m.mean, m.cov, m.log_norm

    # c = 0.3: no ridge to speak of; the rotated sinh grid and the Gauss-Hermite grid give the same integrals
    for a, b in zip(moments(0.3, 96, 0.0), moments(0.3, 24, 1.0), strict=True):
        np.testing.assert_allclose(b, a, atol=2e-5)
    # c = 1e-4: the 1/det A_c ridge is ~0.014 wide. The ridge grid converges (mean error 1e-3 at 32 x 64 nodes,
    # 2e-4 at 48 x 96, against 64 x 128), where a Gauss-Hermite grid is still off by O(0.1) at 96^2 nodes
    ref = moments(1e-4, 64, 0.05)[0]
    assert np.abs(moments(1e-4, 32, 0.05)[0] - ref).max() < 2e-3
    assert np.abs(moments(1e-4, 48, 0.0)[0] - ref).max() > 0.1


@pytest.mark.parametrize("q,method", [((0.3, 0.4), "A"), ((0.5, 0.9), "A*")])
def test_mean_only_moments_and_g_out_without_covariance(q, method):
    """covariance=False gives the same mean (to the bit) without the covariance; the Jacobian needs it."""
    ell, om, V = _case(6, q)
    quad = QuadratureSettings(n1d=24, method=method)
    full = posterior_moments(ell[None], om[None], V, C, quad)
    mean_only = posterior_moments(ell[None], om[None], V, C, quad, covariance=False)
    assert mean_only.cov is None and full.cov is not None
    for name in ("mean", "log_norm", "ess"):
        np.testing.assert_array_equal(getattr(mean_only, name), getattr(full, name), err_msg=name)
    g, _, mom = g_out(ell[None], om[None], V, C, quad, jacobian=False, covariance=False)
    np.testing.assert_array_equal(g, g_out(ell[None], om[None], V, C, quad)[0])
    assert mom.cov is None
    with pytest.raises(ValueError, match="covariance"):
        g_out(ell[None], om[None], V, C, quad, covariance=False)


@pytest.mark.parametrize(
    "Q,method,c",
    [
        ((0.0, 0.5, 0.0), "A", 0.8),
        ((0.3, 0.5, 0.1), "A", 0.8),
        ((0.3, 0.5, 0.1), "A", 0.01),  # the ridge grid of small c
        ((0.0, 0.99, 0.0), "A*", 0.8),
        ((0.5, 0.98, 0.1), "A*", 0.8),
    ],
)
def test_compiled_l2_kernels_equal_the_numpy_moments(Q, method, c):
    """The L = 2 kernels of l2_grid (parametrisation "A" on the Gauss-Hermite and on the ridge grid, the
    mode-centred mixture "A*") against the NumPy implementation on the same nodes: equal to rounding, with a padded
    last block."""
    from smattn.p2.theory import l2_grid

    rng = np.random.default_rng(21)
    q11, q22, q12 = Q
    Qm = np.array([[q11, q12], [q12, q22]])
    V = np.eye(2) - Qm + 1e-3 * np.eye(2)
    n = 45  # with 8 nodes per dimension: 5 compiled blocks, the last one padded
    Z = rng.standard_normal((n, 2, 2))
    om = np.einsum("ab,nbt->nat", np.linalg.cholesky(Qm + 1e-12 * np.eye(2)), Z) + 0.1 * rng.standard_normal((n, 2, 2))
    ell = link_logits(Z, c)
    kw = dict(n1d=8, n_local=6)
    ref = posterior_moments(ell, om, V, c, QuadratureSettings(backend="numpy", **kw))
    assert ref.method == method
    saved = l2_grid.BLOCK_PAIRS
    try:
        nodes = 2 * (64 if method == "A" else 64 + 4 * 36) * (2 if c < 0.05 else 1)
        l2_grid.BLOCK_PAIRS = 10 * nodes  # blocks of 10 samples
        fast = posterior_moments(ell, om, V, c, QuadratureSettings(backend="jax", **kw))
    finally:
        l2_grid.BLOCK_PAIRS = saved
    for name in ("mean", "cov", "log_norm", "ess"):
        np.testing.assert_allclose(getattr(fast, name), getattr(ref, name), rtol=1e-10, atol=1e-12, err_msg=name)
    assert fast.method == method
